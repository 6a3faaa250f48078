"""PII redaction's recall and precision (issue 25, items 5 and 6): the formats it missed, the
look-alikes it took, the labelled sets' figures, and ``[ingest] pii_regions``."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.ingest.redact import install_macros, make_redactor, redact_text
from goldmine.store import open_store

from helpers import run_cli, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"


def redacted(text: str, handles: bool = False) -> str:
    con = duckdb.connect()
    return redact_text(con, text, make_redactor(True, handles=handles))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("appelez le 06 12 34 56 78", "appelez le <PHONE>"),
        ("bureau +33 (0)1 23 45 67 89 merci", "bureau <PHONE> merci"),
        ("my mobile 98765 43210", "my mobile <PHONE>"),
        ("ruf an: 0049 30 12345678", "ruf an: <PHONE>"),
        ("München 089/1234567", "München <PHONE>"),
        ("call me at 4155552671", "call me at <PHONE>"),
        ("write to anna@bücher.example", "write to <EMAIL>"),
        ("iban gb82 west 1234 5698 7654 32", "iban <IBAN>"),
        ("from ::ffff:192.0.2.128 again", "from <IPV6> again"),
    ],
)
def test_formats_redaction_missed(text, expected):
    assert redacted(text) == expected


def test_an_internationalized_email_is_not_taken_for_a_handle():
    assert redacted("mail anna@bücher.example @jane", handles=True) == "mail <EMAIL> <HANDLE>"


@pytest.mark.parametrize(
    "text",
    [
        "Face::Detect throws",
        "ISBN 0306406152",
        "isbn 0-306-40615-2",
        "order 0012345678",
        "EAN 4006381333931",
        "upc 036000291452",
        "id 00000000-0000-0000-0000-000000000000",
        "Wed Oct 10 20:19:24 +0000 2017",
        "2017-10-20 10:30:00",
    ],
)
def test_look_alikes_are_left_alone(text):
    assert redacted(text, handles=True) == text


def _score(path: Path) -> tuple[dict[str, float], float, float]:
    """Recall per type, recall overall and the share of look-alike lines left whole, each
    line redacted through DuckDB as an import does."""
    con = duckdb.connect()
    install_macros(con)
    redactor = make_redactor(True, handles=True)
    want: dict[str, list[bool]] = {}
    lookalikes = []
    for line in path.read_text().splitlines():
        item = json.loads(line)
        text, out = item["text"], redact_text(con, item["text"], redactor)
        if not item["spans"]:
            lookalikes.append(out == text)
        for start, end, kind in item["spans"]:
            # found: the value is gone and its placeholder stands where it stood
            found = text[:start] in out and out.startswith(text[:start] + f"<{kind}>")
            want.setdefault(kind, []).append(found and text[start:end] not in out)
    recall = {k: sum(v) / len(v) for k, v in want.items()}
    overall = sum(sum(v) for v in want.values()) / sum(len(v) for v in want.values())
    return recall, overall, sum(lookalikes) / len(lookalikes)


# slow: the two labelled data sets scored whole (the other tests here stay in the fast lane)
@pytest.mark.slow
@pytest.mark.parametrize("name", ["pii_tuning.jsonl", "pii_heldout.jsonl"])
def test_labelled_sets_meet_the_goal(name):
    """Issue 25's goal: recall >= 0.98 overall and >= 0.95 per type; look-alikes kept."""
    recall, overall, kept = _score(FIXTURES / name)
    # SSN, NINO and SECRET came later: in the tuning set only (the held-out set predates them).
    assert {"EMAIL", "PHONE", "CARD", "IBAN", "IPV4", "IPV6", "HANDLE"} <= set(recall)
    assert overall >= 0.98, recall
    assert min(recall.values()) >= 0.95, recall
    assert kept >= 0.95


def test_pii_regions_from_goldmine_toml_decide_bare_national_numbers(tmp_path):
    """A Spanish number written nationally is a phone only where ES is a configured region;
    the default regions (US, GB, DE, FR, IN) leave it."""
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [{"event_id": "e1", "timestamp": "2026-11-16T10:00:00", "query": "llame al 912 345 678"}],
    )
    with open_store(tmp_path / "default.duckdb") as con:
        api.searchlog(con, [log], redact=True)
        assert con.execute("SELECT query FROM search_events").fetchall() == [
            ("llame al 912 345 678",)
        ]
    (tmp_path / "goldmine.toml").write_text('[ingest]\npii_regions = ["ES", "FR"]\n')
    db = tmp_path / "es.duckdb"
    done = run_cli("ingest", "searchlog", str(log), "--redact", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open_store(db) as con:
        assert con.execute("SELECT query FROM search_events").fetchall() == [("llame al <PHONE>",)]


def test_an_unknown_pii_region_is_one_line_exit_2(tmp_path):
    log = write_jsonl(tmp_path / "log.jsonl", [{"event_id": "e1", "query": "x"}])
    (tmp_path / "goldmine.toml").write_text('[ingest]\npii_regions = ["XX"]\n')
    done = run_cli("ingest", "searchlog", str(log), "--redact", "--db",
                   str(tmp_path / "s.duckdb"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "XX" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
