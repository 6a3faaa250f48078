"""Search logs and corpora as the tools users export with write them: Excel's ``sep=`` line and
"Unicode Text" (UTF-16), Windows-1252 text, European number formats, old Mac line ends, a
Ctrl-Z or NUL padding at the end, a CSV inside a zip, a query typed over several lines.

Each file is written byte for byte as its tool writes it and imported through the CLI into a
real store. The contract: every row is an event, a reject with a reason, or counted; no
traceback; a command that fails on its input leaves no store behind."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

# Three searches as a user typed them: accents, a euro sign and curly quotes (the characters
# Windows-1252 holds at 0xE9, 0x80, 0x93/0x94).
ROWS = [
    ("reset password", "2026-11-30 10:00:00", "s1"),
    ("café menu", "2026-11-30 10:01:00", "s1"),
    ("price €5 “deal”", "2026-11-30 10:02:00", "s2"),
]
QUERIES = sorted(q for q, _, _ in ROWS)


def _log_text(sep: str = ",", newline: str = "\r\n", first: str = "") -> str:
    """An event-level log as a spreadsheet saves it: a header, then a row per search."""
    lines = [f"query{sep}timestamp{sep}session_id", *(sep.join(r) for r in ROWS)]
    return first + newline.join(lines) + newline


def _ingest(cli, tmp_path: Path, name: str, data: bytes, *args: str, kind: str = "searchlog"):
    path = tmp_path / name
    path.write_bytes(data)
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", kind, str(path), "--json", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, db


def _stored(cli, tmp_path: Path, name: str, data: bytes, *args: str, kind: str = "searchlog"):
    """Import a file that must import: its totals and the store."""
    proc, db = _ingest(cli, tmp_path, name, data, *args, kind=kind)
    assert proc.returncode == 0, proc.stderr
    total = json.loads(proc.stdout)["total"]
    assert total["rows_in"] == total["stored"] + total["rejected"] + total["already_present"]
    return total, db


def _refused(cli, tmp_path: Path, name: str, data: bytes, *args: str) -> str:
    """Import a file that must be refused: its one error line (no store left behind)."""
    proc, db = _ingest(cli, tmp_path, name, data, *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert not db.exists()
    return lines[0]


def _read(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _events(db: Path) -> list[tuple]:
    return _read(db, "SELECT query, ts, session_id FROM search_events ORDER BY ts")


EXPECTED = [(q, datetime.fromisoformat(t), s) for q, t, s in ROWS]


# --- Excel's sep= line ------------------------------------------------------------------------


@pytest.mark.parametrize("sep", [";", ",", "\t"], ids=["semicolon", "comma", "tab"])
def test_excel_sep_line_names_the_delimiter_and_is_no_row(cli, tmp_path, sep):
    """Excel writes (and reads) ``sep=;`` as the file's first line. It was taken for the
    header: every row was rejected ('too many columns')."""
    total, db = _stored(cli, tmp_path, "log.csv", _log_text(sep, first=f"sep={sep}\r\n").encode())
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED


def test_a_sep_line_above_an_analytics_export(cli, tmp_path):
    """The search-analytics reader split the ``sep=;`` line as its header: the export was read
    as a log of searches, its counts lost."""
    data = "sep=;\r\nSearch term;Searches;Clicks\r\nreset password;40;10\r\ncafé;12;3\r\n"
    total, db = _stored(cli, tmp_path, "terms.csv", data.encode())
    assert (total["stored"], total["rejected"]) == (2, 0)
    assert _read(db, "SELECT count(*) FROM search_events") == [(0,)]
    got = _read(db, "SELECT norm_query, n_events, n_no_click FROM search_summaries ORDER BY 1")
    assert got == [("café", 12, 9), ("reset password", 40, 30)]


def test_a_sep_line_above_a_corpus(cli, tmp_path):
    data = "sep=;\r\nid;text\r\nd1;how to reset a password\r\nd2;the café opens at 9\r\n"
    total, db = _stored(cli, tmp_path, "docs.csv", data.encode(), kind="corpus")
    assert (total["stored"], total["rejected"]) == (2, 0)
    assert _read(db, "SELECT chunk_id, text FROM chunks ORDER BY 1") == [
        ("d1", "how to reset a password"),
        ("d2", "the café opens at 9"),
    ]


# --- European spreadsheets: ; with decimal commas and thousand dots ----------------------------


def test_european_analytics_numbers_are_read_as_written(cli, tmp_path):
    """A site-search export saved by a German or French Excel: ``;`` between fields, ``1.234``
    for a thousand two hundred and thirty-four, ``12,5 %`` for a rate (a no-break space before
    the sign, as French Excel writes it). The header was read as one column, so the file was a
    log of one search per row, its counts lost."""
    data = (
        "Query;Searches;No results;Clicks;CTR;Avg. position\r\n"
        "reset password;1.234;34;100;8,1 %;3,2\r\n"
        "café;1.234.567;0;1.000;0,5\u00a0%;1,0\r\n"
        "small;12;2;3;25%;10\r\n"
    )
    total, db = _stored(cli, tmp_path, "searches.csv", data.encode())
    assert (total["stored"], total["rejected"]) == (3, 0)
    got = _read(
        db,
        "SELECT norm_query, n_events, n_zero_results, n_no_click FROM search_summaries ORDER BY 1",
    )
    assert got == [
        ("café", 1_234_567, 0, 1_234_567 - 1_000),
        ("reset password", 1234, 34, 1234 - 34 - 100),
        ("small", 12, 2, 12 - 2 - 3),
    ]


def test_a_search_console_export_in_a_decimal_comma_locale(cli, tmp_path):
    """Search Console's ``Top queries`` saved as ``;`` with CTR ``12,34 %``: the header was one
    column, and the import stopped with 'no query field'."""
    data = (
        "Top queries;Clicks;Impressions;CTR;Position\r\n"
        "reset password;1.234;10.000;12,34 %;3,2\r\n"
        "café;12;40;30 %;1,5\r\n"
    )
    total, db = _stored(cli, tmp_path, "Queries.csv", data.encode())
    assert (total["stored"], total["rejected"]) == (2, 0)
    got = _read(db, "SELECT norm_query, n_events, n_no_click FROM search_summaries ORDER BY 1")
    assert got == [("café", 40, 28), ("reset password", 10_000, 10_000 - 1234)]


# --- line ends ---------------------------------------------------------------------------------


def test_old_mac_line_ends(cli, tmp_path):
    """CR alone ends each line (Excel 2011 for Mac's "CSV"): a traceback (``_csv.Error``)."""
    total, db = _stored(cli, tmp_path, "log.csv", _log_text(",", "\r").encode())
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED


def test_old_mac_line_ends_in_an_analytics_export_and_a_corpus(cli, tmp_path):
    total, db = _stored(cli, tmp_path, "t.csv", b"query,searches,clicks\rreset,10,2\rok,5,1\r")
    assert total["stored"] == 2
    assert _read(db, "SELECT norm_query, n_events FROM search_summaries ORDER BY 1") == [
        ("ok", 5), ("reset", 10),
    ]  # fmt: skip
    (tmp_path / "s.duckdb").unlink()
    total, db = _stored(cli, tmp_path, "docs.csv", b"id,text\rd1,hello\rd2,world\r", kind="corpus")
    assert _read(db, "SELECT chunk_id, text FROM chunks ORDER BY 1") == [
        ("d1", "hello"), ("d2", "world"),
    ]  # fmt: skip
