"""Ingest: accounting, idempotence, rejects, atomic batches, formats and redaction.

Real DuckDB files in tmp_path, real files in their real formats, the CLI in a subprocess where the
command line is the contract; every expected number below is counted by hand from the fixture.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
import zstandard

from goldmine.errors import InputError
from goldmine.ingest import api, batch, searchlog
from goldmine.ingest.formats import discover
from goldmine.ingest.redact import Redactor, redact_text
from goldmine.store import open_store
from goldmine.text import sha256_file

from helpers import run_cli, write_jsonl


def event(i: int, **over) -> dict:
    row = {
        "event_id": f"e{i}",
        "ts": f"2026-11-2{i % 10}T10:00:0{i % 10}Z",
        "session_id": f"s{i // 3}",
        "user_id": "u1",
        "query": f"query number {i}",
        "result_ids": [f"policy-{i}", "finance-3"],
        "num_results": 2,
        "clicked_ids": [f"policy-{i}"] if i % 2 else [],
    }
    row.update(over)
    return row


def ingest_json(cli, *args: str) -> dict:
    result = cli("ingest", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def query(db_path: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(sql, params or []).fetchall()


COUNT_KEYS = ("rows_in", "stored", "rejected", "already_present")


def counts(summary: dict) -> tuple[int, ...]:
    return tuple(summary[k] for k in COUNT_KEYS)


def test_searchlog_accounts_for_every_row_and_reimport_is_instant(tmp_path, db_path, cli):
    log = write_jsonl(
        tmp_path / "week.jsonl",
        [
            event(1),
            event(2),
            "{not json",  # line 3: malformed JSON
            b'{"event_id": "e4", "query": "caf\xe9"}',  # line 4: invalid UTF-8
            "",  # a blank line is not a row
            event(6, query=""),  # line 6: missing query
            event(7, ts="next tuesday"),  # line 7: unparseable timestamp
            event(8, query=42),  # line 8: wrong type
            event(9),
            event(1),  # line 10: e1 again, already present
        ],
    )
    out = ingest_json(cli, "searchlog", str(log), "--db", str(db_path))
    assert counts(out["files"][0]) == (9, 3, 5, 1)
    assert counts(out["total"]) == (9, 3, 5, 1)

    result = cli("rejects", "--db", str(db_path), "--json")
    rejects = [(r["line"], r["reason"]) for r in json.loads(result.stdout)]
    assert rejects == [
        (3, "malformed JSON"),
        (4, "invalid UTF-8"),
        (6, "missing query"),
        (7, "unparseable timestamp: next tuesday"),
        (8, "wrong type: query is a number"),
    ]
    assert all(r["path"] == str(log) for r in json.loads(result.stdout))
    stored = query(
        db_path,
        "SELECT event_id, ts::VARCHAR, result_ids, clicked_ids, batch_id "
        "FROM search_events ORDER BY event_id",
    )
    assert stored == [
        ("e1", "2026-11-21 10:00:01", ["policy-1", "finance-3"], ["policy-1"], 1),
        ("e2", "2026-11-22 10:00:02", ["policy-2", "finance-3"], [], 1),
        ("e9", "2026-11-29 10:00:09", ["policy-9", "finance-3"], ["policy-9"], 1),
    ]
    assert query(
        db_path,
        "SELECT rows_in, stored, rejected, already_present, watermark::VARCHAR FROM import_batches",
    ) == [(9, 3, 5, 1, "2026-11-29 10:00:09")]

    again = cli("ingest", "searchlog", str(log), "--db", str(db_path))
    assert again.returncode == 0
    assert "already imported" in again.stdout
    # Its rejects are rejected again, never already present; the hint names their batch.
    assert "rows in 9 = stored 0 + rejected 5 + already present 4" in again.stderr
    assert "goldmine rejects --batch 1" in again.stderr
    assert query(db_path, "SELECT count(*) FROM search_events") == [(3,)]
    assert query(db_path, "SELECT count(*) FROM import_batches") == [(1,)]


def test_overlapping_file_adds_only_the_new_rows(tmp_path, db_path, cli):
    first = write_jsonl(tmp_path / "a.jsonl", [event(i) for i in range(1, 7)])
    second = write_jsonl(tmp_path / "b.jsonl", [event(i) for i in range(4, 10)])
    assert counts(ingest_json(cli, "searchlog", str(first), "--db", str(db_path))["total"]) == (
        6,
        6,
        0,
        0,
    )
    out = ingest_json(cli, "searchlog", str(second), "--db", str(db_path))
    assert counts(out["total"]) == (6, 3, 0, 3)
    rows = query(
        db_path,
        "SELECT batch_id, list(event_id ORDER BY event_id) FROM search_events "
        "GROUP BY batch_id ORDER BY batch_id",
    )
    assert rows == [(1, ["e1", "e2", "e3", "e4", "e5", "e6"]), (2, ["e7", "e8", "e9"])]


def test_headers_written_as_a_spreadsheet_names_them_find_their_fields(tmp_path, db_path):
    # A BI tool's or a spreadsheet's export names columns in words: "Search Query", "User ID",
    # "Session-ID", "Event Time". The aliases matched only as spelled or ignoring case.
    path = tmp_path / "export.csv"
    path.write_text(
        "Event Time,Search Query,User ID,Session-ID,Results\n"
        "2026-11-01 10:00:00,reset password,u1,s1,d1|d2\n"
    )
    with open_store(db_path) as con:
        result = api.searchlog(con, [path])
        row = con.execute(
            "SELECT ts, query, user_id, session_id, result_ids, extra FROM search_events"
        ).fetchall()
    assert result.total["stored"] == 1
    assert row == [(datetime(2026, 11, 1, 10), "reset password", "u1", "s1", ["d1", "d2"], None)]


def test_results_as_a_search_engine_logs_them(tmp_path, db_path):
    # A search service's response stored whole (Elasticsearch's hits.hits), and result objects
    # whose id is in a nested document: the first was a reject ("result_ids is an object"),
    # the second stored each object's JSON text as its id.
    path = write_jsonl(
        tmp_path / "log.jsonl",
        [
            {"query": "reset password", "hits": {"total": {"value": 2}, "hits": [
                {"_id": "d1", "_score": 3.2}, {"_id": "d2", "_score": 1.1}]}},
            {"query": "billing", "results": [{"document": {"id": "d9"}, "score": 0.5},
                                             {"doc": {"doc_id": "d8"}}, {"score": 0.1}]},
            {"query": "chunks", "results": [{"id": 7, "chunk_id": "c1"}, "c2", 3]},
            {"query": "no list", "hits": {"total": 0}},
        ],
    )  # fmt: skip
    with open_store(db_path) as con:
        api.searchlog(con, [path])
        rows = con.execute(
            "SELECT query, result_ids, num_results FROM search_events ORDER BY query"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert rows == [
        ("billing", ["d9", "d8", None], 3),
        ("chunks", ["c1", "c2", "3"], 3),
        ("reset password", ["d1", "d2"], 2),
    ]
    assert rejects == [(4, "wrong type: result_ids is an object")]


def test_csv_parquet_gzip_zstd_and_aliases_give_the_same_events(tmp_path, db_path):
    (tmp_path / "log.csv").write_text(
        "id,timestamp,sid,q,hits,clicks\n"
        "e1,2026-11-21T10:00:01Z,s0,query number 1,policy-1|finance-3,policy-1\n"
        'e2,1795342802,s0,query number 2,"[""policy-2"",""finance-3""]",\n'
    )
    rows = [event(3), event(4)]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM read_json(?)",
        [str(write_jsonl(tmp_path / "p.jsonl", rows))],
    )
    con.execute(f"COPY t TO '{tmp_path / 'log.parquet'}' (FORMAT parquet)")
    con.close()
    raw = b"".join(json.dumps(r).encode() + b"\n" for r in (event(5), event(6)))
    (tmp_path / "log.jsonl.gz").write_bytes(gzip.compress(raw))
    raw = b"".join(json.dumps(r).encode() + b"\n" for r in (event(7),))
    (tmp_path / "log.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    (tmp_path / "p.jsonl").unlink()

    with open_store(db_path) as con:
        result = api.searchlog(con, [tmp_path])  # a folder: every known file in it
        assert [f.format for f in result.files] == ["csv", "jsonl+gzip", "jsonl+zstd", "parquet"]
        assert con.execute("SELECT line, reason FROM rejects").fetchall() == []
        assert result.total == {"rows_in": 7, "stored": 7, "rejected": 0, "already_present": 0}
        got = con.execute(
            "SELECT event_id, ts::VARCHAR, session_id, query, result_ids, "
            "clicked_ids FROM search_events ORDER BY event_id"
        ).fetchall()
    assert got[0] == (
        "e1",
        "2026-11-21 10:00:01",
        "s0",
        "query number 1",
        ["policy-1", "finance-3"],
        ["policy-1"],
    )
    assert got[1] == (
        "e2",
        "2026-11-22 10:20:02",
        "s0",
        "query number 2",
        ["policy-2", "finance-3"],
        None,
    )
    assert [g[0] for g in got] == [f"e{i}" for i in range(1, 8)]
    assert got[3][4:] == (["policy-4", "finance-3"], [])


def test_rows_without_event_id_get_a_stable_key(tmp_path, db_path):
    rows = [{k: v for k, v in event(i).items() if k != "event_id"} for i in range(3)]
    first = write_jsonl(tmp_path / "a.jsonl", rows)
    second = write_jsonl(tmp_path / "b.jsonl", list(reversed(rows)) + [{"query": "new one"}])
    with open_store(db_path) as con:
        api.searchlog(con, [first])
        result = api.searchlog(con, [second])
    assert result.total == {"rows_in": 4, "stored": 1, "rejected": 0, "already_present": 3}


def test_map_names_a_column_the_aliases_do_not_know(tmp_path, db_path):
    log = write_jsonl(
        tmp_path / "log.jsonl", [{"needle": "gift card balance", "when": "2026-11-20"}]
    )
    with open_store(db_path) as con:
        result = api.searchlog(con, [log], mapping=["query=needle", "ts=when"])
        assert result.total["stored"] == 1
        assert con.execute("SELECT query, ts::VARCHAR FROM search_events").fetchall() == [
            ("gift card balance", "2026-11-20 00:00:00")
        ]


def test_map_with_an_unknown_field_is_refused_even_for_a_known_file(tmp_path, db_path):
    log = write_jsonl(tmp_path / "log.jsonl", [event(1)])
    with open_store(db_path) as con:
        api.searchlog(con, [log])
        with pytest.raises(InputError, match=r"--map names unknown field\(s\) \['qeury'\]"):
            api.searchlog(con, [log], mapping=["qeury=q"])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("log.txt", b"hello", "unknown file format"),
        ("missing.jsonl", None, "no such file or folder"),
        ("broken.parquet", b"PAR1 this is not parquet", "cannot read as parquet"),
    ],
)
def test_unknown_or_unreadable_file_is_one_error_line_and_exit_2(
    tmp_path, db_path, cli, name, content, message
):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    result = cli("ingest", "searchlog", str(path), "--db", str(db_path))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_a_failure_mid_batch_leaves_nothing_and_the_next_run_imports_it_whole(
    tmp_path, db_path, monkeypatch
):
    log = write_jsonl(tmp_path / "log.jsonl", [event(1), event(2), "{bad"])

    real = batch.store_new_rows

    def interrupted(con, target, batch_id):
        real(con, target, batch_id)  # rows written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "store_new_rows", interrupted)
    with open_store(db_path) as con, pytest.raises(KeyboardInterrupt):
        api.searchlog(con, [log])
    monkeypatch.undo()
    for table in ("search_events", "import_batches", "rejects"):
        assert query(db_path, f"SELECT count(*) FROM {table}") == [(0,)]
    with open_store(db_path) as con:
        assert api.searchlog(con, [log]).total["stored"] == 2


def test_a_killed_import_leaves_nothing(tmp_path, db_path):
    log = write_jsonl(tmp_path / "log.jsonl", [event(i) for i in range(50)])
    script = textwrap.dedent(f"""
        import sys, time
        from goldmine.ingest import api, batch
        from goldmine.store import open_store
        real = batch.store_new_rows
        def slow(con, target, batch_id):
            n = real(con, target, batch_id)
            print("written", flush=True)
            time.sleep(60)
            return n
        batch.store_new_rows = slow
        with open_store({str(db_path)!r}) as con:
            api.searchlog(con, [{str(log)!r}])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        proc.kill()
        proc.wait()
    assert query(db_path, "SELECT count(*) FROM search_events") == [(0,)]
    assert query(db_path, "SELECT count(*) FROM import_batches") == [(0,)]
    with open_store(db_path) as con:
        assert api.searchlog(con, [log]).total["stored"] == 50


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@example.co.uk now", "mail <EMAIL> now"),
        ("card 4111 1111 1111 1111 ok", "card <CARD> ok"),  # Luhn holds
        ("card 4111 1111 1111 1112 ok", "card 4111 1111 1111 1112 ok"),  # Luhn fails
        ("pay 5500-0000-0000-0004", "pay <CARD>"),
        ("iban GB82 WEST 1234 5698 7654 32.", "iban <IBAN>."),  # mod 97 holds
        ("iban GB82 WEST 1234 5698 7654 33.", "iban GB82 WEST 1234 5698 7654 33."),
        ("DE89370400440532013000", "<IBAN>"),
        ("from 192.168.1.20 and 2001:db8::1", "from <IPV4> and <IPV6>"),
        ("call +44 20 7946 0958 or 555-123-4567", "call <PHONE> or <PHONE>"),
        ("order NW-123456 on 2026-11-23 at 10:30", "order NW-123456 on 2026-11-23 at 10:30"),
    ],
)
def test_redaction_patterns(text, expected):
    con = duckdb.connect()
    assert redact_text(con, text) == expected


