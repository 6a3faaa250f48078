"""PII in the formats real traffic carries, which redaction had never been shown: US SSNs, UK
National Insurance numbers, credentials pasted into a query (AWS key ids, JWTs,
bearer tokens, GitHub/Slack/Stripe/OpenAI keys, ``password=…``), URL-encoded emails and
phones (``%40``, ``%2B``) and bracketed "name [at] example [dot] com". Each case is a text as
it was found in a query, a ticket or a chat turn; the import tests store real files and look
in every table a value could reach.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.ingest.redact import make_redactor, redact_text
from goldmine.store import open_store

from helpers import write_jsonl

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


def redacted(text: str) -> str:
    return redact_text(duckdb.connect(), text, make_redactor(True, handles=True))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my ssn 123-45-6789 please", "my ssn <SSN> please"),
        ("123-45-6789", "<SSN>"),
        ("SSN: 078051120.", "SSN: <SSN>."),
        ("social security number 219 09 9999", "social security number <SSN>"),
        ("NI number AB 12 34 56 C", "NI number <NINO>"),
        ("nino=AB123456C&x=1", "nino=<NINO>&x=1"),
        ("my ni number is ab123456c", "my ni number is <NINO>"),
        ("key AKIAIOSFODNN7EXAMPLE denied", "key <SECRET> denied"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer <SECRET>"),
        (f'{{"token":"{JWT}"}}', '{"token":"<SECRET>"}'),
        ("bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0 rejected", "bearer <SECRET> rejected"),
        ("ghp_1234567890abcdefghijABCDEFGHIJ123456 leaked", "<SECRET> leaked"),
        ("xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "<SECRET>"),
        ("api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dc", "api_key=<SECRET>"),
        ("why does sk-proj-abcdefghijklmnopqrstuvwxyz0123 fail", "why does <SECRET> fail"),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv maps", "<SECRET> maps"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA== 401", "Authorization: Basic <SECRET> 401"),
        ("login with password=hunter2! fails", "login with password=<SECRET> fails"),
        ("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "aws_secret_access_key: <SECRET>"),
        ("login jane%40example.net fails", "login <EMAIL> fails"),
        ("https://x.example/?email=jane.doe%2Bnews%40mail.example.org&a=1",
         "https://x.example/?email=<EMAIL>&a=1"),
        ("https://x.example/?phone=%2B447911123456", "https://x.example/?phone=<PHONE>"),
        ("call me (+44 7911 123456) today", "call me (<PHONE>) today"),
        ("(+447911123456)", "(<PHONE>)"),
        ("tel. (%2B447911123456)", "tel. (<PHONE>)"),
        ("chat on https://wa.me/14155552671?text=hi", "chat on https://wa.me/<PHONE>?text=hi"),
        ("write jane.doe [at] example [dot] com", "write <EMAIL>"),
        # typed with a CJK input method (fullwidth), and French typography's thin spaces
        ("電話 ０９０-１２３４-５６７８ まで", "電話 <PHONE> まで"),
        ("call ＋４４ ７９１１ １２３４５６", "call <PHONE>"),
        ("メール jane＠example.com", "メール <EMAIL>"),
        ("appelez le 06\u202f12\u202f34\u202f56\u202f78", "appelez le <PHONE>"),
        ("call +44\u20097911\u2009123456", "call <PHONE>"),
        ("jane(at)example.co.uk?", "<EMAIL>?"),
    ],
)  # fmt: skip
def test_pii_from_the_wild_is_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ISBN 978-0-306-40615-7",
        "part 123-45-678",
        "room 000-12-3456",
        "token expired after login",
        "password reset link not working",
        "password: forgotten",
        "mac address of my router",
        "sk-ii-facial-treatment-essence-230ml",
        "bearer authentication-required-error",
        "basic dGVzdGluZw== means testing",
        "basic information about accounts",
        "primary key: user_id",
        "shortcut key: ctrl+shift+t",
        "bearer of bad news",
        "AB123456 is my order",
        "http://usgovinfo.about.com/library/weekly/aa081600a.htm",
        "meet (at) noon",
        # A device's MAC is left, as the labelled sets' look-alikes have it.
        "router mac 00:1A:2B:3C:4D:5E drops",
        "price 12:30:45:00",
        "100%40 off",
        "ｉＰｈｏｎｅ１５ ケース",
        "２０２４年１２月３１日",
        # ZIP+4 codes are not phone numbers (78701-4512 is a French mobile without its 0)
        "ship to Austin, TX 78701-4512",
        "zip 94103-1234",
        "card 4111 1111\n1111 1112",
        "lines 4111 1111\n2024 0101",
        "ratio 1920 / 1080 px",
        "-----BEGIN PRIVATE KEY----- header: what does it mean",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2\n-----END CERTIFICATE-----",
        "http://localhost:8080/search?q=x",
        "see https://docs.example.com:443/a@b",
        "sk-admin panel login",
        "ext. 12 is the sales desk",
        "meet jane @ home.com",
        "ping me @ noon.today",
        "hf_hub_download fails offline",
        "SG.1 sales report",
        "time 12:30:AA",
    ],
)
def test_look_alikes_of_the_new_types_are_left_alone(text):
    assert redacted(text) == text


SSN, AKIA, ENC = "123-45-6789", "AKIAIOSFODNN7EXAMPLE", "jane%40example.net"
NEEDLES = (SSN, AKIA, ENC, JWT[:20], "wJalrXUtnFEMI")


def _leaks(db: Path, needles: tuple[str, ...] = NEEDLES) -> list[str]:
    """Every text value of every table holding a needle, as table.column: value."""
    found = []
    with open_store(db) as con:
        columns = con.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns "
            "WHERE table_catalog = current_database()"
        ).fetchall()
        for schema, table, column in columns:
            values = con.execute(
                f'SELECT DISTINCT CAST("{column}" AS VARCHAR) FROM "{schema}"."{table}"'
            ).fetchall()
            found += [
                f"{table}.{column}: {v}"
                for (v,) in values
                if v is not None and any(n.lower() in v.lower() for n in needles)
            ]
    return found


def test_credentials_and_ids_reach_no_table_of_a_redacted_import(tmp_path, db_path):
    """A search log (JSONL, CSV), tickets and chat holding them in the query, an extra field,
    a body, a turn and a rejected line's raw text: no table keeps one."""
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": "e1", "ts": "2026-11-16T07:08:28Z", "session_id": "s1", "user_id": "u1",
         "query": f"Bearer {JWT} fails", "referrer": f"https://x.example/?e={ENC}&k={AKIA}"},
        {"event_id": "e2", "ts": "2026-11-16T07:09:28Z", "session_id": "s2", "user_id": "u2",
         "query": f"my ssn {SSN}"},
        {"event_id": "e3", "ts": f"yesterday {SSN}", "query": f"login {ENC}"},
    ])  # fmt: skip
    with (tmp_path / "log.csv").open("w", newline="") as out:
        csv.writer(out).writerows([
            ["event_id", "ts", "query", "num_results", "note"],
            ["c1", "2026-11-16T07:08:28Z", f"key {AKIA}", "1", "aws_secret_access_key="
             "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
            ["c2", "2026-11-16T07:08:28Z", f"ssn {SSN}", "not a number", ""],
        ])  # fmt: skip
    tickets = tmp_path / "tickets.json"
    tickets.write_text(json.dumps({"tickets": [
        {"id": 1, "created_at": "2026-11-24T12:46:49Z", "subject": "Why is my key refused?",
         "description": f"My SSN is {SSN}. Token {AKIA}, login {ENC}", "custom": {"jwt": JWT}},
    ]}))  # fmt: skip
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"conversation_id": "c1", "turn": 0, "role": "user", "ts": "2026-11-24T16:13:29Z",
         "text": f"api key {AKIA} and jwt {JWT} leak? my ssn {SSN}"},
    ])  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [log, tmp_path / "log.csv"], redact=True)
        api.tickets(con, [tickets])
        api.chat(con, [chat])
    assert _leaks(db_path) == []


