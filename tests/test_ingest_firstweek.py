"""Ingest defects a new user hits in the first week: an import that stores nothing, tickets from a
support-tweet export, and what a re-import says about rows rejected before.

Real DuckDB files in tmp_path, real files in their formats, the CLI in a subprocess; the tweets are
the real Customer Support on Twitter sample in ../shared/datasets (skipped when absent).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import duckdb
import pytest

from goldmine.errors import EXIT_EMPTY
from goldmine.ingest import api
from goldmine.store import open_store


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def good_event(i: int) -> dict:
    return {"event_id": f"e{i}", "ts": "2026-11-20T10:00:00Z", "query": f"query {i}"}


# One file per command whose every row has a reason to be rejected (counted by hand).
ALL_BAD = {
    "searchlog": (
        "log.jsonl",
        [{"event_id": "e1", "query": ""}, {"event_id": "e2"}, "{not json"],
        {"missing query": 2, "malformed JSON": 1},
    ),
    "tickets": (
        "tickets.jsonl",
        [{"id": "T1", "subject": "", "description": " "}, {"id": "T2", "subject": None}],
        {"missing subject and description": 2},
    ),
    "chat": (
        "chat.jsonl",
        [
            {"conversation_id": "c1", "role": "wizard", "text": "hello"},
            {"conversation_id": "c1", "role": "elf", "text": "hi"},
            {"conversation_id": "c1", "role": "user", "text": ""},
        ],
        {"unknown role": 2, "missing text": 1},
    ),
    "corpus": (
        "chunks.jsonl",
        [{"id": "a", "text": ""}, {"id": "b"}],
        {"missing text": 2},
    ),
}


@pytest.mark.parametrize("command", sorted(ALL_BAD))
def test_an_import_that_rejects_every_row_exits_4_with_the_top_reasons(
    command, tmp_path, db_path, cli
):
    name, rows, reasons = ALL_BAD[command]
    path = write_jsonl(tmp_path / name, rows)
    result = cli("ingest", command, str(path), "--db", str(db_path), "--json")
    assert result.returncode == EXIT_EMPTY == 4, result.stderr
    summary = json.loads(result.stdout)  # the accounting is still printed
    assert summary["total"]["rejected"] == summary["total"]["rows_in"] == len(rows)
    assert summary["total"]["stored"] == 0
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ")
    for reason, n in reasons.items():
        assert f"{reason} ({n})" in error
    assert f"goldmine rejects --batch {summary['files'][0]['batch_id']}" in error

    kept = cli("ingest", command, str(path), "--db", str(db_path), "--allow-empty", "--json")
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["total"]["rejected"] == len(rows)


def test_ubi_queries_all_rejected_exit_4(tmp_path, db_path, cli):
    queries = write_jsonl(tmp_path / "q.jsonl", [{"user_query": "a"}, {"user_query": "b"}])
    events = write_jsonl(tmp_path / "e.jsonl", [{"action_name": "click", "query_id": "q1"}])
    result = cli("ingest", "ubi", str(queries), str(events), "--db", str(db_path))
    assert result.returncode == 4, result.stderr
    assert "missing query_id (2)" in result.stderr
    kept = cli("ingest", "ubi", str(queries), str(events), "--db", str(db_path), "--allow-empty")
    assert kept.returncode == 0, kept.stderr


def test_present_rows_or_some_stored_are_not_an_empty_import(tmp_path, db_path, cli):
    good = write_jsonl(tmp_path / "week1.jsonl", [good_event(1), good_event(2)])
    assert cli("ingest", "searchlog", str(good), "--db", str(db_path)).returncode == 0
    # Every row already present: nothing rejected, nothing wrong.
    again = write_jsonl(tmp_path / "week1b.jsonl", [good_event(2), good_event(1)])
    present = cli("ingest", "searchlog", str(again), "--db", str(db_path), "--json")
    assert present.returncode == 0, present.stderr
    assert json.loads(present.stdout)["total"]["already_present"] == 2
    # Present and rejected, nothing stored: the rows that could be stored were.
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [good_event(1), {"event_id": "x"}])
    assert cli("ingest", "searchlog", str(mixed), "--db", str(db_path)).returncode == 0
    # One file of a run all rejected, another stored: the run stored rows.
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"event_id": "y", "query": " "}])
    new = write_jsonl(tmp_path / "new.jsonl", [good_event(3)])
    both = cli("ingest", "searchlog", str(bad), str(new), "--db", str(db_path))
    assert both.returncode == 0, both.stderr


def test_the_rejects_hint_names_the_real_batch_and_that_batch_lists_them(tmp_path, db_path, cli):
    first = write_jsonl(tmp_path / "a.jsonl", [good_event(1)])
    assert cli("ingest", "searchlog", str(first), "--db", str(db_path)).returncode == 0
    mixed = write_jsonl(tmp_path / "b.jsonl", [good_event(2), {"event_id": "e3"}, "[1]"])
    result = cli("ingest", "searchlog", str(mixed), "--db", str(db_path))
    assert result.returncode == 0, result.stderr
    hints = re.findall(r"goldmine rejects --batch (\d+)", result.stderr)
    batches = query(db_path, "SELECT batch_id FROM import_batches WHERE path = ?", [str(mixed)])
    assert [int(h) for h in hints] == [batches[0][0]] and batches[0][0] != 1
    assert "--batch ID" not in result.stderr
    # The hint is a command that works as printed (with the store it was given).
    line = next(ln for ln in result.stderr.splitlines() if "goldmine rejects" in ln)
    command = line.split("goldmine ", 1)[1].split()
    listed = cli(*command, "--json") if "--db" in command else cli(*command, "--db", str(db_path))
    rows = json.loads(listed.stdout)
    assert sorted(r["line"] for r in rows) == [2, 3]


def query(db_path: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(sql, params or []).fetchall()


def test_reimporting_a_file_counts_its_rejects_as_rejected_not_present(tmp_path, db_path, cli):
    rows = [good_event(1), {"event_id": "e2"}, good_event(3), "{oops"]
    path = write_jsonl(tmp_path / "log.jsonl", rows)
    first = json.loads(cli("ingest", "searchlog", str(path), "--db", str(db_path), "--json").stdout)
    again = cli("ingest", "searchlog", str(path), "--db", str(db_path), "--json")
    assert again.returncode == 0, again.stderr
    skipped = json.loads(again.stdout)["files"][0]
    assert skipped["skipped"] and skipped["batch_id"] == first["files"][0]["batch_id"]
    assert skipped["rejected"] == first["total"]["rejected"] == 2
    assert skipped["already_present"] == first["total"]["stored"] == 2
    assert (
        skipped["rows_in"] == skipped["stored"] + skipped["rejected"] + skipped["already_present"]
    )
    # The hint on a skipped file points at the batch that holds its rejects.
    plain = cli("ingest", "searchlog", str(path), "--db", str(db_path))
    assert f"goldmine rejects --batch {skipped['batch_id']}" in plain.stderr

    # The same lines in another file (not known by its hash) are parsed and rejected again.
    copy = write_jsonl(tmp_path / "log2.jsonl", [*rows, good_event(4)])
    other = json.loads(cli("ingest", "searchlog", str(copy), "--db", str(db_path), "--json").stdout)
    assert other["total"] == {"rows_in": 5, "stored": 1, "rejected": 2, "already_present": 2}


def test_an_all_rejected_file_imported_again_still_exits_4(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"event_id": "e1", "query": ""}, {"query": None}])
    assert cli("ingest", "searchlog", str(path), "--db", str(db_path)).returncode == 4
    again = cli("ingest", "searchlog", str(path), "--db", str(db_path), "--json")
    assert again.returncode == 4, again.stderr
    assert json.loads(again.stdout)["total"]["already_present"] == 0
    assert "missing query (2)" in again.stderr


# --- tickets from a support-tweet export ---------------------------------------------------------


def twcs(shared_dataset) -> Path:
    return shared_dataset("datasets", "twcs_sample", "sample.csv")


def test_only_customers_tweets_become_tickets(shared_dataset, db_path, cli):
    path = twcs(shared_dataset)
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    customers = {r["tweet_id"] for r in rows if r["inbound"] == "True"}
    result = cli("ingest", "tickets", str(path), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    total = json.loads(result.stdout)["total"]
    assert total["stored"] == len(customers) and total["rejected"] == len(rows) - len(customers)
    tickets = query(db_path, "SELECT ticket_id, user_id FROM tickets")
    assert {t[0] for t in tickets} == customers
    authors = {r["tweet_id"]: r["author_id"] for r in rows}
    assert all(user == authors[tid] for tid, user in tickets)
    reasons = query(db_path, "SELECT DISTINCT reason FROM rejects")
    assert reasons == [("agent reply, not a customer message",)]


def test_the_brands_own_handle_marks_agent_replies_without_inbound(tmp_path, db_path, cli):
    path = tmp_path / "tweets.csv"
    path.write_text(
        "tweet_id,author_id,created_at,text,in_response_to_tweet_id\n"
        "1,105834,Wed Oct 11 06:55:44 +0000 2017,@AcmeHelp my order is late. Where is it?,\n"
        "2,AcmeHelp,Wed Oct 11 07:00:00 +0000 2017,@105834 Sorry! Can you DM us?,1\n"
        "3,105834,Wed Oct 11 07:05:00 +0000 2017,@AcmeHelp done,2\n"
        "4,@acmehelp,Wed Oct 11 07:06:00 +0000 2017,@105834 Thanks!,3\n"
    )
    got = cli("ingest", "tickets", str(path), "--agent", "AcmeHelp", "--db", str(db_path), "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["total"] == {
        "rows_in": 4,
        "stored": 2,
        "rejected": 2,
        "already_present": 0,
    }
    assert sorted(r[0] for r in query(db_path, "SELECT ticket_id FROM tickets")) == ["1", "3"]
    assert query(db_path, "SELECT question FROM tickets WHERE ticket_id = '1'") == [
        ("Where is it?",)
    ]
    # inbound spelled another way.
    other = tmp_path / "other.csv"
    other.write_text("tweet_id,author_id,inbound,text\n10,Acme,false,On it.\n11,7,true,Why?\n")
    second = cli("ingest", "tickets", str(other), "--db", str(db_path), "--json")
    assert json.loads(second.stdout)["total"]["stored"] == 1


def test_tickets_and_chat_redact_handles_the_same_way(shared_dataset, tmp_path, cli):
    path = twcs(shared_dataset)
    tickets_db, chat_db = tmp_path / "t.duckdb", tmp_path / "c.duckdb"
    assert cli("ingest", "tickets", str(path), "--db", str(tickets_db)).returncode == 0
    assert cli("ingest", "chat", str(path), "--db", str(chat_db)).returncode == 0
    bodies = dict(query(tickets_db, "SELECT ticket_id, body FROM tickets"))
    turns = dict(query(chat_db, "SELECT turn_id, text FROM chat_turns WHERE role = 'user'"))
    assert bodies and bodies == {k: turns[k] for k in bodies}
    texts = query(tickets_db, "SELECT body || ' ' || question FROM tickets")
    assert not [t for (t,) in texts if re.search(r"@\w", t)]
    assert sum("<HANDLE>" in t for (t,) in texts) > 0


URL = re.compile(r"https?://\S*[^\s.,!?)]")
NUMBER = re.compile(r"\d+(?:\.\d+)+")


def sentences(con: duckdb.DuckDBPyConnection, texts: list[str]) -> list[list[str]]:
    sql = "SELECT list_transform(?, lambda t: gm_sentences(t))"
    return con.execute(sql, [texts]).fetchall()[0][0]


def breaks(text: str, parts: list[str]) -> int:
    """How many URLs and dotted numbers a split cuts inside."""
    cuts, pos = [], 0
    for part in parts[:-1]:
        pos = text.index(part.strip(), pos) + len(part.strip())
        cuts.append(pos)
    spans = [m.span() for m in (*URL.finditer(text), *NUMBER.finditer(text))]
    return sum(any(a < c < b for c in cuts) for a, b in spans)


def test_sentences_keep_urls_versions_and_decimals_of_real_tweets(shared_dataset, ticket_sql):
    rows = list(csv.DictReader(twcs(shared_dataset).open(encoding="utf-8")))
    texts = [r["text"] for r in rows]
    spans = sum(len(URL.findall(t)) + len(NUMBER.findall(t)) for t in texts)
    split = sentences(ticket_sql, texts)
    assert spans > 20  # the sample has URLs and versions to break
    assert sum(breaks(t, s) for t, s in zip(texts, split, strict=True)) == 0
    # It still splits: most multi-sentence tweets give more than one.
    assert sum(len(s) > 1 for s in split) > len(texts) // 3


@pytest.mark.parametrize(
    ("body", "question"),
    [
        (
            "LiveChat is down - https://t.co/SY94VtU8Kq. Does this link help https://t.co/x ?",
            "Does this link help https://t.co/x ?",
        ),
        ("after the 11.0.2 update my phone is slow. Any fix?", "Any fix?"),
        ("Version 8.4.22.857 on a Tab A. Does distance matter?", "Does distance matter?"),
        ("It costs 3.50 now. Was it 2.99 before?", "Was it 2.99 before?"),
        ("Apps, e.g. the mail app, crash. Mr. Smith said so. Why?", "Why?"),
        ("Is www.example.com down?", "Is www.example.com down?"),
    ],
)
def test_the_first_question_is_a_whole_sentence(ticket_sql, body, question):
    got = ticket_sql.execute("SELECT gm_first_question(gm_ticket_text(?))", [body]).fetchall()[0][0]
    assert got == question


@pytest.mark.parametrize(
    ("body", "first"),
    [
        ("@AppleSupport after the 11.0.2 my phone just sucks, wifi drops", "after the 11.0.2"),
        ("Apps, e.g. the mail app, crash at 9 a.m. daily. More later", "e.g. the mail app"),
    ],
)
def test_the_first_sentence_does_not_stop_at_a_version_or_abbreviation(ticket_sql, body, first):
    got = ticket_sql.execute("SELECT gm_first_sentence(gm_ticket_text(?))", [body]).fetchall()[0][0]
    assert first in got and not got.startswith("@")


def test_tweet_questions_are_whole_and_addressed_to_no_one(shared_dataset, db_path):
    with open_store(db_path) as con:
        api.tickets(con, [twcs(shared_dataset)])
        questions = [q for (q,) in con.execute("SELECT question FROM tickets").fetchall()]
    assert questions and not [q for q in questions if q.startswith("<HANDLE>")]
    # A question that has a URL has all of it (no "https://t." cut at a dot).
    assert not [q for q in questions if re.search(r"https?://\S*\.(\s|$)", q)]
