"""A query goes gold only when a person has decided it, and two writers never overwrite each other.

Verified means every drafted candidate was graded (or the rest marked not relevant in one key) or
the person said "no answer"; review resumes at the first undecided candidate; publish refuses
half-read items unless asked; a write made on a stale read of an item is refused with who changed
it and when; skips persist and come back last; the terminal screen redraws in place.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyte
import pytest

from goldmine.goldset import items as gi
from goldmine.goldset.review import ReviewSession
from goldmine.store import open_store

from helpers import Terminal, build, gold, qid, run_cli, shown


def _drafted(db: Path) -> None:
    build(db)
    gold(run_cli, db, "add-query", "reset password", "vpn setup")
    gold(run_cli, db, "draft", "-k", "3")


@pytest.fixture
def store(store_copy) -> Path:
    """Two queries drafted three deep: built once, each test writing to its own copy."""
    return store_copy("decisions", _drafted)


# --- 1. verified only when every candidate is decided ----------------------------------------


def test_a_first_positive_grade_leaves_the_query_in_review(cli, store: Path) -> None:
    gold(cli, store, "review", "--by", "ana", input="2q")
    item = shown(cli, store, "reset password")
    assert item["status"] == "drafted"
    assert [d["chunk_id"] for d in item["labels"]] == ["kb-reset-1"]
    assert len(item["drafts"]) == 1

    # The next session comes back to the same query, at its first undecided candidate.
    out = gold(cli, store, "review", "--by", "ana", input="q").stdout
    assert "reset password" in out and "candidate 2 of 2" in out


def test_grading_every_candidate_or_the_rest_in_one_key_verifies(cli, store: Path) -> None:
    out = gold(cli, store, "review", "--by", "ana", input="20" + "2xq").stdout
    assert "marked 1 remaining candidate not relevant" in out
    reset, vpn = shown(cli, store, "reset password"), shown(cli, store, "vpn setup")
    assert reset["status"] == "verified" and reset["drafts"] == []
    assert {r["chunk_id"]: r["grade"] for r in reset["labels"]}["kb-reset-1"] == 2
    assert vpn["status"] == "verified" and vpn["drafts"] == []
    assert sorted(r["grade"] for r in vpn["labels"]) == [0, 2]


def test_no_answer_decides_the_remaining_candidates(cli, store: Path) -> None:
    gold(cli, store, "review", "--by", "ana", input="0aq")
    item = shown(cli, store, "reset password")
    assert item["status"] == "verified" and item["no_answer"] is True
    assert item["drafts"] == [] and {r["grade"] for r in item["labels"]} == {0}


def test_regrading_the_only_answer_to_zero_takes_the_query_out_of_gold(cli, store: Path) -> None:
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2", "--rest-not-relevant")
    assert shown(cli, store, "vpn setup")["status"] == "verified"
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=0")
    assert shown(cli, store, "vpn setup")["status"] == "drafted"


def test_label_says_what_is_left_and_takes_the_rest_in_one_flag(cli, store: Path) -> None:
    partial = gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2")
    assert partial.stdout.split("\t")[1].strip() == "drafted"
    assert (
        "1 candidate not graded yet" in partial.stderr and "--rest-not-relevant" in partial.stderr
    )
    done = gold(cli, store, "label", qid("reset password"), "--rest-not-relevant")
    assert done.stdout.split("\t")[1].strip() == "verified"


def test_publish_refuses_half_read_items_unless_allowed(cli, store: Path) -> None:
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2", "--rest-not-relevant")
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2")

    refused = gold(cli, store, "publish", "-m", "v1", ok=False)
    assert refused.returncode == 2
    assert "1 item has candidates not graded yet" in refused.stderr
    assert qid("reset password") in refused.stderr and "--allow-partial" in refused.stderr
    with open_store(store) as con:
        assert con.execute("SELECT count(*) FROM gold_versions").fetchall() == [(0,)]

    skipped = gold(cli, store, "publish", "-m", "v1", "--skip-partial").stdout
    assert skipped.startswith("published v1: 1 query ")
    allowed = gold(cli, store, "publish", "-m", "v2", "--allow-partial").stdout
    assert allowed.startswith("published v2: 2 queries")
    with open_store(store) as con:
        line = con.execute(
            "SELECT item FROM gold_version_items WHERE version = 2 AND query_id = ?",
            [qid("reset password")],
        ).fetchall()[0][0]
    assert json.loads(line)["relevant"] == {"kb-reset-1": 2}  # the drafts are never gold


def test_publish_lists_items_a_past_review_verified_half_read(cli, store: Path) -> None:
    # A store from before this rule: the item went verified at its first grade, drafts still there.
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2")
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'verified' WHERE query_id = ?",
                    [qid("reset password")])  # fmt: skip
    refused = gold(cli, store, "publish", "-m", "v1", ok=False)
    assert qid("reset password") in refused.stderr and "1 of 2 graded" in refused.stderr


# --- 2. two writers on one item ----------------------------------------------------------------


def test_a_write_on_a_stale_read_is_refused_with_who_and_when(cli, store: Path) -> None:
    session = ReviewSession(store, "ana")
    view = session.view()
    assert view is not None and view.item["query"] == "reset password"

    env_at = {"GOLDMINE_NOW": "2026-12-01T10:00:00"}
    other = cli("--db", str(store), "gold", "label", qid("reset password"), "--no-answer",
                "--by", "ben", env=env_at)  # fmt: skip
    assert other.returncode == 0, other.stderr

    session.grade(qid("reset password"), view.current["chunk_id"], 2)
    assert session.stale
    assert session.message == (
        "this query changed since you opened it (by ben at 2026-12-01 10:00:00): r to reload"
    )
    item = shown(cli, store, "reset password")
    assert item["no_answer"] is True and {r["grade"] for r in item["labels"]} == {0}

    # After a reload the same write goes through, on what the person now sees.
    session.reload()
    assert not session.stale
    view = session.view()
    assert view is not None and view.item["query"] == "vpn setup"  # ben decided it


def test_the_api_checks_the_version_it_was_given(store: Path) -> None:
    with open_store(store) as con:
        version = gi.item_version(con, qid("vpn setup"))
        gi.label(con, qid("vpn setup"), {"kb-vpn-1": 2}, by="ana", expected_version=version)
        with pytest.raises(gi.StaleItemError) as stale:
            gi.label(con, qid("vpn setup"), {"kb-vpn-1": 1}, by="ben", expected_version=version)
    assert stale.value.who == "ana" and stale.value.version > version
    assert stale.value.exit_code == 5


def test_label_with_a_stale_version_exits_5(cli, store: Path) -> None:
    before = shown(cli, store, "vpn setup")["version"]
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2", "--by", "ana")
    late = gold(cli, store, "label", qid("vpn setup"), "--no-answer", "--by", "ben",
                "--if-version", str(before), ok=False)  # fmt: skip
    assert late.returncode == 5
    assert "this query changed since you opened it (by ana at" in late.stderr


def test_the_terminal_shows_a_conflict_and_r_reloads(cli, store: Path) -> None:
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "LINES": "40"}
    term = Terminal("--db", str(store), "gold", "review", "--by", "ana", env=env)
    term.expect("candidate 1 of 2")
    term.expect("[q] quit")
    other = cli("--db", str(store), "gold", "label", qid("reset password"), "--chunk",
                "kb-reset-1=1", "--by", "ben", subprocess=True)  # fmt: skip
    assert other.returncode == 0, other.stderr
    term.send("2")
    screen = term.expect("r to reload")
    assert "this query changed since you opened it (by ben at" in screen
    term.send("0")  # any key but r is held back while the item is stale
    term.expect("r to reload")
    term.send("r")
    term.expect("reloaded")
    assert "graded: kb-reset-1=1" in term.expect("[q] quit")
    term.send("q")
    assert term.wait() == 0
    labels = shown(cli, store, "reset password")["labels"]
    assert [(r["chunk_id"], r["grade"], r["who"]) for r in labels] == [("kb-reset-1", 1, "ben")]


# --- 9. skips persist, the screen redraws in place ---------------------------------------------


def test_a_skipped_query_comes_back_last_in_the_next_session(cli, store: Path) -> None:
    gold(cli, store, "add-query", "dark mode")
    gold(cli, store, "draft", "-k", "1")
    first = gold(cli, store, "review", "--by", "ana", input="kq").stdout
    assert "skipped" in first
    second = gold(cli, store, "review", "--by", "ana", input="q").stdout
    assert "vpn setup" in second and "reset password" not in second
    # Every other query decided, the skipped one comes back rather than being lost.
    third = gold(cli, store, "review", "--by", "ana", input="axax" + "q").stdout
    assert third.index("vpn setup") < third.rindex("reset password")
    # Another reviewer's queue is their own.
    assert "reset password" in gold(cli, store, "review", "--by", "ben", input="q").stdout


def test_undo_of_a_skip_puts_the_query_back_first(cli, store: Path) -> None:
    out = gold(cli, store, "review", "--by", "ana", input="kuq").stdout
    assert "undone: skip" in out
    assert (
        "reset password"
        in gold(cli, store, "review", "--by", "ana", input="q").stdout.split("candidate")[0]
    )


def test_undo_steps_back_through_several_actions_on_one_query(cli, store: Path) -> None:
    """The first undo wrote a history row, so the next found its own undo "changed since you
    opened it" and every later step was refused, `r` or not."""
    session = ReviewSession(store, "ana")
    view = session.view()
    assert view is not None
    reset = qid("reset password")
    first, second = (c["chunk_id"] for c in view.candidates[:2])
    session.grade(reset, first, 2)
    session.grade(reset, second, 0)
    session.undo()
    assert session.message == f"undone: grade {second}=0"
    session.undo()
    assert session.message == f"undone: grade {first}=2", session.message
    item = shown(cli, store, "reset password")
    assert item["labels"] == [] and item["status"] == "drafted"


