"""The demo pack's built-in, deterministic world: cities, hotels, rates, customers, files."""

from __future__ import annotations

import msgspec

# city (lower case) -> (display name, ISO 4217 currency of its hotels, mean temperature in Celsius
# by season: Dec-Feb, Mar-May, Jun-Aug, Sep-Nov)
CITIES: dict[str, tuple[str, str, tuple[float, float, float, float]]] = {
    "paris": ("Paris", "EUR", (5, 12, 20, 13)),
    "london": ("London", "GBP", (6, 10, 18, 12)),
    "tokyo": ("Tokyo", "JPY", (6, 14, 26, 18)),
    "lisbon": ("Lisbon", "EUR", (12, 16, 23, 19)),
    "amsterdam": ("Amsterdam", "EUR", (4, 9, 17, 11)),
    "porto": ("Porto", "EUR", (10, 14, 20, 16)),
    "venice": ("Venice", "EUR", (4, 13, 24, 15)),
    "milan": ("Milan", "EUR", (3, 13, 24, 14)),
    "turin": ("Turin", "EUR", (3, 12, 23, 13)),
    "madrid": ("Madrid", "EUR", (7, 14, 26, 16)),
    "rome": ("Rome", "EUR", (9, 15, 25, 18)),
    "athens": ("Athens", "EUR", (11, 17, 28, 21)),
    "berlin": ("Berlin", "EUR", (1, 9, 19, 10)),
    "reykjavik": ("Reykjavik", "ISK", (0, 3, 11, 5)),
    "oslo": ("Oslo", "NOK", (-3, 6, 16, 7)),
    "zurich": ("Zurich", "CHF", (1, 9, 18, 10)),
    "new york": ("New York", "USD", (1, 12, 24, 15)),
    "shanghai": ("Shanghai", "CNY", (6, 15, 28, 20)),
    "beijing": ("Beijing", "CNY", (-2, 14, 26, 13)),
    "singapore": ("Singapore", "SGD", (27, 28, 28, 28)),
}

# Chinese city names the demo understands, mapped to the English key above.
CITY_ALIASES: dict[str, str] = {
    "巴黎": "paris",
    "伦敦": "london",
    "东京": "tokyo",
    "上海": "shanghai",
    "北京": "beijing",
    "罗马": "rome",
    "马德里": "madrid",
}

# Nightly base prices in the city's currency: the demo derives 4 hotels per city from these.
HOTEL_NAMES = ("Hotel Central", "Grand Plaza", "Riverside Inn", "Old Town Suites")
BASE_PRICE: dict[str, float] = {
    "EUR": 85.0,
    "GBP": 95.0,
    "JPY": 14000.0,
    "ISK": 18000.0,
    "NOK": 1100.0,
    "CHF": 160.0,
    "USD": 150.0,
    "CNY": 520.0,
    "SGD": 190.0,
}
PRICE_STEPS = (1.0, 1.35, 1.8, 2.6)

# Units of each currency per 1 EUR: today's fixed demo rates.
RATES_PER_EUR: dict[str, float] = {
    "EUR": 1.0,
    "USD": 1.08,
    "GBP": 0.85,
    "JPY": 162.0,
    "CNY": 7.8,
    "CHF": 0.95,
    "NOK": 11.6,
    "SEK": 11.3,
    "DKK": 7.46,
    "ISK": 150.0,
    "SGD": 1.45,
    "CAD": 1.47,
    "AUD": 1.65,
    "INR": 90.0,
}

FORECASTS = (
    "sunny",
    "partly cloudy",
    "overcast",
    "light rain, wind 20 km/h",
    "showers",
    "clear skies",
    "fog in the morning, then sunny",
    "windy, gusts 45 km/h",
)

CUSTOMERS: list[tuple[str, str, str, str, str, str]] = [
    # customer_id, name, email, tier, country, signup_date
    ("C-1001", "Ana Lima", "ana.lima@example.com", "silver", "PT", "2024-05-11"),
    ("C-1002", "Ben Carter", "ben.carter@example.com", "gold", "GB", "2023-11-02"),
    ("C-10582", "Chidi Obi", "chidi.obi@example.ng", "standard", "NG", "2025-08-19"),
    ("C-20417", "Petra Novak", "petra.novak@example.cz", "gold", "CZ", "2022-03-14"),
    ("C-31877", "Maria Gonzalez", "maria.gonzalez@acme-corp.com", "platinum", "ES", "2021-06-30"),
    ("C-44120", "John Okafor", "j.okafor@lagosmedia.ng", "silver", "NG", "2024-09-01"),
    ("C-52001", "Tom Keller", "tom.keller@keller-bau.de", "gold", "DE", "2023-02-17"),
    ("C-63015", "Alice Smith", "a.smith@example.com", "standard", "US", "2025-01-23"),
    ("C-63016", "Bob Jones", "b.jones@example.com", "silver", "US", "2025-01-24"),
    ("C-77120", "Yuki Tanaka", "yuki.tanaka@example.jp", "platinum", "JP", "2020-12-01"),
    ("C-80911", "Lena Berg", "lena.berg@example.no", "gold", "NO", "2024-02-29"),
]

