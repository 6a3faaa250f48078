"""What a file holds never reaches the terminal through an error, nor a store past redaction.

Real files as the tools write them (a Zendesk export cut short, a chat export that is no JSON), a
real store, and the command's own stderr: DuckDB's JSON reader quotes the start of the text it
could not parse, which held the customer's address and key. Then the texts a probe found stored
as typed (credentials as tickets paste them, an escaped @, a number said to be a phone after
it) and the ones it found destroyed (a section number taken for an address), each through the
same SQL an import runs (``redact_text``).
"""

from __future__ import annotations

import json

import duckdb
import pytest

from goldmine.ingest.redact import make_redactor, redact_text

from helpers import run_cli

KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
EMAIL = "jane.doe@example.com"


def test_a_json_file_that_does_not_parse_is_named_without_its_text(tmp_path, db_path):
    ticket = {"id": 1, "subject": f"card declined {KEY}", "requester": {"email": EMAIL}}
    cut = json.dumps({"tickets": [ticket]})[:-10]  # a download that ended early
    (tmp_path / "tickets.json").write_text(cut)
    (tmp_path / "notes.json").write_text(f"from {EMAIL}: {KEY} is our key\n")
    for command, name in (("tickets", "tickets.json"), ("chat", "notes.json")):
        out = run_cli("--db", str(db_path), "ingest", command, str(tmp_path / name))
        assert out.returncode == 2, out.stderr
        assert "cannot read as json" in out.stderr and "byte" in out.stderr
        for secret in (KEY, "sk_live", "jane", "declined"):
            assert secret not in out.stderr, out.stderr


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DRF = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"


def redacted(text: str) -> str:
    return redact_text(duckdb.connect(), text, make_redactor(True))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an HTTP Authorization header's credential, whatever its scheme
        (f"Authorization: Token {DRF}", "Authorization: Token <SECRET>"),
        (f"curl -H 'authorization: token {DRF}' https://api.example.com",
         "curl -H 'authorization: token <SECRET>' https://api.example.com"),
        (f'"Authorization": "ApiKey {DRF}"', '"Authorization": "ApiKey <SECRET>"'),
        # a password used as the credential: its punctuation too (the "!" was left)
        ("Authorization: Bearer Summer2024!", "Authorization: Bearer <SECRET>"),
        # curl's user and password: the password
        ("curl -u admin:S3cretPass1 https://api.example.com",
         "curl -u admin:<SECRET> https://api.example.com"),
        ("curl --user 'bob:hunter22' https://x.example.com",
         "curl --user 'bob:<SECRET>' https://x.example.com"),
        # an AWS key pair pasted as the console shows it: the secret beside its key id
        (f"aws keys AKIAIOSFODNN7EXAMPLE / {AWS_SECRET} stopped working",
         "aws keys <SECRET> / <SECRET> stopped working"),
        (f"AKIAIOSFODNN7EXAMPLE,{AWS_SECRET}", "<SECRET>,<SECRET>"),
        # a key said in prose, as a password is
        (f"my api key is {DRF} and it fails", "my api key is <SECRET> and it fails"),
        (f"the token was {DRF}", "the token was <SECRET>"),
        # a password's value whole, quoted in JSON-like text
        ('"password": "Tr0ub4dor&3"', '"password": "<SECRET>"'),
        # a password named short, a signed URL's signature
        ("DB_PASS=hunter22", "DB_PASS=<SECRET>"),
        ("login?user=admin&pass=Secret123", "login?user=admin&pass=<SECRET>"),
        ("https://acct.blob.core.windows.net/c/f.txt?sv=2020-08-04&sig=AbCdEf1234567890%2BgH",
         "https://acct.blob.core.windows.net/c/f.txt?sv=2020-08-04&sig=<SECRET>"),
        ("f.pdf?X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c2",
         "f.pdf?X-Amz-Signature=<SECRET>"),
        # a password said in another language
        ("Passwort: Geheim123", "Passwort: <SECRET>"),
        ("mon mot de passe est Secret123", "mon mot de passe est <SECRET>"),
        ("contraseña: Secreto123", "contraseña: <SECRET>"),
        ("minha senha é Segredo123", "minha senha é <SECRET>"),
    ],
)  # fmt: skip
def test_credentials_as_tickets_paste_them_are_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer",
        "authorization: required for admin",
        "curl -u $USER:$PASS https://api.example.com",
        "the key is in the drawer",
        "token is expired",
        "bypass=enabled",
        "compass: 12 degrees",
        "signature=required",
        "Passwort vergessen",
        "mot de passe oublié",
        "AKIAIOSFODNN7EXAMPLE was rotated",
    ],
)
def test_their_look_alikes_stay(text):
    out = redacted(text)
    assert out.replace("<SECRET>", "AKIAIOSFODNN7EXAMPLE") == text, out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("k8s node 10.244.0.5 NotReady", "k8s node <IPV4> NotReady"),
        ("drain node 192.168.49.2 first", "drain node <IPV4> first"),
        ("android 14.0.0.1 crash", "android 14.0.0.1 crash"),  # a version, as before
    ],
)
def test_a_cluster_nodes_address_is_no_version(text, expected):
    """Node.js numbers its releases in three parts: a dotted quad after "node" is a machine's
    address (Kubernetes names its nodes so), and was kept as a version."""
    assert redacted(text) == expected


