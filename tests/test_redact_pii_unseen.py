"""PII that redaction had not been shown, found by a probe of a hostile week's files: a phone
number beside a word that usually marks an order number ("order status 07911 123456"), PII
split by an invisible character (``john\\u200b@example.com``), digits of other scripts
(Arabic-Indic, Devanagari), an IBAN spaced after its country, a password that holds ``&``;
and the look-alikes it took for PII: this machine's address, a version in an upgrade, an npm
scope, a decorator, an scp remote, an ``@2x`` image, clothing sizes, a FedEx tracking number.
"""

from __future__ import annotations

import duckdb
import pytest

from goldmine.ingest.pii import DEFAULT_REGIONS
from goldmine.ingest.redact import make_redactor, redact_text


def redacted(text: str, handles: bool = True) -> str:
    return redact_text(duckdb.connect(), text, make_redactor(True, handles=handles))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A number written as a phone is one, whatever word comes before it.
        ("order status 07911 123456", "order status <PHONE>"),
        ("account locked 020 7946 0958", "account locked <PHONE>"),
        ("lost card 07911 123456", "lost card <PHONE>"),
        ("cancel my order (415) 555-2671", "cancel my order <PHONE>"),
        ("invoice wrong 030 12345678", "invoice wrong <PHONE>"),
        ("case closed 415-555-2671", "case closed <PHONE>"),
        ("ticket open - 0171 1234567", "ticket open - <PHONE>"),
        ('{"user_id":"u1","query":"07911 123456 refund"}',
         '{"user_id":"u1","query":"<PHONE> refund"}'),
        # Invisible characters inside an address, a number or an IBAN.
        ("mail john\u200b@example.com now", "mail <EMAIL> now"),
        ("mail john@\u200bexample.com now", "mail <EMAIL> now"),
        ("mail john\u2060@example.com", "mail <EMAIL>"),
        ("call +44 20\u200b7946 0958", "call <PHONE>"),
        ("card 4111\u200b1111\u200b1111\u200b1111", "card <CARD>"),
        ("pay DE89\u200b3704 0044 0532 0130 00", "pay <IBAN>"),
        ("mail jo\u00adhn@example.com", "mail <EMAIL>"),
        ("\ufeffcall 07911 123456", "\ufeffcall <PHONE>"),
        # Digits of other scripts.
        ("my phone ٠٧٩١١١٢٣٤٥٦", "my phone <PHONE>"),
        ("+44 ٢٠ ٧٩٤٦ ٠٩٥٨", "<PHONE>"),
        ("call ۰۷۹۱۱ ۱۲۳۴۵۶", "call <PHONE>"),
        ("+91 ९८७६५ ४३२१०", "<PHONE>"),
        ("card ٤١١١ ١١١١ ١١١١ ١١١١", "card <CARD>"),
        # Spelled, spaced or punctuated otherwise.
        ("IBAN DE 89 3704 0044 0532 0130 00", "IBAN <IBAN>"),
        ("card 4111.1111.1111.1111", "card <CARD>"),
        ("my password: Tr0ub4dor&3 fails", "my password: <SECRET> fails"),
        ("my password is hunter2", "my password is <SECRET>"),
        ("login ?user=x&password=s3cret&next=/", "login ?user=x&password=<SECRET>&next=/"),
        ("write to john.doe at example dot com", "write to <EMAIL>"),
        ("john AT example DOT com", "<EMAIL>"),
        # Found by the change's review: what the look-alike rules first let through.
        ("jane@gmail.com:hunter22", "<EMAIL>:hunter22"),
        ("login jane.doe@gmail.com:Passw0rd!", "login <EMAIL>:Passw0rd!"),
        ("contact numbers 9876543210", "contact numbers <PHONE>"),
        ("my phone numbers 4155552671", "my phone numbers <PHONE>"),
        ("updated from 192.168.0.1 to 192.168.1.1", "updated from <IPV4> to <IPV4>"),
        ("migrate to 172.16.0.4", "migrate to <IPV4>"),
        ("cc @mark and @anna", "cc <HANDLE> and <HANDLE>"),
    ],
)  # fmt: skip
def test_pii_the_probe_found_is_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # A bare run of digits after such a word stays an order number.
        "order 12345678",
        "order status 4155552671",
        "isbn 0306406152",
        # Lottery numbers: a phone only if some of the groups are left out.
        "lottery numbers 04 12 23 35 41 49",
        "jobs at amazon dot com",
        "the crash at the dot com bubble",
        "wifi password is WPA2",
        "password is sha256 hashed",
        "sizes 36 38 40 42 44 46",
        "hs code 8471 30 0000",
        "tariff 8471.30.0100",
        "fedex 7749 1234 5678",
        "ups 1Z 999 AA1 01 2345 6784",
        # This machine's addresses belong to no person.
        "127.0.0.1 refused",
        "bind 0.0.0.0:8080 fails",
        "upgrade to version 1.2.3.4",
        # A product's four-part version, named by the product before it.
        "app crashes on android 14.0.0.1",
        "chrome 120.0.6099.109 blank page",
        "windows 10.0.19045.3693 update fails",
        "firmware 2.1.0.14 bricked router",
        # Code and file names.
        "@types/node 20 breaks build",
        "@Override annotation missing",
        "@media query for print",
        "@dataclass frozen error",
        "clone git@github.com:acme/app.git fails",
        "icon image@2x.png is blurry",
        "password is incorrect",
        "meet at home dot com",
        "look at google dot com",
    ],
)
def test_look_alikes_the_probe_found_are_left_alone(text):
    assert redacted(text) == text


