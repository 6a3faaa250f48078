"""Compare two runs query by query: is B better than A, worse, or inside the noise?

A mean that moved says little on fifty queries: one lucky query can carry it. So the two runs are
paired on the queries both were scored on, and for each metric this module reports

- the mean delta, B - A;
- a paired randomization (sign-flip) test, two-sided. Under "no difference" each query's delta is
  as likely to have come out with the other sign, so the deltas' signs are flipped at random
  ``permutations`` times and ``p = (count + 1) / (permutations + 1)``, where ``count`` is the
  flips whose |mean| reaches the observed |mean|. When the queries whose delta is not zero are so
  few that every sign pattern fits in ``permutations`` (2^m <= permutations), all patterns are
  enumerated instead and ``p = count / 2^m`` is exact (scipy's ``permutation_test`` does the
  same). Identical runs give p = 1;
- a bootstrap 95% interval of the mean delta (queries resampled with replacement, percentile);
- Holm's step-down correction of the p-values when several metrics are compared;
- the queries won and lost, the ten largest each way;
- a verdict: "better" or "worse" only when the (corrected) p is under ``alpha``, otherwise
  "inside the noise";
- the minimum detectable effect: the smallest true mean delta this many paired queries would
  detect with 80% power at ``alpha`` (normal approximation of the paired test),
  ``mde = (z[1 - alpha/2] + z[0.80]) * sd(delta) / sqrt(n)``, with ``sd`` the paired deltas'
  standard deviation (ddof 1). When no query changed that is 0, which says nothing, so the
  spread of the two runs' scores is used instead (``sqrt(var_A + var_B)``: the deltas' spread if
  the runs were uncorrelated, an upper bound for runs that share most of their answers).

The statistics are in ``goldmine.eval.stats``, the sides (run files, stored runs, history rows) in
``goldmine.eval.sides``, the lines printed in ``goldmine.eval.compare_report``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import InputError
from goldmine.eval.sides import Scores, ScoreTable, as_table, resolve_refs
from goldmine.eval.stats import POWER, bootstrap_ci, holm, min_detectable_effect, sign_flip_test
from goldmine.metrics import parse_metric, trec_cuts

if TYPE_CHECKING:
    from goldmine.store import Store

VERDICTS = ("better", "worse", "inside the noise")
TOP = 10


@dataclass
class QueryDelta:
    query_id: str
    query: str | None
    a: float
    b: float
    delta: float


@dataclass
class MetricComparison:
    metric: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    p_raw: float
    p_value: float  # Holm-corrected when several metrics are compared
    exact: bool
    ci: tuple[float, float]
    verdict: str
    wins: int
    losses: int
    ties: int
    mde: float | None
    mde_basis: str
    won: list[QueryDelta]
    lost: list[QueryDelta]
    # Every paired query's delta (B - A), for the win/loss plot; left out of the JSON.
    deltas: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        skip = ("won", "lost", "ci", "deltas")
        data = {k: v for k, v in self.__dict__.items() if k not in skip}
        data["ci"] = [self.ci[0], self.ci[1]]
        data["won"] = [q.__dict__ for q in self.won]
        data["lost"] = [q.__dict__ for q in self.lost]
        return data


@dataclass
class Comparison:
    label_a: str
    label_b: str
    n_queries: int
    only_a: list[str]
    only_b: list[str]
    metrics: list[MetricComparison]
    correction: str | None
    permutations: int
    bootstrap: int
    seed: int
    alpha: float
    notes: list[str] = field(default_factory=list)
    source_a: str = ""
    source_b: str = ""
    texts: dict[str, str] = field(default_factory=dict)

    def metric(self, name: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": {"label": self.label_a, "source": self.source_a},
            "b": {"label": self.label_b, "source": self.source_b},
            "n_queries": self.n_queries,
            "n_only_a": len(self.only_a),
            "n_only_b": len(self.only_b),
            "only_a": self.only_a,
            "only_b": self.only_b,
            "correction": self.correction,
            "permutations": self.permutations,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "alpha": self.alpha,
            "power": POWER,
            "notes": self.notes,
            "metrics": {m.metric: m.to_json() for m in self.metrics},
        }


# --- the comparison -----------------------------------------------------------------------------


def compare_runs(
    a: ScoreTable | Scores,
    b: ScoreTable | Scores,
    metrics: Sequence[str] | str | None = None,
    *,
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    bootstrap: int = 10_000,
    label_a: str | None = None,
    label_b: str | None = None,
) -> Comparison:
    """Pair ``a`` and ``b`` on their common queries and test each metric (see the module doc).

    ``a`` and ``b`` are ``ScoreTable``s or plain ``{query_id: {metric: value}}`` mappings
    (``label_a``/``label_b`` name them in the output). ``metrics`` defaults to every metric both
    sides have, in A's order.
    """
    if permutations < 1 or bootstrap < 1:
        raise InputError("--permutations and --bootstrap must be at least 1")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    a, b = as_table(a, label_a or "A"), as_table(b, label_b or "B")
    if label_a:
        a = replace(a, label=label_a)
    if label_b:
        b = replace(b, label=label_b)
    names = _pick_metrics(a, b, metrics)
    common = [q for q in a.scores if q in b.scores]
    only_a = [q for q in a.scores if q not in b.scores]
    only_b = [q for q in b.scores if q not in a.scores]
    if not common:
        raise InputError(
            f"{a.label} and {b.label} have no query in common: they were scored on different "
            "gold sets (or query ids); nothing to pair"
        )
    texts = {**b.texts, **a.texts}
    pairs = [_pair(name, common, a, b) for name in names]
    cis = _intervals(pairs, len(common), bootstrap, seed)
    results = [
        _compare_metric(name, qids, va, vb, ci, texts, permutations, seed, alpha)
        for (name, qids, va, vb), ci in zip(pairs, cis, strict=True)
    ]
    correction = None
    if len(results) > 1:
        correction = "holm"
        for r, p in zip(results, holm([r.p_raw for r in results]), strict=True):
            r.p_value = p
            r.verdict = _verdict(r.delta, p, alpha)
    comparison = Comparison(
        label_a=a.label,
        label_b=b.label,
        n_queries=len(common),
        only_a=only_a,
        only_b=only_b,
        metrics=results,
        correction=correction,
        permutations=permutations,
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        source_a=a.source,
        source_b=b.source,
        texts=texts,
    )
    for r in results:
        if r.verdict == "inside the noise" and (r.ci[0] > 0 or r.ci[1] < 0):
            comparison.notes.append(
                f"{r.metric}: borderline. Its 95% interval leaves out 0 but the test's p "
                f"({r.p_value:.4f}{', Holm' if correction else ''}) is not under {alpha:g}; "
                "the verdict follows the test (the interval is per metric, uncorrected, and "
                "optimistic on few changed queries)"
            )
    if levels_differ(a, b):
        comparison.notes.append(
            f"{a.label} was scored at -l {a.rel_level} and {b.label} at -l {b.rel_level}: a "
            "relevant chunk is another grade on each side, so a difference may be the level's, "
            "not the retriever's"
        )
    if a.gold_hash and b.gold_hash and a.gold_hash != b.gold_hash:
        comparison.notes.append(
            "A and B were scored against different gold sets: compared on the queries both "
            "have; a query whose judgments changed between the two counts as a change"
        )
    return comparison


def levels_differ(a: ScoreTable, b: ScoreTable) -> bool:
    """Whether the two sides were scored at two relevance levels (``-l``), both known."""
    return a.rel_level is not None and b.rel_level is not None and a.rel_level != b.rel_level


def _pick_metrics(a: ScoreTable, b: ScoreTable, metrics: Sequence[str] | str | None) -> list[str]:
    have_a, have_b = a.metric_names, set(b.metric_names)
    shared = [m for m in have_a if m in have_b]
    if metrics is None:
        if not shared:
            raise InputError(f"{a.label} and {b.label} have no metric in common")
        return shared
    names = [
        name
        for m in _split(metrics)
        for name in ([c.name for c in trec_cuts(m)] or [_metric_name(m, shared)])
    ]
    absent = [m for m in names if m not in shared]
    if absent:
        raise InputError(
            f"metric {', '.join(absent)} was not scored on both sides; "
            f"both have: {', '.join(shared) or 'none'}"
        )
    return names


def _split(metrics: Sequence[str] | str) -> list[str]:
    items = [metrics] if isinstance(metrics, str) else list(metrics)
    names = [part.strip() for item in items for part in item.split(",") if part.strip()]
    if not names:
        raise InputError("no metrics given")
    return list(dict.fromkeys(names))


def _metric_name(name: str, shared: list[str]) -> str:
    """The name as the tables have it; else as ``--metrics`` normalises it (``P_5``)."""
    if name in shared:
        return name

    try:
        return parse_metric(name).name
    except InputError:
        return name


def _verdict(delta: float, p: float, alpha: float) -> str:
    if p < alpha and delta > 0:
        return "better"
    if p < alpha and delta < 0:
        return "worse"
    return "inside the noise"


def _pair(
    name: str, common: list[str], a: ScoreTable, b: ScoreTable
) -> tuple[str, list[str], np.ndarray, np.ndarray]:
    """The queries both sides scored on this metric, and the two sides' values on them."""
    qids = [q for q in common if name in a.scores[q] and name in b.scores[q]]
    va = np.array([a.scores[q][name] for q in qids], dtype=np.float64)
    vb = np.array([b.scores[q][name] for q in qids], dtype=np.float64)
    return name, qids, va, vb


