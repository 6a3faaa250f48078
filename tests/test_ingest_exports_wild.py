"""Search logs and corpora as the tools users export with write them: Excel's ``sep=`` line and
"Unicode Text" (UTF-16), Windows-1252 text, European number formats, old Mac line ends, a
Ctrl-Z or NUL padding at the end, a CSV inside a zip, a query typed over several lines.

Each file is written byte for byte as its tool writes it and imported through the CLI into a
real store. The contract: every row is an event, a reject with a reason, or counted; no
traceback; a command that fails on its input leaves no store behind."""

from __future__ import annotations

import io
import json
import zipfile
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


def _refused(
    cli, tmp_path: Path, name: str, data: bytes, *args: str, kind: str = "searchlog"
) -> str:
    """Import a file that must be refused: its one error line (no store left behind)."""
    proc, db = _ingest(cli, tmp_path, name, data, *args, kind=kind)
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


def test_a_query_that_looks_like_a_number_tells_nothing_of_the_convention(cli, tmp_path):
    """The convention was read from every field, the queries' too: a search for ``2.0`` (a
    version) made a ``;`` export's ``1.234`` searches read as 1. Only the number columns tell."""
    data = "Search term;Searches;Clicks\r\n2.0;1.234;17\r\nreset password;2.500;1.000\r\n"
    total, db = _stored(cli, tmp_path, "terms.csv", data.encode())
    assert (total["stored"], total["rejected"]) == (2, 0)
    got = _read(db, "SELECT norm_query, n_events FROM search_summaries ORDER BY 1")
    assert got == [("2 0", 1234), ("reset password", 2500)]


# --- encodings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,bom,codec",
    [
        ("log.txt", b"\xff\xfe", "utf-16-le"),  # Excel: Save as "Unicode Text (*.txt)"
        ("log.csv", b"\xff\xfe", "utf-16-le"),
        ("log.csv", b"\xfe\xff", "utf-16-be"),
        ("log.csv", b"\xef\xbb\xbf", "utf-8"),  # Excel's "CSV UTF-8": read before, kept so
    ],
)
def test_excel_unicode_text_is_read(cli, tmp_path, name, bom, codec):
    """UTF-16 with a byte-order mark, tab-separated, CRLF: a .csv ended in a traceback
    (``_csv.Error``) and a .txt in 'unknown file format'."""
    data = bom + _log_text("\t").encode(codec)
    total, db = _stored(cli, tmp_path, name, data)
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED


def test_excel_unicode_text_analytics_and_corpus(cli, tmp_path):
    terms = "Search term\tSearches\tClicks\r\ncafé\t12\t3\r\n"
    total, db = _stored(cli, tmp_path, "terms.txt", b"\xff\xfe" + terms.encode("utf-16-le"))
    assert total["stored"] == 1
    assert _read(db, "SELECT norm_query, n_events FROM search_summaries") == [("café", 12)]
    docs = "id\ttext\r\nd1\tthe café opens at 9\r\n"
    (tmp_path / "s.duckdb").unlink()
    total, db = _stored(cli, tmp_path, "docs.csv", b"\xff\xfe" + docs.encode("utf-16-le"),
                        kind="corpus")  # fmt: skip
    assert _read(db, "SELECT chunk_id, text FROM chunks") == [("d1", "the café opens at 9")]


CP1252 = _log_text(",").encode("cp1252")


def test_a_windows_1252_csv_is_one_error_naming_encoding(cli, tmp_path):
    """Excel's "CSV (Comma delimited)" on Windows writes Windows-1252: ``é`` is 0xE9, ``€``
    0x80, curly quotes 0x93/0x94. Its rows were each rejected as 'invalid UTF-8' (the first
    stored), so a file of accented queries lost most of them; no guess is made at the encoding
    (a wrong one stores mojibake without a word)."""
    said = _refused(cli, tmp_path, "log.csv", CP1252)
    assert "not UTF-8" in said and "--encoding cp1252" in said
    assert "line 3" in said  # the first line that is not UTF-8


@pytest.mark.parametrize("encoding", ["cp1252", "windows-1252"])
def test_encoding_reads_a_windows_1252_csv(cli, tmp_path, encoding):
    total, db = _stored(cli, tmp_path, "log.csv", CP1252, "--encoding", encoding)
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED


