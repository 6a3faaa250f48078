"""Redaction covers every stored text field of a row, not only the query (issue 25, item 7).

Real files in their real formats, a real DuckDB store, then the stored values: a search log
whose user and session ids are emails, a Zendesk export whose requester is an object (name,
email, phone), chat, traces and UBI with emails for ids, ``goldmine add`` (``--redact``, its
default from ``[ingest] redact``), ``gold add-query`` and the notes a reviewer writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from test_ingest_traces import oi_docs, phoenix_span

from goldmine.ingest import api, batch
from goldmine.store import open_store

from helpers import write_jsonl

ALICE, BOB = "alice.smith@example.com", "bob.jones@example.org"
PHONE = "+44 20 7946 0958"


def rows(db: Path, sql: str) -> list[tuple]:
    with open_store(db) as con:
        return con.execute(sql).fetchall()


def everything(db: Path, table: str) -> str:
    """Every stored value of a table as one text, to look for what must not be there."""
    return str(rows(db, f"SELECT * FROM {table}"))


def searchlog_rows() -> list[dict]:
    """Two sessions keyed by an email, one by an opaque id; PII in the feedback and an extra."""
    out = []
    for i, (session, user) in enumerate(
        [(ALICE, ALICE), (ALICE, ALICE), (BOB, BOB), ("s-0042", "u-0042")]
    ):
        out.append(
            {
                "event_id": f"e{i}",
                "ts": f"2026-11-16T10:0{i}:00Z",
                "session_id": session,
                "user_id": user,
                "query": f"refund {i}",
                "feedback": f"bad, call me on {PHONE}" if i == 0 else None,
                "comment": f"from {user}",
            }
        )
    return out


def test_a_search_log_redacts_its_user_and_session_ids_and_free_text(tmp_path, db_path):
    log = write_jsonl(tmp_path / "log.jsonl", searchlog_rows())
    with open_store(db_path) as con:
        api.searchlog(con, [log], redact=True)
    stored = rows(
        db_path,
        "SELECT event_id, session_id, user_id, feedback, extra FROM search_events ORDER BY 1",
    )
    assert "@" not in str(stored) and "7946" not in str(stored)
    assert [r[2] for r in stored] == ["<EMAIL>", "<EMAIL>", "<EMAIL>", "u-0042"]
    assert stored[0][3] == "bad, call me on <PHONE>"
    assert json.loads(stored[0][4]) == {"comment": "from <EMAIL>"}
    # A session id stays a session: the same one equal, two different ones apart.
    sessions = [r[1] for r in stored]
    assert sessions[0] == sessions[1] != sessions[2] and sessions[3] == "s-0042"
    assert sessions[0].startswith("<EMAIL>") and sessions[2].startswith("<EMAIL>")
    # Without --redact (a search log's default) the ids are kept as they came.
    plain = tmp_path / "plain.duckdb"
    with open_store(plain) as con:
        api.searchlog(con, [log])
    assert rows(plain, "SELECT user_id FROM search_events ORDER BY event_id")[0] == (ALICE,)


def test_a_session_split_across_two_imports_keeps_one_pseudonym(tmp_path, cli):
    """Two commands (two processes) import the two halves of an email-keyed session: its
    pseudonym is the same in both, from a key kept beside the store (0600), never in it."""
    db = tmp_path / "s.duckdb"
    first = {"event_id": "e1", "ts": "2026-11-20T23:59:00Z", "session_id": ALICE, "query": "refund"}
    second = {**first, "event_id": "e2", "ts": "2026-11-21T00:00:30Z", "query": "refund policy"}
    for i, row in enumerate((first, second)):
        log = write_jsonl(tmp_path / f"d{i}.jsonl", [row])
        done = cli("ingest", "searchlog", str(log), "--redact", "--db", str(db))
        assert done.returncode == 0, done.stderr
    sessions = rows(db, "SELECT DISTINCT session_id FROM search_events")
    assert len(sessions) == 1 and sessions[0][0].startswith("<EMAIL>~")
    key = Path(str(db) + ".key")
    assert key.stat().st_mode & 0o777 == 0o600
    assert key.read_text().strip() not in db.read_bytes().decode("latin-1")


def test_an_event_id_holding_an_address_is_a_pseudonym_stable_across_imports(tmp_path, cli):
    """An export keyed by the user's address (``alice.smith@example.com-1700000000``) kept it as
    the event id under --redact, and the id reaches a gold item's source ids and the published
    file. It is stored as a keyed pseudonym; the same line changed (a re-export) and a click file
    naming that id reach the same stored search, never a second one."""
    db = tmp_path / "s.duckdb"
    key = f"{ALICE}-1700000000"
    first = [
        {"event_id": key, "ts": "2026-11-20T10:00:00Z", "query": "refund", "clicked_ids": []},
        {"event_id": "e-2", "ts": "2026-11-20T10:01:00Z", "query": "invoice"},
    ]
    again = [{"event_id": key, "ts": "2026-11-20T10:00:00Z", "query": "refund", "results": []}]
    clicks = [{"event_id": key, "ts": "2026-11-20T10:00:09Z", "clicked_ids": ["d1"]}]
    for i, part in enumerate((first, again, clicks)):
        log = write_jsonl(tmp_path / f"p{i}.jsonl", part)
        done = cli("ingest", "searchlog", str(log), "--redact", "--db", str(db), "--json")
        assert done.returncode == 0, done.stderr
    stored = rows(db, "SELECT event_id, clicked_ids FROM search_events ORDER BY ts")
    assert "@" not in str(stored) and "alice" not in str(stored)
    assert len(stored) == 2 and stored[0][0].startswith("<EMAIL>") and stored[1][0] == "e-2"
    assert stored[0][1] == ["d1"]
    assert "alice" not in everything(db, "rejects")


def test_a_ticket_keyed_by_an_address_is_a_pseudonym(tmp_path, cli):
    """A help desk that keys a ticket by the sender's address kept it as the ticket id."""
    db = tmp_path / "t.duckdb"
    tickets = [{"id": BOB, "created_at": "2026-11-20T09:00:00Z", "subject": "Where is my refund?"}]
    for _ in range(2):  # imported twice (the second a changed export): one ticket
        tickets[0]["status"] = "open" if _ == 0 else "solved"
        log = write_jsonl(tmp_path / f"t{_}.jsonl", tickets)
        done = cli("ingest", "tickets", str(log), "--db", str(db))
        assert done.returncode == 0, done.stderr
    stored = rows(db, "SELECT ticket_id FROM tickets")
    assert len(stored) == 1 and stored[0][0].startswith("<EMAIL>~"), stored


