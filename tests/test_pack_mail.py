"""The mail pack against a real SMTP server on loopback (aiosmtpd), and into a Maildir."""

from __future__ import annotations

import mailbox
from pathlib import Path

import pytest

from ember.config import MailPack, Packs
from ember.errors import UserError
from ember.plan import Step
from ember.tools.packs.mail import MailTools

from .packs_support import SmtpSink, failure, packs_registry, recorded_steps


def smtp_pack(sink: SmtpSink, **more: object) -> MailPack:
    return MailPack(host="127.0.0.1", port=sink.port, security="none", **more)  # type: ignore[arg-type]


def test_the_idempotency_key_is_the_message_id_and_a_repeat_sends_nothing(
    tmp_path: Path,
) -> None:
    with SmtpSink() as sink:
        mail = MailTools(smtp_pack(sink, sender="ember@example.com"), tmp_path / "outbox")
        key = "r-1:3:abc"
        first = mail.mail_send("ann@example.com", "Hello", "Body text", idempotency_key=key)
        again = mail.mail_send("ann@example.com", "Hello", "Body text", idempotency_key=key)
    assert first == {"message_id": "<r-1.3.abc@ember>", "delivered_to": "smtp://127.0.0.1",
                     "repeated": False}  # fmt: skip
    assert again["repeated"]
    assert again["message_id"] == first["message_id"]
    assert sink.message_ids() == ["<r-1.3.abc@ember>"]
    message = sink.messages[0]
    assert (message["From"], message["To"], message["Subject"]) == (
        "ember@example.com",
        "ann@example.com",
        "Hello",
    )
    assert message.get_payload().strip() == "Body text"


def test_a_resumed_run_never_sends_twice(tmp_path: Path) -> None:
    """The step re-dispatched after a crash (same key) finds its mail in the sent log."""
    with SmtpSink() as sink:
        registry = packs_registry(Packs(mail=smtp_pack(sink)), tmp_path)
        steps = [Step(1, "mail_send", {"to": "bo@example.com", "subject": "s", "body": "b"})]
        done = recorded_steps(registry, steps, tmp_path / "run")[1]
        key = done.idempotency_key
        assert key is not None
        transport = registry.get("mail_send").transport
        import asyncio

        repeat = asyncio.run(transport.call("mail_send", done.step.args, idempotency_key=key))
    assert repeat.value["repeated"] is True
    assert sink.message_ids() == [done.result["message_id"]]


def test_refusals_and_a_dead_server_are_clear_errors_on_the_step(tmp_path: Path) -> None:
    with SmtpSink(refuse=("ghost@example.com",)) as sink:
        registry = packs_registry(Packs(mail=smtp_pack(sink)), tmp_path)
        args = {"to": "ghost@example.com", "subject": "s", "body": "b"}
        error = failure(registry, "mail_send", args, tmp_path / "1")
        assert "refused the recipient (ghost@example.com: 550 5.1.1 no such mailbox here)" in error
        assert "not sent" in error
        args = {"to": "ann@example.com", "subject": "REJECT me", "body": "b"}
        error = failure(registry, "mail_send", args, tmp_path / "2")
        assert "refused the message: 554 5.7.1 message refused by policy; not sent" in error
        assert sink.messages == []
        port = sink.port
    registry = packs_registry(Packs(mail=MailPack(host="127.0.0.1", port=port, security="none",
                                                  timeout_s=2)), tmp_path / "dead")  # fmt: skip
    error = failure(registry, "mail_send", {"to": "a@example.com", "subject": "s", "body": "b"},
                    tmp_path / "3")  # fmt: skip
    assert f"cannot deliver through 127.0.0.1:{port}" in error
    assert "check [packs.mail] host, port and security" in error


def test_starttls_with_login(tmp_path: Path) -> None:
    """STARTTLS and AUTH against aiosmtpd with a certificate made for the test."""
    import ssl

    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    logins: list[str] = []

    def authenticate(server: object, session: object, envelope: object, mechanism: str,
                     auth_data: object) -> object:  # fmt: skip
        from aiosmtpd.smtp import AuthResult, LoginPassword

        assert isinstance(auth_data, LoginPassword)
        logins.append(auth_data.login.decode())
        return AuthResult(success=auth_data.password == b"s3cret")

    sink = SmtpSink(tls_context=context, require_starttls=True, authenticator=authenticate,
                    auth_require_tls=True)  # fmt: skip
    with sink:
        config = MailPack(host="127.0.0.1", port=sink.port, security="starttls",
                          username="ember", password="s3cret", ca_file=str(cert))  # fmt: skip
        sent = MailTools(config, tmp_path / "outbox").mail_send(
            "ann@example.com", "Over TLS", "hi", idempotency_key="r-2:1:k"
        )
    assert logins == ["ember"]
    assert sink.message_ids() == [sent["message_id"]]


