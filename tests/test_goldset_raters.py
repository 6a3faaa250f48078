"""Several raters on a real store: the queue dealt out with overlap, blind double labels,
adjudication that blocks publish, and agreement figures equal to a reference computation."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from goldmine.goldset import raters
from goldmine.goldset.raters import agreement
from goldmine.store import open_store, transaction

from helpers import build, gold, qid, run_cli, shown

QUERIES = ("reset password", "vpn setup", "download invoice")


def _drafted(db: Path) -> None:
    build(db)
    gold(run_cli, db, "add-query", *QUERIES)
    gold(run_cli, db, "draft", "-k", "2")


@pytest.fixture
def store(store_copy) -> Path:
    """QUERIES drafted two deep: built once, each test writing to its own copy."""
    return store_copy("raters", _drafted)


def test_assign_deals_the_queue_with_overlap(cli, store: Path) -> None:
    out = json.loads(
        gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "0.34", "--json").stdout
    )
    assert out == {"items": 3, "double": 1, "raters": {"ana": 2, "ben": 2}}
    with open_store(store) as con:
        per_item = con.execute(
            "SELECT query_id, count(*) FROM gold_assignments GROUP BY 1 ORDER BY 2"
        ).fetchall()
    assert sorted(n for _, n in per_item) == [1, 1, 2]
    again = json.loads(gold(cli, store, "assign", "--raters", "chen", "--json").stdout)
    assert again["items"] == 0  # everything is dealt already
    bad = gold(cli, store, "assign", "--raters", "ana", "--overlap", "0.5", ok=False)
    assert bad.returncode == 2 and "at least two raters" in bad.stderr


def test_blind_double_labels_that_agree_become_gold(cli, store: Path) -> None:
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    # ana and ben each see all three queries; each grades reset password's two candidates 2, 0.
    ana = gold(cli, store, "review", "--by", "ana", input="20q").stdout
    assert "double-labelled" in ana
    assert shown(cli, store, "reset password")["status"] == "drafted"  # ben has not judged yet
    ben = gold(cli, store, "review", "--by", "ben", input="q").stdout
    assert "reset password" in ben and "graded:" not in ben  # blind: ana's grades are hidden
    gold(cli, store, "review", "--by", "ben", input="20q")
    item = shown(cli, store, "reset password")
    assert item["status"] == "verified" and item["verified_by"] == "ana+ben"
    assert {r["chunk_id"]: r["grade"] for r in item["labels"]} == {
        "kb-reset-1": 2,
        "kb-reset-2": 0,
    }


def test_a_disagreement_blocks_publish_until_adjudicated(cli, store: Path) -> None:
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    gold(cli, store, "review", "--by", "ana", input="20" + "2x" + "aq")
    # ben's 0s wait for "no answer" (a), as plain review's do.
    gold(cli, store, "review", "--by", "ben", input="00a" + "2x" + "aq")
    # vpn setup and download invoice agreed; reset password did not (ana 2/0, ben none).
    assert shown(cli, store, "vpn setup")["status"] == "verified"
    refused = gold(cli, store, "publish", "-m", "v1", ok=False)
    assert refused.returncode == 2
    assert "1 item waits for adjudication" in refused.stderr
    assert "goldmine gold review --adjudicate" in refused.stderr

    seen = gold(cli, store, "review", "--adjudicate", "--by", "chen", input="20q").stdout
    assert "ana: kb-reset-1=2, kb-reset-2=0" in seen and "ben: no answer" in seen
    item = shown(cli, store, "reset password")
    assert item["status"] == "verified" and item["verified_by"] == "chen"
    assert gold(cli, store, "publish", "-m", "v1").stdout.startswith("published v1: 3 queries")


def _rate_all(store: Path, grades: dict[str, dict[str, list[int]]]) -> None:
    """grades: rater -> query -> the grades of its two candidates, in rank order."""
    with open_store(store) as con, transaction(con):
        for rater, by_query in grades.items():
            for text, values in by_query.items():
                chunks = [
                    r[0]
                    for r in con.execute(
                        "SELECT chunk_id FROM gold_labels WHERE query_id = ? ORDER BY rank",
                        [qid(text)],
                    ).fetchall()
                ]
                for chunk, grade in zip(chunks, values, strict=True):
                    raters.rate(con, qid(text), chunk, grade, rater)


def test_agreement_equals_the_reference_computation(cli, store: Path) -> None:
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    ana = {"reset password": [2, 2], "vpn setup": [1, 0], "download invoice": [0, 1]}
    ben = {"reset password": [2, 1], "vpn setup": [1, 0], "download invoice": [1, 1]}
    _rate_all(store, {"ana": ana, "ben": ben})
    a = [g for q in QUERIES for g in ana[q]]
    b = [g for q in QUERIES for g in ben[q]]

    out = json.loads(gold(cli, store, "agreement", "--json").stdout)
    (pair,) = out["pairs"]
    assert pair["raters"] == ["ana", "ben"] and pair["n_items"] == 3 and pair["n_pairs"] == 6
    # Relevant or not, by hand: agreement 5/6, chance (4/6)(5/6) + (2/6)(1/6) = 22/36.
    assert pair["kappa_relevant"] == pytest.approx((30 / 36 - 22 / 36) / (1 - 22 / 36))
    assert pair["kappa_relevant"] == pytest.approx(
        cohen_kappa_score([int(x > 0) for x in a], [int(y > 0) for y in b])
    )
    assert pair["kappa_weighted"] == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert pair["confusion"]["counts"] == [[1, 1, 0], [0, 2, 0], [0, 1, 1]]
    low, high = pair["kappa_weighted_ci95"]
    assert low <= pair["kappa_weighted"] <= high
    reference = krippendorff.alpha(
        reliability_data=np.array([a, b], dtype=float), level_of_measurement="ordinal"
    )
    assert out["krippendorff_alpha"] == pytest.approx(reference)
    text = gold(cli, store, "agreement").stdout
    assert f"weighted kappa {pair['kappa_weighted']:.2f}" in text
    assert "Krippendorff's alpha (ordinal, 2 raters, 6 chunks)" in text


def test_agreement_in_python_with_nothing_double(store: Path) -> None:
    with open_store(store) as con:
        result = agreement(con)
    assert result["pairs"] == [] and result["krippendorff_alpha"] is None


def test_the_queue_filters_by_assignee(cli, store: Path) -> None:
    from goldmine.goldset.review import QueueFilter, ReviewSession

    gold(cli, store, "assign", "--raters", "ana,ben")  # in turn: ana, ben, ana
    seen = ReviewSession(store, "lead", QueueFilter(assignee="ben")).view()
    assert seen is not None and seen.item["query"] == "vpn setup"
    mine = ReviewSession(store, "ana").view()
    assert mine is not None and mine.item["query"] == "reset password"
    nobody = ReviewSession(store, "lead", QueueFilter(assignee="zoe")).view()
    assert nobody is None


def test_blind_review_closes_an_item_as_plain_review_does(cli, store: Path) -> None:
    """``x`` grades the rest 0; plain review then waits for ``a`` (no answer), and so does a
    blind item now: it ended the rater's item at once, so the ``a`` that followed marked the
    next query, unseen, "no answer". All 0s and "no answer" are one decision, not a dispute."""
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    gold(cli, store, "review", "--by", "ana", input="xaq")
    with open_store(store) as con:
        ana = {q: raters.ratings_of(con, qid(q), "ana") for q in QUERIES}
    assert ana["reset password"] == {None: 0}  # no answer
    assert ana["vpn setup"] == {} and ana["download invoice"] == {}
    gold(cli, store, "review", "--by", "ben", input="aq")
    item = shown(cli, store, "reset password")
    assert item["status"] == "verified" and item["no_answer"]
    with open_store(store) as con:
        assert not con.execute("SELECT count(*) FROM gold_disagreements").fetchall()[0][0]


def test_all_zeros_and_no_answer_from_two_raters_agree(cli, store: Path) -> None:
    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    with open_store(store) as con, transaction(con):
        for chunk in raters._candidates(con, qid("vpn setup")):
            raters.rate(con, qid("vpn setup"), chunk, 0, "ana")
        raters.rate(con, qid("vpn setup"), None, 0, "ana")
        raters.rate(con, qid("vpn setup"), None, 0, "ben")
    item = shown(cli, store, "vpn setup")
    assert item["status"] == "verified" and item["no_answer"]
