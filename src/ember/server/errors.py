"""Errors as the API answers them: a JSON `Problem` naming the field and what to do, never a
stack trace (an unexpected exception is a 500 that says only where to look: the server's log)."""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ember.server.schema import Problem

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["ApiError", "decode_body", "encode", "exception_handlers", "json_response"]

_encoder = msgspec.json.Encoder()
T = TypeVar("T")


class ApiError(Exception):
    """An answer other than success: raise it from a handler; the app turns it into a
    `Problem` body with `status` (and `headers`, e.g. Retry-After)."""

    def __init__(
        self,
        status: int,
        error: str,
        what_to_do: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.problem = Problem(error, what_to_do, field)
        self.headers = headers or {}

    def response(self) -> Response:
        return json_response(self.problem, self.status, self.headers)


def encode(content: Any) -> bytes:
    return _encoder.encode(content)


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    from starlette.responses import Response

    return Response(encode(content), status, headers, media_type="application/json")


def decode_body(body: bytes, kind: type[T]) -> T:
    """`body` as a `kind`: 400 if it is not JSON, 422 naming the field if it does not fit."""
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = message.rsplit("`$.", 1)[1].rstrip("`") if "`$." in message else None
        raise ApiError(
            422,
            f"the body does not fit: {message}",
            f"send a JSON object with the fields of {kind.__name__} (see /openapi.json)",
            field,
        ) from None
    except msgspec.DecodeError as exc:
        raise ApiError(
            400,
            f"the body is not JSON: {exc}",
            "send a JSON object, with Content-Type: application/json",
        ) from None


async def _api_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _http_error(_: Request, exc: Exception) -> Response:
    from starlette.exceptions import HTTPException

    assert isinstance(exc, HTTPException)
    what = {
        404: "see /openapi.json for the endpoints",
        405: "see /openapi.json for the methods each endpoint takes",
    }
    problem = Problem(str(exc.detail), what.get(exc.status_code, "see /openapi.json"))
    return json_response(problem, exc.status_code, dict(exc.headers or {}))


async def _internal(request: Request, exc: Exception) -> Response:
    """A bug: the client learns only that it happened; the server's log gets the trace."""
    print(
        f"ember serve: internal error on {request.method} {request.url.path}:\n"
        + "".join(traceback.format_exception(exc)),
        file=sys.stderr,
        flush=True,
    )
    problem = Problem(
        "internal error: the server could not answer this request",
        "try again; if it persists, the server's log says what went wrong",
    )
    return json_response(problem, 500)


def exception_handlers() -> dict[Any, Any]:
    from starlette.exceptions import HTTPException

    return {ApiError: _api_error, HTTPException: _http_error, Exception: _internal}