def test_a_chat_conversation_id_that_is_an_email_is_not_stored(tmp_path, db_path):
    email = "jane.roe@mail.example.org"
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"conversation_id": email, "turn": 0, "role": "user", "text": "where is my parcel?",
         "ts": "2026-11-24T16:13:29Z"},
        {"conversation_id": email, "turn": 1, "role": "assistant", "text": "It ships today.",
         "ts": "2026-11-24T16:13:49Z"},
    ])  # fmt: skip
    with open_store(db_path) as con:
        api.chat(con, [chat])
        stored = con.execute("SELECT DISTINCT conversation_id FROM chat_turns").fetchall()
    assert len(stored) == 1 and stored[0][0].startswith("<EMAIL>~")


def test_ids_holding_an_encoded_email_or_a_token_are_not_stored(tmp_path, db_path):
    """A session id that is the user's JWT (a replayable credential) and a user id taken from
    a URL (``jane%40example.net``)."""
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": "e1", "ts": "2026-11-16T07:08:28Z", "session_id": JWT, "user_id": ENC,
         "query": "refund"},
        {"event_id": "e2", "ts": "2026-11-16T07:09:28Z", "session_id": JWT, "user_id": AKIA,
         "query": "refund policy"},
    ])  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [log], redact=True)
        sessions = con.execute("SELECT DISTINCT session_id FROM search_events").fetchall()
    assert _leaks(db_path) == []
    assert len(sessions) == 1 and sessions[0][0].startswith("<SECRET>~")