def test_a_lost_key_is_refused_not_a_second_copy_of_every_row(tmp_path, cli):
    """With the key beside the store deleted, an overlapping redacted import keyed its rows
    afresh and stored 800 of them twice, exit 0. A store that holds redacted imports refuses to
    make a new key unless told to; a key that cannot be read is one line, not a traceback."""
    db = tmp_path / "s.duckdb"
    rows_ = [{"ts": f"2026-11-20T10:0{i}:00Z", "user_id": ALICE, "query": f"refund {i}"}
             for i in range(4)]  # fmt: skip
    log = write_jsonl(tmp_path / "a.jsonl", rows_)
    later = write_jsonl(tmp_path / "b.jsonl", rows_[2:] + [{**rows_[0], "query": "new"}])
    assert cli("ingest", "searchlog", str(log), "--redact", "--db", str(db)).returncode == 0
    key = Path(str(db) + ".key")
    key.unlink()
    batch._keys.clear()  # a new process's: the in-process runner keeps the module's cache
    refused = cli("ingest", "searchlog", str(later), "--redact", "--db", str(db))
    assert refused.returncode == 2 and str(key) in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and not key.exists()
    assert rows(db, "SELECT count(*) FROM search_events") == [(4,)]
    # told to, it goes on with a new key (and says in the docs what that costs)
    fresh = cli("ingest", "searchlog", str(later), "--redact", "--db", str(db),
                env={"GOLDMINE_NEW_PSEUDONYM_KEY": "1"})  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    key.unlink()
    key.mkdir()  # a folder where the key should be
    batch._keys.clear()
    third = write_jsonl(tmp_path / "c.jsonl", [{**rows_[0], "query": "newer"}])
    folder = cli("ingest", "searchlog", str(third), "--redact", "--db", str(db))
    assert folder.returncode == 2 and "Traceback" not in folder.stderr, folder.stderr


