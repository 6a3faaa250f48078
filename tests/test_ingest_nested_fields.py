"""``--map field=a.b`` reads a field nested in an object, as event pipelines write them.

Elastic's Behavioral Analytics events keep the query at ``search.query``, the session at
``session.id`` and the user at ``user.id``; Segment, RudderStack and most warehouse exports nest
the same way (``properties.query``), and a Parquet export keeps them as structs. The mapping was
taken for a top-level column the file lacks, and every row was rejected "missing query".
A top-level key that itself holds a dot (a flattened export) is still read as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import write_jsonl

EVENTS = [
    {"@timestamp": "2023-05-16T12:00:01.000Z", "event": {"action": "search"},
     "session": {"id": "s-1"}, "user": {"id": "u-1"},
     "search": {"query": "reset vpn password",
                "results": {"items": [{"document": {"id": "doc-1"}}], "total_results": 1}}},
    {"@timestamp": "2023-05-16T12:01:00.000Z", "event": {"action": "search"},
     "session": {"id": "s-2"}, "user": {"id": "u-2"},
     "search": {"query": "invoice copy", "results": {"items": [], "total_results": 0}}},
]  # fmt: skip
MAP = {"query": "search.query", "session_id": "session.id", "user_id": "user.id",
       "ts": "@timestamp", "result_ids": "search.results.items",
       "num_results": "search.results.total_results"}  # fmt: skip


def events(db_path: Path) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(
            "SELECT query, session_id, user_id, strftime(ts, '%H:%M:%S'), result_ids, num_results "
            "FROM search_events ORDER BY ts"
        ).fetchall()


EXPECTED = [
    ("reset vpn password", "s-1", "u-1", "12:00:01", ["doc-1"], 1),
    ("invoice copy", "s-2", "u-2", "12:01:00", [], 0),
]


def test_a_jsonl_events_nested_fields_by_their_path(tmp_path, db_path):
    path = write_jsonl(tmp_path / "events.jsonl", EVENTS)
    with open_store(db_path) as con:
        result = api.searchlog(con, [path], mapping=MAP)
    assert result.total["rejected"] == 0, result.total
    assert events(db_path) == EXPECTED


def test_a_parquet_exports_struct_columns_by_their_path(tmp_path, db_path):
    source = write_jsonl(tmp_path / "events.jsonl", EVENTS)
    path = tmp_path / "events.parquet"
    duckdb.sql(f"COPY (SELECT * FROM read_json('{source}')) TO '{path}' (FORMAT parquet)")
    with open_store(db_path) as con:
        result = api.searchlog(con, [path], mapping=MAP)
    assert result.total["rejected"] == 0, result.total
    assert events(db_path) == EXPECTED


def test_a_dotted_top_level_key_is_read_as_it_is(tmp_path, db_path):
    path = tmp_path / "flat.jsonl"
    path.write_text(json.dumps({"search.query": "flat query", "search": {"query": "nested"},
                                "session.id": "s-9"}) + "\n")  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [path], mapping={"query": "search.query"})
        got = con.execute("SELECT query FROM search_events").fetchall()
    assert got == [("flat query",)]


def test_the_cli_maps_a_nested_field(cli, tmp_path):
    path = write_jsonl(tmp_path / "events.jsonl", EVENTS)
    db = tmp_path / "g.duckdb"
    maps = [arg for name, column in MAP.items() for arg in ("--map", f"{name}={column}")]
    result = cli("--db", str(db), "ingest", "searchlog", str(path), *maps, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"]["stored"] == 2
