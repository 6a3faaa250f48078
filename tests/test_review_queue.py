"""Which items each review queue holds, and in what order, pinned on one store per queue.

The queue is the single-reviewer one when nobody was assigned anything, the multi-rater one once
someone was (blind double items, assignments, adjudication), and the disagreements queue. Each
narrows alike (cluster, tag, status, assignee, the item on screen) and puts skipped items last.
A queue's whole order is read the way a reviewer walks it: look, skip, until an item comes back.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest

from goldmine.goldset.review import QueueFilter, ReviewSession
from goldmine.store import open_store, transaction

from helpers import build

AT = datetime(2026, 12, 1, 9, 0)

# query_id: (status, cluster, tags, drafts left, labels); position is the id's number.
ITEMS = {
    "q0": ("drafted", 1, ["a"], 2, 0),
    "q1": ("candidate", 2, ["b"], 0, 0),
    "q2": ("rejected", 1, ["a"], 2, 0),
    "q3": ("verified", 1, ["a"], 0, 2),  # decided: out of every review queue
    "q4": ("verified", 2, ["b"], 1, 1),  # verified half-read by an older goldmine: back in
    "q5": ("drafted", 1, ["a"], 2, 0),  # disputed: adjudication's
    "q6": ("verified", 2, ["a"], 1, 1),  # verified, disputed, a draft left
    "q7": ("drafted", 2, ["b"], 2, 0),  # ana skipped it
    "q8": ("drafted", 2, ["b"], 2, 0),  # ben skipped it
    "q9": ("drafted", 1, ["a", "b"], 2, 0),
    "q10": ("candidate", 1, [], 0, 0),
    "q11": ("drafted", 2, [], 1, 1),  # double, agreed on one chunk, a draft left
}


def _seed(db: Path) -> None:
    build(db)
    with open_store(db) as con, transaction(con):
        for qid, (status, cluster, tags, drafts, labels) in ITEMS.items():
            con.execute(
                "INSERT INTO gold_items (query_id, position, query, norm_query, cluster_id,"
                " status, tags, origin, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'test', ?, ?)",
                [qid, int(qid[1:]), f"query {qid}", f"query {qid}", cluster, status, tags, AT, AT],
            )
            for j in range(labels):
                source = "agreed" if qid == "q11" else "review"
                con.execute(
                    "INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, who, ts)"
                    " VALUES (?, ?, 'label', 2, ?, 'ana', ?)",
                    [qid, f"c{qid[1:]}_{j}", source, AT],
                )
            for j in range(labels, labels + drafts):
                con.execute(
                    "INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, ts)"
                    " VALUES (?, ?, 'draft', ?, 'bm25', ?)",
                    [qid, f"c{qid[1:]}_{j}", j + 1, AT],
                )
        con.executemany(
            "INSERT INTO gold_disagreements VALUES (?, ?, '{}')", [("q5", AT), ("q6", AT)]
        )
        con.executemany(
            "INSERT INTO gold_skips VALUES (?, ?, ?, 'skip')",
            [("q7", "ana", AT), ("q8", "ben", AT)],
        )


def _assign(db: Path) -> None:
    """Double items q0, q1, q5, q9, q11 (ana and ben); q8 ben's alone, q10 ana's alone. Ana has
    judged q9 (every candidate) and said "no answer" on q1; ben has judged half of q0."""
    pairs = [(q, r) for q in ("q0", "q1", "q5", "q9", "q11") for r in ("ana", "ben")]
    pairs += [("q8", "ben"), ("q10", "ana")]
    with open_store(db) as con, transaction(con):
        con.executemany("INSERT INTO gold_assignments VALUES (?, ?, ?, 'lead')",
                        [(q, r, AT) for q, r in pairs])  # fmt: skip
        con.executemany(
            "INSERT INTO gold_ratings VALUES (?, ?, ?, ?, false, ?)",
            [("q9", "c9_0", "ana", 2, AT), ("q9", "c9_1", "ana", 0, AT),
             ("q0", "c0_0", "ben", 1, AT)],
        )  # fmt: skip
        con.execute("INSERT INTO gold_ratings VALUES ('q1', NULL, 'ana', NULL, true, ?)", [AT])


def walk(db: Path, tmp: Path, by: str, queue: QueueFilter | None = None, focus=None) -> list:
    """The queue's items in order, on a copy of the store: view, skip, until one comes back."""
    copy = tmp / f"walk-{len(list(tmp.glob('walk-*')))}.duckdb"
    shutil.copy(db, copy)
    session = ReviewSession(copy, by, queue)
    session.focus = focus
    seen: list[str] = []
    while True:
        with session.request():  # one store opening per step, as the page does
            view = session.view()
            if view is None or view.item["query_id"] in seen:
                return seen
            seen.append(view.item["query_id"])
            session.skip(view.item["query_id"])