def test_a_handle_that_is_a_person_is_still_redacted():
    assert redacted("thanks @jane_doe for the fix") == "thanks <HANDLE> for the fix"
    assert redacted("see @types for that") == "see <HANDLE> for that"


def test_other_addresses_are_still_redacted():
    """A private address names a machine inside a company, and a public resolver's is a
    user's example as often as a resolver (the labelled sets write one so)."""
    assert redacted("login from 81.2.69.142 blocked") == "login from <IPV4> blocked"
    assert redacted("laptop 192.168.1.20 offline") == "laptop <IPV4> offline"
    assert redacted("login failed from 8.8.8.8") == "login failed from <IPV4>"
    # A product word further back names no version: the address right after "from" is one.
    assert redacted("android login from 81.2.69.142") == "android login from <IPV4>"
    assert redacted("my android ip 10.0.0.12") == "my android ip <IPV4>"


def test_the_digits_of_other_scripts_are_unicodes():
    """``_DIGIT_ZEROS`` is written out (scanning every code point cost each command 0.1 s):
    it must be every decimal digit past ASCII this Python knows."""
    import sys
    import unicodedata

    from goldmine.ingest import pii

    known = {
        chr(c)
        for c in range(0x80, sys.maxunicode + 1)
        if unicodedata.decimal(chr(c), None) is not None
    }
    ours = {c for c, _ in pii._OTHER_DIGITS}
    assert ours <= known
    if unicodedata.unidata_version == "14.0.0":  # Python 3.11's; a later one adds scripts
        assert ours == known


def test_result_and_click_ids_holding_an_address_are_pseudonymized(tmp_path, db_path):
    """A click log stores the clicked URL, and URLs carry emails ("profile?email=…"): the ids
    of the results and clicks went in whole. They now become the redacted text and a keyed
    hash, the same in results and clicks, so a click still names the result it opened."""
    from goldmine.ingest import api
    from goldmine.store import open_store

    from helpers import write_jsonl

    url = "https://help.example.com/profile?email=kate@example.com"
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": "e1", "ts": "2026-11-16T07:08:28Z", "query": "reset password",
         "result_ids": ["kb-1", url, "kb/users/walt@example.com/profile"], "clicked_ids": [url]},
        {"event_id": "e2", "ts": "2026-11-16T07:09:28Z", "query": "vpn", "result_ids": ["kb-2"],
         "clicked_ids": []},
    ])  # fmt: skip
    aol = tmp_path / "aol.txt"
    aol.write_text(
        "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"
        "142\tlogin help\t2006-03-01 07:17:12\t1\thttp://www.example.com/u?email=lee@example.com\n"
        "142\tvpn\t2006-03-01 07:18:12\t\t\n"
    )
    with open_store(db_path) as con:
        api.searchlog(con, [log, aol], redact=True)
        rows = con.execute(
            "SELECT event_id, result_ids, clicked_ids FROM search_events ORDER BY ts"
        ).fetchall()
    text = repr(rows)
    for secret in ("kate@", "walt@", "lee@"):
        assert secret not in text
    by_id = {r[0]: r for r in rows}
    results, clicks = by_id["e1"][1], by_id["e1"][2]
    assert results[0] == "kb-1" and results[1].startswith(
        "https://help.example.com/profile?email=<EMAIL>~"
    )
    assert clicks == [results[1]]
    assert by_id["e2"][1:] == (["kb-2"], [])