_HEX = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "key",
    [
        "shpat_" + _HEX[:32],  # Shopify admin API
        "shpss_" + _HEX[:32].upper(),
        "dop_v1_" + _HEX[:64],  # DigitalOcean
        "xapp-1-A0123456789-1234567890123-" + _HEX[:32],  # Slack app-level token
        "pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LTEyMzQtMTIzNC0xMjM0LTEyMzQ1Njc4OTAxMgAC",
        "ya29.a0AfH6SMBx1234567890abcdefghijKLMNOP_qrs-tuv",  # Google OAuth access token
        "ATATT3xFfGF0" + "Ab1_Cd2-" * 4,  # Atlassian API token
        "sq0atp-" + "A1b2C3d4E5f6G7h8I9j0K1",  # Square
        "dapi" + _HEX[:32],  # Databricks
        "PMAK-" + _HEX[:24] + "-" + _HEX[:34],  # Postman
        "lin_api_" + "aB3" * 13 + "x",  # Linear
        "gsk_" + "aB3" * 17,  # Groq
        "r8_" + "aB3" * 13,  # Replicate
        "pplx-" + "aB3" * 16,  # Perplexity
        "whsec_" + "aB3" * 11,  # a Stripe webhook's signing secret
        "key-" + _HEX[:32],  # Mailgun
    ],
)
def test_more_issuers_keys_are_redacted(key):
    assert redacted(f"our key {key} stopped working") == "our key <SECRET> stopped working"


@pytest.mark.parametrize(
    "text",
    ["shpat_ missing from docs", "pypi-server config", "whsec_ prefix", "key-value store",
     "ya29 error", "sq0 region", "dapi docs", "xai-grok pricing", "r8_ prefix meaning",
     "gsk_ keys rotate monthly"],
)  # fmt: skip
def test_a_prefix_alone_is_no_key(text):
    assert redacted(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a JSON payload pasted into a ticket, the text around it no JSON
        ('payload {"email":"jane.doe\\u0040example.com","id":7} failed',
         'payload {"email":"<EMAIL>","id":7} failed'),
        # a JSON line cut short
        ('{"email":"jane.doe\\u0040example.com","na', '{"email":"<EMAIL>","na'),
        # HTML's entities, as a web form's copy keeps them
        ("write to jane.doe&#64;example.com", "write to <EMAIL>"),
        ("write to jane.doe&#x40;example.com today", "write to <EMAIL> today"),
        # with an invisible character as well
        ("jane\u200b.doe\\u0040example.com", "<EMAIL>"),
    ],
)  # fmt: skip
def test_an_escaped_at_in_text_that_is_no_json_is_an_at(text, expected):
    """JSON text is read decoded; an escape in a text that is not one JSON document (a payload
    quoted in a ticket, a line cut short) hid the address from the checks."""
    assert redacted(text) == expected