def test_an_unknown_encoding_is_one_line(cli, tmp_path):
    said = _refused(cli, tmp_path, "log.csv", CP1252, "--encoding", "klingon")
    assert "--encoding 'klingon'" in said


def test_a_utf8_file_with_one_stray_latin1_line_keeps_its_other_lines(cli, tmp_path):
    """One damaged line in a UTF-8 file is that line's reject, as before: not a file error."""
    data = _log_text(",").encode()
    data = data.replace("café".encode(), b"caf\xe9")
    total, db = _stored(cli, tmp_path, "log.csv", data)
    assert (total["stored"], total["rejected"]) == (2, 1)
    assert _read(db, "SELECT line, reason FROM rejects") == [(3, "invalid UTF-8")]


# --- line ends, padding and containers ----------------------------------------------------------


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


JSONL = "".join(
    json.dumps({"query": q, "ts": t.replace(" ", "T"), "session_id": s}) + "\n" for q, t, s in ROWS
).encode()


@pytest.mark.parametrize(
    "data",
    [JSONL + b"\x1a", JSONL.replace(b"\n", b"\r\n") + b"\x1a", JSONL.rstrip(b"\n") + b"\x1a"],
    ids=["after the last line", "crlf", "glued to the last record"],
)
def test_a_ctrl_z_at_the_end_is_no_record(cli, tmp_path, data):
    """DOS tools end a text file with Ctrl-Z (0x1A): it was a reject ('malformed JSON'), and
    glued to the last record it took that record with it."""
    total, db = _stored(cli, tmp_path, "log.jsonl", data)
    assert total == {"rows_in": 3, "stored": 3, "rejected": 0, "already_present": 0}
    assert _events(db) == EXPECTED


def test_a_ctrl_z_at_the_end_of_an_analytics_export(cli, tmp_path):
    """It was a row whose count 'is not a number'."""
    total, _ = _stored(cli, tmp_path, "t.csv", b"query,searches\r\nreset,10\r\nok,5\r\n\x1a")
    assert total == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}


@pytest.mark.parametrize("name", ["log.jsonl", "log.csv"])
def test_nul_padding_after_the_last_line_is_one_reject_saying_so(cli, tmp_path, name):
    """A file cut short by a crash, or preallocated, ends in NUL bytes: a reject of their own
    ('binary data (NUL bytes in the line)'), now named for what they are, since the writer may
    have stopped there; every row before them is stored."""
    data = (JSONL if name.endswith(".jsonl") else _log_text(",", "\n").encode()) + b"\0" * 4096
    total, db = _stored(cli, tmp_path, name, data)
    assert total == {"rows_in": 4, "stored": 3, "rejected": 1, "already_present": 0}
    assert _events(db) == EXPECTED
    [(line, reason)] = _read(db, "SELECT line, reason FROM rejects")
    assert line == (4 if name.endswith(".jsonl") else 5)
    assert reason.startswith("NUL padding at the end of the file (4,096 bytes)")


def _zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("name", ["export.zip", "export.csv.zip", "attachment"])
def test_a_csv_inside_a_zip_is_read(cli, tmp_path, name):
    """Mail and BI tools send an export zipped: it was 'unknown file format'."""
    data = _zipped({"searches_2026-11.csv": _log_text(",").encode()})
    total, db = _stored(cli, tmp_path, name, data)
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED
    # The same archive again is the same file: nothing added twice.
    again, _ = _stored(cli, tmp_path, name, data)
    assert again["already_present"] == 3 and again["stored"] == 0


def test_a_zip_of_several_files_is_one_error(cli, tmp_path):
    data = _zipped({"a.csv": _log_text(",").encode(), "b.csv": _log_text(",").encode()})
    said = _refused(cli, tmp_path, "export.zip", data)
    assert "2 files" in said and "a.csv" in said


# --- a query typed over several lines --------------------------------------------------------


