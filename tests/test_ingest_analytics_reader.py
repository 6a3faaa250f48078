"""An aggregated-analytics export read in one statement (``logformats._read_analytics``) gives
the records, lines and rejects of the line reader (``_read_analytics_by_line``), which reads the
lines into a table first."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import analytics, batch, formats, logformats
from goldmine.ingest.files import InputFile
from goldmine.ingest.redact import make_redactor
from goldmine.store import open_store

import helpers

# Rows an export may hold: CSV quotes (a count with a thousands comma, quotes inside), a stray
# quote, too many and too few fields, blank lines, control characters, backslashes, non-ASCII.
ROWS = [
    "refund status,120,0,45%",
    'cancel order,"1,080",20,0.25',
    '"say ""hi"" twice",3,0,1%',
    '"unclosed quote,4,0,0%',
    "too,many,fields,here,now",
    "too few,7",
    "",
    "   ",
    "Vérifier Commande 👋,10,10,0%",
    "back\\slash \x01 bell,2,0,5%",
    ",5,0,0%",
    "trailing space ,1,0,0% ",
]
HEADER = "Search Term,Total Searches,Searches with No Results,Click-through Rate"


def _read(con: duckdb.DuckDBPyConnection, path: Path, compression: str, by_line: bool) -> None:
    """The export read into ``con``'s gm_raw in one statement, or by the line reader."""
    head = path.read_bytes() if compression == "none" else gzip.decompress(path.read_bytes())
    header, delim = logformats._header(head), logformats._delimiter(head)
    read = logformats._read_analytics_by_line if by_line else logformats._read_analytics
    read(con, path, compression, header, delim)


def _records(path: Path, compression: str, by_line: bool) -> tuple[list[tuple], bool]:
    """gm_raw of the export, and whether the line reader's table of lines was made."""
    return helpers.reader_records(lambda con: _read(con, path, compression, by_line))


def _alike(path: Path, compression: str = "none") -> list[tuple]:
    return helpers.records_alike(
        lambda con: _read(con, path, compression, by_line=False),
        lambda con: _read(con, path, compression, by_line=True),
    )


def test_tricky_rows_read_alike(tmp_path: Path):
    path = tmp_path / "export.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n", encoding="utf-8")
    rows = {r[0]: r for r in _alike(path)}
    assert rows[3][1] == (
        '{"Search Term":"cancel order","Total Searches":"1,080",'
        '"Searches with No Results":"20","Click-through Rate":"0.25"}'
    )
    assert rows[4][1].startswith('{"Search Term":"say \\"hi\\" twice"')
    assert rows[5][2] == "unbalanced quotes"
    assert rows[6][2] == "expected 4 fields, found 5"
    assert rows[7][1].endswith('"Searches with No Results":null,"Click-through Rate":null}')
    assert 8 not in rows and 9 not in rows  # blank lines are no records
    assert "\\\\slash \\u0001 bell" in rows[11][1]


def test_crlf_tabs_and_gzip_read_alike(tmp_path: Path):
    tabbed = "\r\n".join(
        ["query\tsearches\tno_results\tdate", 'a "quoted" query\t3\t0\t2026-01-02', "b\t1", "x"]
    )
    plain = tmp_path / "export.tsv"
    plain.write_bytes((tabbed + "\r\n").encode())
    packed = tmp_path / "export.csv.gz"
    packed.write_bytes(gzip.compress(("\r\n".join([HEADER, *ROWS]) + "\r\n").encode()))
    rows = _alike(plain)
    assert rows[0] == (
        2,
        '{"query":"a \\"quoted\\" query","searches":"3","no_results":"0","date":"2026-01-02"}',
        None,
    )
    assert not any("\\r" in r[1] for r in rows)
    assert len(_alike(packed, "gzip")) == 10


def test_a_row_the_reader_cannot_read_takes_the_line_reader(tmp_path: Path):
    path = tmp_path / "export.csv"
    path.write_bytes(b"query,searches\nfoo,10\nba\xffr,3\n\nlast,1\n")
    one, lines_made = _records(path, "none", by_line=False)
    assert lines_made
    assert one == _records(path, "none", by_line=True)[0]
    assert [(r[0], r[2]) for r in one] == [(2, None), (3, "invalid UTF-8"), (5, None)]