def test_document_ids_that_look_like_numbers_are_kept(tmp_path, db_path):
    """A result list of plain document ids ("doc-192.168.1.1.pdf", "release-2.4.1.0", a
    16-digit number) was pseudonymized, and no longer matched its corpus chunks: an id list
    is read for addresses and credentials only."""
    from goldmine.ingest import api
    from goldmine.store import open_store

    from helpers import write_jsonl

    ids = ["doc-192.168.1.1.pdf", "release-2.4.1.0", "4111111111111111", "kb-07911123456"]
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"event_id": "e1", "ts": "2026-11-16T07:08:28Z", "query": "manual", "result_ids": ids,
         "clicked_ids": ids[:1]},
    ])  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [log], redact=True)
        stored = con.execute("SELECT result_ids, clicked_ids FROM search_events").fetchall()
    assert stored == [(ids, ids[:1])]


def redacted_in(regions: tuple[str, ...], text: str) -> str:
    """``text`` redacted with ``regions`` as ``[ingest] pii_regions`` names them."""
    return redact_text(duckdb.connect(), text, make_redactor(True, regions=regions))


# A second probe's findings, through `goldmine ingest searchlog FILE --redact`.
@pytest.mark.parametrize(
    "text",
    [
        # A day-first (or month-first) date with a time, or two dates as a range, are no phone.
        "Termin 07.12.2026 14:30",
        "Zeitraum 01.01.2026-31.12.2026",
        "zahlung 07/12/2026 14:30 fehlgeschlagen",
        "07-12-2026 14:30",
        "due 12/31/2026 09:15:00",
        "07.12.2026",
        "2026-12-07 14:30",
    ],
)
def test_a_date_with_its_time_is_no_phone(text):
    assert redacted(text) == text


def test_a_phone_beside_a_date_is_still_one():
    assert redacted("Termin 07.12.2026 Tel. 0171 1234567") == "Termin 07.12.2026 Tel. <PHONE>"


@pytest.mark.parametrize(
    ("regions", "text", "expected"),
    [
        # German compounds name a phone by their head ("Handy-Nr." is the mobile's number).
        (None, "Rückruf Handy-Nr. 01711234567", "Rückruf Handy-Nr. <PHONE>"),
        (None, "Handynr 01711234567", "Handynr <PHONE>"),
        (None, "Mobilnummer 01711234567", "Mobilnummer <PHONE>"),
        (None, "Telefonnr 01711234567", "Telefonnr <PHONE>"),
        # Other languages' words for a phone (Hindi's vowel signs are part of its words).
        (None, "मेरा नंबर 9876543210 है", "मेरा नंबर <PHONE> है"),
        (None, "मेरा फ़ोन 9876543210", "मेरा फ़ोन <PHONE>"),
        (("RU",), "телефон 89123456789", "телефон <PHONE>"),
        (("RU",), "мой номер 89123456789", "мой номер <PHONE>"),
        (("BR",), "telefone 11987654321", "telefone <PHONE>"),
        (("BR",), "meu celular 11987654321", "meu celular <PHONE>"),
        # Chinese and Japanese write no space between words: the phone's word is inside one.
        (("CN",), "电话 13800138000", "电话 <PHONE>"),
        (("CN",), "我的电话是13800138000", "我的电话是<PHONE>"),
        (("JP",), "電話番号 09012345678", "電話番号 <PHONE>"),
    ],
)
def test_words_for_a_phone_in_more_languages(regions, text, expected):
    assert redacted_in(regions or DEFAULT_REGIONS, text) == expected


