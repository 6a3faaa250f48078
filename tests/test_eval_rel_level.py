"""``eval run -l`` as trec_eval's ``-l``, on both scoring engines (per query in Python, and the
columnar one for large runs). Found by a probe with another team's qrels: ``-l 0`` counted
documents nobody judged as relevant (MAP 1.28), and ``-l 2`` left out of every average, nDCG
included, a query whose best grade was 1. The figures are worked by hand below, as trec_eval
gives them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goldmine.eval.scoring import evaluate_files
from goldmine.metrics import parse_metrics

RUN = """\
1 Q0 d3 1 4.0 r
1 Q0 d1 2 3.0 r
1 Q0 d9 3 2.0 r
1 Q0 d2 4 1.0 r
2 Q0 d5 1 2.0 r
2 Q0 d4 2 1.0 r
3 Q0 d8 1 3.0 r
3 Q0 d7 2 2.0 r
3 Q0 d6 3 1.0 r
"""
BASE = "1 0 d1 2\n1 0 d2 1\n1 0 d3 0\n2 0 d4 1\n2 0 d5 0\n3 0 d6 2\n3 0 d7 2\n"
# Query 1's best grade is 1.
LEVELS = "1 0 d1 1\n1 0 d2 1\n2 0 d4 2\n2 0 d5 0\n3 0 d6 2\n"


def _score(tmp_path: Path, qrels: str, level: int, columnar: bool, metrics: str):
    (tmp_path / "q.qrels").write_text(qrels)
    (tmp_path / "r.run").write_text(RUN)
    return evaluate_files(
        tmp_path / "q.qrels", tmp_path / "r.run", parse_metrics(metrics), level, force=columnar
    )


@pytest.mark.parametrize("columnar", [False, True])
def test_level_0_counts_judged_zero_documents_never_unjudged_ones(tmp_path, columnar):
    # Relevant at -l 0: every judged document. Query 1, d3 d1 d9 d2: relevant at 1, 2 and 4
    # (d9 is unjudged): AP (1 + 1 + 3/4) / 3; query 2, d5 d4: AP 1; query 3, d8 d7 d6:
    # (1/2 + 2/3) / 2.
    result = _score(tmp_path, BASE, 0, columnar, "map,precision@5")
    ap = {"1": 2.75 / 3, "2": 1.0, "3": (1 / 2 + 2 / 3) / 2}
    for qid, value in ap.items():
        assert result.per_query[qid]["map"] == pytest.approx(value)
    assert result.summary["map"] == pytest.approx(sum(ap.values()) / 3)  # 0.8333
    assert result.per_query["1"]["precision@5"] == pytest.approx(3 / 5)


@pytest.mark.parametrize("columnar", [False, True])
def test_a_query_with_answers_below_the_level_counts_as_trec_eval_counts_it(tmp_path, columnar):
    # At -l 2 query 1 has no relevant document: AP 0, but its grade-1 documents still give
    # nDCG gain. Query 2: d4 at rank 2, AP 1/2; query 3: d6 at rank 3, AP 1/3.
    result = _score(tmp_path, LEVELS, 2, columnar, "map,ndcg@10,mrr")
    assert result.n_queries == 3 and not result.no_answer
    assert result.summary["map"] == pytest.approx((0 + 1 / 2 + 1 / 3) / 3)  # 0.2778
    # nDCG: query 1, gains 1 at ranks 2 and 4 over the ideal 1 + 1/log2(3);
    # query 2, gain 2 at rank 2 over 2 at rank 1; query 3, 2 at rank 3 over 2 at rank 1.
    import math

    q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    ndcg = {"1": q1, "2": 1 / math.log2(3), "3": 1 / math.log2(4)}
    for qid, value in ndcg.items():
        assert result.per_query[qid]["ndcg@10"] == pytest.approx(value)
    assert result.summary["ndcg@10"] == pytest.approx(sum(ndcg.values()) / 3)  # 0.5940
    assert result.per_query["1"]["mrr"] == 0.0


@pytest.mark.parametrize("columnar", [False, True])
def test_a_query_judged_only_zero_is_still_no_answer_at_level_1(tmp_path, columnar):
    """goldmine's own rule, documented: the corpus does not answer it; scored apart."""
    result = _score(tmp_path, BASE + "4 0 d1 0\n", 1, columnar, "map")
    assert [n.query_id for n in result.no_answer] == ["4"]
    assert result.n_queries == 3
