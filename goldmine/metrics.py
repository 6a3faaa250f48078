"""Retrieval metrics as pure functions of one query, and the registry that parses their names.

Each metric takes one query's ranked ids (best first, no repeats) and its judged documents
(``{doc_id: grade}``, grades as labelled, zero and negative included) and returns a float. A
document is *relevant* when its grade is at least ``rel_level`` (trec_eval's ``-l``); nDCG uses the
grade as the gain whatever the level, as trec_eval does. Aggregation (the mean over answerable
queries) is apart, in ``aggregate``.

The definitions follow trec_eval 10 exactly (the README maps the names to trec_eval and ranx):

=================  ==========================================================  ============
goldmine           definition                                                  trec_eval
=================  ==========================================================  ============
``recall@k``       1 if a relevant doc is in the top k, else 0                 success_k
``frac_recall@k``  relevant docs in the top k / relevant docs                  recall_k
``mrr[@k]``        1 / rank of the first relevant doc (0 if none [in top k])   recip_rank
``ndcg[@k]``       sum gain/log2(rank+1) over the top k / the same, ideal      ndcg_cut_k
``precision@k``    relevant docs in the top k / k                              P_k
``map[@k]``        sum of precision at each relevant doc's rank / relevant     map, map_cut_k
``r_precision``    relevant docs in the top R / R, R = relevant docs           Rprec
=================  ==========================================================  ============
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from goldmine.errors import InputError

Ranked = Sequence[str]
Judged = Mapping[str, int]


# The grade of a document nobody judged: under every level, -l 0 and below included (trec_eval
# counts a judged 0 relevant at -l 0, an unjudged document never).
_UNJUDGED = -math.inf


def _n_relevant(judged: Judged, rel_level: int) -> int:
    return sum(1 for grade in judged.values() if grade >= rel_level)


def _top(ranked: Ranked, k: int | None) -> Ranked:
    return ranked if k is None else ranked[:k]


def recall(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """1.0 when at least one relevant doc is in the top k (trec_eval ``success_k``)."""
    return float(any(judged.get(doc, _UNJUDGED) >= rel_level for doc in _top(ranked, k)))


def frac_recall(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """Share of the relevant docs found in the top k (trec_eval ``recall_k``)."""
    n_rel = _n_relevant(judged, rel_level)
    if n_rel == 0:
        return 0.0
    found = sum(1 for doc in _top(ranked, k) if judged.get(doc, _UNJUDGED) >= rel_level)
    return found / n_rel


def mrr(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """1 / rank of the first relevant doc within the top k, 0 if none (``recip_rank``)."""
    relevant = {doc for doc, grade in judged.items() if grade >= rel_level}
    if not relevant:
        return 0.0
    # The scan in C (a membership flag per doc, then the first True): a Python loop over a
    # 1,000-doc ranking with its answer deep down was a fifth of scoring such a run.
    hits = list(map(relevant.__contains__, _top(ranked, k)))
    return 1.0 / (hits.index(True) + 1) if True in hits else 0.0


def precision(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """Relevant docs in the top k divided by k, even when fewer were returned (``P_k``)."""
    top = _top(ranked, k)
    denominator = k if k is not None else len(ranked)
    if denominator == 0:
        return 0.0
    return sum(1 for doc in top if judged.get(doc, _UNJUDGED) >= rel_level) / denominator


def average_precision(
    ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1
) -> float:
    """Mean of the precision at each relevant doc's rank, over all relevant docs (``map``)."""
    n_rel = _n_relevant(judged, rel_level)
    if n_rel == 0:
        return 0.0
    found = 0
    total = 0.0
    for rank, doc in enumerate(_top(ranked, k), start=1):
        if judged.get(doc, _UNJUDGED) >= rel_level:
            found += 1
            total += found / rank
    return total / n_rel


def r_precision(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """Relevant docs in the top R, over R, where R is the number of relevant docs (``Rprec``)."""
    n_rel = _n_relevant(judged, rel_level)
    if n_rel == 0:
        return 0.0
    return sum(1 for doc in ranked[:n_rel] if judged.get(doc, _UNJUDGED) >= rel_level) / n_rel


def _discount(rank: int) -> float:
    return math.log2(rank + 1)


def ndcg(ranked: Ranked, judged: Judged, k: int | None = None, rel_level: int = 1) -> float:
    """Graded gain (the grade), log2 discount, over the ideal ordering (``ndcg_cut_k``).

    As in trec_eval, ``rel_level`` does not touch nDCG and only positive grades give gain.
    """
    gains = sorted((g for g in judged.values() if g > 0), reverse=True)
    ideal = sum(g / _discount(i) for i, g in enumerate(_top(gains, k), start=1))
    if ideal == 0:
        return 0.0
    dcg = 0.0
    for rank, doc in enumerate(_top(ranked, k), start=1):
        gain = judged.get(doc, 0)
        if gain > 0:
            dcg += gain / _discount(rank)
    return dcg / ideal


MetricFn = Callable[[Ranked, Judged, "int | None", int], float]


@dataclass(frozen=True)
class Family:
    """A metric family: its canonical name, its function, and whether ``@k`` is optional."""

    name: str
    fn: MetricFn
    needs_k: bool
    trec_eval: str
    description: str


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("recall", recall, True, "success_k", "at least one relevant chunk in the top k"),
        Family("frac_recall", frac_recall, True, "recall_k", "share of relevant chunks in top k"),
        Family("mrr", mrr, False, "recip_rank", "1/rank of the first relevant chunk"),
        Family("ndcg", ndcg, False, "ndcg_cut_k", "graded gain, log2 discount, / ideal"),
        Family("precision", precision, True, "P_k", "relevant chunks in the top k / k"),
        Family("map", average_precision, False, "map_cut_k", "mean average precision"),
        Family("r_precision", r_precision, False, "Rprec", "precision at rank R (= #relevant)"),
    )
}

