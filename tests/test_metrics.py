"""Hand-computed cases for every metric, and the name registry."""

from __future__ import annotations

import math

import pytest

from goldmine.errors import InputError
from goldmine.metrics import (
    Metric,
    aggregate,
    average_precision,
    frac_recall,
    mrr,
    ndcg,
    parse_metric,
    parse_metrics,
    precision,
    r_precision,
    recall,
)

# Five ranked docs; d2 (grade 2) at rank 2, d4 (grade 1) at rank 4, d9 (grade 1) never retrieved,
# d3 judged not relevant (grade 0). R = 3 at rel_level 1, R = 1 at rel_level 2.
RANKED = ["d1", "d2", "d3", "d4", "d5"]
JUDGED = {"d2": 2, "d4": 1, "d9": 1, "d3": 0}


def test_recall_is_any_relevant_in_top_k() -> None:
    assert recall(RANKED, JUDGED, 1) == 0.0
    assert recall(RANKED, JUDGED, 2) == 1.0
    assert recall([], JUDGED, 5) == 0.0


def test_frac_recall_is_share_of_relevant_found() -> None:
    assert frac_recall(RANKED, JUDGED, 2) == pytest.approx(1 / 3)
    assert frac_recall(RANKED, JUDGED, 5) == pytest.approx(2 / 3)
    assert frac_recall(RANKED, JUDGED, 5, rel_level=2) == 1.0


def test_mrr_is_reciprocal_rank_of_first_relevant() -> None:
    assert mrr(RANKED, JUDGED) == 0.5
    assert mrr(RANKED, JUDGED, 1) == 0.0
    assert mrr(["x", "y", "d4"], JUDGED) == pytest.approx(1 / 3)


def test_precision_divides_by_k_even_when_fewer_returned() -> None:
    assert precision(RANKED, JUDGED, 5) == pytest.approx(2 / 5)
    assert precision(RANKED, JUDGED, 10) == pytest.approx(2 / 10)


def test_average_precision_over_all_relevant() -> None:
    # (1/2 + 2/4) / 3
    assert average_precision(RANKED, JUDGED) == pytest.approx(1 / 3)
    # cut at 2: (1/2) / 3 — still divided by every relevant doc, as trec_eval's map_cut
    assert average_precision(RANKED, JUDGED, 2) == pytest.approx(1 / 6)
    assert average_precision(RANKED, JUDGED, rel_level=2) == pytest.approx(1 / 2)


def test_r_precision() -> None:
    assert r_precision(RANKED, JUDGED) == pytest.approx(1 / 3)  # top 3 holds d2 only
    assert r_precision(RANKED, JUDGED, rel_level=2) == 0.0  # top 1 is d1


def test_ndcg_graded_gain_log2_discount() -> None:
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(RANKED, JUDGED, 5) == pytest.approx(dcg / ideal)
    assert ndcg(RANKED, JUDGED, 5) == pytest.approx(0.540586, abs=1e-6)
    assert ndcg(RANKED, JUDGED, 2) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg(RANKED, JUDGED, 1) == 0.0
    # rel_level does not touch nDCG (as in trec_eval)
    assert ndcg(RANKED, JUDGED, 5, rel_level=2) == ndcg(RANKED, JUDGED, 5)


def test_ndcg_ignores_negative_grades_and_perfect_is_one() -> None:
    assert ndcg(["a", "b"], {"a": -1, "b": 1}) == pytest.approx(1 / math.log2(3))
    assert ndcg(["b", "a"], {"a": 1, "b": 2}) == 1.0
    assert ndcg(["a"], {"a": 0}) == 0.0