def test_the_reader_hands_the_stage_its_rows_as_text_columns(tmp_path: Path):
    """No JSON is made for a row the reader reads: ``gm_src`` holds its fields as text columns
    (``read_raw`` returns their names, the header's), ``raw`` only on a row that is no record."""
    path = tmp_path / "export.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n", encoding="utf-8")
    con = duckdb.connect()
    batch.prepare(con)
    assert formats.read_raw(con, InputFile(path, "analytics", "none")) == HEADER.split(",")
    columns = [r[0] for r in con.execute("DESCRIBE gm_src").fetchall()]
    assert columns == ["line", "raw", "err", "gm_f1", "gm_f2", "gm_f3", "gm_f4"]
    rows = {r[0]: r[1:] for r in con.execute("SELECT * FROM gm_src").fetchall()}
    con.close()
    assert rows[3] == (None, None, "cancel order", "1,080", "20", "0.25")
    assert rows[4][:3] == (None, None, 'say "hi" twice')
    assert rows[5] == ('"unclosed quote,4,0,0%', "unbalanced quotes", None, None, None, None)
    assert rows[7] == (None, None, "too few", "7", None, None)


# Exports of odd layouts, each imported as the reader reads it and as the same records given as
# JSON lines: a header naming a column twice (the repeat keeps its values under ``name_N``).
LAYOUTS = {
    "tricky": ("export.csv", "\n".join([HEADER, *ROWS]) + "\n"),
    "dated": (
        "export.csv",
        'Date,Query,Searches,No Results,Clicks,CTR\n2026-11-30,refund,"1,080",20,100,\n'
        "30/11/2026,gift,1_000,1%,,0.5\n2026-13-45,ship,5,,,\n2026-11-30,  ,5,,,\n"
        "2026-11-30,track,abc,,,\n2026-11-30,Café Menü,4.6,,,7.5%\n2026-11-30,café menü,2,1,,\n",
    ),
    "tabs": (
        "export.tsv",
        'query\tsearches\tno_results\tdate\r\na "quoted" query\t3\t0\t2026-01-02\r\n'
        "b\t1\r\nx\r\nc\t-4\t0\t\r\n",
    ),
    "repeated": (
        "export.csv",
        "query,searches,Query,searches\nrefund,10,other,99\n,3,x,4\ncard,x,card,5\n",
    ),
}


def _imported(db: Path, target, item: InputFile) -> tuple[list[tuple], list[tuple]]:
    """The summaries (but the import's time) and the rejects' reasons and raw text."""
    with open_store(db) as con:
        batch.run(con, target, [item], make_redactor(False))
        summaries = con.execute(
            "SELECT * EXCLUDE (batch_id, first_seen, last_seen) FROM search_summaries ORDER BY ALL"
        ).fetchall()
        rejects = con.execute(
            "SELECT reason, raw FROM rejects WHERE reason NOT IN ('unbalanced quotes') "
            "AND NOT starts_with(reason, 'expected ') ORDER BY ALL"
        ).fetchall()
    return summaries, rejects


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_text_columns_store_what_the_same_records_as_json_store(tmp_path: Path, layout: str):
    """The stage reads the reader's text columns with no JSON between: the summaries and the
    rejects (with their raw text) are those of the same records given as JSON lines, which the
    stage reads from their objects."""
    name, text = LAYOUTS[layout]
    path = tmp_path / name
    path.write_bytes(text.encode())
    found = analytics.columns(logformats._header(path.read_bytes()))
    con = duckdb.connect()
    batch.prepare(con)
    logformats.read(con, path, "analytics", "none")
    records = con.execute("SELECT raw FROM gm_raw WHERE err IS NULL ORDER BY line").fetchall()
    con.close()
    jsonl = helpers.write_jsonl(tmp_path / "export.jsonl", [r[0] for r in records])
    typed = _imported(tmp_path / "typed.duckdb", analytics.target(found),
                      InputFile(path, "analytics", "none"))  # fmt: skip
    as_json = replace(analytics.target(found), stage=lambda _keys: analytics.stage_sql(found))
    assert typed == _imported(tmp_path / "json.duckdb", as_json, InputFile(jsonl, "jsonl", "none"))
    assert typed[0] and typed[1]
    if layout == "repeated":  # the first of a repeated name is read; a reject keeps both
        assert [(s[2], s[4]) for s in typed[0]] == [("refund", 10)]
        assert typed[1] == [
            ("missing query", '{"query":"","searches":"3","Query_1":"x","searches_1":"4"}'),
            ("wrong type: count is not a number: x",
             '{"query":"card","searches":"x","Query_1":"card","searches_1":"5"}'),
        ]  # fmt: skip