def test_user_patterns_from_the_flag_and_from_goldmine_toml(tmp_path, db_path):
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [
            event(1, query="order NW-123456 for jane@example.com, staff E123456"),
        ],
    )
    (tmp_path / "goldmine.toml").write_text('[ingest]\nredact_patterns = { STAFF = "E[0-9]{6}" }\n')
    # goldmine.toml's patterns are the command's to read; the library takes patterns as given
    done = run_cli("ingest", "searchlog", str(log), "--redact", "--redact-pattern",
                   "ORDER=NW-[0-9]{6}", "--db", str(db_path), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_store(db_path) as con:
        assert con.execute("SELECT query FROM search_events").fetchall() == [
            ("order <ORDER> for <EMAIL>, staff <STAFF>",)
        ]


def test_searchlog_redaction_is_opt_in_and_covers_rejects(tmp_path, db_path):
    plain = write_jsonl(tmp_path / "a.jsonl", [event(1, query="refund for a@b.com")])
    redacted = write_jsonl(
        tmp_path / "b.jsonl",
        [
            event(2, query="refund for a@b.com"),
            event(3, query="refund for c@d.com", ts="soon"),
        ],
    )
    with open_store(db_path) as con:
        api.searchlog(con, [plain])
        api.searchlog(con, [redacted], redact=True)
        assert con.execute("SELECT query FROM search_events ORDER BY event_id").fetchall() == [
            ("refund for a@b.com",),
            ("refund for <EMAIL>",),
        ]
        raw = con.execute("SELECT raw FROM rejects").fetchall()[0][0]
    assert "c@d.com" not in raw and "<EMAIL>" in raw
    # The original is in no table of the file.
    with duckdb.connect(str(db_path), read_only=True) as con:
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            text = con.execute(f"SELECT string_agg(t::VARCHAR, ' ') FROM \"{table}\" t")
            assert "c@d.com" not in str(text.fetchall()[0][0])


def test_redactor_steps_are_sql_not_python():
    steps = Redactor(user_patterns=(("X", "x+"),)).steps("col")
    assert all("regexp" in s for s in steps)
    assert "$gm_rx_0" in steps[-1]


def parquet_of(log: Path) -> Path:
    """The records of a JSONL file as DuckDB types them, written as Parquet beside it."""
    parquet = log.with_suffix(".parquet")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?)", [str(log)])
    con.execute(f"COPY t TO '{parquet}' (FORMAT parquet)")
    con.close()
    return parquet


