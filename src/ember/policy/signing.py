"""Signed checkpoints of the audit log, and its verification.

The signing key (Ed25519, `cryptography`) is created at first use in a file beside the journal
(`<db>.audit-key`, mode 0600; `EMBER_AUDIT_KEY` moves it) and never enters the database. A
checkpoint signs the chain head (entry seq and its hash); it is stored in the database and, the
latest one, in `<key>.checkpoint` beside the key, so a log cut short after a checkpoint, or
rewritten with fresh hashes from some entry on, no longer matches a signature. Export the public
half (`ember audit key`) to verify elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ember.errors import UserError
from ember.journal.audit import Break, canonical, verify_chain
from ember.journal.control import Checkpoint, ControlRows

__all__ = ["AuditSigner", "Verification", "load_public_key", "verify_audit"]


def _message(seq: int, head: bytes, at: float, key_id: str) -> bytes:
    return canonical(
        {"seq": seq, "head": head.hex(), "at_us": round(at * 1_000_000), "key_id": key_id}
    )


def _key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def _load(path: Path) -> Ed25519PrivateKey:
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(loaded, Ed25519PrivateKey):
        raise UserError(f"{path} is not an Ed25519 private key")
    return loaded


def _create(path: Path) -> Ed25519PrivateKey:
    """A new key at `path` (0600), whole when it appears there; if another process (workers
    started at once) put one there first, that one."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    try:
        os.link(draft, path)  # fails if the key exists: never two keys, never half a file
    except FileExistsError:
        return _load(path)
    finally:
        draft.unlink()
    return key


class AuditSigner:
    """Signs checkpoints with the key at `path` (created there, 0600, if it does not exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key = _load(path) if path.exists() else _create(path)
        self.public = self._key.public_key()
        self.key_id = _key_id(self.public)

    def public_pem(self) -> str:
        return self.public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()

    def checkpoint(self, store: ControlRows) -> Checkpoint | None:
        """Sign the chain head, unless a checkpoint already vouches for it; None then."""
        head = store.head()
        if head is None:
            return None
        seq, digest = head
        latest = store.checkpoints()
        if latest and latest[-1].seq >= seq:
            return None
        at = time.time()
        signature = self._key.sign(_message(seq, digest, at, self.key_id))
        made = Checkpoint(seq, digest, at, self.key_id, signature)
        store.add_checkpoint(made)
        outside = self.path.with_name(self.path.name + ".checkpoint")
        temporary = outside.with_suffix(".tmp")
        temporary.write_text(json.dumps(_checkpoint_json(made)))
        temporary.replace(outside)
        return made


def _checkpoint_json(checkpoint: Checkpoint) -> dict[str, object]:
    data: dict[str, object] = msgspec.to_builtins(checkpoint)
    data["head"], data["signature"] = checkpoint.head.hex(), checkpoint.signature.hex()
    return data


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The public key in `path`: a public key PEM, or the private key file itself."""
    data = path.read_bytes()
    try:
        if b"PRIVATE KEY" in data:
            private = serialization.load_pem_private_key(data, password=None)
            assert isinstance(private, Ed25519PrivateKey)
            return private.public_key()
        public = serialization.load_pem_public_key(data)
    except (ValueError, AssertionError) as exc:
        raise UserError(f"{path} holds no Ed25519 key: {exc}") from None
    if not isinstance(public, Ed25519PublicKey):
        raise UserError(f"{path} is not an Ed25519 public key")
    return public


class Verification(msgspec.Struct, frozen=True):
    """What `ember audit verify` found: entries read, checkpoints checked, the first break."""

    entries: int
    checkpoints: int
    broken: Break | None


def verify_audit(
    store: ControlRows, public: Ed25519PublicKey | None, outside: Path | None = None
) -> Verification:
    """Check the chain and every checkpoint (in the database, and the one in `outside`)."""
    checkpoints = store.checkpoints()
    if outside is not None and outside.exists():
        data = json.loads(outside.read_text())
        checkpoints.append(
            Checkpoint(
                data["seq"],
                bytes.fromhex(data["head"]),
                data["at"],
                data["key_id"],
                bytes.fromhex(data["signature"]),
            )
        )
    heads: dict[int, bytes] = {}
    for checkpoint in checkpoints:
        if public is not None:
            message = _message(checkpoint.seq, checkpoint.head, checkpoint.at, checkpoint.key_id)
            try:
                public.verify(checkpoint.signature, message)
            except InvalidSignature:
                problem = "is vouched for by a checkpoint whose signature does not verify"
                return Verification(0, len(checkpoints), Break(checkpoint.seq, problem))
        heads[checkpoint.seq] = checkpoint.head
    rows = list(store.audit())
    return Verification(len(rows), len(checkpoints), verify_chain(rows, heads))
