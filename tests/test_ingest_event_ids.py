"""Event ids that repeat across files: exports that number their rows 1..N in each file (a
spreadsheet's or a notebook's ``id`` column) gave next week's row 1 the key of this week's row 1,
and next week's searches were counted "already present" and never stored, exit 0. A stored id
with another time is another search: it is stored as ``ID@TIME``. The same file again, or a row
of the same id and time, is still the search already stored."""

from __future__ import annotations

import json
from pathlib import Path

from goldmine.store import open_store

WEEK1 = ("id,query,timestamp\n1,reset password,2026-11-16T10:00:00Z\n"
         "2,cancel order,2026-11-16T10:05:00Z\n3,track parcel,2026-11-16T10:07:00Z\n")  # fmt: skip
WEEK2 = ("id,query,timestamp\n1,refund status,2026-11-23T09:00:00Z\n"
         "2,change address,2026-11-23T09:01:00Z\n3,gift card balance,2026-11-23T09:02:00Z\n"
         "4,opening hours,2026-11-23T09:03:00Z\n")  # fmt: skip


def ingest(cli, db: Path, path: Path) -> dict:
    result = cli("--db", str(db), "ingest", "searchlog", str(path), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    return out.get("total", out)


def stored(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute("SELECT event_id, query FROM search_events ORDER BY ts").fetchall()


def test_next_weeks_rows_numbered_alike_are_stored(cli, tmp_path) -> None:
    (tmp_path / "week1.csv").write_text(WEEK1)
    (tmp_path / "week2.csv").write_text(WEEK2)
    db = tmp_path / "s.duckdb"
    ingest(cli, db, tmp_path / "week1.csv")
    second = ingest(cli, db, tmp_path / "week2.csv")
    assert second["stored"] == 4 and second["already_present"] == 0, second
    rows = stored(db)
    assert [q for _, q in rows] == ["reset password", "cancel order", "track parcel",
                                    "refund status", "change address", "gift card balance",
                                    "opening hours"]  # fmt: skip
    assert rows[3][0] == "1@20261123T090000" and rows[6][0] == "4"
    # the same weeks again: every row is the search already stored
    (tmp_path / "again.csv").write_text(WEEK2 + "5,new one,2026-11-24T08:00:00Z\n")
    third = ingest(cli, db, tmp_path / "again.csv")
    assert third["stored"] == 1 and third["already_present"] == 4, third
    (tmp_path / "again1.csv").write_text(WEEK1 + "\n")
    assert ingest(cli, db, tmp_path / "again1.csv")["stored"] == 0


def test_identical_rows_without_an_id_are_each_a_search(cli, tmp_path) -> None:
    """A daily export, or a list of queries, repeats a row for each search: three "reset
    password" searches were one, "already present" in a store that was empty."""
    daily = (
        "date,query\n2026-11-23,reset password\n2026-11-23,reset password\n"
        "2026-11-23,reset password\n2026-11-23,cancel order\n2026-11-24,reset password\n"
    )
    (tmp_path / "daily.csv").write_text(daily)
    db = tmp_path / "s.duckdb"
    first = ingest(cli, db, tmp_path / "daily.csv")
    assert first["stored"] == 5 and first["already_present"] == 0, first
    assert sorted(q for _, q in stored(db)).count("reset password") == 4
    # a file that grew: its first five lines are the ones stored
    (tmp_path / "grown.csv").write_text(daily + "2026-11-24,cancel order\n")
    grown = ingest(cli, db, tmp_path / "grown.csv")
    assert grown["stored"] == 1 and grown["already_present"] == 5, grown