def test_clean_file_with_blank_lines_gets_true_line_numbers_for_its_rejects(tmp_path, db_path):
    # A well-formed file is parsed in one pass; its rejects still name the right line.
    log = write_jsonl(tmp_path / "log.jsonl", ["", event(1), "   ", event(4, query="")])
    parquet = parquet_of(log)
    with open_store(db_path) as con:
        api.searchlog(con, [log])
        api.searchlog(con, [parquet])
        rows = con.execute("SELECT path, line, reason, raw FROM rejects ORDER BY path").fetchall()
    assert [r[:3] for r in rows] == [
        (str(log), 4, "missing query"),
        (str(parquet), 2, "missing query"),
    ]
    assert json.loads(rows[0][3])["event_id"] == "e4"
    # The reader's row number is not a field of the record: the raw text is the row's own.
    assert "file_row_number" not in json.loads(rows[1][3])


def test_parquet_corpus_metadata_is_the_rows_own_fields(tmp_path, db_path):
    # Parquet's row number, asked of the reader to number the lines, is not the chunk's metadata.
    row = {"chunk_id": "c1", "text": "hello world", "author": "alice", "n": 3}
    parquet = parquet_of(write_jsonl(tmp_path / "chunks.jsonl", [row]))
    with open_store(db_path) as con:
        api.corpus(con, [parquet])
        rows = con.execute("SELECT chunk_id, metadata FROM chunks").fetchall()
    assert rows == [("c1", '{"author":"alice","n":3}')]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21 10:00:01.5", "2026-11-21 10:00:01.5"),  # plain ISO: the fast cast
        ("2026-11-21T10:00:01", "2026-11-21 10:00:01"),
        ("2026-11-21", "2026-11-21 00:00:00"),
        ("2026-11-21T10:00:01Z", "2026-11-21 10:00:01"),
        ("2026-11-21T10:00:01+02:00", "2026-11-21 08:00:01"),  # an offset is converted to UTC
        ("2026-11-21T10:00:01-0500", "2026-11-21 15:00:01"),
        ("2026-11-21 10:00:01 Europe/Berlin", "2026-11-21 09:00:01"),
        ("1700000000", "2023-11-14 22:13:20"),
        ("Wed Oct 11 06:55:44 +0000 2017", "2017-10-11 06:55:44"),
        ("2026-13-45 10:00:00", None),
        ("yesterday", None),
    ],
)
def test_timestamps_plain_iso_offsets_epochs_and_twitter(text, expected):
    con = duckdb.connect()
    batch.prepare(con)
    got = con.execute("SELECT gm_ts($s)::VARCHAR", {"s": text}).fetchall()[0][0]
    assert got == expected


