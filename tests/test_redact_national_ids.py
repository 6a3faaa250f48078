"""National identity numbers of the configured regions (``[ingest] pii_regions``, by default
US, GB, DE, FR and IN): only the US SSN and the UK NI number were redacted, so a German tax id,
a French social security number, an Aadhaar or a PAN pasted into a ticket was stored as typed
("steuer-id 36 574 261 809" even came out as a phone). Each is checked by python-stdnum (its
check digits and structure); a layout that is common for other numbers (eleven digits, nine)
counts only beside a word that names it. Each case is a text as a user types it.
"""

from __future__ import annotations

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.ingest.redact import make_redactor, redact_text
from goldmine.store import open_store

from helpers import write_jsonl


def redacted(text: str, regions: tuple[str, ...] | None = None) -> str:
    return redact_text(duckdb.connect(), text, make_redactor(True, regions=regions))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # India: Aadhaar (Verhoeff check) as the card prints it, or bare after its name; PAN
        ("my aadhaar 2341 2341 2346 is linked", "my aadhaar <NATIONAL_ID> is linked"),
        ("update address for 4991 1866 5246", "update address for <NATIONAL_ID>"),
        ("Aadhar no: 499118665246", "Aadhar no: <NATIONAL_ID>"),
        ("my aadhaar 2023 2024 2025", "my aadhaar <NATIONAL_ID>"),  # years' digits, but named
        ("PAN AAPFU0939F not linked to aadhaar", "PAN <NATIONAL_ID> not linked to aadhaar"),
        ("pan card aapfu0939f", "pan card <NATIONAL_ID>"),
        # Germany: the tax id (Steuer-IdNr), named
        ("meine steuer-id 36 574 261 809", "meine steuer-id <NATIONAL_ID>"),
        ("Steuer-IdNr.: 36574261809", "Steuer-IdNr.: <NATIONAL_ID>"),
        # France: the NIR (numéro de sécurité sociale), its key mod 97
        ("numéro de sécu 2 95 10 99 126 111 93", "numéro de sécu <NATIONAL_ID>"),
        ("nir 295109912611193 perdu", "nir <NATIONAL_ID> perdu"),
    ],
)
def test_national_ids_of_the_default_regions_are_redacted(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An id named by a word only its country uses ("CPF", "身份证") whatever the regions:
        # a CPF was <PHONE>, a Chinese resident id kept (a probe's finding).
        ("meu CPF 123.456.789-09", "meu CPF <NATIONAL_ID>"),
        ("cpf 39053344705", "cpf <NATIONAL_ID>"),
        ("身份证 11010519491231002X", "身份证 <NATIONAL_ID>"),
        ("我的身份证号码是11010519491231002x", "我的身份证号码是<NATIONAL_ID>"),
    ],
)
def test_an_id_named_by_its_countrys_own_word_is_redacted_in_any_region(text, expected):
    assert redacted(text) == expected


@pytest.mark.parametrize(
    ("region", "text", "expected"),
    [
        ("ES", "mi DNI es 54362315K", "mi DNI es <NATIONAL_ID>"),
        ("ES", "NIE X2482300W caducado", "NIE <NATIONAL_ID> caducado"),
        # lower case or dotted, as typed, when named (a probe's finding)
        ("ES", "mi dni 12345678z caducado", "mi dni <NATIONAL_ID> caducado"),
        ("ES", "nie x1234567l renovar", "nie <NATIONAL_ID> renovar"),
        ("ES", "dni 12.345.678-Z", "dni <NATIONAL_ID>"),
        ("ES", "NIF: 12345678-z", "NIF: <NATIONAL_ID>"),
        ("NL", "mijn BSN is 111222333", "mijn BSN is <NATIONAL_ID>"),
        ("IT", "codice fiscale RSSMRA85T10A562S", "codice fiscale <NATIONAL_ID>"),
        ("BR", "meu CPF 390.533.447-05", "meu CPF <NATIONAL_ID>"),
        ("BR", "cpf 39053344705", "cpf <NATIONAL_ID>"),
        ("CA", "my SIN is 130 692 544", "my SIN is <NATIONAL_ID>"),
        ("AU", "TFN 123 456 782 for payroll", "TFN <NATIONAL_ID> for payroll"),
        ("CN", "11010519491231002X", "<NATIONAL_ID>"),
    ],
)
def test_national_ids_of_a_configured_region_are_redacted(region, text, expected):
    assert redacted(text, (region,)) == expected


@pytest.mark.parametrize(
    ("regions", "text"),
    [
        (None, "order 234123412346 never arrived"),  # twelve digits, not named, not spaced
        (None, "invoice 36574261809"),  # a valid tax id's digits, but nothing names one
        (None, "ABCDE1234F"),  # PAN-shaped, not a PAN (E is no holder type)
        (None, "mi DNI es 54362315K"),  # Spain is not among the default regions
        (("ES",), "ref 12345678z"),  # a DNI's shape in lower case, not named
        (("ES",), "dni 12345678a"),  # named, the wrong letter
        (("NL",), "tracking 111222333"),  # passes the 11-proof, but named as something else
        (("IT",), "model RSSMRA85T10A562X"),  # codice fiscale shape, wrong check character
        (("BR",), "ISBN 978-3-16-148410-0"),
        (None, "11010519491231002X"),  # a Chinese resident id, China not configured nor named
        (("CN",), "身份证 110105194912310021"),  # the wrong check digit
        # three years in a row, spaced as an Aadhaar is printed, and one in ten passes its check
        (None, "income tax slabs 2023 2024 2025 compared"),
        (None, "annual report 2004 2006 2008"),
        (None, "budget 2023-2024-2025 plan"),
    ],
)
def test_look_alikes_are_left_as_written(regions, text):
    assert redacted(text, regions) == text


def test_a_named_number_with_a_wrong_check_digit_is_no_national_id():
    assert "<NATIONAL_ID>" not in redacted("steuer-id 12 345 678 901")


def test_a_redacted_import_stores_no_national_id(tmp_path, db_path):
    """Through the whole import: a ticket's body and subject hold the ids; none is stored."""
    path = tmp_path / "tickets.jsonl"
    write_jsonl(
        path,
        [
            {
                "ticket_id": "t1",
                "created_at": "2026-11-30T10:00:00Z",
                "subject": "PAN AAPFU0939F",
                "body": "my aadhaar 2341 2341 2346, please update",
            },
            {
                "ticket_id": "t2",
                "created_at": "2026-11-30T11:00:00Z",
                "subject": "Steuer",
                "body": "meine steuer-id 36 574 261 809",
            },
        ],  # fmt: skip
    )
    with open_store(db_path) as con:
        api.tickets(con, [path])
        text = " ".join(str(r) for r in con.execute("SELECT * FROM tickets").fetchall())
    for value in ("AAPFU0939F", "2341 2341 2346", "36 574 261 809"):
        assert value not in text
    assert "my aadhaar <NATIONAL_ID>, please update" in text and "PAN <NATIONAL_ID>" in text
