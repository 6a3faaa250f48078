"""Ingest of tickets, chat, the corpus, UBI and manual queries; real data (TREC Session Track,
Twitter customer support) and the demo's sample data."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path

from goldmine.ingest import api
from goldmine.ingest.corpus import current_snapshot_id
from goldmine.store import open_store
from goldmine.text import sha256_text

from helpers import trec_session_track_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parent.parent


ZENDESK = {
    "tickets": [
        {
            "id": 101,
            "created_at": "2026-11-20T09:00:00Z",
            "subject": "Refund not received",
            "description": (
                "Hi team,\n\nI returned my jacket two weeks ago. When will I get my refund? "
                "Is it going back to card 4111 1111 1111 1111?\nMail me at jane@example.com.\n\n"
                "Thanks,\nJane\n\nOn Mon, Nov 17 Support wrote:\n> Did you ship it back?"
            ),
            "requester_id": 7,
            "status": "open",
            "comments": [{"body": "first"}, {"body": "second"}],
        },
        {"id": 102, "subject": "Change my address", "description": "Hello,\nI moved house."},
        {"id": 103, "description": "> quoted only?\nWhere is my parcel?"},
        {"id": 104, "subject": "", "description": ""},
        {"id": 105, "created_at": "the other day", "subject": "x", "description": "y"},
    ]
}


def test_zendesk_tickets_keep_the_question_and_redact_the_body(tmp_path, db_path, cli):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(ZENDESK))
    result = cli("ingest", "tickets", str(path), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"] == {
        "rows_in": 5,
        "stored": 3,
        "rejected": 2,
        "already_present": 0,
    }
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT ticket_id, question, body, ts::VARCHAR, user_id, extra FROM tickets "
            "ORDER BY ticket_id"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall()
    assert [r[:2] for r in rows] == [
        ("101", "Refund not received: When will I get my refund?"),
        ("102", "Change my address"),
        ("103", "Where is my parcel?"),
    ]
    body = rows[0][2]
    assert "<CARD>" in body and "<EMAIL>" in body
    assert "4111" not in body and "jane@example.com" not in body
    assert "Did you ship it back?" in body  # the full text is kept for reading
    assert rows[0][3:] == ("2026-11-20 09:00:00", "7", '{"n_comments":2}')
    assert rejects == [
        (4, "missing subject and description"),
        (5, "unparseable timestamp: the other day"),
    ]


def test_tickets_csv(tmp_path, db_path):
    path = tmp_path / "tickets.csv"
    path.write_text(
        "ticket_id,created_at,title,body\n"
        'T1,2026-11-20,Order late,"Hello, my order is late. Can you check it? Call 555-123-4567"\n'
    )
    with open_store(db_path) as con:
        assert api.tickets(con, [path]).total["stored"] == 1
        assert con.execute("SELECT question, body FROM tickets").fetchall() == [
            (
                "Order late: Can you check it?",
                "Hello, my order is late. Can you check it? Call <PHONE>",
            )
        ]


def test_chat_in_the_chat_apis_own_message_shapes(tmp_path, db_path):
    # Conversations as the chat APIs log them: a content that is a list of parts (text beside an
    # image), a tool call with no content, the tool's answer, a developer prompt. The user's
    # question in parts was a reject ("text is a list"), and so were the tool turns.
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {"conversation_id": "c1", "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "how do I reset my password"},
                    {"type": "image_url", "image_url": {"url": "https://example.org/s.png"}},
                    {"type": "text", "text": "on the mobile app?"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Settings."}]},
            ]},
            {"conversation_id": "c2", "messages": [
                {"role": "developer", "content": "Answer from the docs."},
                {"role": "user", "content": "billing question"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "t1",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{\"q\": \"billing\"}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "doc-9: invoices"},
                {"role": "assistant", "content": "Here is how billing works."},
            ]},
        ],
    )  # fmt: skip
    with open_store(db_path) as con:
        result = api.chat(con, [path])
        rows = con.execute(
            "SELECT conversation_id, turn, role, text FROM chat_turns "
            "ORDER BY conversation_id, turn"
        ).fetchall()
    assert result.total["rejected"] == 0
    assert rows == [
        ("c1", 0, "user", "how do I reset my password\non the mobile app?"),
        ("c1", 1, "assistant", "Settings."),
        ("c2", 0, "assistant", "Answer from the docs."),
        ("c2", 1, "user", "billing question"),
        ("c2", 2, "assistant", 'search({"q": "billing"})'),
        ("c2", 3, "assistant", "doc-9: invoices"),
        ("c2", 4, "assistant", "Here is how billing works."),
    ]


def test_chat_turns_keep_their_order_and_failure_signals(tmp_path, db_path):
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {
                "conversation_id": "c1",
                "turn": 1,
                "role": "assistant",
                "text": "I'm not sure, I don't have that information.",
                "feedback": "thumbs_down",
            },
            {
                "conversation_id": "c1",
                "turn": 0,
                "role": "user",
                "text": "what is the return window?",
                "ts": "2026-11-20T10:00:00Z",
            },
            {"conversation_id": "c1", "turn": 2, "role": "user", "text": "and for sale items?"},
            {
                "conversation_id": "c2",
                "user_id": "u9",
                "messages": [
                    {"role": "user", "content": "mail me at kim@example.org"},
                    {"role": "bot", "content": "Done.", "feedback": "up"},
                ],
            },
            {"conversation_id": "c3", "turn": 0, "role": "robot", "text": "beep"},
        ],
    )
    with open_store(db_path) as con:
        result = api.chat(con, [path])
        rows = con.execute(
            "SELECT conversation_id, turn, role, text, feedback, dont_know, user_id "
            "FROM chat_turns ORDER BY conversation_id, turn"
        ).fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert result.total == {"rows_in": 6, "stored": 5, "rejected": 1, "already_present": 0}
    assert rows == [
        ("c1", 0, "user", "what is the return window?", None, False, None),
        ("c1", 1, "assistant", "I'm not sure, I don't have that information.", "down", True, None),
        ("c1", 2, "user", "and for sale items?", None, False, None),
        ("c2", 0, "user", "mail me at <EMAIL>", None, False, "u9"),
        ("c2", 1, "assistant", "Done.", "up", False, "u9"),
    ]
    assert rejects == [(5, "unknown role: robot")]


def test_a_corpus_whose_text_is_a_list_of_paragraphs(tmp_path, db_path):
    # KILT's Wikipedia knowledge source gives each page's text as a list of paragraphs, each
    # ending in a line end, and its title as wikipedia_title: every page was a reject.
    path = write_jsonl(
        tmp_path / "kilt_knowledgesource.jsonl",
        [
            {"_id": "290", "wikipedia_id": "290", "wikipedia_title": "A",
             "text": ["A\n", "A is the first letter.\n", "It is a vowel.\n"],
             "anchors": [], "categories": "Letters"},
            {"_id": "303", "wikipedia_title": "B", "text": "B is a letter."},
            {"_id": "9", "wikipedia_title": "Nine", "text": [9, "not all text"]},
        ],
    )  # fmt: skip
    with open_store(db_path) as con:
        result = api.corpus(con, [path])
        chunks = con.execute("SELECT chunk_id, title, text FROM chunks ORDER BY 1").fetchall()
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert result.total["stored"] == 2
    assert chunks == [
        ("290", "A", "A\nA is the first letter.\nIt is a vowel."),
        ("303", "B", "B is a letter."),
    ]
    assert rejects == [(3, "wrong type: text is a list")]  # a list of other than text


def test_public_corpora_name_their_text_in_their_own_words(tmp_path, db_path):
    # arXiv's metadata and PubMed give an abstract, MS MARCO v2.1's segmented documents a
    # segment, a LangChain dump page_content: each was "chunks need an id and a text field".
    files = {
        "arxiv.jsonl": {"id": "0704.0001", "title": "Calculation of prompt diphoton production",
                        "abstract": "A fully differential calculation.", "authors": "C. Balazs"},
        "msmarco.jsonl": {"docid": "msmarco_v2.1_doc_00_0#0", "title": "T", "headings": "H",
                          "segment": "The segment's text.", "start_char": 0},
        "langchain.jsonl": {"id": "lc-1", "page_content": "A page.", "metadata": {"source": "x"}},
        "paper.jsonl": {"id": "p1", "text": "The body.", "abstract": "The abstract."},
    }  # fmt: skip
    with open_store(db_path) as con:
        for name, row in files.items():
            result = api.corpus(con, [write_jsonl(tmp_path / name, [row])])
            assert result.total["stored"] == 1, name
        texts = con.execute("SELECT chunk_id, text, metadata FROM chunks ORDER BY 1").fetchall()
    assert ("0704.0001", "A fully differential calculation.", '{"authors":"C. Balazs"}') in texts
    assert (
        "msmarco_v2.1_doc_00_0#0",
        "The segment's text.",
        '{"headings":"H","start_char":0}',
    ) in texts
    assert ("lc-1", "A page.", None) in texts  # its metadata's source is its document:
    with open_store(db_path) as con:
        assert con.execute("SELECT doc_id FROM chunks WHERE chunk_id = 'lc-1'").fetchall() == [
            ("x",)
        ]
    # beside a text, an abstract is the chunk's metadata
    assert ("p1", "The body.", '{"abstract":"The abstract."}') in texts


def test_corpus_snapshots_and_text_hashes(tmp_path, db_path):
    first = write_jsonl(
        tmp_path / "chunks.jsonl",
        [
            {"id": "policy-14", "text": "Refunds within 5 days.", "title": "Refunds", "lang": "en"},
            {"id": "finance-3", "text": "Refunds go to the card.", "doc_id": "refunds"},
            {"id": "policy-14", "text": "a duplicate"},
            {"text": "no id"},
        ],
    )
    same = write_jsonl(
        tmp_path / "same.jsonl",
        [  # the same content, another file
            {"id": "finance-3", "text": "Refunds go to the card.", "doc_id": "refunds"},
            {"id": "policy-14", "text": "Refunds within 5 days.", "title": "Refunds", "lang": "en"},
        ],
    )
    beir = write_jsonl(
        tmp_path / "corpus.jsonl",
        [  # BEIR: _id, title, text
            {"_id": "policy-14", "title": "Refunds", "text": "Refunds within 10 days."},
            {"_id": "hr-2", "title": "Leave", "text": "Book leave two weeks ahead."},
        ],
    )
    with open_store(db_path) as con:
        assert current_snapshot_id(con) is None
        one = api.corpus(con, [first]).files[0]
        # Every entry holds the four counts the docs name (a script's .files[0].added was null
        # on a first snapshot and on one made again): the first against none, the same as now
        # against itself.
        assert (one.stored, one.rejected, one.extra) == (2, 2, {
            "snapshot_id": 1, "new_snapshot": True,
            "unchanged": 0, "changed": 0, "added": 2, "removed": 0,
        })  # fmt: skip
        again = api.corpus(con, [same]).files[0]
        assert (again.stored, again.already_present, again.extra) == (0, 2, {
            "snapshot_id": 1, "new_snapshot": False,
            "unchanged": 2, "changed": 0, "added": 0, "removed": 0,
        })  # fmt: skip
        two = api.corpus(con, [beir], label="beir").files[0]
        assert two.extra == {
            "snapshot_id": 2,
            "new_snapshot": True,
            "unchanged": 0,
            "changed": 1,
            "added": 1,
            "removed": 1,
        }
        assert current_snapshot_id(con) == 2
        rows = con.execute(
            "SELECT snapshot_id, chunk_id, text, text_hash, metadata FROM chunks "
            "ORDER BY snapshot_id, chunk_id"
        ).fetchall()
        snaps = con.execute(
            "SELECT snapshot_id, n_chunks, label FROM corpus_snapshots ORDER BY 1"
        ).fetchall()
    assert [r[:2] for r in rows] == [
        (1, "finance-3"),
        (1, "policy-14"),
        (2, "hr-2"),
        (2, "policy-14"),
    ]
    assert all(r[3] == sha256_text(r[2]) for r in rows)
    assert rows[1][4] == '{"lang":"en"}'
    assert snaps == [(1, 2, None), (2, 2, "beir")]


def test_ubi_queries_joined_to_click_events(tmp_path, db_path, cli):
    queries = write_jsonl(
        tmp_path / "ubi_queries.ndjson",
        [
            {
                "query_id": "q1",
                "user_query": "refund policy",
                "timestamp": "2026-11-20T10:00:00Z",
                "client_id": "c-1",
                "application": "shop",
                "query_response_id": "r1",
                "query_response_hit_ids": ["policy-14", "finance-3", "policy-1"],
                "query_attributes": {"session_id": "s-attr"},
            },
            {
                "query_id": "q2",
                "user_query": "vacation days",
                "timestamp": "2026-11-20T10:01:00Z",
                "client_id": "c-2",
                "query_response_hit_ids": "hr-1,hr-2",
            },
            {"query_id": "q3", "user_query": "", "timestamp": "2026-11-20T10:02:00Z"},
        ],
    )
    hits = [
        {
            "action_name": "click",
            "query_id": "q1",
            "client_id": "c-1",
            "session_id": "s1",
            "timestamp": "2026-11-20T10:00:09Z",
            "event_attributes": {"object": {"object_id": "finance-3"}, "position": {"ordinal": 2}},
        },
        {
            "action_name": "impression",
            "query_id": "q1",
            "timestamp": "2026-11-20T10:00:01Z",
            "event_attributes": {"object": {"object_id": "policy-14"}},
        },
        {
            "action_name": "click",
            "query_id": "q1",
            "timestamp": "2026-11-20T10:00:05Z",
            "event_attributes.object.object_id": "policy-14",
            "event_attributes.position": 1,
        },
        {
            "action_name": "add_to_cart",
            "query_id": "q2",
            "timestamp": "2026-11-20T10:01:30Z",
            "event_attributes": {"object": {"object_id": "hr-2"}},
        },
    ]
    events = tmp_path / "ubi_events.json"  # an OpenSearch _search dump
    dump = {"hits": {"hits": [{"_source": h} for h in hits] + [{"_source": "not an event"}]}}
    events.write_text(json.dumps(dump))
    result = cli("ingest", "ubi", str(queries), str(events), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["total"] == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    assert (out["files"][0]["events_in"], out["files"][0]["events_rejected"]) == (5, 1)
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT event_id, source, session_id, user_id, query, result_ids, clicked_ids "
            "FROM search_events ORDER BY event_id"
        ).fetchall()
        rejects = con.execute("SELECT path, line, reason FROM rejects ORDER BY path").fetchall()
    assert rows == [
        (
            "q1",
            "ubi",
            "s1",
            "c-1",
            "refund policy",
            ["policy-14", "finance-3", "policy-1"],
            ["policy-14", "finance-3"],
        ),
        ("q2", "ubi", None, "c-2", "vacation days", ["hr-1", "hr-2"], []),
    ]
    assert rejects == [
        (str(events), 5, "ubi_events: not a JSON object"),
        (str(queries), 3, "missing query"),
    ]
    # add_to_cart counts when named a click action; the same files are not read twice.
    again = cli(
        "ingest",
        "searchlog",
        str(queries),
        str(events),
        "--format",
        "ubi",
        "--click-action",
        "add_to_cart",
        "--db",
        str(db_path),
        "--json",
    )
    assert json.loads(again.stdout)["total"]["stored"] == 0


def test_add_status_and_rejects_commands(tmp_path, db_path, cli):
    listed = tmp_path / "colleagues.txt"
    listed.write_text("how many vacation days\n\nPTO carry over\n")
    first = cli(
        "add",
        "where is my refund",
        "--source",
        "colleague",
        "--note",
        "from Ana",
        "--db",
        str(db_path),
        "--json",
    )
    assert json.loads(first.stdout)["total"]["stored"] == 1
    second = cli("add", "--file", str(listed), "--source", "colleague", "--db", str(db_path))
    assert second.returncode == 0, second.stderr
    assert "rows in 2 = stored 2 + rejected 0 + already present 0" in second.stderr
    empty = cli("add", "--db", str(db_path))
    assert empty.returncode == 2 and empty.stderr.startswith("error: no query given")

    status = json.loads(cli("status", "--db", str(db_path), "--json").stdout)
    manual = [c for c in status["counts"] if c["table"] == "manual_queries"]
    assert manual == [{"table": "manual_queries", "source": "colleague", "rows": 3}]
    assert [b["source"] for b in status["batches"]] == ["manual", "manual"]
    table = cli("status", "--db", str(db_path))
    assert table.returncode == 0 and "manual_queries" in table.stdout
    missing = cli("rejects", "--batch", "99", "--db", str(db_path))
    assert missing.returncode == 2 and "no import batch 99" in missing.stderr


def test_add_file_saved_by_a_windows_editor(tmp_path, db_path):
    # Notepad's UTF-8 starts with a byte order mark and ends lines with CRLF: the first query
    # kept the mark, so it was stored as a second spelling of the question the list repeats.
    listed = tmp_path / "colleagues.txt"
    listed.write_bytes("\ufeffhow to reset password\r\n\r\nhow to reset password\r\n".encode())
    with open_store(db_path) as con:
        api.add(con, [], file=listed, source="colleague")
        texts = [r[0] for r in con.execute("SELECT query FROM manual_queries").fetchall()]
    assert texts == ["how to reset password"]


def test_trec_session_track_2012(shared_dataset, tmp_path, db_path):
    xml = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    counts = trec_session_track_jsonl(xml, tmp_path / "sessions.jsonl")
    assert counts == {"sessions": 98, "events": 199, "shown": 2157, "clicks": 272}
    with open_store(db_path) as con:
        result = api.searchlog(con, [tmp_path / "sessions.jsonl"])
        got = con.execute(
            "SELECT count(*), count(DISTINCT session_id), sum(len(result_ids)), "
            "sum(len(clicked_ids)), count(*) FILTER (WHERE len(clicked_ids) = 0) "
            "FROM search_events"
        ).fetchall()[0]
        first = con.execute(
            "SELECT query, result_ids[1], clicked_ids FROM search_events WHERE event_id = '1-1'"
        ).fetchall()
    assert result.total == {"rows_in": 199, "stored": 199, "rejected": 0, "already_present": 0}
    assert got[:4] == (199, 98, 2157, 272)
    assert got[4] > 0  # searches without a click: a failure signal triage reads
    assert first == [
        (
            "US tax code 403 (b)",
            "clueweb09-enwp00-09-05733",
            ["clueweb09-enwp01-56-23264", "clueweb09-enwp00-09-05733"],
        )
    ]


def _twcs_roots(path: Path) -> dict[str, str]:
    rows = {r["tweet_id"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}
    roots = {}
    for tweet_id in rows:
        cur = tweet_id
        while rows[cur]["in_response_to_tweet_id"] in rows:
            cur = rows[cur]["in_response_to_tweet_id"]
        roots[tweet_id] = cur
    return roots


def test_twitter_customer_support_threads(shared_dataset, db_path, cli):
    path = shared_dataset("datasets", "twcs_sample", "sample.csv")
    result = cli("ingest", "chat", str(path), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"] == {
        "rows_in": 93,
        "stored": 93,
        "rejected": 0,
        "already_present": 0,
    }
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT turn_id, conversation_id, turn, role, text FROM chat_turns "
            "ORDER BY conversation_id, turn"
        ).fetchall()
    assert {r[0]: r[1] for r in rows} == _twcs_roots(path)
    virgin = [(r[0], r[3]) for r in rows if r[1] == "119246"]
    assert virgin == [
        ("119246", "assistant"),
        ("119242", "user"),
        ("119240", "assistant"),
        ("119241", "user"),
        ("119243", "assistant"),
        ("119244", "user"),
        ("119245", "assistant"),
    ]
    assert sum(1 for r in rows if r[3] == "user") == 49
    assert not [r for r in rows if re.search(r"@\w", r[4])]
    assert all(r[4].startswith("<HANDLE>") for r in rows if r[0] == "119241")


def test_sample_data_is_deterministic_and_the_monday_import_adds_only_new(tmp_path, db_path):
    spec = importlib.util.spec_from_file_location("generate", ROOT / "data" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.generate(tmp_path / "sample")
    for path in written:
        assert path.read_bytes() == (ROOT / "data" / "sample" / path.name).read_bytes()
    sample = tmp_path / "sample"
    with open_store(db_path) as con:
        api.corpus(con, [sample / "corpus.jsonl"])
        week1 = api.searchlog(con, [sample / "searchlog_week1.jsonl"]).total
        week2 = api.searchlog(con, [sample / "searchlog_week2.jsonl"]).total
        api.tickets(con, [sample / "tickets.json"])
        api.chat(con, [sample / "chat.jsonl"])
        leaks = con.execute(
            "SELECT count(*) FROM tickets WHERE regexp_matches(body, '@example|4111 1111')"
        ).fetchall()
        n_events = con.execute("SELECT count(*) FROM search_events").fetchall()[0][0]
    assert week1["stored"] == week1["rows_in"] and week1["rejected"] == 0
    assert week2["rejected"] == 3 and week2["already_present"] > 0
    assert week2["rows_in"] == week2["stored"] + week2["rejected"] + week2["already_present"]
    assert n_events == week1["stored"] + week2["stored"]
    assert leaks == [(0,)]


def test_status_and_rejects_read_well_in_a_narrow_terminal(tmp_path, db_path, cli):
    """A CI log is 80 columns: the last batches become one line each, counts get thousands
    separators and times whole seconds; --json keeps the exact values."""
    rows = [{"event_id": f"e{i}", "query": f"q {i}"} for i in range(1500)]
    rows.append({"event_id": "bad"})
    path = tmp_path / "week.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("ingest", "searchlog", str(path), "--db", str(db_path)).returncode == 0
    narrow = cli("status", "--db", str(db_path), env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    assert "1,501 in = 1,500 stored, 1 rejected, 0 present" in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    finished = json.loads(cli("status", "--db", str(db_path), "--json").stdout)["batches"][0]
    assert f"({finished['finished_at'][:19].replace('T', ' ')})" in narrow.stdout
    rejected = cli("rejects", "--db", str(db_path), env={"COLUMNS": "80"})
    assert "missing query" in rejected.stdout and "1,501" not in rejected.stdout
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"event_id": "x", "query": "q"}) + "\n")
    assert cli("ingest", "searchlog", str(clean), "--db", str(db_path)).returncode == 0
    none = cli("rejects", "--db", str(db_path), "--batch", "2")
    assert none.returncode == 0 and none.stdout.strip() == "no rejected rows in batch 2"