def _stage(path: Path) -> list[tuple]:
    """``analytics.stage_sql``'s rows over the export as the reader reads it (undated rows
    dated 2026-12-06): over its text columns, as an import reads them, the same as over the same
    records as JSON objects (``gm_raw``), a reject's raw text too."""
    con = duckdb.connect()
    batch.prepare(con)
    found = analytics.columns(logformats._header(path.read_bytes()))
    keys = logformats.read(con, path, "analytics", "none")
    staged = []
    for typed in (keys, None):
        sql, params = analytics.stage_sql(found, keys=typed)
        params["gm_now"] = datetime(2026, 12, 6)
        staged.append(
            con.execute(
                "SELECT line, reason, query, day, n_events, n_zero_results, n_no_click, n_failed, "
                f"CASE WHEN reason IS NOT NULL THEN raw END FROM ({sql}) ORDER BY line",
                params,
            ).fetchall()
        )
    con.close()
    assert staged[0] == staged[1]
    return [r[:-1] for r in staged[0]]


def test_counts_rates_and_dates_as_exports_write_them(tmp_path: Path):
    """What each row of an export stands for, pinned before the stage reads every field of a
    row in one pass: counts with separators, rates as shares or percentages, dates in the
    layouts exports use, and the reasons of the rows that say nothing usable."""
    path = tmp_path / "export.csv"
    path.write_text(
        "Date,Query,Searches,No Results,Clicks,CTR\n"
        '2026-11-30,refund,"1,080",20,100,\n'
        "2026-11-30 10:15:00,card, 1 080 ,0,,25%\n"
        "30/11/2026,gift,1_000,1%,,0.5\n"
        ",invoice,12,,,100%\n"
        ",coupon,12,,,150%\n"
        "2026-11-30T10:15:00+02:00,reset,7,-1,,\n"
        "1764460800,order,5,,x,\n"
        "2026-13-45,ship,5,,,\n"
        "2026-11-30,  ,5,,,\n"
        "2026-11-30,track,abc,,,\n"
        "2026-11-30,cancel,2.5e3,,,\n"
        "2026-11-30,pdf,3,,,x%\n"
        "2026-11-30,login,10,2,3,\n"
        "2026-11-30,Café Menü,4.6,,,7.5%\n",
        encoding="utf-8",
    )
    day = date(2026, 11, 30)
    assert _stage(path) == [
        (2, None, "refund", day, 1080, 20, 960, 980),
        (3, None, "card", day, 1080, 0, 810, 810),
        (4, "wrong type: no results is not a number: 1%", "gift", day, 1000, 0, 500, 500),
        (5, None, "invoice", None, 12, 0, 0, 0),  # undated: the import's
        (6, "click-through rate is out of range: 150%", "coupon", None, 12, 0, 0, 0),
        (7, "wrong type: no results is not a number: -1", "reset", day, 7, -1, 0, -1),
        (8, "wrong type: clicks is not a number: x", "order", date(2025, 11, 30), 5, 0, 0, 0),
        (9, "unparseable timestamp: 2026-13-45", "ship", None, 5, 0, 0, 0),
        (10, "missing query", None, day, 5, 0, 0, 0),
        (11, "wrong type: count is not a number: abc", "track", day, None, 0, 0, 0),
        (12, None, "cancel", day, 2500, 0, 0, 0),
        (13, "wrong type: click-through rate is not a rate: x%", "pdf", day, 3, 0, 0, 0),
        (14, None, "login", day, 10, 2, 5, 7),
        (15, None, "Café Menü", day, 5, 0, 5, 5),
    ]


# --- one wild value rejects its row, never the import ------------------------------------------


