"""Conformance with trec_eval 10 on its own test fixtures (../shared/conformance/trec_eval).

For every measure goldmine offers, every per-query and overall value in trec_eval's expected output
must equal goldmine's at 4 decimals, through both scoring engines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from goldmine.eval.scoring import evaluate, evaluate_files
from goldmine.metrics import parse_metric
from goldmine.readers import read_gold, read_run

_TREC_NAME = re.compile(
    r"^(success|recall|recip_rank|ndcg_cut|ndcg|P|map_cut|map|Rprec)(?:_(\d+))?$"
)
_FAMILY = {
    "success": "recall",
    "recall": "frac_recall",
    "recip_rank": "mrr",
    "ndcg_cut": "ndcg",
    "ndcg": "ndcg",
    "P": "precision",
    "map_cut": "map",
    "map": "map",
    "Rprec": "r_precision",
}


def expected_values(path: Path) -> dict[str, dict[str, float]]:
    """trec_eval output -> goldmine metric name -> query id (or 'all') -> value."""
    values: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        match = _TREC_NAME.match(name)
        if not match or name == "recall" or name in ("P",):
            continue
        family, k = _FAMILY[match.group(1)], match.group(2)
        metric = f"{family}@{k}" if k else family
        values.setdefault(metric, {})[qid] = float(value)
    return values


CASES = [
    ("out.test.aq", "qrels.test", "results.test", 1),
    ("out.test.aqc", "qrels.test", "results.trunc", 1),
    ("out.test.aql", "qrels.rel_level", "results.test", 2),
]


@pytest.fixture
def fixtures(shared_dataset):
    return lambda name: shared_dataset("conformance", "trec_eval", name)


@pytest.mark.parametrize("engine", ["python", "columnar"])
@pytest.mark.parametrize(("expected", "qrels", "results", "level"), CASES)
def test_equals_trec_eval(fixtures, engine, expected, qrels, results, level) -> None:
    want = expected_values(fixtures(expected))
    metrics = [parse_metric(name) for name in want]
    assert len(metrics) >= 40  # every family at every cut-off in the file
    if engine == "python":
        result = evaluate(read_gold(fixtures(qrels)), read_run(fixtures(results)), metrics, level)
    else:
        result = evaluate_files(fixtures(qrels), fixtures(results), metrics, level, force=True)
    mismatches = []
    for metric, by_query in want.items():
        for qid, value in by_query.items():
            got = result.summary[metric] if qid == "all" else result.per_query[qid][metric]
            if round(got, 4) != value and abs(got - value) > 0.00005 + 1e-12:
                mismatches.append((metric, qid, value, got))
    assert not mismatches, mismatches[:20]