@pytest.mark.parametrize(
    ("regions", "text"),
    [
        # a compound's head that is no phone's: an order's, a customer's number
        (None, "Bestell-Nr. 01711234567"),
        (None, "Kundennummer 01711234567"),
        (None, "order-nr 01711234567"),
        (("CN",), "订单号 13800138000"),
    ],
)
def test_a_compound_number_word_goes_by_its_head(regions, text):
    assert redacted_in(regions or DEFAULT_REGIONS, text) == text


@pytest.mark.parametrize(
    ("regions", "text", "expected"),
    [
        # Russia writes its trunk prefix 8 apart, as libphonenumber formats the number.
        (("RU",), "телефон 8 (495) 123-45-67", "телефон <PHONE>"),
        (("RU",), "телефон 8 912 345-67-89", "телефон <PHONE>"),
        (("US", "RU"), "звоните 8-800-555-35-35", "звоните <PHONE>"),
    ],
)
def test_a_trunk_prefix_written_apart_goes_with_its_number(regions, text, expected):
    assert redacted_in(regions, text) == expected


@pytest.mark.parametrize(
    ("regions", "text"),
    [
        (None, "part 0-123-456-789"),
        (("RU",), "part 8-123-456-789"),
    ],
)
def test_a_single_digit_first_group_is_still_a_part_number(regions, text):
    assert redacted_in(regions or DEFAULT_REGIONS, text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An IBAN in hyphenated groups, and one whose country's length leaves a short last group.
        ("IBAN DE89-3704-0044-0532-0130-00", "IBAN <IBAN>"),
        ("pay to DE89-3704-0044-0532-0130-00 today", "pay to <IBAN> today"),
        ("BR15 0000 0000 0000 1093 2840 814 P2", "<IBAN>"),
        ("BR1500000000000010932840814P2 please", "<IBAN> please"),
        ("iban gb82 west 1234 5698 7654 32", "iban <IBAN>"),
        ("IBAN DE89 3704 0044 0532 0130 00 from", "IBAN <IBAN> from"),
    ],
)
def test_an_iban_is_taken_whole_at_its_countrys_length(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # mod 97 holds, but no country's IBAN is this long (Germany's has 22 characters)
        "ref DE40 3704 0044 0532 0130 0074",
        "id de30-5d54-75b4-431b-adb2-eb6b9e546014",
    ],
)
def test_a_run_no_country_writes_is_no_iban(text):
    assert redacted(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A phone found inside a longer run, not written as its region writes one, takes the
        # run: a French NIR with a wrong key kept "2 84" in the clear.
        ("nir 2 84 05 73 157 087 49", "nir <PHONE>"),
        # written as one, it is the phone alone
        ("room 12 06 12 34 56 78", "room 12 <PHONE>"),
        ("call 020 7946 0958 2 times", "call <PHONE> 2 times"),
    ],
)
def test_a_phone_inside_a_longer_run_takes_the_run_unless_written_as_one(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Numbers kept for fiction (Ofcom's 07700 900xxx, NANP's 555-01xx) are no valid number
        # to libphonenumber, but written with + in their country's groups they read as phones.
        ("+44 7700 900123", "<PHONE>"),
        ("whatsapp me +44 7700 900123", "whatsapp me <PHONE>"),
        ("+1 555-555-0100 support", "<PHONE> support"),
        # grouped as no country writes it, nor named
        ("+4477 0090 0123", "+4477 0090 0123"),
        ("+12 345 678", "+12 345 678"),
    ],
)
def test_a_plus_number_in_its_countrys_groups_is_a_phone(text, expected):
    assert redacted(text) == expected


def test_an_address_with_a_number_after_it_is_found():
    """An id made of an address and a time (``alice@example.com-1700000000``, an export's event
    key) kept the address: a domain's last label was read on into the number."""
    assert redacted("alice.smith@example.com-1700000000") == "<EMAIL>-1700000000"
    assert redacted("id jane@mail.example.org-42 failed") == "id <EMAIL>-42 failed"
    # a longer domain is still read whole
    assert redacted("bob@example.com-eu.net") == "<EMAIL>"