def test_without_a_server_mail_goes_to_a_maildir_once(tmp_path: Path) -> None:
    mail = MailTools(MailPack(), tmp_path / "outbox")
    for _ in range(2):
        mail.mail_send("cy@example.com", "Report", "Attached.", idempotency_key="r-3:2:k")
    box = mailbox.Maildir(tmp_path / "outbox", create=False)
    assert [m["Message-ID"] for m in box] == ["<r-3.2.k@ember>"]


def test_an_alert_is_sent_only_when_the_reading_crosses_the_threshold(tmp_path: Path) -> None:
    mail = MailTools(MailPack(), tmp_path / "outbox")
    args = {"threshold": 80.0, "to": "ops@example.com", "subject": "hot", "body": "too hot"}
    assert mail.mail_alert(value=79, previous=None, idempotency_key="a", **args)["sent"] is False
    assert mail.mail_alert(value=85, previous=80, idempotency_key="b", **args)["sent"] is True
    assert mail.mail_alert(value=90, previous=85, idempotency_key="c", **args)["sent"] is False
    assert mail.mail_alert(value=81, idempotency_key="d", **args)["sent"] is True
    assert len(list(mailbox.Maildir(tmp_path / "outbox", create=False))) == 2


def test_a_long_mail_merge_waits_for_approval_and_a_short_one_does_not(tmp_path: Path) -> None:
    registry = packs_registry(Packs(mail=MailPack(approval_over=2)), tmp_path)
    columns = ["name", "email"]
    rows = [[f"N{i}", f"n{i}@example.com"] for i in range(3)]
    merge = {"columns": columns, "subject": "Hi {name}", "body": "Dear {name}"}
    short = recorded_steps(registry, [Step(1, "mail_merge", {**merge, "rows": rows[:2]})],
                           tmp_path / "short")[1]  # fmt: skip
    assert short.status.value == "succeeded"
    assert short.result["recipients"] == ["n0@example.com", "n1@example.com"]
    long = recorded_steps(registry, [Step(1, "mail_merge", {**merge, "rows": rows})],
                          tmp_path / "long")[1]  # fmt: skip
    assert long.status.value == "awaiting_approval"
    assert len(list(mailbox.Maildir(tmp_path / "data" / "outbox", create=False))) == 2


def test_a_template_naming_a_missing_column_is_a_clear_error(tmp_path: Path) -> None:
    registry = packs_registry(Packs(mail=MailPack()), tmp_path)
    args = {"columns": ["email"], "rows": [["a@example.com"]], "subject": "Hi {name}", "body": "x"}
    error = failure(registry, "mail_merge", args, tmp_path / "run")
    assert "the template names {name}, which is not a column: use one of {email}" in error


def test_rows_that_do_not_fit_their_columns_send_nothing(tmp_path: Path) -> None:
    """What the 1.5B model once planned: four column names for rows of five values, which
    put a name where the address goes. Every row is checked before the first mail."""
    registry = packs_registry(Packs(mail=MailPack()), tmp_path)
    good, short = ["Ann", "ann@example.com"], ["Bob"]
    merge = {"columns": ["name", "email"], "subject": "Hi", "body": "Dear {name}"}
    error = failure(registry, "mail_merge", {**merge, "rows": [good, short]}, tmp_path / "a")
    assert "row 1 has 1 values for 2 columns ['name', 'email']" in error
    shifted = {**merge, "rows": [good, ["carl@example.com", "Carl"]]}
    error = failure(registry, "mail_merge", shifted, tmp_path / "b")
    assert "row 1: column 'email' holds 'Carl', not an email address; nothing was sent" in error
    assert not (tmp_path / "data" / "outbox").exists() or not list(
        mailbox.Maildir(tmp_path / "data" / "outbox", create=False)
    )


def test_a_login_without_a_password_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EMBER_SMTP_PASSWORD", raising=False)
    with pytest.raises(UserError, match=r"has no password: set `password` or \$EMBER_SMTP"):
        MailTools(MailPack(host="smtp.example.com", username="u"), tmp_path)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path