ZENDESK = {
    "tickets": [
        {
            "id": 201,
            "created_at": "2026-11-20T09:00:00Z",
            "subject": "Where is my refund?",
            "description": "Hello, where is my refund? I paid twice.",
            "requester": {"name": "Anna Berg", "email": ALICE, "phone": PHONE},
            "status": "open",
        },
        {
            "id": 202,
            "created_at": "2026-11-20T09:05:00Z",
            "subject": "Change my address",
            "description": "Can I change the address of my order?",
            "requester": {"id": 9001, "name": "Ben Holt", "email": BOB},
            "status": "new",
        },
    ]
}


def test_a_zendesk_requester_object_is_stored_as_its_id_or_redacted_email(tmp_path, db_path, cli):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(ZENDESK))
    done = cli("ingest", "tickets", str(path), "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    stored = rows(db_path, "SELECT ticket_id, user_id FROM tickets ORDER BY ticket_id")
    assert stored == [("201", "<EMAIL>"), ("202", "9001")]
    text = everything(db_path, "tickets")
    assert "Anna" not in text and "Ben Holt" not in text and "@" not in text
    assert "7946" not in text
    plain = tmp_path / "plain.duckdb"
    done = cli("ingest", "tickets", str(path), "--db", str(plain), "--no-redact")
    assert done.returncode == 0, done.stderr
    assert rows(plain, "SELECT user_id FROM tickets ORDER BY ticket_id") == [(ALICE,), ("9001",)]


def test_chat_redacts_its_user_id_and_free_text_feedback(tmp_path, db_path):
    turns = [
        {"conversation_id": "c1", "turn": 0, "user_id": ALICE, "role": "user",
         "text": "where is my parcel?", "feedback": None},
        {"conversation_id": "c1", "turn": 1, "user_id": "bot-7", "role": "assistant",
         "text": "It ships today.", "feedback": f"useless, ring {PHONE}"},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "chat.jsonl", turns)
    with open_store(db_path) as con:
        api.chat(con, [path])
    stored = rows(db_path, "SELECT turn, user_id, feedback FROM chat_turns ORDER BY turn")
    assert stored == [(0, "<EMAIL>", None), (1, "bot-7", "useless, ring <PHONE>")]


def test_traces_redact_user_and_session_attributes(tmp_path, db_path, cli):
    spans = [
        phoenix_span("t1", "s1", "RETRIEVER",
                     **{"input.value": "refund policy", "user.id": ALICE, "session.id": BOB},
                     **oi_docs({"id": "d1"})),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "spans.jsonl", spans)
    done = cli("ingest", "traces", str(path), "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    ((session, user),) = rows(db_path, "SELECT session_id, user_id FROM search_events")
    assert user == "<EMAIL>" and session.startswith("<EMAIL>") and "@" not in session


def test_ubi_redacts_the_ids_it_joins_from_queries_and_events(tmp_path, db_path):
    queries = write_jsonl(
        tmp_path / "ubi_queries.ndjson",
        [{"query_id": "q1", "user_query": "refund policy", "timestamp": "2026-11-20T10:00:00Z",
          "client_id": ALICE, "query_response_hit_ids": ["d1", "d2"]}],
    )  # fmt: skip
    events = write_jsonl(
        tmp_path / "ubi_events.ndjson",
        [{"action_name": "click", "query_id": "q1", "session_id": BOB, "user_id": BOB,
          "timestamp": "2026-11-20T10:00:05Z",
          "event_attributes": {"object": {"object_id": "d2"}}}],
    )  # fmt: skip
    with open_store(db_path) as con:
        api.ubi(con, queries, events, redact=True)
    ((session, user),) = rows(db_path, "SELECT session_id, user_id FROM search_events")
    assert user == "<EMAIL>" and session.startswith("<EMAIL>") and "@" not in session


# ------------------------------------------------------------------ text people type by hand


def test_add_redacts_by_default_and_keeps_with_no_redact(tmp_path, cli):
    db = tmp_path / "add.duckdb"
    done = cli("add", f"refund for {ALICE}", "--note", f"from {BOB}, {PHONE}", "--db", str(db))
    assert done.returncode == 0, done.stderr
    stored = rows(db, "SELECT query, note FROM manual_queries")
    assert stored == [("refund for <EMAIL>", "from <EMAIL>, <PHONE>")]
    # The id is of the stored (redacted) text, so it cannot confirm a guessed address.
    again = cli("add", f"refund for {BOB}", "--db", str(db))
    assert again.returncode == 0, again.stderr
    assert rows(db, "SELECT count(*) FROM manual_queries") == [(1,)]
    plain = tmp_path / "plain.duckdb"
    done = cli("add", f"refund for {ALICE}", "--no-redact", "--db", str(plain))
    assert done.returncode == 0, done.stderr
    assert rows(plain, "SELECT query FROM manual_queries") == [(f"refund for {ALICE}",)]


def test_add_takes_its_default_from_ingest_redact_in_goldmine_toml(tmp_path, cli):
    (tmp_path / "goldmine.toml").write_text("[ingest]\nredact = false\n")
    db = tmp_path / "add.duckdb"
    done = cli("add", f"mail {ALICE}", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert rows(db, "SELECT query FROM manual_queries") == [(f"mail {ALICE}",)]
    done = cli("add", f"call {PHONE}", "--redact", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("call <PHONE>",) in rows(db, "SELECT query FROM manual_queries")
    (tmp_path / "goldmine.toml").write_text('[ingest]\nredact = "yes"\n')
    bad = cli("add", "x", "--db", str(db), cwd=tmp_path)
    assert bad.returncode == 2 and "redact" in bad.stderr and "Traceback" not in bad.stderr


def test_add_checks_phones_in_the_regions_of_goldmine_toml(tmp_path, cli):
    """A Spanish number without +34 is a phone only where [ingest] pii_regions names ES (the
    default regions' DE and FR would take it too): add takes the regions as imports do."""
    said = ("llamame al 612 345 678", "--note", "tel 612 34 56 78")
    stored = {}
    for regions in ("US", "ES"):
        (tmp_path / "goldmine.toml").write_text(f'[ingest]\npii_regions = ["{regions}"]\n')
        db = tmp_path / f"{regions}.duckdb"
        done = cli("add", *said, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        stored[regions] = rows(db, "SELECT query, note FROM manual_queries")
    assert stored == {
        "US": [("llamame al 612 345 678", "tel 612 34 56 78")],
        "ES": [("llamame al <PHONE>", "tel <PHONE>")],
    }


def test_gold_add_query_and_label_notes_are_redacted(tmp_path, cli):
    db = tmp_path / "gold.duckdb"
    done = cli("gold", "add-query", f"invoice for {ALICE}", "--db", str(db))
    assert done.returncode == 0, done.stderr
    ((qid, query),) = rows(db, "SELECT query_id, query FROM gold_items")
    assert query == "invoice for <EMAIL>"
    done = cli("gold", "label", qid, "--no-answer", "--note", f"asked by {BOB}", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert rows(db, "SELECT notes FROM gold_items") == [(["asked by <EMAIL>"],)]
    history = str(rows(db, "SELECT * FROM gold_history"))
    assert "@" not in history
    plain = tmp_path / "plain.duckdb"
    done = cli("gold", "add-query", f"invoice for {ALICE}", "--no-redact", "--db", str(plain))
    assert done.returncode == 0, done.stderr
    assert rows(plain, "SELECT query FROM gold_items") == [(f"invoice for {ALICE}",)]


def test_a_note_written_in_review_is_redacted(tmp_path):
    """The review loop (terminal and page) takes the command's redaction for its notes."""
    from goldmine.config import IngestSettings
    from goldmine.goldset.review import ReviewSession
    from goldmine.goldset.starter import add_queries
    from goldmine.ingest.manual import hand_redactor, text_redactor  # as `gold review` does

    db = tmp_path / "gold.duckdb"
    with open_store(db) as con:
        ((qid, _, _),) = add_queries(con, ["invoice copy"], [], "ana")
    session = ReviewSession(db, "ana", redact=text_redactor(hand_redactor(None, IngestSettings())))
    session.note(qid, f"customer {ALICE} phoned from {PHONE}")
    assert rows(db, "SELECT notes FROM gold_items") == [(["customer <EMAIL> phoned from <PHONE>"],)]
    assert "@" not in str(rows(db, "SELECT * FROM gold_history"))


@pytest.mark.parametrize(
    "value,checked",
    [
        ("s00000001", False),  # a letter before the digits: no token boundary, as pii.py says
        ("u163146", False),
        ("ev-000000001", True),  # a hyphen is a boundary: checked (and left alone by pii.py)
        ("4155552671", True),
        ("+44 20 7946 0958", True),
        ("anna@example.com", True),
        ("DE89 3704 0044 0532 0130 00", True),
        ("10.0.0.1", True),
        ("fe80::1", True),
    ],
)
def test_which_ids_reach_the_checks(value, checked):
    """Ids go to the PII checks only when a built-in kind could be in them: at a million events
    a session id like s00000001 on every row cost the redacted import twice its time."""
    from goldmine.ingest.batch import _ID_MAY_MATCH

    with duckdb.connect() as con:
        got = con.execute("SELECT regexp_matches(?, ?)", [value, _ID_MAY_MATCH]).fetchall()
    assert got == [(checked,)]


def test_a_redacted_event_without_an_id_gets_a_key_no_guess_can_confirm(tmp_path, cli):
    """An event without an id is keyed by a hash of its content; under --redact an unkeyed md5
    of the stored fields and a guessed address would equal it. Re-imports still find it."""
    import hashlib

    db = tmp_path / "s.duckdb"
    row = {"ts": "2026-11-20T09:00:00Z", "session_id": "s-0042", "user_id": ALICE,
           "query": "refund policy", "result_ids": ["d1", "d2"]}  # fmt: skip
    log = write_jsonl(tmp_path / "log.jsonl", [row])
    for _ in range(2):  # the second time, a copy of the file: present, not stored again
        done = cli("ingest", "searchlog", str(log), "--redact", "--db", str(db), "--json")
        assert done.returncode == 0, done.stderr
        log = write_jsonl(tmp_path / "copy.jsonl", [row, {**row, "query": "other"}])
    assert json.loads(done.stdout)["total"]["already_present"] == 1
    [(key,)] = rows(db, "SELECT event_id FROM search_events WHERE query = 'refund policy'")
    # What the key was made from (ingest.searchlog: the fields as read, the ids as JSON), with
    # the guessed address in place of <EMAIL>: an unkeyed hash would equal it.
    content = ["2026-11-20T09:00:00Z", "s-0042", ALICE, "refund policy", '["d1","d2"]', ""]
    guess = hashlib.md5("\x1f".join(content).encode()).hexdigest()
    assert key.startswith("h-") and key != "h-" + guess


def test_a_persons_name_in_a_ticket_export_is_never_stored(tmp_path, db_path, cli):
    """Names no pattern finds: Zendesk's ``via.source.from.name``, Freshdesk's "Full name"
    column, Jira's "Reporter" (a display name, used as the user). A name column is left out of
    the extras; a name that is the only user column becomes a keyed hash."""
    zendesk = tmp_path / "zd.json"
    zendesk.write_text(json.dumps({"tickets": [{
        "id": 501, "created_at": "2026-01-10T09:14:57Z", "subject": "Delivery question",
        "description": "When will it arrive?", "status": "open", "requester_id": 77,
        "via": {"channel": "email", "source": {"from": {"name": "Quinn Doe",
                                                        "address": "quinn@example.com"}}},
    }]}))  # fmt: skip
    freshdesk = tmp_path / "fd.csv"
    freshdesk.write_text(
        "Ticket ID,Subject,Description,Status,Created time,Contact ID,Full name,Email\n"
        "9,Refund?,Where is my refund?,Open,2026-01-10 09:00:00,55,Tina Turner,t@example.com\n"
    )
    jira = tmp_path / "jira.csv"
    jira.write_text(
        "Summary,Issue key,Status,Reporter,Created,Description\n"
        "VPN down?,HELP-1,Open,Yolanda Ruiz,2026-01-10 09:00,Why is the VPN down?\n"
        "VPN again?,HELP-2,Open,Yolanda Ruiz,2026-01-11 09:00,Is the VPN down again?\n"
        "Printer?,HELP-3,Open,Zoe\u00a0Quill,2026-01-12 09:00,Is the printer down?\n"
    )
    for path in (zendesk, freshdesk, jira):
        done = cli("ingest", "tickets", str(path), "--db", str(db_path))
        assert done.returncode == 0, done.stderr
    text = everything(db_path, "tickets")
    for name in ("Quinn", "Tina", "Turner", "Yolanda", "Ruiz", "Zoe", "Quill"):
        assert name not in text
    users = rows(db_path, "SELECT user_id FROM tickets WHERE ticket_id IN ('HELP-1', 'HELP-2')")
    assert len({u for (u,) in users}) == 1 and users[0][0]  # one reporter, one user
    assert '"via":"email"' in text.replace(" ", "")  # the channel kept


# --- JSON text: a row's extra fields and a rejected line, redacted value by value ------------


def test_a_csv_cell_of_json_holding_a_token_is_redacted_not_a_traceback(tmp_path, cli) -> None:
    """A CSV column of JSON text kept in ``extra``: the token's pattern took the backslash of
    ``\\"`` with it, the JSON broke, and the import ended in a traceback (exit 1)."""
    log = tmp_path / "log.csv"
    log.write_text(
        "ts,query,meta\n"
        '2026-11-02T09:00:00Z,help,"{""contact"": ""token: abc123"", ""phone"": ""+44 7911 '
        '123456""}"\n'
    )
    db = tmp_path / "s.duckdb"
    result = cli("ingest", "searchlog", str(log), "--redact", "--db", str(db))
    assert result.returncode == 0, result.stderr
    (extra,) = rows(db, "SELECT extra FROM search_events")[0]
    text = json.dumps(extra) if not isinstance(extra, str) else extra
    assert "abc123" not in text and "7911" not in text
    assert json.loads(text)["meta"]


@pytest.mark.parametrize(
    "line",
    [
        '{"ts": "31/02/2026 25:00", "query": "reset password for j\\u00fcrgen.m\\u00fcller@'
        'b\\u00fccher.de"}',
        '{"ts": "not a time", "query": "mail jane.doe\\u0040example.com about card '
        '4111\\u00a01111\\u00a01111\\u00a01111"}',
    ],
)
def test_a_rejected_json_line_is_redacted_through_its_escapes(tmp_path, cli, line) -> None:
    """Python's json.dumps writes non-ASCII (and may write any character) as \\u escapes: the
    stored reject kept the address and the card, since only decoded text was redacted."""
    log = tmp_path / "log.jsonl"
    log.write_text(line + "\n")
    db = tmp_path / "s.duckdb"
    cli("ingest", "searchlog", str(log), "--redact", "--db", str(db))
    (raw,) = rows(db, "SELECT raw FROM rejects")[0]
    decoded = json.loads(raw)["query"]
    assert "@" not in decoded and "1111" not in decoded, raw
    assert "<EMAIL>" in decoded