def test_overlap_old_rows_are_checked_first_but_still_rejected_counted_and_watermarked(
    tmp_path, db_path
):
    keyless = {k: v for k, v in event(20).items() if k != "event_id"}
    first = write_jsonl(tmp_path / "a.jsonl", [event(1), event(2), keyless])
    second = write_jsonl(
        tmp_path / "b.jsonl",
        [
            # stored (a time a few hours off is the same event): its ts still sets the watermark
            event(1, ts="2026-11-21T23:00:00Z"),
            event(2, query=""),  # a stored key, but the row is bad now: a reject
            keyless,  # stored under its content key
            event(1),  # stored, twice in this file
            event(3, ts="2026-11-20T10:00:03Z", result_ids="a, b|c", clicked_ids=[{"id": "b"}]),
            event(3, ts="2026-11-20T10:00:03Z"),  # new, twice in this file: the first is kept
        ],
    )
    with open_store(db_path) as con:
        api.searchlog(con, [first])
        result = api.searchlog(con, [second])
        rows = con.execute(
            "SELECT event_id, query, result_ids, num_results, clicked_ids, session_id "
            "FROM search_events WHERE batch_id = ?",
            [result.files[0].batch_id],
        ).fetchall()
        watermark = con.execute(
            "SELECT watermark::VARCHAR FROM import_batches WHERE batch_id = ?",
            [result.files[0].batch_id],
        ).fetchall()
    assert counts(result.total) == (6, 1, 1, 4)
    assert rows == [("e3", "query number 3", ["a", "b", "c"], 2, ["b"], "s1")]
    assert watermark == [("2026-11-21 23:00:00",)]