def test_a_pasted_payloads_address_is_not_stored(tmp_path, db_path):
    body = 'the webhook sent {"customer":{"email":"jane.doe\\u0040example.com"}} twice'
    tickets = [{"id": 1, "subject": "webhook", "description": body, "status": "open"}]
    (tmp_path / "t.json").write_text(json.dumps({"tickets": tickets}))
    out = run_cli("--db", str(db_path), "ingest", "tickets", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr
    with duckdb.connect(str(db_path), read_only=True) as con:
        stored = str(con.execute("SELECT * FROM tickets").fetchall())
    assert "jane" not in stored and "<EMAIL>" in stored


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9876543210 is my mobile", "<PHONE> is my mobile"),
        ("07911123456 is my phone number", "<PHONE> is my phone number"),
        ("4155552671 (mobile) after 5pm", "<PHONE> (mobile) after 5pm"),
        ("reach me on 4155552671 call anytime", "reach me on <PHONE> call anytime"),
    ],
)
def test_a_bare_number_named_a_phone_by_the_words_after_it_is_redacted(text, expected):
    """The word after a bare run of digits says what it is when nothing before does, as the
    rules always said; only the words before were read."""
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    ["9876543210 is my order number", "4155552671 invoice for the mobile plan",
     "order 9876543210 mobile case", "1700000000 timestamp of the call"],
)  # fmt: skip
def test_a_bare_number_named_otherwise_after_it_stays(text):
    assert redacted(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a URL inside another's query string (a login's next=, an OAuth redirect_uri, a
        # referrer), its = and & encoded
        ("https://app.com/login?next=%2Faccount%3Ftoken%3Dabc123def456ghi%26x%3D1",
         "https://app.com/login?next=%2Faccount%3Ftoken%3D<SECRET>%26x%3D1"),
        ("redirect_uri=https%3A%2F%2Fapp.com%2Fcb%3Fapi_key%3DAbC123dEf456",
         "redirect_uri=https%3A%2F%2Fapp.com%2Fcb%3Fapi_key%3D<SECRET>"),
        ("ref=https%3A%2F%2Fx.com%2F%3Fpassword%3DSecret123%23top",
         "ref=https%3A%2F%2Fx.com%2F%3Fpassword%3D<SECRET>%23top"),
        ("u=https%253A%252F%252Fx.com%252F%253Fsig%253DAbCdEf123456%2526a%253D1",
         "u=https%253A%252F%252Fx.com%252F%253Fsig%253D<SECRET>%2526a%253D1"),
        # a Telegram bot's token in its API's URL, "bot" written before it
        ("https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
         "https://api.telegram.org/bot<SECRET>/sendMessage"),
    ],
)  # fmt: skip
def test_a_secret_in_an_encoded_url_or_a_bots_url_is_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    ["next=%2Fsearch%3Fq%3Dtoken%26page%3D2", "q=monkey%3Dbusiness",
     "https://x.com/?keyword%3Dshoes2024"],
)  # fmt: skip
def test_an_encoded_query_without_a_secret_stays(text):
    assert redacted(text) == text


@pytest.mark.parametrize(
    "text",
    ["see section 2.3.1.4 of the spec", "clause 4.2.1.3 warranty", "requirement 8.3.6.1",
     "PCI DSS req 8.3.1.1 passwords", "paragraph 3.1.2.1", "chapter 1.2.3.4 exercises",
     "article 5.1.2.3 of the contract", "appendix 2.1.1.4", "§ 4.1.2.3 BGB",
     "step 1.2.1.1 install"],
)  # fmt: skip
def test_a_documents_section_number_is_no_address(text):
    """Standards, contracts and manuals number their sections in four parts: a query into such
    a corpus ("requirement 8.3.6.1") lost its section to <IPV4>."""
    assert redacted(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("firewall rule 10.1.2.3 blocks", "firewall rule <IPV4> blocks"),
     ("section of the log: 10.1.2.3 denied", "section of the log: <IPV4> denied")],
)  # fmt: skip
def test_an_address_after_other_words_is_still_one(text, expected):
    assert redacted(text) == expected