ORDERS: list[tuple[str, str, str, float, str, str]] = [
    # order_id, customer_id, order_date, amount, currency, status
    ("O-5501", "C-1001", "2026-02-03", 120.0, "EUR", "paid"),
    ("O-5502", "C-1002", "2026-02-05", 340.5, "EUR", "paid"),
    ("O-5503", "C-20417", "2026-02-11", 89.9, "EUR", "paid"),
    ("O-5504", "C-31877", "2026-02-14", 1250.0, "EUR", "paid"),
    ("O-5505", "C-52001", "2026-02-20", 410.0, "EUR", "pending"),
    ("O-5506", "C-77120", "2026-02-27", 980.0, "EUR", "paid"),
    ("O-5507", "C-1001", "2026-03-01", 60.0, "EUR", "refunded"),
    ("O-5521", "C-10582", "2026-03-01", 215.0, "EUR", "paid"),
]

INVOICE = """INVOICE
Invoice number: {invoice_id}
Vendor: {vendor}
Date: {date}
Currency: {currency}
{lines}
Total: {total:.2f}
"""

_BOARD = (
    "Board meeting, 27 February 2026. The board approved the 2026 budget of 4.2 million "
    "euros. Hiring will focus on two senior engineers for the platform team. The Oslo "
    "office lease is extended to 2029. Q1 revenue is tracking 8% above plan. The next "
    "meeting is on 27 March."
)

# Files of the sandbox, by their absolute path inside it.
FILES: dict[str, str] = {
    "/data/meetings/2026-02-27-board.txt": _BOARD,
    "/srv/wiki/onboarding.md": "# Onboarding\n\nWelcome! On day one you get a laptop and "
    "accounts. In week one you pair with a buddy. Ask questions in #help. Security "
    "training is due within 14 days.\n",
    "/data/reports/weekly.txt": "Week 9: sales grew 4%. Two incidents were resolved within SLA. "
    "The new onboarding flow shipped to all users.",
    "/home/dana/notes/todo.txt": "- renew passport\n- call the plumber\n- book flights to Porto\n",
    "/srv/shared/contracts/acme-2026.txt": "Contract with ACME Corp, valid 2026-01-01 to "
    "2026-12-31. Annual fee 24,000 EUR.",
    "/srv/shared/contracts/globex-2025.txt": "Contract with Globex, renewed 2025-07-01.",
    "/data/contracts/2026/a-acme.txt": "ACME master services agreement 2026. Term one year, "
    "fees payable quarterly, 30 days notice to terminate.",
    "/data/contracts/2026/b-initech.txt": "Initech support contract 2026, 99.9% uptime SLA.",
    "/data/book/chapter-01.txt": "Chapter one. Mara leaves the harbour town at dawn with a map "
    "she does not trust.",
    "/data/book/chapter-02.txt": "Chapter two. The map leads Mara to a lighthouse whose keeper "
    "has waited years for her.",
    "/data/hr/policy-2026.txt": "2026 policy: remote work up to three days a week; 28 days of "
    "leave; training budget of 1,500 euros per person.",
}


class Invoice(msgspec.Struct, frozen=True):
    invoice_id: str
    vendor: str
    date: str
    currency: str
    total: float
    items: tuple[str, ...]


INVOICES: dict[str, Invoice] = {
    "/data/inbox/inv-2291.pdf": Invoice(
        "INV-2291",
        "Brightwave Ltd",
        "2026-02-20",
        "EUR",
        1845.0,
        ("Consulting, 10 h: 1500.00", "Travel: 345.00"),
    ),
    "/data/inbox/inv-2292.pdf": Invoice(
        "INV-2292", "Nordlys AS", "2026-02-24", "NOK", 12400.0, ("Licences: 12400.00",)
    ),
}