def test_parquet_string_lists_pass_through_and_key_like_the_same_jsonl(tmp_path, db_path):
    # Parquet lists of strings skip the JSON round trip; the stored rows, and the content key
    # of rows without event_id, are the same as from the JSONL of the same records.
    rows = [
        {"query": "a", "result_ids": ["d1", "d2"], "clicked_ids": [], "num_results": None},
        {"query": "b", "result_ids": ["d3", None], "clicked_ids": None, "num_results": 9},
        {"query": "c", "result_ids": None, "clicked_ids": ["d1"], "num_results": None},
    ]
    log = write_jsonl(tmp_path / "log.jsonl", rows)
    parquet = tmp_path / "log.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?)", [str(log)])
    assert con.execute("SELECT typeof(result_ids) FROM t LIMIT 1").fetchall() == [("VARCHAR[]",)]
    con.execute(f"COPY t TO '{parquet}' (FORMAT parquet)")
    con.close()
    sql = (
        "SELECT event_id, query, result_ids, num_results, clicked_ids FROM search_events "
        "WHERE batch_id = ? ORDER BY query"
    )
    with open_store(db_path) as con:
        from_parquet = api.searchlog(con, [parquet])
        parquet_rows = con.execute(sql, [from_parquet.files[0].batch_id]).fetchall()
        again = api.searchlog(con, [log])
    assert parquet_rows[0][1:] == ("a", ["d1", "d2"], 2, [])
    assert parquet_rows[1][1:] == ("b", ["d3", None], 9, None)
    assert parquet_rows[2][1:] == ("c", None, None, ["d1"])
    assert counts(again.total) == (3, 0, 0, 3)  # same content keys as the Parquet rows


def test_parquet_extra_columns_are_kept_as_the_same_jsonl_keeps_them(tmp_path, db_path):
    # A Parquet column no field maps is the event's extra, whatever its type: a string column and
    # a list of strings (passed through natively, not as JSON text) were dropped from it.
    rows = [{"query": "a", "device": "mobile", "tags": ["x", "y"], "n": 3, "none": None}]
    parquet = parquet_of(write_jsonl(tmp_path / "log.jsonl", rows))
    with open_store(db_path) as con:
        api.searchlog(con, [parquet])
        extra = con.execute("SELECT extra FROM search_events").fetchall()
    assert [json.loads(e[0]) for e in extra] == [{"device": "mobile", "n": 3, "tags": ["x", "y"]}]


def test_parquet_typed_columns_are_still_type_checked(tmp_path, db_path):
    parquet = tmp_path / "log.parquet"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT * FROM (VALUES ('e1', ['a'], 'x'), ('e2', NULL, 'y')) t(event_id, query, "
        f"result_ids)) TO '{parquet}' (FORMAT parquet)"
    )
    numbers = tmp_path / "numbers.parquet"
    con.execute(
        "COPY (SELECT * FROM (VALUES ('e3', 42, 'a, b'), ('e4', 7, NULL)) t(event_id, query, "
        f"result_ids)) TO '{numbers}' (FORMAT parquet)"
    )
    con.close()
    with open_store(db_path) as con:
        api.searchlog(con, [parquet, numbers])
        got = con.execute("SELECT line, reason FROM rejects ORDER BY path, line").fetchall()
    assert got == [
        (1, "wrong type: query is a list"),
        (2, "missing query"),
        (1, "wrong type: query is a number"),
        (2, "wrong type: query is a number"),
    ]


def test_hash_checked_whenever_a_finished_batch_has_a_file_of_the_same_size(tmp_path, db_path):
    # A file is staged while it is hashed only when no finished batch could hold its content.
    a = write_jsonl(tmp_path / "a.jsonl", [event(1), event(2)])
    copy = tmp_path / "copy_of_a.jsonl"
    copy.write_bytes(a.read_bytes())
    same_size = write_jsonl(tmp_path / "b.jsonl", [event(3), event(4)])
    assert same_size.stat().st_size == a.stat().st_size
    with open_store(db_path) as con:
        result = api.searchlog(con, [a, copy, same_size])
        hashes = con.execute("SELECT path, file_hash FROM import_batches ORDER BY path").fetchall()
    assert [(f.skipped, f.stored) for f in result.files] == [(False, 2), (True, 0), (False, 2)]
    assert [h[1] for h in hashes] == [sha256_file(a), sha256_file(same_size)]