@pytest.mark.parametrize(
    "user",
    ["amara.okafor [at] proton [dot] me", "lucas.silva(at)uol(dot)com(dot)br",
     "chen_li AT qq DOT com", "kenji.tanaka\uff20docomo.ne.jp", "PAN ABCPE1234F"],
)  # fmt: skip
def test_ids_spelling_an_email_out_are_checked_as_text_is(tmp_path, db_path, user):
    """A query "amara.okafor [at] proton [dot] me" was redacted; the same as a user or a
    session id was stored as written: the ids' cheaper first test let it through."""
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": "e1", "ts": "2026-11-16T07:08:28Z", "session_id": user, "user_id": user,
         "query": "refund"},
    ])  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [log], redact=True)
        (session, stored_user) = con.execute(
            "SELECT session_id, user_id FROM search_events"
        ).fetchall()[0]
    for value in (session, stored_user):
        assert "<" in value and user not in value and "ABCPE1234F" not in value, value


PEM_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"
)


# Formats a hostile week's traffic wrote that redaction had not met; each case was stored whole
# (or its secret part kept) before.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a card number wrapped by a chat client or a ticket form, or pasted with no-break spaces
        ("card 4111 1111\n1111 1111 declined", "card <CARD> declined"),
        ("card: 5500 0000 \n 0000 0004", "card: <CARD>"),
        ("card 4111-1111-\r\n1111-1111", "card <CARD>"),
        ("amex 3782 822463\n10005 refused", "amex <CARD> refused"),
        ("card 4111\u00a01111\u00a01111\u00a01111", "card <CARD>"),
        # a phone's extension goes with it; German " / " between the area code and the number
        ("call (555) 010-4477 ext. 12", "call <PHONE>"),
        ("call +1 415 555 2671 x 204 today", "call <PHONE> today"),
        ("fax 020 7946 0958 ext 221", "fax <PHONE>"),
        ("tel:+1-415-555-2671;ext=12", "tel:<PHONE>"),
        ("ruf 030 / 123 456 an", "ruf <PHONE> an"),
        ("ruf +49 (0) 30 / 123 456", "ruf <PHONE>"),
        ("ruf 0049-30-123456", "ruf <PHONE>"),
        # a US SSN after "ssn to"
        ("change my ssn to 219099999", "change my ssn to <SSN>"),
        # emails: a quoted local part, one encoded inside an encoded URL, UTF-8 percent-encoded
        ('mail "jane doe"@example.org please', "mail <EMAIL> please"),
        ("login?next=%2Faccount%3Femail%3Djane%40example.com",
         "login?next=%2Faccount%3Femail%3D<EMAIL>"),
        ("login?next=%2Faccount%3Femail%3Djane%2540example.com",
         "login?next=%2Faccount%3Femail%3D<EMAIL>"),
        ("?e=j%C3%BCrgen%40m%C3%BCller.de&x=1", "?e=<EMAIL>&x=1"),
        # credentials: newer OpenAI keys, PEM private keys, the password of a connection string
        ("why does sk-svcacct-Ab3dE6fG9hJ2kL5mN8pQ1rS4tU7vW0xY fail", "why does <SECRET> fail"),
        ("key sk-admin-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 revoked", "key <SECRET> revoked"),
        (f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n what now",
         "<SECRET>\n what now"),
        ("-----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA7bq2 -----END RSA PRIVATE KEY-----",
         "<SECRET>"),
        ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0\\n'
         '-----END PRIVATE KEY-----\\n",', '"private_key": "<SECRET>\\n",'),
        (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}", "<SECRET>"),
        ("connect postgres://user:hunter2@localhost/db fails",
         "connect postgres://user:<SECRET>@localhost/db fails"),
        ("DATABASE_URL=postgres://admin:s3cr3tPass@db.example.com:5432/prod",
         "DATABASE_URL=postgres://admin:<SECRET>@db.example.com:5432/prod"),
        ("mysql://root:password@127.0.0.1:3306/shop", "mysql://root:<SECRET>@127.0.0.1:3306/shop"),
        ("redis://:p4ssw0rd@cache.internal:6379/0", "redis://:<SECRET>@cache.internal:6379/0"),
        ("mongodb+srv://app:Xk8%40mPq@cluster0.ab1cd.mongodb.net/test",
         "mongodb+srv://app:<SECRET>@cluster0.ab1cd.mongodb.net/test"),
    ],
)  # fmt: skip
def test_formats_of_a_hostile_week_are_redacted(text, expected):
    assert redacted(text) == expected


