"""The mail pack: send mail over SMTP, or into a local Maildir outbox when no server is set.

```toml
[packs.mail]
host = "smtp.example.com"     # none: mail goes to the Maildir `outbox` instead
port = 587                    # default by security: starttls 587, tls 465, none 25
security = "starttls"         # "starttls", "tls" (implicit TLS) or "none"
username = "ember"            # password: `password`, else $EMBER_SMTP_PASSWORD
sender = "ember@example.com"
ca_file = "/etc/ssl/our-ca.pem" # trust a private CA too (default: the system's)
approval_over = 10            # a mail_merge to more recipients waits for an approval
```

Each message's Message-ID is the step's idempotency key, and a log of sent Message-IDs (beside
the outbox) is checked before sending, so a resumed run never sends a mail twice: a step
re-dispatched after a crash finds its mail sent and returns the first result. The one window
left is a crash after the server accepted the message and before the log recorded it; the mail
is then sent again with the same Message-ID, by which mail stores and readers drop duplicates.
"""

from __future__ import annotations

import contextlib
import os
import re
import smtplib
import sqlite3
import ssl
import threading
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Annotated, Any, TypedDict

import msgspec

from ember.config import MailPack
from ember.errors import ToolCallError, UserError
from ember.tools.decorator import ToolFunction, tool
from ember.tools.packs.files import atomic_write

__all__ = ["MailTools"]

ADDRESS_PATTERN = r"^[^@\s,]+@[^@\s,]+$"
ADDRESS = re.compile(ADDRESS_PATTERN)
Address = Annotated[str, msgspec.Meta(pattern=ADDRESS_PATTERN)]
PORTS = {"starttls": 587, "tls": 465, "none": 25}


class Sent(TypedDict):
    message_id: str
    delivered_to: str
    repeated: bool


class Alert(TypedDict):
    sent: bool
    message_id: str | None


class Merge(TypedDict):
    sent: int
    message_ids: list[str]
    recipients: list[str]