def test_undoing_a_blind_rating_keeps_the_other_raters(cli, store: Path) -> None:
    """On a double-labelled item, undoing ana's rating put the whole item back as it was before
    it: ben's ratings, made since, were deleted (his history still said he rated)."""
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1.0")
    reset = qid("reset password")
    ana, ben = ReviewSession(store, "ana"), ReviewSession(store, "ben")
    view = ana.view()
    assert view is not None and view.item["query_id"] == reset
    first, second = (c["chunk_id"] for c in view.candidates[:2])
    ana.grade(reset, first, 2)
    ben.view()
    ben.grade(reset, first, 0)
    ben.grade(reset, second, 1)
    ana.undo()
    assert ana.message == f"undone: grade {first}=2"
    with open_store(store) as con:
        rows = con.execute(
            "SELECT rater, chunk_id, grade FROM gold_ratings WHERE query_id = ? ORDER BY ALL",
            [reset],
        ).fetchall()
    assert rows == sorted([("ben", first, 0), ("ben", second, 1)])


def test_the_review_screen_redraws_in_place(cli, store: Path) -> None:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    term = Terminal("--db", str(store), "gold", "review", "--by", "ana", env=env)
    term.expect("candidate 1 of 2")
    term.expect("[q] quit")
    for key in "20":  # the first query's two candidates: verified, the next one shows
        term.send(key)
        term.expect("[q] quit")
    screen = pyte.Screen(100, 40)
    stream = pyte.ByteStream(screen)
    stream.feed(term.raw)
    text = "\n".join(screen.display)
    # One copy of the current view on the screen, not a scroll of every step.
    assert text.count("[q] quit") == 1
    assert "vpn setup" in text and "candidate 1 of 2" in text and "reset password" not in text
    term.send("q")
    assert term.wait() == 0
