"""What a user does after an import went wrong: an aggregated export's dates read as an event
log's are (in the order the file's other dates show, --ts-format naming the layout), and a file
whose every row was rejected is read again when imported again (with the option that fixes it),
not skipped as "already imported"."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

from goldmine.store import open_store


def _ingest(cli, db: Path, *args: str):
    return cli("ingest", "searchlog", *args, "--db", str(db), "--json")


def _export(path: Path, days: list[str]) -> Path:
    """An analytics export (query, count), one row a day, as the recipe's dashboard writes it."""
    rows = [f"{day},query {i},{10 + i}" for i, day in enumerate(days)]
    path.write_text("Date,Search term,Searches\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _days(db: Path) -> dict[str, date]:
    with open_store(db) as con:
        rows = con.execute("SELECT norm_query, day FROM search_summaries").fetchall()
    return dict(rows)


def test_an_export_reads_an_ambiguous_date_in_the_order_its_other_dates_show(
    tmp_path, db_path, cli
):
    export = _export(tmp_path / "site-search.csv", ["03/04/2026", "25/04/2026"])
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"]["stored"] == 2
    assert _days(db_path) == {"query 0": date(2026, 4, 3), "query 1": date(2026, 4, 25)}


def test_an_export_whose_every_date_is_ambiguous_names_ts_format_which_reads_it(
    tmp_path, db_path, cli
):
    export = _export(tmp_path / "site-search.csv", ["03/04/2026", "05/04/2026"])
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "--ts-format" in result.stderr and "03/04/2026" in result.stderr
    given = _ingest(cli, db_path, str(export), "--ts-format", "%d/%m/%Y")
    assert given.returncode == 0, given.stderr
    assert _days(db_path) == {"query 0": date(2026, 4, 3), "query 1": date(2026, 4, 5)}


def test_an_export_with_dates_in_both_orders_rejects_the_ambiguous_naming_ts_format(
    tmp_path, db_path, cli
):
    export = _export(tmp_path / "mixed.csv", ["25/04/2026", "04/25/2026", "03/04/2026"])
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 0, result.stderr
    assert _days(db_path) == {"query 0": date(2026, 4, 25), "query 1": date(2026, 4, 25)}
    with open_store(db_path) as con:
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert len(reasons) == 1 and "--ts-format" in reasons[0][0] and "03/04/2026" in reasons[0][0]


def test_a_log_whose_every_row_was_rejected_is_read_again_with_ts_format(tmp_path, db_path, cli):
    log = tmp_path / "week.csv"
    log.write_text(
        "timestamp,session_id,query\n2026/11/23 10h30,s1,track order\n2026/11/23 10h31,s1,refund\n",
        encoding="utf-8",
    )
    first = _ingest(cli, db_path, str(log))
    assert first.returncode == 4  # nothing stored: every timestamp unparseable
    again = _ingest(cli, db_path, str(log), "--ts-format", "%Y/%m/%d %Hh%M")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["total"]["stored"] == 2
    with open_store(db_path) as con:
        times = con.execute("SELECT query, ts FROM search_events ORDER BY ts").fetchall()
    assert times == [
        ("track order", datetime(2026, 11, 23, 10, 30)),
        ("refund", datetime(2026, 11, 23, 10, 31)),
    ]
    # Read the same way a third time, the stored rows are present: nothing is stored twice.
    third = _ingest(cli, db_path, str(log), "--ts-format", "%Y/%m/%d %Hh%M")
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["total"]["stored"] == 0


def test_an_export_whose_every_row_was_rejected_is_read_again(tmp_path, db_path, cli):
    export = tmp_path / "export.csv"
    export.write_text("query,count\nreturn policy,many\n", encoding="utf-8")
    assert _ingest(cli, db_path, str(export)).returncode == 4
    export.write_text("query,count\nreturn policy,many\n", encoding="utf-8")  # the same bytes
    again = _ingest(cli, db_path, str(export), "--allow-empty")
    assert again.returncode == 0, again.stderr
    # Read again (a new batch, its rejects listed again), not "already imported".
    files = json.loads(again.stdout)["files"]
    assert [f.get("note") for f in files] != ["already imported (batch 1, same file hash)"]
    with open_store(db_path) as con:
        assert con.execute("SELECT count(*) FROM import_batches").fetchall() == [(2,)]


def test_an_export_is_told_to_map_its_query_column_and_its_count_is_kept(tmp_path, db_path, cli):
    """A query-and-count export whose query column no reader knows (a German BI tool's
    `Suchbegriff`): the error names --map for it, and `--map query=Suchbegriff` reads the file as
    the export it is, each row its count of searches (it read each row as one search, its count
    lost, so the error said to rename the column). (Algolia's `search` was such a column; it is
    now read: tests/test_ingest_algolia.py.)"""
    export = tmp_path / "top-searches.csv"
    export.write_text("Suchbegriff,count\nrückgabe,1080\n", encoding="utf-8")
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 2
    error = result.stderr.strip()
    assert error.startswith("error: ") and len(error.splitlines()) == 1
    assert "--map query=COLUMN --map count=count" in error
    mapped = _ingest(cli, db_path, str(export), "--map", "query=Suchbegriff")
    assert mapped.returncode == 0, mapped.stderr
    with open_store(db_path) as con:
        got = con.execute("SELECT norm_query, n_events FROM search_summaries").fetchall()
    assert got == [("rückgabe", 1080)]


def test_algolias_camel_case_click_through_rate_is_read(tmp_path, db_path, cli):
    """Algolia's dashboard writes `clickThroughRate`: its searches without a click count."""
    export = tmp_path / "algolia-top-searches.csv"
    export.write_text(
        "search,count,clickThroughRate,nbHits\nreturn policy,1080,0.415,12\n", encoding="utf-8"
    )
    assert _ingest(cli, db_path, str(export)).returncode == 0
    with open_store(db_path) as con:
        got = con.execute(
            "SELECT norm_query, n_events, n_no_click FROM search_summaries"
        ).fetchall()
    assert got == [("return policy", 1080, 1080 - 448)]