# Built once per module: every walk reads a copy.
@pytest.fixture(scope="module")
def one_rater(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("queue") / "one.duckdb"
    _seed(db)
    return db


@pytest.fixture(scope="module")
def several(one_rater: Path) -> Path:
    db = one_rater.with_name("several.duckdb")
    shutil.copy(one_rater, db)
    _assign(db)
    return db


@pytest.mark.parametrize(
    ("by", "queue", "focus", "expected"),
    [
        # Open items by position, a verified one with a draft left (even disputed); skips last.
        ("ana", None, None, ["q0", "q1", "q4", "q6", "q8", "q9", "q10", "q11", "q7"]),
        ("ben", None, None, ["q0", "q1", "q4", "q6", "q7", "q9", "q10", "q11", "q8"]),
        ("ana", QueueFilter(cluster=1), None, ["q0", "q9", "q10"]),
        ("ana", QueueFilter(tag="b"), None, ["q1", "q4", "q8", "q9", "q7"]),
        ("ana", QueueFilter(status="candidate"), None, ["q1", "q10"]),
        ("ana", QueueFilter(status="verified"), None, ["q4", "q6"]),
        ("ana", QueueFilter(cluster=2, tag="b", status="drafted"), None, ["q8", "q7"]),
        ("ana", QueueFilter(assignee="ana"), None, []),  # nobody was assigned anything
        # The item on screen stays first while it is in the queue; else the queue's first.
        ("ana", None, "q9", ["q9", "q0", "q1", "q4", "q6", "q8", "q10", "q11", "q7"]),
        ("ana", None, "q2", ["q0", "q1", "q4", "q6", "q8", "q9", "q10", "q11", "q7"]),
        # Adjudication: the disputed items not verified, whoever asks.
        ("ana", QueueFilter(adjudicate=True), None, ["q5"]),
        ("lead", QueueFilter(adjudicate=True, cluster=2), None, []),
    ],
    ids=lambda v: repr(v) if isinstance(v, QueueFilter) else None,
)
def test_the_single_reviewer_queue(one_rater, tmp_path, by, queue, focus, expected) -> None:
    assert walk(one_rater, tmp_path, by, queue, focus) == expected


@pytest.mark.parametrize(
    ("by", "queue", "focus", "expected"),
    [
        # Ana: her own items only; q9 and q1 judged already; q11 agreed, its draft left.
        ("ana", None, None, ["q0", "q10", "q11"]),
        # Ben: q0 half judged stays; q1 and q9 wait for him; his skip of q8 last.
        ("ben", None, None, ["q0", "q1", "q9", "q11", "q8"]),
        # Nobody's: every open item not waiting for its double raters, nor disputed.
        ("lead", None, None, ["q4", "q7", "q8", "q10", "q11"]),
        ("lead", QueueFilter(assignee="ben"), None, ["q8", "q11"]),
        ("ana", QueueFilter(assignee="ben"), None, ["q0", "q11"]),
        ("lead", QueueFilter(cluster=1), None, ["q10"]),
        ("lead", QueueFilter(tag="b"), None, ["q4", "q7", "q8"]),
        ("lead", QueueFilter(status="candidate"), None, ["q10"]),
        ("ben", None, "q9", ["q9", "q0", "q1", "q11", "q8"]),
        ("ben", None, "q10", ["q0", "q1", "q9", "q11", "q8"]),
        ("lead", QueueFilter(adjudicate=True), None, ["q5"]),
        ("lead", QueueFilter(adjudicate=True, tag="b"), None, []),
        ("ana", QueueFilter(adjudicate=True, assignee="ana"), None, ["q5"]),
    ],
    ids=lambda v: repr(v) if isinstance(v, QueueFilter) else None,
)
def test_the_multi_rater_queue(several, tmp_path, by, queue, focus, expected) -> None:
    assert walk(several, tmp_path, by, queue, focus) == expected


@pytest.fixture(scope="module")
def disagreeing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test_goldset_disagreements' six items (q0, q4 gap 2; q1 gaps 1 + 1), narrowed apart."""
    from test_goldset_disagreements import _store

    db = tmp_path_factory.mktemp("queue") / "dis.duckdb"
    _store(db)
    with open_store(db) as con, transaction(con):
        con.execute("UPDATE gold_items SET cluster_id = 7, tags = ['t'] WHERE query_id = 'q4'")
        con.execute("UPDATE gold_items SET status = 'candidate' WHERE query_id = 'q1'")
        con.execute("INSERT INTO gold_skips VALUES ('q0', 'ana', ?, 'skip')", [AT])
        con.execute("INSERT INTO gold_assignments VALUES ('q1', 'ben', ?, 'lead')", [AT])
    return db


@pytest.mark.parametrize(
    ("by", "queue", "focus", "expected"),
    [
        ("ana", QueueFilter(disagreements=True), None, ["q4", "q1", "q0"]),
        ("ben", QueueFilter(disagreements=True), None, ["q0", "q4", "q1"]),
        ("ben", QueueFilter(disagreements=True, cluster=7), None, ["q4"]),
        ("ben", QueueFilter(disagreements=True, tag="t"), None, ["q4"]),
        ("ben", QueueFilter(disagreements=True, status="candidate"), None, ["q1"]),
        ("ana", QueueFilter(disagreements=True, assignee="ben"), None, ["q1"]),
        ("ben", QueueFilter(disagreements=True), "q1", ["q1", "q0", "q4"]),
        ("ben", QueueFilter(disagreements=True), "q2", ["q0", "q4", "q1"]),
    ],
    ids=lambda v: repr(v) if isinstance(v, QueueFilter) else None,
)
def test_the_disagreements_queue(disagreeing, tmp_path, by, queue, focus, expected) -> None:
    assert walk(disagreeing, tmp_path, by, queue, focus) == expected