def test_seed_worked_example() -> None:
    """Three queries: first relevant at ranks 1, 3 and 3."""
    runs = [["p14", "x", "y"], ["x", "y", "f3"], ["x", "y", "h7"]]
    gold = [{"p14": 1}, {"f3": 1}, {"h7": 1}]
    metrics = parse_metrics("recall@1,recall@3,mrr")
    pairs = enumerate(zip(runs, gold, strict=True))
    per_query = {str(i): {m.name: m(r, g) for m in metrics} for i, (r, g) in pairs}
    summary = aggregate(per_query, metrics)
    assert f"{summary['recall@1']:.2f}" == "0.33"
    assert f"{summary['recall@3']:.2f}" == "1.00"
    assert f"{summary['mrr']:.2f}" == "0.56"


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("P_10", "precision@10"),
        ("P@5", "precision@5"),
        ("success_5", "recall@5"),
        ("hit_rate@5", "recall@5"),
        ("ndcg_cut_10", "ndcg@10"),
        ("NDCG@10", "ndcg@10"),
        ("recip_rank", "mrr"),
        ("mrr@10", "mrr@10"),
        ("map_cut_100", "map@100"),
        ("Rprec", "r_precision"),
        ("frac_recall@20", "frac_recall@20"),
        ("ndcg", "ndcg"),
    ],
)
def test_aliases(alias: str, canonical: str) -> None:
    assert parse_metric(alias).name == canonical


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("recall_10", "frac_recall@10"),  # trec_eval's recall_10 is the share of relevant found
        ("recall.10", "frac_recall@10"),  # as trec_eval's -m recall.10 asks for it
        ("RECALL_5", "frac_recall@5"),
        ("success_10", "recall@10"),  # trec_eval's success_10 is goldmine's recall@10
        ("recall@10", "recall@10"),  # goldmine's own spelling keeps its meaning (success)
        ("success@10", "recall@10"),
    ],
)
def test_trec_eval_spellings_keep_their_trec_eval_meaning(spelling: str, canonical: str) -> None:
    assert parse_metric(spelling).name == canonical


def test_recall_10_scores_as_trec_eval_does() -> None:
    # Two of three relevant docs in the top 5: trec_eval's recall_5 is 2/3, success_5 is 1.
    ranked, judged = ["a", "x", "b", "y", "z", "c"], {"a": 1, "b": 2, "c": 1}
    assert parse_metric("recall_5")(ranked, judged) == pytest.approx(2 / 3)
    assert parse_metric("success_5")(ranked, judged) == 1.0
    assert parse_metric("recall@5")(ranked, judged) == 1.0


def test_unknown_metric_lists_every_valid_name() -> None:
    with pytest.raises(InputError) as info:
        parse_metric("f1@10")
    for family in ("recall@k", "frac_recall@k", "mrr", "ndcg", "precision@k", "map", "r_precision"):
        assert family in info.value.message


def test_metric_needing_k_says_so() -> None:
    with pytest.raises(InputError, match="needs a cut-off"):
        parse_metric("recall")
    with pytest.raises(InputError, match="at least 1"):
        parse_metric("ndcg@0")


def test_parse_metrics_keeps_order_and_drops_duplicates() -> None:
    names = [m.name for m in parse_metrics("recall@5, ndcg_cut_10,recall@5,ndcg@10")]
    assert names == ["recall@5", "ndcg@10"]


# trec_eval's measures named without a cut-off are its cut-offs: -m map_cut is map_cut_5 to
# map_cut_1000. goldmine read map_cut and ndcg_cut as the uncut map and ndcg, and refused P.
TREC_CUTS = [5, 10, 15, 20, 30, 100, 200, 500, 1000]


@pytest.mark.parametrize(
    ("name", "family", "cuts"),
    [("map_cut", "map", TREC_CUTS), ("ndcg_cut", "ndcg", TREC_CUTS),
     ("P", "precision", TREC_CUTS), ("success", "recall", [1, 5, 10])],
)  # fmt: skip
def test_a_trec_eval_measure_without_its_cut_off_is_its_cut_offs(name, family, cuts) -> None:
    assert parse_metrics(name) == [Metric(family, k) for k in cuts]
    assert parse_metrics(f"mrr,{name}_10")[1] == Metric(family, 10)
    with pytest.raises(InputError, match="name one"):  # one metric (--fail-under): not uncut
        parse_metric(name)


@pytest.mark.parametrize("name", ["r_precision@5", "Rprec@2", "Rprec_10"])
def test_r_precision_takes_no_cut_off(name) -> None:
    with pytest.raises(InputError, match="no cut-off"):
        parse_metrics(name)