@pytest.mark.slow
def test_a_file_larger_than_the_memory_limit_spills_and_keeps_its_accounting(
    tmp_path, db_path, cli
):
    """GOLDMINE_MEMORY_LIMIT well below the file's size: DuckDB spills the stage to disk, every
    row is stored, and the rejected line keeps its true number (record order survives)."""
    path = tmp_path / "big.jsonl"
    with open_store(tmp_path / "gen.duckdb") as con:
        con.execute(
            """COPY (SELECT printf('e%07d', i) AS event_id, '2026-11-20T10:00:00' AS ts,
                        'how do i ' || i || repeat(' refund my order', 8) AS query,
                        list_transform(range(10), lambda r: printf('doc-%d', i * 10 + r))
                            AS result_ids
                     FROM range(300000) t(i)) TO '"""
            + str(path)
            + "' (FORMAT json)"
        )
    lines = path.read_text().splitlines()
    lines[150_000] = '{"event_id": "broken", "query": '
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 90 * 2**20
    result = cli(
        "ingest", "searchlog", str(path), "--db", str(db_path), "--json",
        env={"GOLDMINE_MEMORY_LIMIT": "96MB", "GOLDMINE_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert counts(json.loads(result.stdout)["total"]) == (300_000, 299_999, 1, 0)
    assert query(db_path, "SELECT line, reason FROM rejects") == [(150_001, "malformed JSON")]
    assert query(db_path, "SELECT count(DISTINCT event_id) FROM search_events") == [(299_999,)]


def test_the_bar_follows_duckdb_progress_through_a_long_statement():
    """The import bar moves while one long statement runs (DuckDB's own progress, polled), and
    ends at exactly the step's share."""
    import duckdb

    from goldmine.ingest.batch import following, prepare

    steps: list[int] = []

    def advance(n: int = 1) -> None:
        steps.append(n)

    advance.visible = True  # type: ignore[attr-defined]
    con = duckdb.connect()
    prepare(con)
    with following(con, advance, 60):
        con.execute("SELECT sum(hash(i)) FROM range(200000000) t(i)").fetchall()
    assert sum(steps) == 60
    assert len(steps) > 1, "the bar only moved at the end"
    assert con.execute("SELECT current_setting('enable_progress_bar_print')").fetchall() == [
        (False,)
    ]


def test_malformed_lines_stay_on_the_one_pass_path_with_the_reasons_of_the_slow_one(
    tmp_path, db_path
):
    """A bad line in a big weekly file must not send every line down the record-by-record path;
    the one-pass reader and that path agree on counts, lines and reasons. Invalid UTF-8 still
    goes the slow way, which can name it."""
    from goldmine.ingest import batch, searchlog
    from goldmine.ingest.formats import detect
    from goldmine.ingest.redact import Redactor

    lines = [
        json.dumps(event(1)),
        '{"event_id": "e2", "query": ',
        "",
        "[1, 2]",
        json.dumps(event(3)) + " trailing",
        '"just a string"',
        "{}",
        json.dumps(event(4)),
    ]
    path = tmp_path / "week.jsonl"
    path.write_text("\n".join(lines) + "\n")
    expected = [
        (2, "malformed JSON"),
        (4, "not a JSON object"),
        (5, "malformed JSON"),
        (6, "not a JSON object"),
        (7, "missing query"),
    ]
    with open_store(db_path) as con:
        batch.prepare(con)
        source, target = batch.file_source(detect(path)), searchlog.target()
        batch.define_known(con, target)
        assert batch._stage_streaming(con, target, source, Redactor(enabled=False))
        staged = con.execute(
            "SELECT line, reason FROM gm_stage WHERE reason IS NOT NULL ORDER BY line"
        ).fetchall()
        assert staged == expected
        con.execute("DROP TABLE gm_stage")
        result = api.searchlog(con, [path]).total
        assert (result["rows_in"], result["stored"], result["rejected"]) == (7, 2, 5)
        assert con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall() == expected

    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"event_id": "x1", "query": "caf\xe9"}\n' + json.dumps(event(9)).encode())
    with open_store(db_path) as con:
        batch.prepare(con)
        source, target = batch.file_source(detect(bad)), searchlog.target()
        batch.define_known(con, target)
        assert not batch._stage_streaming(con, target, source, Redactor(enabled=False))
        api.searchlog(con, [bad])
        rows = con.execute("SELECT line, reason FROM rejects WHERE path = ?", [str(bad)]).fetchall()
        assert rows == [(1, "invalid UTF-8")]


# slow: six imports of a generated 250k-line file (the parallel reader needs one that big)
@pytest.mark.slow
@pytest.mark.parametrize("repeated", [False, True], ids=["unique keys", "a repeated key"])
@pytest.mark.parametrize("store", ["empty", "holding rows", "holding its first half"])
def test_rejects_of_a_file_read_in_parallel_keep_their_lines(tmp_path, db_path, store, repeated):
    """A file big enough for DuckDB to read in parallel, staged in no particular order: the
    rejects still name their own lines, and a repeated key keeps its first row. Into a store
    holding rows the stage has a hash join (the already-stored check); into an empty one not.
    Holding the file's first half, those lines are known by their text, unparsed, but for the
    rejects among them, never stored, so parsed and rejected again."""
    n = 250_000
    empties = sorted(random.Random(5).sample(range(n), 20))
    path = tmp_path / "week.jsonl"
    with open_store(tmp_path / "gen.duckdb") as con:
        con.execute(
            """COPY (SELECT CASE WHEN i = $n - 1 AND $repeated THEN 'e0000003'
                                 ELSE printf('e%07d', i) END AS event_id,
                        CASE WHEN list_contains($empties, i) THEN ''
                             ELSE 'query ' || i || repeat(' words', 20) END AS query,
                        list_transform(range(10), lambda r: printf('doc-%d', i * 10 + r))
                            AS result_ids
                     FROM range($n) t(i)) TO '"""
            + str(path)
            + "' (FORMAT json)",
            {"n": n, "empties": empties, "repeated": repeated},
        )
    if store == "holding rows":
        api_file = write_jsonl(tmp_path / "earlier.jsonl", [event(1, event_id="earlier")])
        with open_store(db_path) as con:
            api.searchlog(con, [api_file])
    if store == "holding its first half":
        api_file = tmp_path / "earlier.jsonl"
        with path.open("rb") as whole:
            api_file.write_bytes(b"".join(whole.readline() for _ in range(n // 2)))
        with open_store(db_path) as con:
            api.searchlog(con, [api_file])
    with open_store(db_path) as con:
        result = api.searchlog(con, [path])
        lines = con.execute(
            "SELECT line FROM rejects WHERE batch_id = ? ORDER BY line", [result.files[0].batch_id]
        ).fetchall()
        kept = con.execute("SELECT query FROM search_events WHERE event_id = 'e0000003'")
        kept = kept.fetchall()
    assert [line for (line,) in lines] == [i + 1 for i in empties]
    assert kept == [("query 3" + " words" * 20,)]
    assert result.total["rows_in"] == n and result.total["rejected"] == len(empties)


def test_field_names_with_quotes_dots_and_spaces_stream_as_they_are(tmp_path, db_path):
    """The streaming reader names the file's fields in SQL: a name with a double quote, a dot
    or a space is still only a name (and kept among the extras)."""
    rows = [
        {"Search Term": "refund policy", 'we"ird': 1, "a.b": "x", "event_id": "q1"},
        {"Search Term": "", 'we"ird': 2, "a.b": "y", "event_id": "q2"},
    ]
    path = write_jsonl(tmp_path / "odd.jsonl", rows)
    with open_store(db_path) as con:
        total = api.searchlog(con, [path], mapping={"query": "Search Term"}).total
        stored = con.execute("SELECT query, extra FROM search_events").fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert (total["stored"], total["rejected"]) == (1, 1)
    assert stored[0][0] == "refund policy"
    assert json.loads(stored[0][1]) == {'we"ird': 1, "a.b": "x"}
    assert rejects == [(2, "missing query")]


def test_lines_already_stored_are_known_by_their_text_and_still_accounted(tmp_path, db_path):
    """A weekly file's old half: a line stored before is known by a hash of its text, unparsed;
    a reformatted line is still found by its key, and an old reject is checked again."""
    first = write_jsonl(tmp_path / "a.jsonl", [event(i) for i in range(1, 7)] + ["{bad"])
    second = write_jsonl(
        tmp_path / "b.jsonl",
        [
            event(4),
            "{bad",  # rejected before, so never stored: rejected again, at its new line
            event(5),
            event(6),  # the latest time of the file: the watermark, though not parsed
            json.dumps(event(1), separators=(",", ":")),  # the same event, other text
            event(7, ts="2026-11-01T00:00:00Z"),
        ],
    )
    with open_store(db_path) as con:
        api.searchlog(con, [first])
        hashed = con.execute("SELECT count(line_hash) FROM search_events").fetchall()[0][0]
        # Only the line's text says e5 is stored now: by its key, it would be stored again.
        con.execute("UPDATE search_events SET event_id = 'renamed' WHERE event_id = 'e5'")
        result = api.searchlog(con, [second])
        batch_id = result.files[0].batch_id
        stored = con.execute(
            "SELECT event_id, line_hash IS NOT NULL FROM search_events WHERE batch_id = ?",
            [batch_id],
        ).fetchall()
        rejects = con.execute(
            "SELECT line, reason FROM rejects WHERE batch_id = ?", [batch_id]
        ).fetchall()
        watermark = con.execute(
            "SELECT watermark::VARCHAR FROM import_batches WHERE batch_id = ?", [batch_id]
        ).fetchall()
    assert hashed == 6
    assert counts(result.total) == (6, 1, 1, 4)
    assert stored == [("e7", True)]
    assert rejects == [(2, "malformed JSON")]
    assert watermark == [("2026-11-26 10:00:06",)]


def test_lines_read_another_way_are_parsed_again(tmp_path, db_path):
    """A line's hash holds only for the way it was read: under another --map its key differs,
    so the line is parsed and checked by that key."""
    first = write_jsonl(tmp_path / "a.jsonl", [event(i) for i in range(1, 4)])
    second = write_jsonl(tmp_path / "b.jsonl", [event(i) for i in range(1, 5)])
    third = write_jsonl(tmp_path / "c.jsonl", [event(i) for i in range(1, 6)])
    with open_store(db_path) as con:
        api.searchlog(con, [first])
        by_query = api.searchlog(con, [second], mapping={"event_id": "query"})
        # e4's line was stored keyed by its query: read the usual way, e4 is new.
        again = api.searchlog(con, [third])
    assert counts(by_query.total) == (4, 4, 0, 0)
    assert counts(again.total) == (5, 2, 0, 3)


def test_a_redacted_search_log_keeps_no_hash_of_its_lines(tmp_path, db_path):
    """The line's hash is of its text before redaction; with every other field stored, a
    guessed email could be checked against it. Redacted imports store none."""
    path = write_jsonl(tmp_path / "a.jsonl", [event(1, query="mail ann@example.com please")])
    with open_store(db_path) as con:
        api.searchlog(con, [path], redact=True)
        rows = con.execute("SELECT query, line_hash FROM search_events").fetchall()
    assert rows == [("mail <EMAIL> please", None)]


def test_a_failed_insert_raises_its_own_error_and_leaves_the_settings_as_they_were(
    tmp_path, db_path
):
    """The insert runs in any order inside the batch's transaction; when it fails, the error
    is the insert's, and the next import on the same connection reads in order again."""
    log = write_jsonl(tmp_path / "log.jsonl", [event(1), event(2), "{bad"])
    target = searchlog.target()
    broken = dataclasses.replace(target, columns=(*target.columns, "no_such_column"))
    with open_store(db_path) as con:
        with pytest.raises(duckdb.BinderException):
            batch.run(con, broken, discover([log]), Redactor(enabled=False))
        setting = "SELECT current_setting('preserve_insertion_order')"
        assert con.execute(setting).fetchall() == [(True,)]
        assert counts(api.searchlog(con, [log]).total) == (3, 2, 1, 0)


def test_a_number_out_of_range_or_keys_differing_in_case_reject_a_line_not_the_file(
    tmp_path, db_path
):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"event_id": "a", "query": "refund", "Query": "REFUND"},
            {"event_id": "b", "query": "refund policy", "num_results": 1e20},
            {"event_id": "c", "query": "returns", "num_results": 3},
        ],
    )
    with open_store(db_path) as con:
        total = api.searchlog(con, [path]).total
        stored = con.execute(
            "SELECT event_id, query, num_results FROM search_events ORDER BY event_id"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert counts(total) == (3, 2, 1, 0)
    assert stored == [("a", "refund", None), ("c", "returns", 3)]
    assert rejects == [(2, "wrong type: num_results is out of range: 1e+20")]


@pytest.mark.parametrize("path_taken", ["streamed", "record by record"])
def test_an_object_after_white_space_is_read_and_other_json_values_are_not_objects(
    tmp_path, db_path, path_taken
):
    lines: list[str | bytes] = [
        "\t " + json.dumps(event(1)),
        "[1, 2]",
        "42",
        json.dumps(event(2)),
    ]
    if path_taken == "record by record":
        lines.append(b'{"event_id": "x", "query": "caf\xe9"}')  # invalid UTF-8: line by line
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    with open_store(db_path) as con:
        api.searchlog(con, [path])
        stored = con.execute("SELECT event_id FROM search_events ORDER BY 1").fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall()
    assert stored == [("e1",), ("e2",)]
    assert rejects[:2] == [(2, "not a JSON object"), (3, "not a JSON object")]


def test_map_names_a_field_in_another_case_and_takes_the_files_spelling(tmp_path, db_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"Q": "refund policy", "Sid": "s1"}])
    with open_store(db_path) as con:
        total = api.searchlog(con, [path], mapping={"query": "q", "session_id": "sid"}).total
        stored = con.execute("SELECT query, session_id FROM search_events").fetchall()
    assert counts(total) == (1, 1, 0, 0)
    assert stored == [("refund policy", "s1")]