# Other tools' names for the same families: trec_eval, ranx, ir_measures. ranx's ``recall@k`` is
# our ``frac_recall@k``; our ``recall@k`` is the seed lesson's (any relevant in the top k).
_ALIASES = {
    "success": "recall",
    "hit_rate": "recall",
    "hits": "recall",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "p": "precision",
    "map_cut": "map",
    "ap": "map",
    "rprec": "r_precision",
    "r-precision": "r_precision",
    "r_prec": "r_precision",
}

_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z_\-]*?)\s*(?:([@_.])(\d+))?\s*$")


@dataclass(frozen=True)
class Metric:
    """A parsed metric name such as ``ndcg@10``: family plus optional cut-off."""

    family: str
    k: int | None = None

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def __str__(self) -> str:
        return self.name

    def __call__(self, ranked: Ranked, judged: Judged, rel_level: int = 1) -> float:
        return FAMILIES[self.family].fn(ranked, judged, self.k, rel_level)


def valid_names() -> str:
    parts = [f"{f.name}@k" if f.needs_k else f"{f.name}[@k]" for f in FAMILIES.values()]
    return ", ".join(parts)


def parse_metric(text: str) -> Metric:
    """``ndcg@10``, ``P_10``, ``success_5``, ``hit_rate@5``, ``recip_rank`` … -> ``Metric``.

    A trec_eval spelling means what it means in trec_eval: ``recall_10`` (or ``recall.10``) is
    ``frac_recall@10``, ``success_10`` is ``recall@10``.

    Raises ``InputError`` naming every valid family when the name is unknown.
    """
    match = _NAME.match(text)
    family = None
    k = None
    if match:
        raw, separator = match.group(1).lower(), match.group(2)
        family = raw if raw in FAMILIES else _ALIASES.get(raw)
        if raw == "recall" and separator in ("_", "."):
            # trec_eval's spelling keeps trec_eval's meaning: recall_10 is the share of the
            # relevant docs found (frac_recall@10); goldmine's recall@10 is its success_10.
            family = "frac_recall"
        k = int(match.group(3)) if match.group(3) else None
    if family is None:
        raise InputError(f"unknown metric {text.strip()!r}; valid metrics: {valid_names()}")
    if k is None and match and match.group(1).lower() in _CUT_FAMILIES:  # not the uncut map
        raise InputError(
            f"metric {text.strip()!r} is trec_eval's cut-offs of {family}: name one here, e.g. "
            f"{match.group(1)}_10 (in a -m list, {match.group(1)} alone is all of them)"
        )
    if k is not None and k < 1:
        raise InputError(f"metric {text.strip()!r}: the cut-off k must be at least 1")
    if k is not None and family == "r_precision":  # its cut-off is R, each query's own
        raise InputError(f"metric {text.strip()!r}: r_precision (Rprec) takes no cut-off: its "
                         "rank is each query's number of relevant chunks")  # fmt: skip
    if k is None and FAMILIES[family].needs_k:
        raise InputError(f"metric {text.strip()!r} needs a cut-off, e.g. {family}@10")
    return Metric(family, k)


# trec_eval's measures named without their cut-off stand for its cut-offs (``-m map_cut`` is
# map_cut_5 to map_cut_1000, ``-m success`` success_1, _5 and _10).
_TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_CUT_FAMILIES = {"map_cut": ("map", _TREC_CUTS), "ndcg_cut": ("ndcg", _TREC_CUTS),
                 "p": ("precision", _TREC_CUTS), "success": ("recall", (1, 5, 10))}  # fmt: skip


def trec_cuts(name: str) -> list[Metric]:
    """The metrics a trec_eval measure named without its cut-off stands for (``map_cut``:
    map@5 … map@1000), or none for any other name."""
    cut = _CUT_FAMILIES.get(name.strip().lower())
    return [Metric(cut[0], k) for k in cut[1]] if cut else []


def parse_metrics(texts: str | Iterable[str]) -> list[Metric]:
    """A comma-separated list (or several) of names, parsed, duplicates dropped, order kept; a
    trec_eval measure named without its cut-off (``map_cut``, ``ndcg_cut``, ``P``, ``success``)
    is each of trec_eval's cut-offs for it."""
    if isinstance(texts, str):
        texts = [texts]
    seen: dict[str, Metric] = {}
    for text in texts:
        for part in text.split(","):
            for metric in trec_cuts(part) or ([parse_metric(part)] if part.strip() else []):
                seen.setdefault(metric.name, metric)
    if not seen:
        raise InputError(f"no metrics given; valid metrics: {valid_names()}")
    return list(seen.values())


def score_query(
    metrics: Sequence[Metric], ranked: Ranked, judged: Judged, rel_level: int = 1
) -> dict[str, float]:
    return {m.name: m(ranked, judged, rel_level) for m in metrics}


def aggregate(per_query: Mapping[str, Mapping[str, float]], metrics: Sequence[Metric]) -> dict:
    """Mean of each metric over the given queries (0.0 when there are none)."""
    n = len(per_query)
    return {
        m.name: (sum(scores[m.name] for scores in per_query.values()) / n if n else 0.0)
        for m in metrics
    }
