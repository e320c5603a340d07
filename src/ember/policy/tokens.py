"""Tokens: random secrets that stand for a principal. Only a SHA-256 of each is stored.

A token is 32 random bytes (`ember_` + URL-safe base64), so a plain SHA-256 is a safe digest
(no dictionary to guess from; a slow hash would only slow every request). `authenticate` hashes
what it is given and looks the digest up: the lookup's time depends on the digest, which an
attacker cannot steer towards a real one, not on how much of a token was right; the found
digest is compared again in constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from ember.errors import AuthenticationError, UserError
from ember.journal.control import ControlRows, TokenRecord

__all__ = ["authenticate", "bearer", "check_name", "new_token", "token_digest"]

_PREFIX = "ember_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_HOW = "create one with `ember tokens create NAME` and send it as `Authorization: Bearer TOKEN`"


def new_token() -> str:
    """A fresh random token (shown once, never stored)."""
    return _PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: str, what: str = "principal") -> str:
    """`name` if it can name a principal or role; else a UserError that says what can."""
    if not _NAME.match(name):
        raise UserError(
            f"{what} name {name!r} is not allowed: 1-64 letters, digits and _ . @ -, "
            "starting with a letter or digit"
        )
    return name


def bearer(header: str | None) -> str:
    """The token of an `Authorization: Bearer TOKEN` header; AuthenticationError if none."""
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError(f"no bearer token: {_HOW}")
    return token.strip()


def authenticate(store: ControlRows, token: str) -> TokenRecord:
    """The live token record `token` stands for; AuthenticationError if none (unknown or
    revoked: the message does not say which of the two for an unknown one)."""
    digest = token_digest(token)
    record = store.token_by_hash(digest)
    if record is None or not hmac.compare_digest(record.hash, digest):
        raise AuthenticationError(f"the token is not valid: {_HOW}")
    if record.revoked_at is not None:
        raise AuthenticationError(
            f"the token of {record.name} was revoked: ask for a new one "
            f"(`ember tokens create {record.name}`)"
        )
    return record