class MailTools:
    """The mail pack's tools over one configuration."""

    def __init__(self, config: MailPack, default_outbox: Path) -> None:
        self.config = config
        self.outbox = Path(config.outbox) if config.outbox else default_outbox
        for sub in ("tmp", "new", "cur"):
            (self.outbox / sub).mkdir(parents=True, exist_ok=True)
        self.log = SentLog(self.outbox / ".ember-sent.sqlite")
        self.password = config.password or os.environ.get("EMBER_SMTP_PASSWORD")
        if config.host and config.username and not self.password:
            raise UserError(
                f"[packs.mail] logs in to {config.host} as {config.username} but has no "
                "password: set `password` or $EMBER_SMTP_PASSWORD"
            )

    def tools(self) -> list[ToolFunction]:
        return [self.mail_send, self.mail_alert, self.mail_merge]

    def approval_when(self, args: Mapping[str, Any]) -> bool:
        """A mail_merge to more than `approval_over` recipients waits for approval."""
        return len(args.get("rows", ())) > self.config.approval_over

    @tool(idempotent=True, read_only=False)
    def mail_send(self, to: Address, subject: str, body: str, idempotency_key: str = "") -> Sent:
        """Send one plain-text email (by SMTP, or into the outbox when no server is set).

        Args:
            to: The recipient's address.
            subject: The subject line.
            body: The message text.
        """
        return self._send("mail_send", to, subject, body, message_id(idempotency_key))

    @tool(idempotent=True, read_only=False)
    def mail_alert(
        self,
        *,
        value: float,
        threshold: float,
        to: Address,
        subject: str,
        body: str,
        previous: float | None = None,
        idempotency_key: str = "",
    ) -> Alert:
        """Send an alert email when a reading crosses a threshold: `value` is above it and
        `previous` (the reading before, if any) was not. Otherwise send nothing.

        Args:
            value: The latest reading.
            threshold: The limit; above it is an alarm.
            to: Who gets the alert.
            subject: The alert's subject.
            body: The alert's text.
            previous: The reading before this one (omit for the first).
        """
        if value <= threshold or (previous is not None and previous > threshold):
            return {"sent": False, "message_id": None}
        sent = self._send("mail_alert", to, subject, body, message_id(idempotency_key))
        return {"sent": True, "message_id": sent["message_id"]}

    @tool(idempotent=True, read_only=False)
    def mail_merge(
        self,
        *,
        columns: list[str],
        rows: list[list[Any]],
        subject: str,
        body: str,
        to_column: str = "email",
        idempotency_key: str = "",
    ) -> Merge:
        """Send one personalised email per row (the rows of sql_query, say): `{column}` in the
        subject and body is replaced by the row's value. More rows than the pack's
        approval_over: the step waits for a person's approval first.

        Args:
            columns: The rows' column names.
            rows: One list of values per recipient.
            subject: Subject template, e.g. "Your {plan} renewal".
            body: Body template, e.g. "Dear {name}, ...".
            to_column: The column holding the address.
        """
        if to_column not in columns:
            raise ToolCallError(
                "mail_merge", f"no column {to_column!r} for the address; columns: {columns}"
            )
        mails = []  # every row checked before the first mail goes: none or all are sent
        for index, values in enumerate(rows):
            if len(values) != len(columns):
                raise ToolCallError(
                    "mail_merge",
                    f"row {index} has {len(values)} values for {len(columns)} columns "
                    f"{columns}: pass the columns of the rows (sql_query's `columns`)",
                )
            fields = dict(zip(columns, values, strict=True))
            to = str(fields[to_column]).strip()  # CHAR(n) columns come padded
            if not ADDRESS.fullmatch(to):
                raise ToolCallError(
                    "mail_merge",
                    f"row {index}: column {to_column!r} holds {to!r}, not an email address; "
                    "nothing was sent",
                )
            mails.append((to, _fill(subject, fields), _fill(body, fields)))
        result: Merge = {"sent": 0, "message_ids": [], "recipients": []}
        for index, (to, subject_text, body_text) in enumerate(mails):
            msgid = message_id(idempotency_key, index)
            sent = self._send("mail_merge", to, subject_text, body_text, msgid)
            result["sent"] += 1
            result["message_ids"].append(sent["message_id"])
            result["recipients"].append(to)
        return result

    def _send(self, tool: str, to: str, subject: str, body: str, msgid: str) -> Sent:
        where = f"smtp://{self.config.host}" if self.config.host else str(self.outbox)
        if self.log.sent(msgid):
            return {"message_id": msgid, "delivered_to": where, "repeated": True}
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = self.config.sender, to, subject
        message["Message-ID"], message["Date"] = msgid, formatdate(localtime=True)
        message.set_content(body)
        self.log.mark(msgid, to, "sending")
        if self.config.host:
            self._smtp(tool, message)
        else:
            self._maildir(message, msgid)
        self.log.mark(msgid, to, "sent")
        return {"message_id": msgid, "delivered_to": where, "repeated": False}

    def _smtp(self, tool: str, message: EmailMessage) -> None:
        config = self.config
        port = config.port or PORTS[config.security]
        context = ssl.create_default_context(cafile=config.ca_file)
        where = f"{config.host}:{port}"
        try:
            if config.security == "tls":
                client: smtplib.SMTP = smtplib.SMTP_SSL(
                    config.host or "", port, timeout=config.timeout_s, context=context
                )
            else:
                client = smtplib.SMTP(config.host or "", port, timeout=config.timeout_s)
            with client:
                if config.security == "starttls":
                    client.starttls(context=context)
                if config.username:
                    client.login(config.username, self.password or "")
                client.send_message(message)
        except smtplib.SMTPRecipientsRefused as exc:
            refused = "; ".join(f"{r}: {c} {m.decode(errors='replace')}"
                                for r, (c, m) in exc.recipients.items())  # fmt: skip
            raise ToolCallError(
                tool, f"{where} refused the recipient ({refused}); not sent"
            ) from None
        except smtplib.SMTPResponseException as exc:
            error = exc.smtp_error
            text = error.decode(errors="replace") if isinstance(error, bytes) else str(error)
            raise ToolCallError(
                tool, f"{where} refused the message: {exc.smtp_code} {text}; not sent"
            ) from None
        except (OSError, smtplib.SMTPException) as exc:
            raise ToolCallError(
                tool,
                f"cannot deliver through {where} ({type(exc).__name__}: {exc}): check "
                "[packs.mail] host, port and security",
                retryable=True,
            ) from None

    def _maildir(self, message: EmailMessage, msgid: str) -> None:
        name = msgid.strip("<>").replace("/", "_")
        if (self.outbox / "new" / name).exists() or list((self.outbox / "cur").glob(name + ":*")):
            return  # delivered before the log recorded it
        atomic_write(self.outbox / "tmp" / name, message.as_bytes())
        os.replace(self.outbox / "tmp" / name, self.outbox / "new" / name)


def message_id(idempotency_key: str, index: int | None = None) -> str:
    """The Message-ID of a step's mail: its idempotency key (`:` made `.`), plus the row."""
    if not idempotency_key:
        idempotency_key = "direct." + os.urandom(8).hex()  # called outside a run
    left = idempotency_key.replace(":", ".") + (f".{index}" if index is not None else "")
    return f"<{left}@ember>"


def _fill(template: str, fields: dict[str, Any]) -> str:
    try:
        return template.format_map(fields)
    except KeyError as exc:
        raise ToolCallError(
            "mail_merge",
            f"the template names {{{exc.args[0]}}}, which is not a column: "
            f"use one of {', '.join('{' + c + '}' for c in fields)}",
        ) from None
    except (ValueError, IndexError) as exc:
        raise ToolCallError("mail_merge", f"bad template {template!r}: {exc}") from None


class SentLog:
    """Message-IDs sent (or being sent), in a small SQLite file; safe across threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS sent(message_id TEXT PRIMARY KEY, recipient TEXT,"
                " state TEXT, at TEXT DEFAULT CURRENT_TIMESTAMP)"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def sent(self, msgid: str) -> bool:
        with self._lock, self._closing() as db:
            row = db.execute("SELECT state FROM sent WHERE message_id=?", (msgid,)).fetchone()
        return row is not None and row[0] == "sent"

    def mark(self, msgid: str, recipient: str, state: str) -> None:
        with self._lock, self._closing() as db:
            db.execute("PRAGMA synchronous=FULL")
            db.execute(
                "INSERT INTO sent(message_id, recipient, state) VALUES (?,?,?) ON CONFLICT"
                "(message_id) DO UPDATE SET state=excluded.state",
                (msgid, recipient, state),
            )

    def _closing(self) -> contextlib.closing[sqlite3.Connection]:
        return contextlib.closing(self._db())
