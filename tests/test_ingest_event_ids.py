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


def test_a_field_first_written_after_twenty_thousand_records_is_read(cli, tmp_path) -> None:
    """Keys were taken from a file's first 20,000 records: a field a deploy added mid-week
    (clicked_ids, a corpus's title) was stored as nothing, exit 0."""
    from helpers import write_jsonl

    rows = [{"event_id": f"e{i}", "query": f"q {i % 50}", "ts": "2026-11-23T10:00:00Z"}
            for i in range(20010)]  # fmt: skip
    for row in rows[20000:]:
        row.update(clicked_ids=["d1"], user_id="u1")
    db = tmp_path / "s.duckdb"
    ingest(cli, db, write_jsonl(tmp_path / "late.jsonl", rows))
    with open_store(db) as con:
        got = con.execute("SELECT count(clicked_ids), count(user_id) FROM search_events").fetchall()
    assert got == [(10, 10)]
    docs = [{"id": f"d{i}", "text": f"t{i}"} for i in range(20010)]
    for doc in docs[20000:]:
        doc["title"] = "late title"
    corpus = tmp_path / "c.duckdb"
    path = write_jsonl(tmp_path / "c.jsonl", docs)
    result = cli("--db", str(corpus), "ingest", "corpus", str(path))
    assert result.returncode == 0, result.stderr
    with open_store(corpus) as con:
        assert con.execute("SELECT count(title) FROM chunks").fetchall() == [(10,)]


def test_a_ubi_queries_file_read_as_a_log_stores_the_users_words(cli, tmp_path) -> None:
    """OpenSearch's UBI plugin writes ``user_query`` (the words) beside ``query`` (the search's
    DSL as JSON text): the DSL was stored as the query."""
    from helpers import write_jsonl

    dsl = '{"query":{"match":{"title":"laptop bag"}}}'
    rows = [
        {"query_id": "q1", "user_query": "laptop bag", "timestamp": "2026-11-30T10:00:00Z",
         "query_response_hit_ids": ["p1", "p2"], "query": dsl},
        {"query_id": "q2", "user_query": "usb c hub", "timestamp": "2026-11-30T10:01:00Z"},
    ]  # fmt: skip
    db = tmp_path / "s.duckdb"
    ingest(cli, db, write_jsonl(tmp_path / "ubi_queries.jsonl", rows))
    assert sorted(q for _, q in stored(db)) == ["laptop bag", "usb c hub"]


def test_daily_exports_numbered_alike_hours_apart_are_stored(cli, tmp_path) -> None:
    """Day 1's rows 1 and 2 at 20:00 and 21:00, day 2's at 09:00 and 10:00: under a day apart,
    so they were the same events; another query at another time is another search."""
    (tmp_path / "day1.csv").write_text(
        "id,ts,query\n1,2024-03-01 20:00:00,reset password\n2,2024-03-01 21:00:00,billing\n"
    )
    (tmp_path / "day2.csv").write_text(
        "id,ts,query\n1,2024-03-02 09:00:00,refund policy\n2,2024-03-02 10:00:00,cancel order\n"
    )
    (tmp_path / "again.csv").write_text(  # day 1 exported again, its times rounded to the hour
        "id,ts,query\n1,2024-03-01 20:00:00,reset password\n2,2024-03-01 21:00:00,billing\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(cli, db, tmp_path / "day1.csv")
    assert ingest(cli, db, tmp_path / "day2.csv")["stored"] == 2
    assert ingest(cli, db, tmp_path / "again.csv")["stored"] == 0


def test_an_id_a_file_gives_two_searches_stores_both(cli, tmp_path) -> None:
    """Amplitude's event_id counts per device: one file gives id 1 to u1's search and to u2's.
    A fresh store kept 16 of 191 rows, the rest "already present". Rows sharing an id but not
    the query, the user or the day are other searches (ID@TIME); a row written twice (same id,
    query and user, minutes apart) is still one search."""
    rows = [
        {"event_id": 1, "user_id": "u1", "ts": "2026-11-23T08:00:00Z", "query": "return policy"},
        {"event_id": 1, "user_id": "u2", "ts": "2026-11-23T08:05:00Z", "query": "gift card"},
        {"event_id": 2, "user_id": "u1", "ts": "2026-11-23T08:01:00Z", "query": "shipping"},
        {"event_id": 2, "user_id": "u2", "ts": "2026-11-23T08:06:00Z", "query": "shipping"},
        {"event_id": 2, "user_id": "u1", "ts": "2026-11-23T08:01:30Z", "query": "shipping"},
        {"event_id": 3, "user_id": "u1", "ts": "2026-11-23T08:02:00Z", "query": "size guide"},
        {"event_id": 3, "user_id": "u1", "ts": "2026-11-25T08:02:00Z", "query": "size guide"},
        {"event_id": 4, "user_id": "u3", "ts": "2026-11-23T09:00:00Z", "query": "a"},
        {"event_id": 4, "user_id": "u4", "ts": "2026-11-23T09:00:00Z", "query": "b"},
        {"event_id": 4, "user_id": "u5", "ts": "2026-11-23T09:00:00Z", "query": "c"},
    ]
    path = tmp_path / "amplitude.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.duckdb"
    total = ingest(cli, db, path)
    assert total["stored"] == 9 and total["already_present"] == 1, total
    with open_store(db) as con:
        got = con.execute("SELECT event_id, user_id, query FROM search_events").fetchall()
    assert sorted(got) == sorted([
        ("1", "u1", "return policy"), ("1@20261123T080500", "u2", "gift card"),
        ("2", "u1", "shipping"), ("2@20261123T080600", "u2", "shipping"),
        ("3", "u1", "size guide"), ("3@20261125T080200", "u1", "size guide"),
        ("4", "u3", "a"), ("4@20261123T090000", "u4", "b"), ("4@20261123T090000~2", "u5", "c"),
    ])  # fmt: skip
    # the same file again is known by its hash; a copy with a row more stores that row alone
    path.write_text(path.read_text() + json.dumps({**rows[0], "event_id": 9}) + "\n")
    again = ingest(cli, db, path)
    assert again["stored"] == 1, again


def test_an_id_given_twice_without_times_keeps_both_searches(cli, tmp_path) -> None:
    """With no time to compare, "the same time" is unknown, not false: the second row was
    dropped by DuckDB and kept by Spark."""
    path = tmp_path / "untimed.jsonl"
    path.write_text('{"event_id": 5, "user_id": "a", "query": "reset password"}\n'
                    '{"event_id": 5, "user_id": "a", "query": "refund"}\n')  # fmt: skip
    total = ingest(cli, tmp_path / "s.duckdb", path)
    assert total["stored"] == 2, total