def test_a_multi_line_query_in_an_analytics_export(cli, tmp_path):
    """A search typed into a textarea holds a newline, quoted as CSV quotes it. The analytics
    reader reads a row per line: the row's first line was a reject ('unbalanced quotes') and
    its second stored as a query of its own (``my password"`` searched 10 times)."""
    data = b'query,searches,clicks\r\n"reset\nmy password",10,2\r\nok,5,1\r\n'
    total, db = _stored(cli, tmp_path, "t.csv", data)
    assert total == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    got = _read(db, "SELECT spellings[1].query, n_events FROM search_summaries ORDER BY 2")
    assert got == [("ok", 5), ("reset\nmy password", 10)]


def test_a_multi_line_query_in_a_click_csv(cli, tmp_path):
    """A line feed inside the quoted cell, CRLF between rows, as Excel writes them: the query
    was lost (a reject, and its second line a search by the user 'my password"')."""
    data = (
        b"user_id,query,timestamp,clicked_doc\r\n"
        b'u1,"reset\nmy password",2026-01-01T10:00:00,d1\r\n'
        b"u2,plain,2026-01-01T10:05:00,d2\r\n"
    )
    total, db = _stored(cli, tmp_path, "clicks.csv", data)
    assert total == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    got = _read(db, "SELECT query, clicked_ids FROM search_events ORDER BY ts")
    assert got == [("reset\nmy password", ["d1"]), ("plain", ["d2"])]


def test_a_stray_quote_still_swallows_no_row(cli, tmp_path):
    """Joining a quoted field's lines never takes a row that stands on its own: a quote that
    does not close within the rows after it stays its own row's reject."""
    data = b'query,searches\r\n"broken,10\r\nok,5\r\nfine,3\r\n'
    total, db = _stored(cli, tmp_path, "t.csv", data)
    assert total == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    assert _read(db, "SELECT line, reason FROM rejects") == [(2, "unbalanced quotes")]


