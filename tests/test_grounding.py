"""A plan made elsewhere (an OpenAI-compatible server) is held to the decoder's rules (pure)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from ember.plan import Step
from ember.planner.grounding import (
    Grounds,
    calling_codes,
    coded_name_takers,
    fits_role,
    givens,
    is_path,
    listed_names,
    name_rivals,
    named_files,
    phone_forms,
    relative_paths,
    said_as,
    said_at,
    spans_matching,
    stated_numbers,
    unsupported,
)
from ember.tools.demo import demo_catalog
from ember.tools.descriptor import ToolDescriptor

TODAY = date(2026, 3, 2)


def grounds(request: str) -> Grounds:
    return Grounds(tuple(demo_catalog()), request, TODAY)


def test_a_step_that_needs_a_value_nobody_gave_ends_the_plan() -> None:
    rules = grounds("Email the report to ann@example.com")
    invented = Step(1, "send_email", {"to": "bob@example.com", "subject": "R", "body": "b"})
    assert rules.repair(invented, []) is None
    given = Step(1, "send_email", {"to": "ann@example.com", "subject": "R", "body": "b"})
    assert rules.repair(given, []) == given


def test_what_the_request_never_says_is_left_out_when_optional() -> None:
    rules = grounds("Summarize 'the quick brown fox'")
    step = Step(1, "summarize_text", {"text": "the quick brown fox", "max_words": 50})
    assert rules.repair(step, []) == Step(1, "summarize_text", {"text": "the quick brown fox"})


@pytest.mark.parametrize(
    ("request_text", "numbers"),
    [
        # against a unit, with a scale; an ordinal or a time of day is a date's or a time's
        ("a wire 5m long, 0.01m² across", {5, 0.01}),
        ("a 300K budget", {300, 300_000}),
        ("on the 2nd at 6pm", set()),
        # a percentage is also a fraction
        ("at an interest rate of 5%", {5, 0.05}),
        ("a 95 percent interval", {95, 0.95}),
        # a minus sign before a number; a hyphen inside a code, a date or a range is none
        ("roots for coefficients 2, 3 and -4 on [-1, 2.5]", {2, 3, -4, -1, 2.5}),
        ("ticket C-20417 on 2026-03-03, rows 10-15", set()),
        # a list with bare commas; a thousands separator is not one
        ("the factorial of 5,10 and 15", {5, 5.1, 10, 15}),
        ("for 1,5 and 10 years", {1, 5, 1.5, 10}),
        ("pay 1,000,000 USD", {1_000_000}),
        # a number inside a word, an address, a path, a version or a quote is none
        ("h2o, mp3, B2B, COVID-19, v2 from a5b@example.com", set()),
        ("open /data/5m.csv, release 3.10.2, title '5m', colour #00FFFF", set()),
    ],
)
def test_numbers_written_against_a_unit_as_a_percentage_or_in_a_comma_list_are_stated(
    request_text: str, numbers: set[float]
) -> None:
    assert stated_numbers(request_text) == numbers
    assert stated_numbers(request_text, spoken=False) <= numbers  # the rule off: apart only


def test_a_first_call_is_supported_by_a_number_written_against_its_unit() -> None:
    tool = ToolDescriptor(
        tool_name="calculate_resistance",
        description="Resistance of a wire.",
        parameters={
            "type": "object",
            "properties": {
                "length": {"type": "number"},
                "area": {"type": "number"},
                "rate": {"type": "number", "description": "interest, as a fraction"},
            },
            "required": ["length", "area"],
        },
    )
    step = Step(1, "calculate_resistance", {"length": 5, "area": 0.01, "rate": 0.05})
    assert unsupported(step, tool, "A 5m wire, 0.01m² across, at 5%") == []
    assert unsupported(step, tool, "A 5 m wire, 0.01 m² across") == ["rate"]


def test_a_day_the_request_names_supports_a_date_written_as_plain_text() -> None:
    tool = ToolDescriptor(
        tool_name="currency_conversion_get_rate",
        description="The rate between two currencies on a date.",
        parameters={
            "type": "object",
            "properties": {"pair": {"type": "string"}, "date": {"type": "string"}},
            "required": ["pair", "date"],
        },
    )
    request = "The EUR/USD rate on January 1, 2022"
    step = Step(1, "currency_conversion_get_rate", {"pair": "EUR/USD", "date": "2022-01-01"})
    days = Grounds((tool,), request, TODAY).stated_days
    assert days == ["2022-01-01"]
    assert unsupported(step, tool, request, days) == []
    assert unsupported(step, tool, request) == ["date"]  # without the days it names


def test_references_must_go_to_earlier_results_that_hold_such_a_value() -> None:
    rules = grounds("Look up customer C-20417 and email their tier to them")
    lookup = Step(1, "lookup_customer", {"customer_id": "C-20417"})
    assert rules.repair(lookup, []) == lookup
    email = Step(2, "send_email", {"to": "$1.email", "subject": "Tier", "body": "{$1.tier}"})
    assert rules.repair(email, [lookup]) == email
    wrong = Step(2, "send_email", {"to": "$1.name", "subject": "Tier", "body": "{$1.tier}"})
    assert rules.repair(wrong, [lookup]) is None


def test_a_call_on_a_path_an_earlier_step_changes_is_made_to_run_after_it() -> None:
    rules = grounds("Create /srv/drop/README.txt containing 'hi', then show me what's in /srv/drop")
    write = Step(1, "write_file", {"path": "/srv/drop/README.txt", "content": "hi"})
    listing = Step(2, "list_files", {"directory": "/srv/drop"})
    assert rules.repair(listing, [write]) == Step(2, "list_files", listing.args, after=[1])
    off = Grounds(tuple(demo_catalog()), rules.request, TODAY, off=frozenset({"write-order"}))
    assert off.repair(listing, [write]) == listing


def test_dates_and_codes_must_exist() -> None:
    rules = grounds("Convert 100 RMB to euros, and weather in Oslo")
    assert rules.repair(Step(1, "get_weather", {"city": "Oslo", "date": "2026-02-30"}), []) is None
    rmb = Step(1, "convert_currency", {"amount": 100, "from_currency": "RMB", "to_currency": "EUR"})
    assert rules.repair(rmb, []) is None
    cny = Step(1, "convert_currency", {"amount": 100, "from_currency": "CNY", "to_currency": "EUR"})
    assert rules.repair(cny, []) == cny


# Tools described as a tool pack describes them: a path named, not documented; an address
# constrained by a pattern, not by `format`; a parameter that takes whole results.
PACKS = tuple(
    ToolDescriptor.from_json(tool)
    for tool in json.loads(
        (Path(__file__).parent.parent / "evals/planner/packs-catalog.json").read_text()
    )
)
COMPETITORS = (
    "Analyse the three competitors' financial statements in statements/ (acme.csv, "
    "borealis.xlsx, cobalt.pdf) and produce a slide outline with charts in out/competitors"
)


def test_relative_paths_a_request_spells_and_its_files_inside_the_folder_it_names() -> None:
    assert relative_paths(COMPETITORS) == [
        "statements/",
        "acme.csv",
        "borealis.xlsx",
        "cobalt.pdf",
        "out/competitors",
        "statements/acme.csv",
        "statements/borealis.xlsx",
        "statements/cobalt.pdf",
    ]
    # absolute paths, addresses, URLs, domains, decimals, dates, abbreviations and words
    # joined by a slash are not relative paths
    assert relative_paths("Read /data/a.txt, mail ann@example.com, see https://x.io/b.html") == []
    assert relative_paths("Convert 3.5 km, e.g. to miles, for the Ph.D office") == []
    assert relative_paths("Ask example.com and www.example.org and/or CEO/CFO about Q3/Q4") == []
    assert relative_paths("Due 2026/03/02; read a.txt") == ["a.txt"]


def test_a_path_parameter_is_known_by_its_name_as_well_as_its_description() -> None:
    assert is_path("path", {"type": "string", "description": "The statement file."})
    assert is_path("out_dir", {"type": "string"})
    assert is_path("target", {"type": "string", "description": "The folder to write to."})
    assert not is_path("title", {"type": "string", "description": "The outline's title."})
    assert not is_path("sort_dir", {"type": "string"})  # a direction
    assert not is_path("json_path", {"type": "string"})  # an expression


def test_an_address_constrained_by_a_pattern_is_grounded_as_an_address() -> None:
    rules = Grounds(PACKS, "Query the shop database for gold customers and mail them", TODAY)
    assert rules.tools["mail_send"].parameters["properties"]["to"]["format"] == "email"
    query = Step(1, "sql_query", {"database": "shop", "sql": "SELECT * FROM customers"})
    to_a_name = Step(2, "mail_send", {"to": "$1.database", "subject": "Hi", "body": "Hello"})
    assert rules.repair(to_a_name, [query]) is None  # a database name is no address
    handle = ToolDescriptor(
        "post",
        {"type": "object", "properties": {"to": {"type": "string", "pattern": "^@[a-z]+$"}}},
    )
    plain = ToolDescriptor(
        "user",
        {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[^@\\s]+$"}}},
    )
    marked = Grounds((handle, plain), "Post to @dana", TODAY).tools
    assert "format" not in marked["post"].parameters["properties"]["to"]  # a handle
    assert "format" not in marked["user"].parameters["properties"]["name"]  # no "@" allowed


def test_a_whole_result_is_offered_where_a_parameter_takes_such_objects() -> None:
    rules = Grounds(PACKS, COMPETITORS, TODAY)
    figures = Step(1, "docs_financials", {"path": "statements/acme.csv"})
    statements = rules.tools["docs_slide_outline"].parameters["properties"]["statements"]
    assert rules.references(statements["items"], [figures]) == ["1"]  # `$1`, not `$1.evidence`
    assert unsupported(figures, rules.tools["docs_financials"], COMPETITORS) == []


def test_an_optional_glob_nobody_asked_for_is_left_out_of_a_plan_made_elsewhere() -> None:
    rules = Grounds(PACKS, "Search /srv/data for files that mention ACME", TODAY)
    search = {"directory": "/srv/data", "text": "ACME"}
    habit = Step(1, "files_search", {**search, "pattern": ".*"})
    assert rules.repair(habit, []) == Step(1, "files_search", search)
    asked = Grounds(PACKS, "Search the md files in /srv/data for ACME", TODAY)
    glob = Step(1, "files_search", {**search, "pattern": "*.md"})
    assert asked.repair(glob, []) == glob


def test_a_plan_made_elsewhere_ends_before_an_action_a_question_did_not_ask_for() -> None:
    search = Step(1, "search_hotels", {"city": "Lisbon", "check_in": "2026-03-10", "nights": 2})
    book = Step(
        2, "book_hotel", {"hotel_id": "$1.hotels.0.hotel_id", "check_in": "2026-03-10", "nights": 2}
    )
    question = grounds("Which hotel in Lisbon is cheapest for 2 nights from 2026-03-10?")
    assert question.repair(search, []) == search
    assert question.repair(book, [search]) is None
    asked = grounds("Book the cheapest hotel in Lisbon for 2 nights from 2026-03-10")
    assert asked.repair(book, [search]) == book


def test_only_a_request_that_is_all_questions_loses_the_tools_that_act() -> None:
    from ember.planner.grounding import acts_unasked

    book = next(tool for tool in demo_catalog() if tool.tool_name == "book_hotel")
    assert acts_unasked(book, "Which hotel in Lisbon is cheapest for 2 nights?")
    for asks_an_action in (
        "Which hotel in Lisbon is cheapest? Reserve it for 2 nights.",
        "When Tom replies, reserve the hotel",
        "Can you find the cheapest hotel in Lisbon?",
        "What about booking the cheapest hotel in Lisbon?",  # the action, in another form
    ):
        assert not acts_unasked(book, asks_an_action), asks_an_action
    issue = ToolDescriptor("createIssue", {"type": "object"}, read_only=False)
    assert acts_unasked(issue, "What is open in PAY?")
    assert not acts_unasked(issue, "What should I create for the PAY outage?")
    unsaid = ToolDescriptor("post_message", {"type": "object"})  # read_only not said
    assert not acts_unasked(unsaid, "What is open in PAY?")


def test_a_tool_that_does_not_say_whether_it_acts_is_marked_by_its_action() -> None:
    from ember.planner.grounding import acts_marked

    def unsaid(name: str) -> ToolDescriptor:
        return ToolDescriptor(name, {"type": "object"})

    assert acts_marked(unsaid("send_sms")).read_only is False
    assert acts_marked(unsaid("assignContractor")).read_only is False
    assert acts_marked(unsaid("find_tenant")).read_only is True
    assert acts_marked(unsaid("convert_currency")).read_only is True  # a computation
    assert acts_marked(unsaid("tenancy_status")).read_only is None  # the word says neither
    said = ToolDescriptor("send_sms", {"type": "object"}, read_only=True)
    assert acts_marked(said) is said  # what a descriptor says stands


def test_a_request_that_declines_an_action_loses_the_tool_that_acts() -> None:
    from ember.planner.grounding import declines

    book = next(tool for tool in demo_catalog() if tool.tool_name == "book_hotel")
    search = next(tool for tool in demo_catalog() if tool.tool_name == "search_hotels")
    for declined in (
        "Find hotels in Lisbon for 2 nights. Don't book it.",
        "Email Claire the cheapest hotel in each city - no booking yet.",
        "Look up hotels there, I don’t want to book anything yet.",  # a curly apostrophe
        "Email her the three cheapest hotels you find - she'll book herself.",
        "Only show me, do not book.",
    ):
        assert declines(book, declined), declined
        assert not declines(search, declined)  # a tool that only reads is never declined
    for asked in (
        "Book the cheapest hotel in Lisbon and don't email me.",
        "Don't forget to book the hotel in Lisbon.",
        "Book a room for myself in Lisbon.",
        "Email 'do not book' to anna@example.com and book the hotel",  # quoted: not read
    ):
        assert not declines(book, asked), asked


def test_the_rules_switched_off_are_off_for_plans_made_elsewhere_too() -> None:
    search = Step(1, "search_hotels", {"city": "Lisbon", "check_in": "2026-03-10", "nights": 2})
    book = Step(
        2, "book_hotel", {"hotel_id": "$1.hotels.0.hotel_id", "check_in": "2026-03-10", "nights": 2}
    )
    question = "Which hotel in Lisbon is cheapest for 2 nights from 2026-03-10?"
    off = Grounds(tuple(demo_catalog()), question, TODAY, off=frozenset({"questions-read"}))
    assert off.repair(book, [search]) == book
    plural = Grounds(PACKS, "Search the PDFs in /srv/data for ACME", TODAY)
    glob = Step(1, "files_search", {"directory": "/srv/data", "text": "ACME", "pattern": "*.pdf"})
    assert plural.repair(glob, []) == glob  # "pdf" is said by "PDFs"


def test_a_list_written_out_again_is_the_earlier_result_s_list_of_that_name() -> None:
    request = "Email every customer in the crm database a renewal reminder"
    rules = Grounds(PACKS, request, TODAY)
    query = Step(1, "sql_query", {"database": "crm", "sql": "SELECT name, email FROM customers"})
    merge = Step(2, "mail_merge", {"columns": ["email"], "rows": "$1.rows", "subject": "Hi",
                                   "body": "Dear {name}"})  # fmt: skip
    repaired = rules.repair(merge, [query])
    assert repaired is not None
    assert repaired.args["columns"] == "$1.columns"
    columns = rules.tools["mail_merge"].parameters["properties"]["columns"]
    given = Grounds(PACKS, "Email the customers in /srv/list.csv a reminder", TODAY)
    assert given.options("mail_merge", "columns", columns, [query], [query]) is None


def test_a_list_that_may_be_null_is_a_list_to_step_over() -> None:
    """`list[Item] | None` is `"type": ["array", "null"]`: a step over it is kept."""
    finder = ToolDescriptor.from_json({
        "tool_name": "find_files", "execution_mode": "sync",
        "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}},
        "returns": {"type": "object", "properties": {"files": {
            "type": ["array", "null"], "items": {"type": "string"}}}},
    })  # fmt: skip
    reader = next(tool for tool in demo_catalog() if tool.tool_name == "read_file")
    rules = Grounds([finder, reader], "Read every file in /srv/notes", TODAY)
    found = Step(1, "find_files", {"folder": "/srv/notes"})
    each = Step(2, "read_file", {"path": "$item"}, each="$1.files")
    assert rules.repair(each, [found]) == each


def test_a_request_asks_to_wait_by_a_wait_word_a_delay_or_a_time_of_day() -> None:
    from ember.planner.grounding import asks_to_wait

    for waits in (
        "Wait 10 minutes, then mail ops@example.com",
        "In 2 hours, read out/status.txt",
        "after 30 s read holding register 4",
        "Read the register at 09:00 tomorrow",
        "Hold off until the ledger is written, then mail it",
        "Espera 5 minutos y lee el registro 3",
        "十分钟之后读取寄存器 3",
    ):
        assert asks_to_wait(waits), waits
    for no_wait in (
        "Book the invoices in in/ into out/ledger.csv",
        "Watch holding register 0 every second for 8 readings",
        "Send 'wait for me' to bob@example.com",  # quoted: the user's text, not a wait
        "Analyse the statements in statements/ and write an outline to out/",
    ):
        assert not asks_to_wait(no_wait), no_wait


@pytest.mark.parametrize(
    ("name", "description", "path", "fits"),
    [
        ("directory", "Absolute path of the directory.", "/srv/q3/report.pdf", False),
        ("directory", "Absolute path of the directory.", "/srv/q3", True),
        ("directory", "Absolute path of the directory.", "/srv/v1.2", True),  # no extension
        ("folder", "The folder of invoices.", "in/", True),
        ("path", "Absolute path of the file.", "out/", False),
        ("path", "Absolute path of the file.", "/var/log/syslog", True),
        ("summary", "The path of a Markdown file to write the summary to.", "a.csv", False),
        ("summary", "The path of a Markdown file to write the summary to.", "a.md", True),
        ("summary", "The path of a Markdown file to write the summary to.", "a.txt", True),
        ("path", "A CSV or Excel file.", "a.xlsx", True),
        ("path", "A CSV or Excel file.", "a.pdf", False),
        ("out", "Where to write outline.json and the charts (a folder).", "decks/x", True),
        ("target", "Something to act on.", "a.pdf", True),  # says no role
    ],
)
def test_a_path_fits_the_role_its_parameter_names(
    name: str, description: str, path: str, fits: bool
) -> None:
    assert fits_role(name, {"type": "string", "description": description}, path) is fits


def test_names_a_request_lists_or_says_in_the_same_words() -> None:
    """Names linked by "and"/"or" (commas before the last link) are listed together; names
    after the same two words are said alike; a sentence's first word, a month, a day, an
    acronym, a quoted name and "Paris, France" are no list."""
    listed = listed_names
    assert listed("Find the cheapest hotel in Lyon and in Bordeaux, then email me") == [
        [("Lyon", 27), ("Bordeaux", 39)]
    ]
    assert listed("Weather in Oslo, Bergen or Tromsø?") == [
        [("Oslo", 11), ("Bergen", 17), ("Tromsø", 27)]
    ]
    assert listed("Message Dev Patel and Ana Souza") == [[("Dev Patel", 8), ("Ana Souza", 22)]]
    alike = "Book the cheapest hotel in Milan for 2 nights and the cheapest hotel in Turin"
    assert listed(alike) == [[("Milan", 27), ("Turin", 72)]]
    assert listed("Hotels in Paris, France please") == []
    assert listed("Lyon and Bordeaux are both fine, mail the IDs on Friday and Monday") == []
    assert listed("Email ann@example.com 'Oslo and Bergen' as the subject") == []
    # a colon ends no sentence; names in any alphabet with capitals; "O'Brien", "McDonald"
    assert listed("Cities: Lyon, Bordeaux and Nice") == [
        [("Lyon", 8), ("Bordeaux", 14), ("Nice", 27)]
    ]
    assert listed("Book hotels in Zürich and Évian") == [[("Zürich", 15), ("Évian", 26)]]
    assert listed("Invite O'Brien and McDonald") == [[("O'Brien", 7), ("McDonald", 19)]]
    # one name said twice after the same words is no list
    assert listed("The weather in Lyon now and the weather in Lyon at noon") == []


def test_where_a_request_gives_a_value() -> None:
    """A given is found where it stands apart (not inside another number or a date), in any of
    its forms; a quoted text where its quote is; a number said in words nowhere."""
    request = 'From March 18, for 2 nights; reply "Ok 2." to ann@example.com'
    assert said_at(request, ("18",)) == 11
    assert said_at(request, ("2",)) == 19
    assert said_at(request, ("Ok 2.", "Ok 2")) == 36
    assert said_at(request, ("ann@example.com",)) == 46
    assert said_at("two hours", ("2", "120")) is None
    assert said_at("It costs 8.5 or 8", ("8",)) == 16  # not the 8 of 8.5
    assert said_at("At 10:30 in room 10", ("10",)) == 17  # not the hour of a time


def test_a_code_said_with_a_possessive_is_a_span_its_pattern_takes() -> None:
    """ "D005's first free slot": the code is "D005" (a selective pattern's span), as it is
    without the ending; a word that is no code stays out."""
    doctor = {"type": "string", "pattern": "^D[0-9]{3}$"}
    request = "Reschedule A2703318 to D005's first free slot on Thursday, or D007’s."
    assert spans_matching(request, doctor) == ["D005", "D007"]
    assert spans_matching("Ask Dana's team", doctor) == []


def test_a_name_is_given_a_code_only_where_the_request_does_not_say_it_as_the_name() -> None:
    """`coded_name_takers`: the tools that take a code a name was given; none where the request
    says the code as the name asked for (beside "named", the parameter's or the tool's
    subject), or where the tool takes the code itself."""
    branch = ToolDescriptor(
        "create_branch",
        {"type": "object", "properties": {"branch_name": {"type": "string"}}},
        description="Create a git branch.",
    )
    ticket = ToolDescriptor(
        "update_ticket",
        {
            "type": "object",
            "properties": {"ticket_id": {"type": "string", "pattern": "^[A-Z]{2,6}-[0-9]+$"}},
        },
        description="Update a ticket.",
    )
    args = {"branch_name": "PAY-142"}
    tools = (branch, ticket)
    assert coded_name_takers(branch, args, "Close PAY-142 today", tools) == ["update_ticket"]
    for request in ("Create a branch named PAY-142", "Open the branch PAY-142 for it"):
        assert coded_name_takers(branch, args, request, tools) == []
    own = ToolDescriptor(
        "find_branch",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "ticket": {"type": "string", "pattern": "^[A-Z]{2,6}-[0-9]+$"},
            },
        },
        description="Find a branch.",
    )
    assert coded_name_takers(own, {"name": "PAY-142"}, "Close PAY-142 today", tools) == []


def _lookup(name: str, *, acts: bool = False) -> ToolDescriptor:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    return ToolDescriptor(name, schema, description=f"{name}.", read_only=not acts)


@pytest.mark.parametrize(
    ("request_text", "name", "tool", "said"),
    [
        ("Email Dr. Nakamura the notes", "Dr. Nakamura", "find_doctor", True),
        ("What's Dr. Alvarez's earliest slot?", "Alvarez", "find_doctor", True),
        ("Book Dr Maria Keller", "Maria Keller", "find_doctor", True),
        ("Find the patient Ada Moss", "Ada Moss", "find_patient", True),
        ("帮刘洋约张医生的空档", "张", "find_doctor", True),
        ("Aisha Rahman asked to move her appointment", "Aisha Rahman", "find_doctor", False),
        ("Aisha Rahman asked to move her appointment", "Aisha Rahman", "find_patient", False),
        ("Email Dr. Nakamura the notes", "Dr. Nakamura", "find_patient", False),
    ],
)
def test_a_name_is_said_as_a_role_by_the_role_or_its_title(
    request_text: str, name: str, tool: str, said: bool
) -> None:
    """`said_as`: the tool's subject, or its title ("Dr."), in the name, beside it, or (in
    unspaced text) right after it."""
    assert said_as(request_text, name, _lookup(tool)) is said


def test_a_name_has_rivals_among_the_other_lookups_that_take_a_name() -> None:
    """`name_rivals`: other tools that look a name up by a parameter of the same name, not
    those that act; none for a reference or a tool that acts."""
    tools = [_lookup("find_doctor"), _lookup("find_patient"), _lookup("rename", acts=True)]
    assert name_rivals(tools[0], {"name": "Ada Moss"}, tools) == ("Ada Moss", ["find_patient"])
    assert name_rivals(tools[0], {"name": "$1.name"}, tools) == ("", [])
    assert name_rivals(tools[2], {"name": "Ada Moss"}, tools) == ("", [])


def test_a_result_s_path_field_is_a_named_file_where_the_request_says_what_it_holds() -> None:
    """`named_files`: a field that holds a path (`report_path`) whose other words the request
    says outside quotes ("the lab report"); a bare `path` says nothing of the file."""
    listed = {"type": "array", "items": {"type": "object", "properties": {"report_path": {}}}}
    returns = {"type": "object", "properties": {"results": listed, "path": {"type": "string"}}}
    found = named_files("Pull up Maria Keller's latest lab report", returns)
    assert found
    assert all(path.endswith(".report_path") for path in found)
    file_path = {"type": "object", "properties": {"file_path": {"type": "string"}}}
    assert named_files("Read the file notes.txt", file_path) == []
    assert named_files("List Maria Keller's lab results", returns) == []
    assert named_files("Send her the note 'see report'", returns) == []


def test_a_parameter_documents_its_country_calling_code_by_itself_or_by_an_example() -> None:
    assert calling_codes("UK numbers: +44 and drop the leading 0") == ["44"]
    assert calling_codes('e.g. 07700 900123 -> "+447700900123"') == ["44"]
    assert calling_codes('International format, e.g. "+447700900123"') == []  # 4? 44? 447?
    assert calling_codes("A mobile number") == []
    # an example cut short is not a code of its first digits: "+447..." is +44 7...
    assert calling_codes('e.g. "+447700900123" (UK 07... numbers become +447...)') == ["44"]
    assert calling_codes("Dial +447... for the office") == []


def test_a_phone_parameter_that_documents_no_code_takes_the_catalogue_s() -> None:
    phone = {"type": "string", "pattern": r"^\+[1-9][0-9]{7,14}$", "description": "Mobile."}
    request = "Find the tenant on 07845 112233"
    assert spans_matching(request, phone, phones=True) == []  # no country known
    assert spans_matching(request, phone, phones=True, codes=["44"]) == ["+447845112233"]
    documented = {**phone, "description": "Mobile; UK numbers: +44 and drop the leading 0."}
    texting = ToolDescriptor("send_sms", {"type": "object", "properties": {"to": documented}})
    finding = ToolDescriptor("find_tenant", {"type": "object", "properties": {"phone": phone}})
    assert Grounds((finding, texting), request, TODAY).calling_codes == ["44"]


def test_a_phone_number_in_the_forms_a_tool_may_ask_for() -> None:
    assert phone_forms("07700 900461", ["44"]) == ["07700 900461", "07700900461", "+447700900461"]
    assert phone_forms("07700 900461") == ["07700 900461", "07700900461"]  # no country known
    assert phone_forms("+44 7700 900118")[-1] == "+447700900118"
    assert phone_forms("0044 20 7946 0018")[-1] == "+442079460018"


def test_a_phone_number_is_one_given_not_two_numbers() -> None:
    request = "text 07700 900461 that the car is ready, we're open till 6"
    assert givens(request) == [("07700",), ("900461",), ("6",)]
    assert givens(request, phones=True) == [
        ("07700 900461", "07700900461", "7700900461"),
        ("6",),
    ]
    # a colon after a number ends it; a time goes on after its colon
    assert givens('Text 07700 900777: "on my way"', phones=True)[1] == (
        "07700 900777",
        "07700900777",
        "7700900777",
    )
    # a date, a time or an amount is no phone number
    plain = "on 2026-05-14 at 10:30 pay 1,200,000 to ACC-0012345678"
    assert givens(plain, phones=True) == givens(plain) == [("ACC-0012345678",), ("1200000",)]


def test_an_example_path_in_a_description_names_no_format() -> None:
    """ "e.g. /archive/invoices/I1.pdf" shows where documents live, not that only PDFs fit."""
    attachment = {"type": "string", "description": "A document to attach, e.g. /archive/i/I1.pdf."}
    assert fits_role("attachment_path", attachment, "/archive/policies/courtesy-car.md")
    pdf_only = {"type": "string", "description": "The PDF file to attach."}
    assert not fits_role("attachment_path", pdf_only, "/archive/policies/courtesy-car.md")