def test_a_store_with_the_64_bit_line_hash_column_gets_the_128_bit_one(tmp_path, db_path):
    """Migration 101 added a 64-bit column; 102 replaces it, dropping hashes no line matches."""
    path = write_jsonl(tmp_path / "a.jsonl", [event(1), event(2)])
    with open_store(db_path) as con:
        con.execute("ALTER TABLE search_events DROP COLUMN line_hash")
        con.execute("ALTER TABLE search_events ADD COLUMN line_hash UBIGINT")
        con.execute("DELETE FROM schema_migrations WHERE name LIKE '0102_%'")
    with open_store(db_path) as con:
        assert counts(api.searchlog(con, [path]).total) == (2, 2, 0, 0)
        kind = con.execute(
            "SELECT data_type FROM duckdb_columns() "
            "WHERE table_name = 'search_events' AND column_name = 'line_hash'"
        ).fetchall()
    assert kind == [("UHUGEINT",)]


@pytest.mark.parametrize("pattern", [r"CUST=(?<=cust-)\d+", r"REF=(\w)\1"])
def test_a_pattern_python_reads_but_duckdb_does_not_is_one_error(tmp_path, db_path, pattern):
    """Patterns run in DuckDB's regex engine (RE2), which has no look-behind or
    back-reference: Python's ``re`` accepted them, then the import died with a traceback and
    left an empty store."""
    log = write_jsonl(tmp_path / "log.jsonl", [event(1, query="cust-123 refund")])
    done = run_cli("ingest", "searchlog", str(log), "--redact", "--redact-pattern", pattern,
                   "--db", str(db_path))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and pattern.split("=")[0] in done.stderr
    assert "RE2" in done.stderr
    assert not db_path.exists()