# More of the same week: an email typed with a space beside its @ (a phone keyboard's
# autocompletion), an SSN written with dots, and the credentials of other services.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe @gmail.com please", "mail <EMAIL> please"),
        ("write to jsmith82 @ yahoo.co.uk", "write to <EMAIL>"),
        ("ssn 123.45.6789", "ssn <SSN>"),
        # an IBAN wrapped onto a second line in a ticket's body
        ("IBAN DE89 3704 0044\n0532 0130 00\nDanke", "IBAN <IBAN>\nDanke"),
        ("Konto:\nDE89 3704 0044 0532\r\n0130 00 bitte", "Konto:\n<IBAN> bitte"),
        ("token glpat-xYz12AbCdEfGhIjKlMn3 expired", "token <SECRET> expired"),
        ("npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 leaked", "<SECRET> leaked"),
        ("HF_TOKEN hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "HF_TOKEN <SECRET>"),
        ("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 fails",
         "<SECRET> fails"),
        ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw not answering",
         "bot <SECRET> not answering"),
        ("webhook https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Xk9p2QwErTyUiOp3AsDfGhJk",
         "webhook https://hooks.slack.com/services/<SECRET>"),
        ("https://discord.com/api/webhooks/123456789012345678/AbCdEf-GhIjKlMnOpQrStUvWxYz0123456789"
         "_abcdefghijklmnopqrstuvwxyzAB 404", "https://discord.com/api/webhooks/<SECRET> 404"),
    ],
)  # fmt: skip
def test_more_of_the_week_is_redacted(text, expected):
    assert redacted(text) == expected


# A third hostile week: an address followed by a colon, a card number right after a short
# number (a date's day, "#1"), and what an order's or an invoice's number is said beside.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Blocked from 2a02:1205:c6a1:2010:6d3e:7b5a:9d12:4c01: Can you unblock me?",
         "Blocked from <IPV6>: Can you unblock me?"),
        ("from 2a00:1450:4009:81f::200e: still blocked", "from <IPV6>: still blocked"),
        ("On Mon, Nov 2 4111 1111 1111 1111 wrote:", "On Mon, Nov 2 <CARD> wrote:"),
        ("#1 4111 1111 1111 1111", "#1 <CARD>"),
        ("Card 2 4111-1111-1111-1111 expired", "Card 2 <CARD> expired"),
    ],
)  # fmt: skip
def test_a_third_weeks_formats_are_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    ["order number 9876543210", "order no. 9876543210", "tracking number 9876543211",
     "invoice number 4155552680", "order 2 4111 1111 1111 1112"],
)  # fmt: skip
def test_an_orders_number_stays(text):
    assert redacted(text) == text


@pytest.mark.parametrize(
    "text",
    ["where is ORD-2024-884213", "SO-2024-000123 not shipped", "PRJ-2024-884213-A budget",
     "INV-0171-1234567 unpaid"],
)  # fmt: skip
def test_a_code_whose_digits_follow_a_word_and_a_dash_stays(text):
    """An order's or a project's code ("ORD-2024-884213") is one word, its digits joined to
    letters by a dash, as a card's digits are never taken there: "2024-884213" is a valid
    number of one of the regions, and the code became "ORD-<PHONE>"."""
    assert redacted(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("hotline: +49 30 1234567", "hotline: <PHONE>"), ("Tel.: -0171 1234567", "Tel.: -<PHONE>"),
     ("Tel.-Nr. 030 12345678", "Tel.-Nr. <PHONE>"), ("tel:-+4930123456", "tel:-<PHONE>")],
)  # fmt: skip
def test_a_phone_after_a_dash_that_joins_no_word_is_still_found(text, expected):
    assert redacted(text) == expected


