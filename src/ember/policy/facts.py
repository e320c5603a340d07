"""What a rule may test about a call (pure): its arguments as Cedar values, and a few facts
ember derives from them so that rules need not parse SQL or paths themselves.

```
context.args            the arguments: strings, booleans, integers (Cedar Long); a `number`
                        parameter, or any fraction, as a Cedar decimal (4 places: compare with
                        `.lessThan(decimal("1000.0"))`); lists as sets; nulls left out
context.paths.NAME      an argument named path, directory, *_path or *_dir, normalised
                        (`/srv/a/../b` -> `/srv/b`): test it with `like "/srv/reports/*"`
context.sql_read_only   for an argument named `sql`: one statement that only reads
context.risk            the tool's risk, "low" or "high"
context.hour, minute    local time of the decision; weekday "mon".."sun"
```
"""

from __future__ import annotations

import decimal
import posixpath
import re
import time
from typing import Any

from ember.tools.descriptor import ToolDescriptor

__all__ = ["call_context", "cedar_value", "sql_read_only", "time_context"]

_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_LONG = 2**63
_PLACES = decimal.Decimal("0.0001")
_DECIMAL_MAX = decimal.Decimal("922337203685477.5807")
_PATH_NAME = re.compile(r"^(path|directory|dir|.*_path|.*_dir)$")
_WRITES = re.compile(
    r"\b(insert|update|delete|replace|upsert|merge|create|drop|alter|attach|detach|pragma|"
    r"vacuum|reindex|analyze|begin|commit|rollback|savepoint|release|grant|revoke|truncate|"
    r"copy|load_extension)\b"
)
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)


def time_context(at: float) -> dict[str, Any]:
    """The local time of day at `at` (epoch seconds), as rules see it."""
    moment = time.localtime(at)
    return {"hour": moment.tm_hour, "minute": moment.tm_min, "weekday": _WEEKDAYS[moment.tm_wday]}


# Per tool descriptor (kept alive here, so its id is not reused): its `number` parameters, and
# the arguments it names like paths. Computed once, not at every call.
_shapes: dict[int, tuple[ToolDescriptor, frozenset[str]]] = {}


def _numbers(tool: ToolDescriptor) -> frozenset[str]:
    known = _shapes.get(id(tool))
    if known is None:
        properties = tool.parameters.get("properties", {})
        numbers = frozenset(n for n, spec in properties.items() if spec.get("type") == "number")
        known = _shapes[id(tool)] = (tool, numbers)
    return known[1]


def call_context(tool: ToolDescriptor, args: dict[str, Any], at: float) -> dict[str, Any]:
    """The Cedar context of a call of `tool` with `args` decided at `at`."""
    numbers = _numbers(tool)
    cedar_args: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for name, value in args.items():
        if type(value) is str:
            cedar_args[name] = value
            if _PATH_NAME.match(name):
                paths[name] = posixpath.normpath(value)
            continue
        converted = cedar_value(value, as_decimal=name in numbers)
        if converted is not None:
            cedar_args[name] = converted
    context: dict[str, Any] = {"args": cedar_args, "risk": tool.risk.value, **time_context(at)}
    if paths:
        context["paths"] = paths
    if isinstance(args.get("sql"), str):
        context["sql_read_only"] = sql_read_only(args["sql"])
    return context


def cedar_value(value: Any, *, as_decimal: bool = False) -> Any:
    """`value` as a Cedar JSON value, or None where Cedar has none (null, out of range)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int) and not as_decimal:
        return value if -_LONG <= value < _LONG else None
    if isinstance(value, int | float):
        return _decimal(value)
    if isinstance(value, list):
        return [item for item in (cedar_value(v) for v in value) if item is not None]
    if isinstance(value, dict):
        converted = {str(k): cedar_value(v) for k, v in value.items()}
        return {k: v for k, v in converted.items() if v is not None}
    return None


def _decimal(value: float) -> dict[str, Any] | None:
    try:
        number = decimal.Decimal(repr(value) if isinstance(value, float) else value)
        quantized = number.quantize(_PLACES, rounding=decimal.ROUND_HALF_EVEN)
    except decimal.InvalidOperation:  # nan, inf, too many digits
        return None
    if abs(quantized) > _DECIMAL_MAX:
        return None
    return {"__extn": {"fn": "decimal", "arg": str(quantized)}}


def sql_read_only(sql: str) -> bool:
    """True when `sql` is one statement that can only read: it starts with SELECT, WITH,
    VALUES or EXPLAIN and names no writing keyword outside its string literals and comments
    (conservative: when in doubt, False)."""
    text = _STRINGS.sub(" ", sql).strip().rstrip(";").strip().lower()
    if not text or ";" in text:
        return False
    first = text.split(None, 1)[0]
    return first in ("select", "with", "values", "explain") and not _WRITES.search(text)