def test_an_excel_workbook_is_one_error_saying_to_save_it_as_csv(cli, tmp_path):
    """An .xlsx is a zip of many files: not an export goldmine reads, and said so."""
    data = _zipped({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"})
    said = _refused(cli, tmp_path, "searches.xlsx", data)
    assert "Excel workbook" in said and "CSV" in said


def test_a_windows_1252_corpus_with_encoding(cli, tmp_path):
    data = "id,text\r\nd1,the café opens at 9\r\nd2,“quoted” for €5\r\n".encode("cp1252")
    _, db = _stored(cli, tmp_path, "docs.csv", data, "--encoding", "cp1252", kind="corpus")
    assert _read(db, "SELECT chunk_id, text FROM chunks ORDER BY 1") == [
        ("d1", "the café opens at 9"), ("d2", "“quoted” for €5"),
    ]  # fmt: skip


def test_a_windows_1252_ticket_export_is_refused_then_read_with_encoding(cli, tmp_path):
    """Tickets and chat read delimited files as search logs do: the same refusal names an
    option the command has."""
    data = (
        "id,created_at,subject,description\r\n"
        "t1,2026-11-30 10:00,Café card refused,My “gold” card was refused at €5\r\n"
        "t2,2026-11-30 11:00,Crème brûlée missing,Where is my order?\r\n"
    ).encode("cp1252")
    said = _refused(cli, tmp_path, "tickets.csv", data, kind="tickets")
    assert "--encoding cp1252" in said
    _, db = _stored(cli, tmp_path, "tickets.csv", data, "--encoding", "cp1252", kind="tickets")
    got = _read(db, "SELECT ticket_id, subject FROM tickets ORDER BY 1")
    assert got == [("t1", "Café card refused"), ("t2", "Crème brûlée missing")]


def test_a_json_lines_file_in_windows_1252_keeps_a_reject_per_line(cli, tmp_path):
    """JSON is UTF-8 by definition: its lines that are not stay each a reject, as before."""
    text = "".join(
        json.dumps({"query": q, "ts": t.replace(" ", "T")}, ensure_ascii=False) + "\n"
        for q, t, _ in ROWS
    )
    total, db = _stored(cli, tmp_path, "log.jsonl", text.encode("cp1252"))
    assert (total["stored"], total["rejected"]) == (1, 2)
    assert _read(db, "SELECT line, reason FROM rejects ORDER BY 1") == [
        (2, "invalid UTF-8"), (3, "invalid UTF-8"),
    ]  # fmt: skip


def _packed(kind: str, data: bytes) -> bytes:
    import bz2
    import lzma

    return bz2.compress(data) if kind == "bz2" else lzma.compress(data)


@pytest.mark.parametrize("kind", ["bz2", "xz"])
@pytest.mark.parametrize("named", [True, False], ids=["suffix", "magic"])
def test_a_bzip2_or_xz_file_is_read_as_the_file_it_holds(cli, tmp_path, kind, named):
    """Dumps and archived exports come as .bz2 or .xz (bzip2 -k, xz -k): each was 'unknown
    file format', which named the format, not the compression. Read by its suffix or, unnamed,
    by its magic number; several streams one after another (pbzip2's, xz's) are one file."""
    text = _log_text(",").encode()
    half = text.index(b"\r\n", len(text) // 2) + 2
    data = _packed(kind, text[:half]) + _packed(kind, text[half:])  # two streams
    total, db = _stored(cli, tmp_path, f"searches.csv.{kind}" if named else "searches.csv", data)
    assert (total["stored"], total["rejected"]) == (3, 0)
    assert _events(db) == EXPECTED
    corpus = tmp_path / f"corpus.jsonl.{kind}"
    corpus.write_bytes(_packed(kind, b'{"id": "d1", "text": "Aspirin reduces fever."}\n'))
    out = cli("--db", str(db), "ingest", "corpus", str(corpus), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["total"]["stored"] == 1, out.stderr


@pytest.mark.parametrize("kind", ["bz2", "xz"])
def test_a_truncated_bzip2_or_xz_file_is_one_line_and_stores_nothing(cli, tmp_path, kind):
    rows = "".join(f'{{"query": "reset password {i}", "ts": "2026-11-30T10:00:00"}}\n'
                   for i in range(3000))  # fmt: skip
    data = _packed(kind, rows.encode())
    said = _refused(cli, tmp_path, f"week.jsonl.{kind}", data[: len(data) * 2 // 3])
    stream = "bzip2" if kind == "bz2" else "xz"
    assert f"the {stream} stream ends early" in said and "nothing from it was stored" in said


@pytest.mark.parametrize("tool", ["bzip2", "xz"])
def test_a_real_collection_compressed_by_the_tool_reads_as_the_plain_file(
    cli, tmp_path, shared_dataset, tool
):
    """Cranfield's cran.all.1400 compressed by the system's own bzip2 and xz (not by Python):
    every record is counted as the plain file's are, 1,398 stored and the two empty ones
    (.I 471 and 995, neither title nor text) rejected."""
    import shutil
    import subprocess

    if shutil.which(tool) is None:
        pytest.skip(f"no {tool} on this machine")
    plain = shared_dataset("datasets", "cranfield", "cran.all.1400")
    packed = tmp_path / f"cran.all.1400.{'bz2' if tool == 'bzip2' else 'xz'}"
    packed.write_bytes(subprocess.run([tool, "-c", str(plain)], capture_output=True,
                                      check=True).stdout)  # fmt: skip
    total, db = _stored(cli, tmp_path, packed.name, packed.read_bytes(), kind="corpus")
    assert (total["rows_in"], total["stored"], total["rejected"]) == (1400, 1398, 2)
    assert _read(db, "SELECT count(DISTINCT chunk_id) FROM chunks") == [(1398,)]


def test_the_encoding_refusal_quotes_no_text_of_the_line(cli, tmp_path):
    """The refusal is printed before anything is redacted: it names the line, the column and
    the byte (and the letter it is in Windows-1252), never the line's text, which held a
    customer's email and phone number."""
    data = (
        "Subject,Description,Created at\r\n"
        '"Refund grüße helga@example.com","Tel 0171 1234567 Müller",2026-01-05\r\n'
        '"Änderung","x",2026-01-05\r\n'
    ).encode("cp1252")
    said = _refused(cli, tmp_path, "tickets.csv", data, kind="tickets")
    assert "line 2" in said and "0xFC" in said and "--encoding cp1252" in said
    for secret in ("helga", "example.com", "1234567", "Müller", "Refund"):
        assert secret not in said
