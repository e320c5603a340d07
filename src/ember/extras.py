"""Optional dependencies: which extra of `ember-agent` provides each, and one error naming it.

A plain `pip install ember-agent` is the runtime as a library and the commands that need no
model: the journal (`ember runs`, `resume` of a planned run), the scripted planner, tool hosts,
the crash test. Everything else comes with an extra:

| extra | for | modules |
|---|---|---|
| embedded | the default planner: llama.cpp and the shipped models | numpy, llama_cpp, pycountry |
| remote | the openai planner (any OpenAI-compatible server) | httpx |
| server | `ember serve` | starlette, uvicorn, prometheus_client |
| otel | OTLP spans from `ember serve` | opentelemetry |
| assess | `ember assess` | rich, matplotlib |
| mcp | tools from MCP servers | mcp |
| eval | `ember eval bfcl` (with bfcl-eval, installed without its dependencies) | filelock, mpmath |
| bench | the peers `ember chaos` and `ember bench` crash beside ember | langgraph, dbos |
| postgres | the shared journal (`--db postgresql://...`), `ember worker` | psycopg, psycopg_pool |

`require` checks for modules where they are first needed; the command line turns any
`ModuleNotFoundError` of a module listed here into the same one-line message (`missing`), so a
new command gets it without doing anything.
"""

from __future__ import annotations

import importlib.util

from ember.errors import UserError

__all__ = ["EXTRAS", "MissingExtraError", "missing", "require"]

EXTRAS: dict[str, str] = {
    "numpy": "embedded",
    "llama_cpp": "embedded",
    "pycountry": "embedded",
    "httpx": "remote",
    "starlette": "server",
    "uvicorn": "server",
    "prometheus_client": "server",
    "opentelemetry": "otel",
    "rich": "assess",
    "matplotlib": "assess",
    "mcp": "mcp",
    "filelock": "eval",
    "mpmath": "eval",
    "langgraph": "bench",
    "dbos": "bench",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
}
# Installed apart from any extra: its declared dependencies pull several GB and do not resolve.
_SEPARATE = {"bfcl_eval": "pip install --no-deps 'bfcl-eval==2026.3.23'"}


class MissingExtraError(UserError):
    """An optional dependency is not installed: the message names the extra to install."""

    def __init__(self, what: str, module: str, hint: str = "") -> None:
        self.module = module
        extra = EXTRAS.get(module)
        if extra is not None:
            text = f"{what} needs the {extra} extra: pip install 'ember-agent[{extra}]'"
        else:
            text = f"{what} needs {module}: {_SEPARATE.get(module, f'pip install {module}')}"
        super().__init__(text + (f"; {hint}" if hint else ""))


def require(what: str, *modules: str, hint: str = "") -> None:
    """Raise `MissingExtraError` for the first of `modules` that is not installed. `what`
    names who needs it ("ember serve", "the llama planner"); `hint` offers a way around."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(what, module, hint)


def missing(error: BaseException, what: str) -> MissingExtraError | None:
    """The `MissingExtraError` for an import that failed on an optional dependency (also inside
    an exception group), or None when the missing module is not one of them (a bug)."""
    if isinstance(error, BaseExceptionGroup):
        found = (missing(inner, what) for inner in error.exceptions)
        return next((item for item in found if item is not None), None)
    if isinstance(error, MissingExtraError):
        return error
    if isinstance(error, ModuleNotFoundError) and error.name:
        module = error.name.split(".")[0]
        if module in EXTRAS or module in _SEPARATE:
            return MissingExtraError(what, module)
    return None