def test_the_weeks_formats_reach_no_table_of_a_redacted_import(tmp_path, db_path):
    """Where a wrapped card and a PEM key really come: a ticket's body and a chat turn of
    several lines, and a CSV search log whose quoted query holds a line break."""
    card, password = "4111 1111\n1111 1111", "s3cr3tPass"
    pem = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----"
    tickets = tmp_path / "tickets.json"
    tickets.write_text(json.dumps({"tickets": [
        {"id": 1, "created_at": "2026-11-24T12:46:49Z", "subject": "Why is my key refused?",
         "description": f"My card:\n{card}\nkey:\n{pem}\n"
                        f"DATABASE_URL=postgres://app:{password}@db.example.com/prod"},
    ]}))  # fmt: skip
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"conversation_id": "c1", "turn": 0, "role": "user", "ts": "2026-11-24T16:13:29Z",
         "text": f"card\n{card}\nmail jane.doe @gmail.com or call (415) 555-2671 ext. 12"},
    ])  # fmt: skip
    with (tmp_path / "log.csv").open("w", newline="") as out:
        csv.writer(out).writerows([
            ["event_id", "ts", "query"],
            ["c1", "2026-11-16T07:08:28Z", f"refund to card {card}"],
            ["c2", "2026-11-16T07:09:28Z", f"mysql://root:{password}@10.1.2.3/shop down"],
        ])  # fmt: skip
    with open_store(db_path) as con:
        api.tickets(con, [tickets])
        api.chat(con, [chat])
        api.searchlog(con, [tmp_path / "log.csv"], redact=True)
        stored = [
            con.execute("SELECT body FROM tickets").fetchall(),
            con.execute("SELECT text FROM chat_turns").fetchall(),
            con.execute("SELECT query FROM search_events ORDER BY event_id").fetchall(),
        ]
    body = (
        "My card:\n<CARD>\nkey:\n<SECRET>\nDATABASE_URL=postgres://app:<SECRET>@db.example.com/prod"
    )
    assert stored == [
        [(body,)],
        [("card\n<CARD>\nmail <EMAIL> or call <PHONE>",)],
        [("refund to card <CARD>",), ("mysql://root:<SECRET>@<IPV4>/shop down",)],
    ]
    needles = ("4111 1111", password, "MIIEvQIBADANBgkq", "jane.doe", "555-2671", "ext. 12")
    assert _leaks(db_path, needles) == []


def test_ids_holding_the_newer_tokens_reach_the_checks(tmp_path, db_path):
    """An id column passes a cheap test before the checks (batch._ID_MAY_MATCH): it knew the
    older credential prefixes only, so a GitLab, npm, Hugging Face or SendGrid token, or an email
    encoded twice (``%2540``), used as a user or session id was stored as it was."""
    tokens = ["glpat-xR4mP9qLw2ZtY7nB3vKd", "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
              "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "jane%2540example.net"]  # fmt: skip
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": f"e{i}", "ts": "2026-11-16T07:08:28Z", "session_id": t, "user_id": t,
         "query": "refund"} for i, t in enumerate(tokens)])  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [log], redact=True)
        stored = con.execute("SELECT session_id, user_id FROM search_events").fetchall()
    kept = [v for row in stored for v in row if any(t in (v or "") for t in tokens)]
    assert kept == [], stored


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"phone":"4155552671"}', '{"phone":"<PHONE>"}'),
        ('{"phone":4155552671}', '{"phone":"<PHONE>"}'),
        ('{"SSN":"219099999"}', '{"SSN":"<SSN>"}'),
        ('{"note":"order number 9876543210"}', '{"note":"order number 9876543210"}'),
        (r"my password is Tr0ub\4dor&3", "my password is <SECRET>"),
        (r"DB_PASSWORD=pa\ss\word99", "DB_PASSWORD=<SECRET>"),
    ],
)
def test_json_values_are_read_with_their_keys_and_text_keeps_its_backslashes(text, expected):
    """Read value by value, a JSON extra lost the key that said what a number is ("phone"); a
    secret holding a backslash in plain text was left whole."""
    assert redacted(text) == expected


def test_json_nested_past_the_recursion_limit_is_read_as_text():
    text = "[" * 3000 + '"a@b.com"' + "]" * 3000
    assert "<EMAIL>" in redacted(text)
