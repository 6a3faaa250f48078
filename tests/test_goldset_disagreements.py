"""``gold review --queue disagreements``: the items where the sources disagree most come first,
each source's grade named, and a person's grade settles a unit (issue 28)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_goldset_sources import _import, _items, _judge, _label

from helpers import Terminal, gold


def _store(db: Path) -> None:
    """Six items of two drafts each, graded by a judge and an imported file (and a person):

    q0: judge 2, nist 0 on c0_0 (gap 2)             q1: judge 1, nist 0 on both (gaps 1 + 1)
    q2: judge 2, nist 2 (agree)                     q3: judge 2, nist 0 but ana graded c3_0
    q4: nist said no answer, judge 2 on c4_0 (gap 2) q5: judge alone
    """
    _items(db, 6)
    _judge(db, "judge-1", {("q0", "c0_0"): 2, ("q1", "c1_0"): 1, ("q1", "c1_1"): 1,
                           ("q2", "c2_0"): 2, ("q3", "c3_0"): 2, ("q4", "c4_0"): 2,
                           ("q5", "c5_0"): 0})  # fmt: skip
    _import(db, "import:nist", {("q0", "c0_0"): 0, ("q1", "c1_0"): 0, ("q1", "c1_1"): 0,
                                ("q2", "c2_0"): 2, ("q3", "c3_0"): 0, ("q4", None): 0})  # fmt: skip
    _label(db, "ana", {("q3", "c3_0"): 0})


def _queue(cli, db: Path) -> list[dict]:
    return json.loads(gold(cli, db, "review", "--queue", "disagreements", "--json").stdout)


def test_the_queue_lists_the_largest_gap_first_with_every_source_named(cli, db_path) -> None:
    _store(db_path)
    queue = _queue(cli, db_path)
    # q0 and q4 have a gap of 2 (q4: a "no answer" grades 0 the chunk the judge graded), q1 two
    # gaps of 1; q2 agrees, q3 is settled by ana's grade, q5 has one source.
    assert [(i["query_id"], i["score"], i["total_gap"]) for i in queue] == [
        ("q0", 2, 2), ("q4", 2, 2), ("q1", 1, 2)]  # fmt: skip
    assert queue[0]["units"] == [
        {
            "chunk_id": "c0_0",
            "gap": 2,
            "grades": [
                {"source": "judge:judge-1", "grade": 2},
                {"source": "import:nist", "grade": 0},
            ],
        }
    ]
    assert [u["chunk_id"] for u in queue[2]["units"]] == ["c1_0", "c1_1"]


def test_the_json_listing_is_for_the_disagreements_queue(cli, db_path) -> None:
    _store(db_path)
    out = gold(cli, db_path, "review", "--json", ok=False)
    assert out.returncode == 2 and out.stderr.startswith("error: ")
    assert "disagreements" in out.stderr
    bad = gold(cli, db_path, "review", "--queue", "mine", ok=False)
    assert bad.returncode == 2 and "disagreements" in bad.stderr


def test_a_person_grades_the_disagreement_in_the_terminal_and_it_closes(cli, db_path) -> None:
    _store(db_path)
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "LINES": "40"}
    term = Terminal("--db", str(db_path), "gold", "review", "--by", "rita",
                    "--queue", "disagreements", env=env)  # fmt: skip
    screen = term.expect("[q] quit")
    assert "query 0" in screen and "c0_0" in screen
    assert "sources disagree: judge:judge-1 suggests 2 · import:nist 0" in screen
    term.send("0")
    screen = term.expect("[q] quit")
    assert "query 4" in screen
    assert "sources disagree: judge:judge-1 suggests 2 · import:nist 0" in screen
    term.send("q")
    assert term.wait() == 0
    # Recorded as any review grade: rita's label, in the history.
    shown = json.loads(gold(cli, db_path, "show", "q0", "--json").stdout)
    assert [(lb["chunk_id"], lb["grade"]) for lb in shown["labels"]] == [("c0_0", 0)]
    assert [(h["by"], h["action"], h["detail"]["grade"]) for h in shown["history"]] == [
        ("rita", "grade", 0)
    ]
    assert [i["query_id"] for i in _queue(cli, db_path)] == ["q4", "q1"]


def test_people_who_disagree_count_and_a_blind_item_stays_hidden(cli, db_path) -> None:
    """Two raters' disputed grades are a disagreement like any (named by rater); an item still
    being double-labelled blind is left out: its grades would unblind it."""
    from datetime import datetime

    from test_goldset_sources import _rate

    from goldmine.store import open_store, transaction

    _items(db_path, 3)
    at = datetime(2026, 12, 1, 9, 0)
    with open_store(db_path) as con, transaction(con):
        con.executemany(
            "INSERT INTO gold_assignments VALUES (?, ?, ?, 'lead')",
            [(q, r, at) for q in ("q0", "q1") for r in ("ana", "ben")],
        )
        con.execute("INSERT INTO gold_disagreements VALUES ('q0', ?, '{}')", [at])
    _rate(db_path, "ana", {("q0", "c0_0"): 2, ("q1", "c1_0"): 2})
    _rate(db_path, "ben", {("q0", "c0_0"): 0})
    _judge(db_path, "judge-1", {("q1", "c1_0"): 0, ("q2", "c2_0"): 1})
    _import(db_path, "import:nist", {("q2", "c2_0"): 0})
    queue = _queue(cli, db_path)
    assert [(i["query_id"], i["score"]) for i in queue] == [("q0", 2), ("q2", 1)]
    assert queue[0]["units"][0]["grades"] == [
        {"source": "rater:ana", "grade": 2},
        {"source": "rater:ben", "grade": 0},
    ]


def test_a_persons_grade_an_import_disputed_stays_beside_the_import(cli, db_path) -> None:
    """An import that disputes a person's label reopens the chunk (``raters.dispute``): the
    person's grade, kept in the dispute, still stands against the import's in this queue."""
    from goldmine.goldset import raters
    from goldmine.store import open_store, transaction

    _items(db_path, 2)
    _label(db_path, "ana", {("q0", "c0_0"): 2})
    _import(db_path, "import:nist", {("q0", "c0_0"): 0})
    with open_store(db_path) as con, transaction(con):
        assert raters.dispute(con, "q0", {"ana": {"c0_0": 2}, "import:nist": {"c0_0": 0}},
                              "lead", "the import disagrees", source="import:nist")  # fmt: skip
    queue = _queue(cli, db_path)
    assert [(i["query_id"], i["score"]) for i in queue] == [("q0", 2)]
    assert queue[0]["units"][0]["grades"] == [
        {"source": "import:nist", "grade": 0},
        {"source": "rater:ana", "grade": 2},
    ]