def test_a_count_beyond_64_bits_rejects_its_row_and_the_rest_is_stored(cli, tmp_path: Path):
    """A count of 1e400 (or any beyond 64 bits) stopped the whole import with exit 2 ("cannot
    convert a value: … inf …"): it is that row's reject, with a reason, like every other bad row."""
    path = tmp_path / "export.csv"
    path.write_text(
        "query,searches,no_results,ctr\nrefund,10,1,50%\nwild,1e400,0,0.1\ncard,5,0,20%\n",
        encoding="utf-8",
    )
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    total = json.loads(proc.stdout)["total"]
    assert (total["stored"], total["rejected"]) == (2, 1)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute(
            "SELECT norm_query, n_events FROM search_summaries ORDER BY norm_query"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert stored == [("card", 5), ("refund", 10)]
    assert rejects == [(3, "wrong type: count is out of range: 1e400")]
    shown = cli("--db", str(db), "rejects", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "count is out of range: 1e400" in shown.stdout


def _export_stored(cli, tmp_path: Path, path: Path, columns: str) -> tuple[list, list]:
    """``ingest searchlog`` of an export, which must be read as one: its summaries' columns
    (by query) and its rejects (line, reason)."""
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["format"] == "analytics"
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute(
            f"SELECT {columns} FROM search_summaries ORDER BY norm_query"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall()
    return stored, rejects


def test_a_google_analytics_export_with_its_comment_lines(cli, tmp_path: Path):
    """Google Analytics writes a block of ``#`` lines above the table and may append another
    section after it: the export was read as a log of one search a row (its counts lost), or
    refused. The table's rows are searches by their count; the preamble is skipped; a later
    section's rows are rejects, never searches."""
    path = tmp_path / "Search_terms.csv"
    path.write_text(
        "# ----------------------------------------\n# Search terms\n# Account: Demo\n"
        "# Start date: 20261101\n# End date: 20261130\n# ----------------------------------------\n"
        "Search term,Event count,Total users\nreset password,120,80\n#1 seller,7,7\n"
        "billing,45,30\n\n# ----------------------------------------\n\nDay Index,Event count\n"
        "20261101,5\n",
        encoding="utf-8",
    )
    stored, rejects = _export_stored(cli, tmp_path, path, "norm_query, n_events")
    assert stored == [("1 seller", 7), ("billing", 45), ("reset password", 120)]
    assert rejects == [
        (14, "after the export's table (a section that starts with #)"),
        (15, "after the export's table (a section that starts with #)"),
    ]


def test_an_adobe_workspace_freeform_table(cli, tmp_path: Path):
    """Adobe Analysis Workspace writes a freeform table's header with an empty first cell (the
    dimension is named on the row below, beside the table's totals) and may repeat the header
    as a second row. The import was a dead end: "no query field", and --map could not name an
    empty column. The first column is the query; the second header row and the totals row are
    rejects, never searches: the totals row would be the week's biggest "query"."""
    path = tmp_path / "Search_terms_Freeform.csv"
    path.write_text(
        "#=================================================================\n"
        "# Search terms\n# Report suite: acme-prod\n"
        '"# Date: Nov 1, 2026 - Nov 30, 2026"\n'
        "#=================================================================\n\n"
        "##############################################\n# Freeform table\n"
        "##############################################\n"
        ",Searches,Search Clickthroughs\n"
        ",Searches,Search Clickthroughs\n"
        "Internal Search Term (eVar5),2300,700\n"
        "return policy,1200,372\n"
        "reset password,800,300\n"
        '"gift card, balance",300,28\n',
        encoding="utf-8",
    )
    stored, rejects = _export_stored(cli, tmp_path, path, "norm_query, n_events, n_no_click")
    assert stored == [
        ("gift card balance", 300, 272),
        ("reset password", 800, 500),
        ("return policy", 1200, 828),
    ]
    assert [line for line, _ in rejects] == [11, 12]
    assert "totals" in rejects[1][1]


def test_a_google_analytics_section_after_a_line_the_reader_cannot_read(tmp_path: Path):
    """The line that starts a later section is found on the lines the rows are read from: an
    unreadable row above it (the reader skips it, and its count of the lines after) moved it
    one line up, onto the table's last row, which became a reject."""
    path = tmp_path / "Search_terms.csv"
    path.write_bytes(
        b"# Search terms\n# ---\nSearch term,Event count\nba\xffr,3\nbilling,45\n# ---\n"
        b"Day Index,Event count\n"
    )
    head = path.read_bytes()
    args = (path, "none", logformats._header(head), ",", logformats.preamble(head))
    one, lines_made = helpers.reader_records(lambda con: logformats._read_analytics(con, *args))
    assert lines_made
    by_line, _ = helpers.reader_records(lambda con: logformats._read_analytics_by_line(con, *args))
    assert one == by_line
    assert [(r[0], r[2]) for r in one] == [
        (4, "invalid UTF-8"),
        (5, None),
        (7, "after the export's table (a section that starts with #)"),
    ]


WILD = [
    # (count, no results, clicks, CTR, no-results rate): the reason, or None for a kept row
    (("1e400", "", "", "", ""), "wrong type: count is out of range: 1e400"),
    (("inf", "", "", "", ""), "wrong type: count is out of range: inf"),
    (("-inf", "", "", "", ""), "wrong type: count is out of range: -inf"),
    (("NaN", "", "", "", ""), "wrong type: count is out of range: NaN"),
    (("1e19", "", "", "", ""), "wrong type: count is out of range: 1e19"),
    (("99999999999999999999", "", "", "", ""), "wrong type: count is out of range: 9999999"),
    (("10", "1e400", "", "", ""), "wrong type: no results is out of range: 1e400"),
    (("10", "NaN", "", "", ""), "wrong type: no results is out of range: NaN"),
    (("10", "11", "", "", ""), "no results exceed the count: 11 > 10"),
    (("10", "", "1e400", "", ""), "wrong type: clicks is out of range: 1e400"),
    (("10", "", "nan", "", ""), "wrong type: clicks is out of range: nan"),
    (("10", "", "", "NaN", ""), "click-through rate is out of range: NaN"),
    (("10", "", "", "inf", ""), "click-through rate is out of range: inf"),
    (("10", "", "", "1e400%", ""), "click-through rate is out of range: 1e400%"),
    (("10", "", "", "150%", ""), "click-through rate is out of range: 150%"),
    (("10", "", "", "-5%", ""), "click-through rate is out of range: -5%"),
    (("10", "", "", "-0.1", ""), "click-through rate is out of range: -0.1"),
    (("10", "", "", "", "NaN"), "no-results rate is out of range: NaN"),
    (("10", "", "", "", "1e400"), "no-results rate is out of range: 1e400"),
    (("10", "", "", "", "150%"), "no-results rate is out of range: 150%"),
    (("10", "", "", "", "-0.2"), "no-results rate is out of range: -0.2"),
    (("10", "", "", "1,5", ""), "wrong type: click-through rate is not a rate: 1,5"),
    (("-0", "-0", "-0", "", ""), None),
    (("10", "", "", "-0", "-0"), None),
    (("10", "", "", "100", "45"), None),  # a rate over 1 is a percentage
    (("10", "", "30", "", ""), None),  # clicks may count several a search
]


def test_wild_counts_and_rates_reject_their_own_row(tmp_path: Path):
    """Each wild value gives its row a reason (the stage read every other row), and a kept row's
    numbers are finite and within the count."""
    path = tmp_path / "export.csv"
    lines = [",".join(f'"{v}"' for v in ("q", *values)) for values, _ in WILD]
    path.write_text(
        "query,searches,no_results,clicks,ctr,no_results_rate\n" + "\n".join(lines) + "\n",
        encoding="utf-8",
    )
    rows = _stage(path)
    assert [r[0] for r in rows] == list(range(2, len(WILD) + 2))
    for (values, reason), row in zip(WILD, rows, strict=True):
        if reason is None:
            assert row[1] is None, (values, row)
            n, zero, no_click, failed = row[4:]
            assert 0 <= zero <= n and 0 <= no_click <= n and 0 <= failed <= n, (values, row)
        else:
            assert row[1] is not None and row[1].startswith(reason), (values, row)


def test_a_wild_date_rejects_its_row(tmp_path: Path):
    """A date of year 99999 or year 1 was stored as that day; epoch 1e20 is no date either."""
    path = tmp_path / "export.csv"
    path.write_text(
        "date,query,searches\n99999-01-01,a,1\n0001-01-01,b,1\n1e20,c,1\n"
        "100000000000000000000,d,1\n2026-11-30,e,1\n",
        encoding="utf-8",
    )
    reasons = [(r[0], r[1]) for r in _stage(path)]
    assert reasons == [
        (2, "timestamp out of range: 99999-01-01"),
        (3, "timestamp out of range: 0001-01-01"),
        (4, "unparseable timestamp: 1e20"),
        (5, "unparseable timestamp: 100000000000000000000"),
        (6, None),
    ]
