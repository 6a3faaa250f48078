"""One wild value in a search log rejects its row with a reason: a time far out of range, a
Session Track clock that is no time, a rank that is no place on the page. The rest of the file
is stored, and nothing is read as a silently wrong number."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb
import pytest


def _ingest(cli, db: Path, path: Path, kind: str = "searchlog"):
    proc = cli("--db", str(db), "ingest", kind, str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["total"]


AOL = "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"


def _click_log(cli, tmp_path: Path, rows: list[str]) -> tuple[Path, dict]:
    """A click-level log (AOL's layout) of these tab-separated rows, imported: the store, the
    import's totals."""
    path = tmp_path / "clicks.txt"
    path.write_text(AOL + "".join(r + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    return db, _ingest(cli, db, path)


def _jsonl_log(cli, tmp_path: Path, rows: list[dict]) -> tuple[Path, dict]:
    """A JSONL search log of these rows, imported: the store, the import's totals."""
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    return db, _ingest(cli, db, path)


def _read(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_time_far_out_of_range_rejects_its_event(cli, tmp_path: Path):
    """Year 99999 and year 1 were stored as those times; epoch 1e20 was already unparseable."""
    rows = [
        {"query": "far", "ts": "99999-01-01T00:00:00"},
        {"query": "early", "ts": "0001-01-01"},
        {"query": "epoch", "ts": 1e20},
        {"query": "good", "ts": "2026-11-30T10:00:00"},
    ]
    db, total = _jsonl_log(cli, tmp_path, rows)
    assert (total["stored"], total["rejected"]) == (1, 3)
    assert _read(db, "SELECT query FROM search_events") == [("good",)]
    assert _read(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (1, "timestamp out of range: 99999-01-01T00:00:00"),
        (2, "timestamp out of range: 0001-01-01"),
        (3, "unparseable timestamp: 1e+20"),
    ]


def test_a_time_from_1970_on_keeps_its_event(cli, tmp_path: Path):
    """The range starts at the Unix epoch: a 1970 or 1985 time (old exports, fixtures, a time
    written as the epoch's first day) keeps its row; the year before it is a reject."""
    rows = [
        {"query": "epoch day", "ts": "1970-01-01T00:00:00"},
        {"query": "old export", "ts": "1985-06-01T12:00:00"},
        {"query": "before", "ts": "1969-12-31T23:59:59"},
        {"query": "good", "ts": "2026-11-30T10:00:00"},
    ]
    db, total = _jsonl_log(cli, tmp_path, rows)
    assert (total["stored"], total["rejected"]) == (3, 1)
    assert _read(db, "SELECT query FROM search_events ORDER BY query") == [
        ("epoch day",), ("good",), ("old export",),
    ]  # fmt: skip
    assert _read(db, "SELECT reason FROM rejects") == [
        ("timestamp out of range: 1969-12-31T23:59:59",)
    ]


def test_a_click_row_far_out_of_range_rejects_its_search(cli, tmp_path: Path):
    db, total = _click_log(
        cli,
        tmp_path,
        ["1\tfar\t99999-03-01 07:17:12\t1\thttp://a", "2\tgood\t2006-03-01 07:17:12\t1\thttp://b"],
    )
    assert (total["stored"], total["rejected"]) == (1, 1)
    assert _read(db, "SELECT line, reason FROM rejects") == [
        (2, "timestamp out of range: 99999-03-01 07:17:12")
    ]


SESSION = """<sessiontrack2012>
<session num="1" starttime="0">
<interaction num="1" starttime="10:00:00">
<query>alpha</query>
<results>
<result rank="1"><url>u1</url><clueweb12id>d1</clueweb12id></result>
<result rank="99999999999999999999"><url>u2</url><clueweb12id>d2</clueweb12id></result>
<result rank="-1"><url>u3</url><clueweb12id>d3</clueweb12id></result>
<result rank="2"><url>u4</url><clueweb12id>d4</clueweb12id></result>
</results>
<clicked><click num="1" starttime="10:00:05"><rank>-1</rank></click>
<click num="2" starttime="10:00:09"><rank>2</rank></click></clicked>
</interaction>
<interaction num="2" starttime="99:99">
<query>beta</query>
</interaction>
<interaction num="3" starttime="99999-01-01T00:00:00">
<query>gamma</query>
</interaction>
<interaction num="4" starttime="10:10:00">
<query>delta</query>
</interaction>
</session>
</sessiontrack2012>
"""


@pytest.mark.parametrize("compression", ["none", "gzip"])  # read whole, and by the line reader
def test_session_track_wild_times_and_ranks(cli, tmp_path: Path, compression: str):
    """A clock that is no time (99:99) was stored as a search with no time; a result ranked -1
    was shown first and its click counted. Such a rank is no place on the page: the result goes
    after the ranked ones, as an unreadable rank does, and a click naming it clicks nothing."""
    path = tmp_path / "track.xml"
    if compression == "gzip":
        path = path.with_suffix(".xml.gz")
        path.write_bytes(gzip.compress(SESSION.encode()))
    else:
        path.write_text(SESSION, encoding="utf-8")
    db = tmp_path / "s.duckdb"
    total = _ingest(cli, db, path)
    assert (total["stored"], total["rejected"]) == (2, 2)
    assert _read(db, "SELECT reason FROM rejects ORDER BY line") == [
        ("unparseable timestamp: 99:99",),
        ("timestamp out of range: 99999-01-01T00:00:00",),
    ]
    events = _read(db, "SELECT query, result_ids, clicked_ids FROM search_events ORDER BY ts")
    assert events == [("alpha", ["d1", "d4", "d2", "d3"], ["d4"]), ("delta", [], [])]


def test_a_ubi_query_far_out_of_range_is_a_reject(cli, tmp_path: Path):
    """UBI queries are read by their own stage: a timestamp of year 99999 was stored. Wild
    positions only order a query's clicks (OpenSearch counts them from 0), so they are kept."""
    queries = tmp_path / "ubi_queries.jsonl"
    rows = [
        {"query_id": "q1", "user_query": "far", "timestamp": "99999-01-01T00:00:00Z"},
        {"query_id": "q2", "user_query": "good", "timestamp": "2026-11-20T10:00:00Z"},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    events = tmp_path / "ubi_events.jsonl"
    clicks = [
        ("a", 99999999999999999999, "2026-11-20T10:00:09Z"),
        ("b", -4, "2026-11-20T10:00:09Z"),
        ("c", 1, "99999-11-20T10:00:05Z"),
    ]
    events.write_text(
        "".join(
            json.dumps(
                {
                    "action_name": "click",
                    "query_id": "q2",
                    "timestamp": ts,
                    "event_attributes": {"object": {"object_id": doc}, "position": {"ordinal": o}},
                }
            )
            + "\n"
            for doc, o, ts in clicks
        ),
        encoding="utf-8",
    )
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", "ubi", str(queries), str(events), "--json")
    assert proc.returncode == 0, proc.stderr
    total = json.loads(proc.stdout)["total"]
    assert (total["stored"], total["rejected"]) == (1, 1)
    assert _read(db, "SELECT line, reason FROM rejects") == [
        (1, "timestamp out of range: 99999-01-01T00:00:00Z")
    ]
    stored = _read(db, "SELECT query, clicked_ids FROM search_events")
    assert len(stored) == 1 and sorted(stored[0][1]) == ["a", "b", "c"]


def test_a_negative_or_wild_result_count_is_a_reject(cli, tmp_path: Path):
    """num_results -5 was stored as -5 (an event neither with nor without results)."""
    rows = [
        {"query": "neg", "ts": "2026-11-30T10:00:00", "num_results": -5},
        {"query": "huge", "ts": "2026-11-30T10:00:00", "num_results": 1e19},
        {"query": "nan", "ts": "2026-11-30T10:00:00", "num_results": "NaN"},
        {"query": "zero", "ts": "2026-11-30T10:00:00", "num_results": "-0"},
    ]
    path = tmp_path / "log.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines[1] = lines[1].replace("1e+19", "1e400")  # past a double: JSON has no such number
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    total = _ingest(cli, db, path)
    assert (total["stored"], total["rejected"]) == (1, 3)
    assert _read(db, "SELECT query, num_results FROM search_events") == [("zero", 0)]
    assert [r[0] for r in _read(db, "SELECT reason FROM rejects ORDER BY line")] == [
        "wrong type: num_results is out of range: -5",
        "wrong type: num_results is out of range: 1e400",
        "wrong type: num_results is out of range: NaN",
    ]


def test_a_click_level_rank_that_is_no_place_is_left_out_of_the_ranks(cli, tmp_path: Path):
    """ItemRank -3 was kept as the rank clicked (extra's click_ranks); one past 32 bits was
    dropped. Each click is kept with its document, and only a place on the page is its rank."""
    ranks = [("99999999999999999999", "a"), ("-3", "b"), ("3.0", "c"), ("3.5", "d"), ("1", "e")]
    rows = [f"1\tq\t2006-03-01 07:17:12\t{rank}\thttp://{doc}" for rank, doc in ranks]
    db, total = _click_log(cli, tmp_path, rows)
    assert (total["stored"], total["rejected"]) == (1, 0)
    [(clicked, extra)] = _read(db, "SELECT clicked_ids, extra FROM search_events")
    assert clicked[:2] == ["http://e", "http://c"]  # by rank, then the unranked
    assert sorted(clicked[2:]) == ["http://a", "http://b", "http://d"]
    assert json.loads(extra)["click_ranks"] == [1, 3]


def test_a_zero_based_click_export_keeps_its_ranks(cli, tmp_path: Path):
    """Warehouse click tables and UBI count positions from 0: rank 0 is the first place on the
    page, kept as it is written and ordered first, as before ranks were checked."""
    rows = [f"1\tq\t2006-03-01 07:17:12\t{rank}\thttp://{doc}" for rank, doc in
            [("0", "a"), ("1", "b"), ("2", "c")]]  # fmt: skip
    db, total = _click_log(cli, tmp_path, rows)
    assert (total["stored"], total["rejected"]) == (1, 0)
    [(clicked, extra)] = _read(db, "SELECT clicked_ids, extra FROM search_events")
    assert clicked == ["http://a", "http://b", "http://c"]
    assert json.loads(extra)["click_ranks"] == [0, 1, 2]


BLANKS = ["\n\t ", "\u00a0", " \r\n ", "\u3000", "\u200b"]


def _read(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize("blank", BLANKS)
def test_a_query_of_white_space_alone_is_missing(cli, tmp_path: Path, blank: str):
    """DuckDB's trim() takes spaces alone: a query of a newline and a tab was stored as a
    search, and triage counted it."""
    db, total = _jsonl_log(cli, tmp_path, [
        {"event_id": "a", "ts": "2026-11-30T10:00:00", "query": blank},
        {"event_id": "b", "ts": "2026-11-30T10:00:00", "query": "vpn"},
    ])  # fmt: skip
    assert (total["stored"], total["rejected"]) == (1, 1)
    assert _read(db, "SELECT reason FROM rejects") == [("missing query",)]


def test_a_chunk_of_white_space_is_missing_or_its_title(cli, tmp_path: Path):
    path = tmp_path / "docs.jsonl"
    rows = [
        {"id": "ws-1", "title": "Whitespace", "text": "   \n\t  "},
        {"id": "n3", "title": "  ", "text": "\n\t"},
        {"id": "ok", "text": "fine text"},
        {"id": "\n", "text": "no id"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.duckdb"
    total = _ingest(cli, db, path, "corpus")
    assert (total["stored"], total["rejected"]) == (2, 2)
    assert _read(db, "SELECT chunk_id, text FROM chunks ORDER BY 1") == [
        ("ok", "fine text"), ("ws-1", "Whitespace")]  # fmt: skip
    assert sorted(_read(db, "SELECT reason FROM rejects")) == [
        ("missing chunk id",), ("missing text",)]  # fmt: skip


def test_chat_and_tickets_of_white_space_are_missing(cli, tmp_path: Path):
    chat = tmp_path / "chat.jsonl"
    turns = [{"conversation_id": "c1", "turn": 0, "role": "user", "text": "\n\t",
              "ts": "2026-11-30T10:00:00"},
             {"conversation_id": "c2", "turn": 0, "role": "user", "text": "where is my order?",
              "ts": "2026-11-30T10:00:00"}]  # fmt: skip
    chat.write_text("".join(json.dumps(t) + "\n" for t in turns))
    db = tmp_path / "s.duckdb"
    assert _ingest(cli, db, chat, "chat")["rejected"] == 1
    tickets = tmp_path / "t.json"
    tickets.write_text(json.dumps({"tickets": [
        {"id": 1, "created_at": "2026-11-30T10:00:00Z", "subject": "\n", "description": " \t"},
        {"id": 2, "created_at": "2026-11-30T10:00:00Z", "subject": "Refund?", "description": "x"},
    ]}))  # fmt: skip
    total = _ingest(cli, db, tickets, "tickets")
    assert (total["stored"], total["rejected"]) == (1, 1)


def test_a_ticket_subject_of_white_space_leaves_its_question_to_the_body(cli, tmp_path: Path):
    """The subject test the reject uses (gm_blank) decides the question too: a subject of a
    line break was the ticket's question, shown as an empty line."""
    tickets = tmp_path / "t.json"
    tickets.write_text(json.dumps({"tickets": [
        {"id": 1, "created_at": "2026-11-30T10:00:00Z", "subject": "\n\t",
         "description": "Hello. Where is my order?"},
    ]}))  # fmt: skip
    db = tmp_path / "s.duckdb"
    assert _ingest(cli, db, tickets, "tickets")["stored"] == 1
    assert _read(db, "SELECT question FROM tickets") == [("Where is my order?",)]
