"""``goldmine gold review`` driven in a pseudo-terminal, as a person would: keys in, screen out.

Draft → review (grade, note, undo, search, skip, quit, resume, reject, undo, no answer) → publish
→ diff → export → import, with a second process reading the store while the review waits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from goldmine.store import open_store

from helpers import Terminal, build, qid


def test_review_in_a_terminal_then_publish_diff_export_import(cli, db_path, tmp_path):
    build(db_path)

    def gold(*args: str) -> str:
        result = cli("--db", str(db_path), "gold", *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    gold("add-query", "reset password", "vpn setup", "dark mode")
    gold("draft", "-k", "2")
    drafts = {
        q: [d["chunk_id"] for d in json.loads(gold("show", qid(q), "--json"))["drafts"]]
        for q in ("reset password", "vpn setup", "dark mode")
    }
    assert drafts["reset password"][0] == "kb-reset-1"

    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "LINES": "40"}
    term = Terminal("--db", str(db_path), "gold", "review", "--by", "rita", env=env)
    term.expect("0 of 3 verified")
    screen = term.expect("[q] quit")
    assert "reset password" in screen and "candidate 1 of" in screen
    assert "Reset your password" in screen  # the chunk's title and passage
    assert "volume 400" in screen and "e.g. [searchlog] Reset password" in screen

    # Another terminal can read the store while the review waits for a key.
    listed = cli("--db", str(db_path), "gold", "list", "--json")
    assert listed.returncode == 0, listed.stderr

    term.send("2")
    for _ in drafts["reset password"][1:]:
        term.expect("[q] quit")
        term.send("0")
    term.expect("1 of 3 verified")
    screen = term.expect("[q] quit")
    assert "vpn setup" in screen
    assert "context" not in screen  # not a follow-up

    term.send("n")
    term.expect("note: ")
    term.send("check the mobile app\r")
    assert "note: check the mobile app" in term.expect("[q] quit")
    term.send("u")
    screen = term.expect("[q] quit")
    assert "undone: note" in screen and "note: check the mobile app" not in screen

    term.send("s")
    term.expect("search the corpus for: ")
    term.send("mobile vpn\r")
    term.expect("[1] kb-vpn-2")
    term.expect("press a number")
    term.send("1")
    screen = term.expect("[q] quit")
    assert "added kb-vpn-2 from search" in screen and "kb-vpn-2" in screen
    term.send("2")
    term.expect("graded kb-vpn-2 = 2")
    term.expect("[q] quit")
    term.send("x")  # the drafted candidate left: not relevant, and the query is decided
    term.expect("2 of 3 verified")
    term.expect("[q] quit")
    term.send("q")
    term.expect("Saved. 2 of 3 verified")
    assert term.wait() == 0

    # Resume: the next session starts at the first query still waiting.
    term = Terminal("--db", str(db_path), "gold", "review", "--by", "rita", env=env)
    term.expect("2 of 3 verified")
    screen = term.expect("[q] quit")
    assert "dark mode" in screen
    term.send("r")
    term.expect("Nothing left to review: 2 of 2 verified.")  # rejected: out of the count
    term.expect("[u] undo the last action")
    term.send("u")
    term.expect("undone: reject")
    screen = term.expect("[q] quit")
    assert "dark mode" in screen
    term.send("a")
    term.expect("Nothing left to review: 3 of 3 verified.")
    term.expect("[u] undo the last action")
    term.send("q")
    assert term.wait() == 0

    items = {i["query"]: i for i in json.loads(gold("list", "--json"))}
    assert {i["status"] for i in items.values()} == {"verified"}
    assert items["dark mode"]["no_answer"] is True
    vpn = json.loads(gold("show", qid("vpn setup"), "--json"))
    assert vpn["notes"] == [] and vpn["verified_by"] == "rita"
    assert {r["chunk_id"]: r["grade"] for r in vpn["labels"]} == {"kb-vpn-2": 2, "kb-vpn-1": 0}
    actions = [h["action"] for h in vpn["history"]]
    assert actions[:3] == ["add", "draft", "note"] and "undo" in actions
    assert "search-add" in actions

    assert gold("publish", "-m", "reviewed").startswith("published v1: 3 queries")
    gold("label", qid("vpn setup"), "--chunk", "kb-vpn-1=1")
    gold("publish", "-m", "vpn context")
    assert f"~ {qid('vpn setup')}\tvpn setup\tkb-vpn-1 " in gold("diff", "v1", "v2")
    out = tmp_path / "gold"
    gold("export", "--version", "2", "--out", str(out))
    empty = tmp_path / "empty.duckdb"
    assert cli("--db", str(empty), "gold", "import", str(out / "v0002.jsonl")).returncode == 0
    again = tmp_path / "again"
    assert cli("--db", str(empty), "gold", "export", "--out", str(again)).returncode == 0
    assert (again / "v0002.jsonl").read_bytes() == (out / "v0002.jsonl").read_bytes()


def test_review_with_nothing_to_do_says_so(cli, db_path: Path) -> None:
    build(db_path)
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120"}
    term = Terminal("--db", str(db_path), "gold", "review", env=env)
    term.expect("Nothing left to review: 0 of 0 verified.")
    assert term.wait() == 0


def test_review_reads_keys_from_a_pipe_too(cli, db_path: Path) -> None:
    build(db_path)
    assert (
        cli("--db", str(db_path), "gold", "add-query", "reset password", "dark mode").returncode
        == 0
    )
    assert cli("--db", str(db_path), "gold", "draft", "-k", "1").returncode == 0
    # Grade the one candidate 2, then "no answer" for the second query; end of input quits.
    result = cli("--db", str(db_path), "gold", "review", "--by", "script", input="2\na\n")
    assert result.returncode == 0, result.stderr
    assert "Nothing left to review: 2 of 2 verified." in result.stdout
    listed = json.loads(cli("--db", str(db_path), "gold", "list", "--json").stdout)
    assert {(i["query"], i["status"], i["no_answer"]) for i in listed} == {
        ("reset password", "verified", False),
        ("dark mode", "verified", True),
    }


def test_terminal_search_ranks_chunks_holding_some_of_the_words(cli, db_path: Path) -> None:
    """The terminal's ``s`` ranks by BM25 as the page's ``/`` does (issue 27, item 9)."""
    build(db_path)
    assert cli("--db", str(db_path), "gold", "add-query", "vpn setup").returncode == 0
    assert cli("--db", str(db_path), "gold", "draft", "-k", "1").returncode == 0
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "LINES": "40"}
    term = Terminal("--db", str(db_path), "gold", "review", "--by", "rita", env=env)
    term.expect("[q] quit")
    term.send("s")
    term.expect("search the corpus for: ")
    term.send("android qr code invoices\r")  # no chunk holds every one of these words
    screen = term.expect("press a number")
    assert "[1] kb-vpn-2" in screen and "no chunk" not in screen
    assert "kb-invoice-" in screen
    term.send("q")
    term.expect("[q] quit")
    term.send("q")
    assert term.wait() == 0


def _model_candidates(db: Path) -> None:
    """A question a model wrote from a chunk (as gold synth stores it) and a click model's draft
    (as gold draft --from clicks does), each on its own item."""
    from goldmine.goldset import items as gi
    from goldmine.store import transaction

    with open_store(db) as con, transaction(con):
        for query, chunk, source, grade, score in (
            ("vpn setup", "kb-vpn-1", "model", 2, None),
            ("download invoices", "kb-invoice-1", "clicks", 1, 0.42),
        ):
            con.execute(
                """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank,
                       score, source, snapshot_id, who, ts)
                   VALUES (?, ?, 'draft', ?, 1, ?, ?, 1, 'model:gen-1', now()::TIMESTAMP)""",
                [qid(query), chunk, grade, score, source],
            )
            con.execute(
                "UPDATE gold_items SET status = 'drafted', drafted_by = 'model:gen-1'"
                " WHERE query_id = ?",
                [qid(query)],
            )
            gi.record(con, qid(query), "draft", "model:gen-1", {})


def test_the_model_key_is_offered_only_where_a_model_suggests(cli, db_path: Path) -> None:
    """``[m] model's`` only on an item with a model's grade, worded as a suggestion: nobody
    graded a model's question (issue 27 item 12, issue 28)."""
    build(db_path)
    add = cli("--db", str(db_path), "gold", "add-query", "reset password", "vpn setup",
              "download invoices")  # fmt: skip
    assert add.returncode == 0, add.stderr
    with open_store(db_path) as con:
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source,
                   snapshot_id, ts)
               VALUES (?, 'kb-reset-1', 'draft', 1, 3.0, 'bm25', 1, now()::TIMESTAMP)""",
            [qid("reset password")],
        )
    _model_candidates(db_path)
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "LINES": "40"}
    term = Terminal("--db", str(db_path), "gold", "review", "--by", "rita", env=env)
    screen = term.expect("[q] quit")
    assert "reset password" in screen
    assert "[m]" not in screen and "suggests" not in screen  # bm25 drafted it: no model grade
    term.send("2")
    for query, says, took in (
        ("vpn setup", "the model suggests 2", "kb-vpn-1 = 2"),
        ("download invoices", "the click model suggests 1", "kb-invoice-1 = 1"),
    ):
        screen = term.expect("[q] quit")
        assert query in screen and says in screen and "[m] model's" in screen
        assert "was graded" not in screen  # nobody graded it
        term.send("m")
        term.expect(f"graded {took}")
    term.expect("Nothing left to review")
    term.send("q")
    assert term.wait() == 0


def test_the_terminal_marks_whole_content_words_only() -> None:
    """The terminal marks what the page marks: no stop word, never part of a word (item 10)."""
    from goldmine.goldset.review_tui import passage_text

    text = passage_text(
        "The theory goes forth: for the theory of flutter.", "the theory for flutter"
    )
    marked = [text.plain[s.start : s.end] for s in text.spans]
    assert marked == ["theory", "theory", "flutter"]


def test_a_pipe_gives_the_search_and_the_note_their_own_lines(cli, db_path: Path) -> None:
    """``s``, then the words on the next line, as a script writes them: the prompt took the
    newline after ``s`` for an empty search, and the words ran as keys (``r`` rejected the
    item, ``n`` noted the rest)."""
    build(db_path)
    assert cli("--db", str(db_path), "gold", "add-query", "vpn setup").returncode == 0
    assert cli("--db", str(db_path), "gold", "draft", "-k", "1").returncode == 0
    # s, its words, 1 adds the first hit; n, its text; q.
    result = cli("--db", str(db_path), "gold", "review", "--by", "script",
                 input="s\nreset your password\n1\nn\nasked twice\nq\n")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "no chunk matches ''" not in result.stdout
    shown = json.loads(cli("--db", str(db_path), "gold", "show", qid("vpn setup"), "--json").stdout)
    assert shown["status"] != "rejected"
    assert "candidate 1 of 2  kb-reset-1  (search)" in result.stdout  # the hit was added
    assert shown["notes"] == ["asked twice"]