def _intervals(
    pairs: list[tuple[str, list[str], np.ndarray, np.ndarray]],
    n_common: int,
    bootstrap: int,
    seed: int,
) -> list[tuple[float, float]]:
    """Bootstrap intervals; the metrics scored on every common query share their resamples."""
    full = [i for i, p in enumerate(pairs) if len(p[1]) == n_common]
    cis: list[tuple[float, float]] = [(math.nan, math.nan)] * len(pairs)
    if full:
        matrix = np.column_stack([pairs[i][3] - pairs[i][2] for i in full])
        for i, ci in zip(full, bootstrap_ci(matrix, bootstrap, seed), strict=True):
            cis[i] = ci
    for i, (_, _, va, vb) in enumerate(pairs):
        if i not in full:
            cis[i] = bootstrap_ci(vb - va, bootstrap, seed)
    return cis


def _compare_metric(
    name: str,
    qids: list[str],
    va: np.ndarray,
    vb: np.ndarray,
    ci: tuple[float, float],
    texts: dict[str, str],
    permutations: int,
    seed: int,
    alpha: float,
) -> MetricComparison:
    d = vb - va
    n = d.size
    p, exact = sign_flip_test(d, permutations, seed)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    basis = "paired deltas"
    if sd < 1e-12 and n > 1:
        sd = math.sqrt(float(va.var(ddof=1) + vb.var(ddof=1)))
        basis = "score spread (no query changed)"
    mde: float | None = min_detectable_effect(sd, n, alpha)
    if sd < 1e-12 or n < 2:
        mde, basis = None, "unknown: every query scored the same on both sides"
    delta = float(d.mean()) if n else 0.0
    order = np.argsort(-d, kind="stable")
    won = [_query_delta(qids[i], texts, va[i], vb[i]) for i in order[:TOP] if d[i] > 0]
    lost = [_query_delta(qids[i], texts, va[i], vb[i]) for i in order[::-1][:TOP] if d[i] < 0]
    return MetricComparison(
        metric=name,
        n=n,
        mean_a=float(va.mean()) if n else 0.0,
        mean_b=float(vb.mean()) if n else 0.0,
        delta=delta,
        p_raw=p,
        p_value=p,
        exact=exact,
        ci=ci,
        verdict=_verdict(delta, p, alpha),
        wins=int(np.count_nonzero(d > 0)),
        losses=int(np.count_nonzero(d < 0)),
        ties=int(np.count_nonzero(d == 0)),
        mde=mde,
        mde_basis=basis,
        won=won,
        lost=lost,
        deltas=dict(zip(qids, d.tolist(), strict=True)),
    )


def _query_delta(qid: str, texts: dict[str, str], a: float, b: float) -> QueryDelta:
    return QueryDelta(qid, texts.get(qid), float(a), float(b), float(b - a))


def compare_refs(
    ref_a: str,
    ref_b: str,
    *,
    gold: str | None = None,
    metrics: Sequence[str] | str | None = None,
    store: Store | None = None,
    rel_level: int = 1,
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    bootstrap: int = 10_000,
) -> Comparison:
    """``goldmine eval compare A B``: ``resolve_refs`` both sides, then ``compare_runs``."""
    resolved = resolve_refs(
        (ref_a, ref_b), gold=gold, metrics=metrics, store=store, rel_level=rel_level
    )
    return compare_runs(
        resolved[0],
        resolved[1],
        metrics,
        permutations=permutations,
        seed=seed,
        alpha=alpha,
        bootstrap=bootstrap,
    )
