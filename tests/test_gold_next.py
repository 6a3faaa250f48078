"""``gold next``: which unjudged pairs settle a comparison (weights and bounds worked by hand),
queued for review in that order; and which uncovered clusters to label next."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.goldset.items import add_item, label
from goldmine.goldset.next import (
    cluster_information,
    compare_pairs,
    discount,
    queue_pairs,
)
from goldmine.store import open_store, transaction

from helpers import build

D2 = 1 / math.log2(3)  # 0.63093, the discount at rank 2; rank 1 is 1, rank 3 is 0.5


def test_discount_by_hand() -> None:
    assert discount(1, 3) == 1.0
    assert discount(2, 3) == pytest.approx(0.630930, abs=1e-6)
    assert discount(3, 3) == 0.5
    assert discount(4, 3) == 0.0 and discount(None, 3) == 0.0


RUN_A = {"q1": ["c1", "c2", "c3"], "q2": ["d1", "d2", "d3"]}
RUN_B = {"q1": ["c4", "c1", "c2"], "q2": ["d1", "d2", "d9"]}
JUDGED = {"q1": {"c1": 2}, "q2": {}}


def test_pairs_weigh_by_the_difference_of_their_discounts() -> None:
    # q1: c4 only in B at rank 1: |1 - 0| = 1; c3 only in A at rank 3: 0.5; c2 at 2 in A and 3
    # in B: 0.63093 - 0.5 = 0.13093; c1 is judged. q2: d1 and d2 at the same ranks weigh 0 and
    # are left out; d3 (A rank 3) and d9 (B rank 3) weigh 0.5 each.
    plan = compare_pairs(RUN_A, RUN_B, JUDGED, k=3, budget=10)
    got = [(p.query_id, p.chunk_id, round(p.weight, 5)) for p in plan.pairs]
    assert got == [
        ("q1", "c4", 1.0),
        ("q1", "c3", 0.5),
        ("q2", "d3", 0.5),
        ("q2", "d9", 0.5),
        ("q1", "c2", round(D2 - 0.5, 5)),
    ]
    assert (plan.pairs[0].rank_a, plan.pairs[0].rank_b) == (None, 1)
    assert plan.n_unjudged == 5 and plan.n_queries == 2


def test_bounds_of_the_mean_dcg_delta_by_hand() -> None:
    # q1 known: c1 graded 2 moved from rank 1 (A) to 2 (B): 2 * (0.63093 - 1) = -0.73814.
    # Unjudged at grade up to 2: c2 -0.13093, c3 -0.5, c4 +1 -> q1 in [-0.73814 - 1.26186,
    # -0.73814 + 2] = [-2.0, 1.26186]. q2: d3 -0.5, d9 +0.5 -> [-1, 1]. Mean: [-1.5, 1.13093].
    plan = compare_pairs(RUN_A, RUN_B, JUDGED, k=3, budget=2)
    assert plan.known == pytest.approx(2 * (D2 - 1) / 2)
    assert plan.bounds == pytest.approx((-1.5, (2 * (D2 - 1) + 2 + 1) / 2))
    # judging the two heaviest (c4, c3) leaves q1's c2 and q2's two: width 2*(0.13093+1)/2
    assert plan.width_after == pytest.approx(2 * (D2 - 0.5 + 1.0) / 2)
    assert not plan.settled
    assert len(plan.pairs) == 2


def test_a_settled_comparison_says_so() -> None:
    # B finds the judged answer at rank 1, A at rank 3: known 2 * (1 - 0.5) = 1. The one unjudged
    # pair, x (A rank 1, B rank 2), can take at most 2 * (1 - 0.63093) = 0.73814 off: settled.
    plan = compare_pairs(
        {"q": ["x", "y", "a"]}, {"q": ["a", "x", "z"]}, {"q": {"a": 2, "y": 0, "z": 0}}, k=3
    )
    assert plan.settled and plan.bounds[0] > 0


def test_budget_must_be_positive() -> None:
    with pytest.raises(InputError):
        compare_pairs(RUN_A, RUN_B, JUDGED, k=3, budget=0)


# --- in the store: queued for review ------------------------------------------------------------


@pytest.fixture
def store(db_path: Path) -> Path:
    build(db_path)
    with open_store(db_path) as con, transaction(con):
        for qid, text in (("q1", "reset password"), ("q2", "vpn setup"), ("q3", "dark mode")):
            add_item(con, text, origin="test", by="t", query_id=qid)
        label(con, "q1", {"kb-reset-1": 2}, by="ana")
        label(con, "q2", {"kb-vpn-1": 1}, by="ana")
    return db_path


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a.trec"
    b = tmp_path / "b.trec"
    a.write_text(
        "q1 Q0 kb-reset-1 1 3 a\nq1 Q0 kb-reset-2 2 2 a\nq2 Q0 kb-vpn-1 1 3 a\n"
        "q2 Q0 kb-sso-1 2 2 a\n"
    )
    b.write_text(
        "q1 Q0 kb-sso-1 1 3 b\nq1 Q0 kb-reset-1 2 2 b\nq2 Q0 kb-vpn-1 1 3 b\n"
        "q2 Q0 kb-reset-2 2 2 b\n"
    )
    return a, b


def test_queue_writes_drafts_in_order_and_reopens_verified_items(store: Path, tmp_path) -> None:
    from goldmine.goldset.next import load_judged, read_ranked
    from goldmine.readers import read_run

    a, b = (read_run(path) for path in _runs(tmp_path))
    with open_store(store) as con:
        judged, texts = load_judged(con)
        plan = compare_pairs(read_ranked(a, texts), read_ranked(b, texts), judged, k=3, budget=3)
        assert [(p.query_id, p.chunk_id) for p in plan.pairs] == [
            ("q1", "kb-sso-1"),  # B rank 1, A none: 1
            ("q1", "kb-reset-2"),  # A rank 2 only: 0.63093
            ("q2", "kb-reset-2"),  # B rank 2 only: 0.63093 (ties: query, then chunk)
        ]
        with transaction(con):
            queued = queue_pairs(con, plan, by="ana", label="a.trec vs b.trec")
        assert queued == {"pairs": 3, "items": 2, "unchanged": False}
        rows = con.execute(
            "SELECT query_id, chunk_id, source, rank FROM gold_labels WHERE kind = 'draft' "
            "ORDER BY rank"
        ).fetchall()
        assert rows == [
            ("q1", "kb-sso-1", "next", 1),
            ("q1", "kb-reset-2", "next", 2),
            ("q2", "kb-reset-2", "next", 3),
        ]
        status = dict(con.execute("SELECT query_id, status FROM gold_items").fetchall())
        assert status == {"q1": "drafted", "q2": "drafted", "q3": "candidate"}
        order = [
            r[0]
            for r in con.execute("SELECT query_id FROM gold_items ORDER BY position").fetchall()
        ]
        assert order[:2] == ["q1", "q2"]
        actions = con.execute(
            "SELECT action FROM gold_history WHERE query_id = 'q1' ORDER BY seq"
        ).fetchall()
        assert ("next",) in actions


def test_gold_next_command(cli, store: Path, tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    base = ("--db", str(store), "gold", "next", "--for-compare", str(a), str(b), "-k", "3")
    dry = cli(*base, "--budget", "2", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    data = json.loads(dry.stdout)
    assert [p["chunk_id"] for p in data["pairs"]] == ["kb-sso-1", "kb-reset-2"]
    assert data["queued"] is None and data["settled"] is False
    with open_store(store) as con:
        assert con.execute("SELECT count(*) FROM gold_labels WHERE kind='draft'").fetchall() == [
            (0,)
        ]
    done = cli(*base, "--budget", "2", "--by", "ana")
    assert done.returncode == 0, done.stderr
    assert "queued 2 pairs on 1 items for review" in done.stdout
    assert "kb-sso-1" in done.stdout


def test_a_rerun_on_the_same_runs_writes_nothing(cli, store: Path, tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    base = ("--db", str(store), "gold", "next", "--for-compare", str(a), str(b), "-k", "3")
    assert cli(*base, "--by", "ana").returncode == 0
    history = "SELECT count(*), max(seq) FROM gold_history"
    drafts = "SELECT * FROM gold_labels WHERE kind = 'draft' ORDER BY ALL"
    with open_store(store) as con:
        before = (con.execute(history).fetchall(), con.execute(drafts).fetchall())
    again = cli(*base, "--by", "ana", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["queued"]["unchanged"] is True
    with open_store(store) as con:
        assert (con.execute(history).fetchall(), con.execute(drafts).fetchall()) == before
    text = cli(*base, "--by", "ana")
    assert "already queued for review as proposed: nothing written" in text.stdout
    # A pair labelled since changes the plan: it is written again, and the versions move.
    with open_store(store) as con, transaction(con):
        label(con, "q1", {"kb-sso-1": 0}, by="ana")
    moved = cli(*base, "--by", "ana", "--json")
    assert json.loads(moved.stdout)["queued"]["unchanged"] is False
    with open_store(store) as con:
        assert con.execute(history).fetchall()[0][1] > before[0][0][1]


def test_uncovered_clusters_by_expected_information(store: Path) -> None:
    # A cluster is covered when a verified or published gold item's query is one of its
    # queries (triage's one definition): q1 'reset password' covers cluster 1, q2 'vpn setup'
    # cluster 2; q3 'dark mode' is a candidate, so cluster 9 is only "in review".
    with open_store(store) as con:
        # novelty: cluster 4 lies on cluster 1's direction (cosine 1: nothing new), cluster 5
        # is orthogonal to every covered one (novelty 1)
        con.execute(
            "UPDATE triage_clusters SET centroid = [1.0, 0.0]::FLOAT[] WHERE cluster_id IN (1, 4)"
        )
        con.execute(
            "UPDATE triage_clusters SET centroid = [0.0, 1.0]::FLOAT[] WHERE cluster_id = 5"
        )
        rows = cluster_information(con, top=20)
    ids = [r["cluster_id"] for r in rows]
    assert 1 not in ids and 2 not in ids
    by_id = {r["cluster_id"]: r for r in rows}
    assert by_id[9]["coverage"] == "in review" and by_id[5]["coverage"] == "no"
    # cluster 5: volume 25, failure 0.40, novelty 1 -> 10.0; cluster 4: 35 x 0.70 x 0 = 0
    assert by_id[5]["novelty"] == pytest.approx(1.0)
    assert by_id[5]["information"] == pytest.approx(25 * 0.40)
    assert by_id[4]["novelty"] == pytest.approx(0.0, abs=1e-6)
    assert by_id[4]["information"] == pytest.approx(0.0, abs=1e-6)
    # cluster 3 (no centroid): novelty unknown, taken as 1: 130 x (failed 8 / 130)
    assert by_id[3]["novelty"] == 1.0
    assert by_id[3]["information"] == pytest.approx(130 * by_id[3]["failure_rate"])
    infos = [r["information"] for r in rows]
    assert infos == sorted(infos, reverse=True)


def test_gold_next_without_triage_names_for_compare_and_the_stored_runs(cli, tmp_path) -> None:
    """Issue 27 item 16: `gold next --budget 20` on a store with two stored runs and no triage
    said only "triage run first"; it names --for-compare and the runs it could use."""
    from helpers import write_jsonl

    db = tmp_path / "store.duckdb"
    gold = write_jsonl(
        tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "a", "relevant": ["d1"]}]
    )
    for name in ("bm25", "hybrid"):
        run = tmp_path / f"{name}.trec"
        run.write_text("q1 Q0 d1 1 1.0 x\n")
        done = cli("eval", "run", "--gold", str(gold), "--run", str(run), "--label", name,
                   "--db", str(db))  # fmt: skip
        assert done.returncode == 0, done.stderr
    out = cli("gold", "next", "--budget", "20", "--db", str(db))
    assert out.returncode == 2
    assert "--for-compare" in out.stderr and "hybrid, bm25" in out.stderr
    assert "--save-run" in out.stderr
