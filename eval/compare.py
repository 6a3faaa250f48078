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

Both resampling loops are vectorised and chunked (``_CHUNK`` rows at a time) so memory stays
small: the sign-flip test reads random bytes and a 256-entry table of partial sums per group of
eight queries, so 10,000 permutations of 7,000 queries are ~9 M table look-ups, not a 7,000 x
10,000 matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import GoldmineError, InputError, NotFoundError

if TYPE_CHECKING:
    import duckdb
    from goldmine.eval.model import Gold

VERDICTS = ("better", "worse", "inside the noise")
POWER = 0.80
TOP = 10
_CHUNK = 1000
# 0/1 bit patterns of every byte, most significant bit first (np.unpackbits' order).
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)

Scores = Mapping[str, Mapping[str, float]]


@dataclass
class ScoreTable:
    """One side of a compare: per-query scores (query id -> metric -> value) and what they are."""

    scores: dict[str, dict[str, float]]
    label: str
    texts: dict[str, str] = field(default_factory=dict)
    source: str = ""
    gold_hash: str | None = None
    run_id: int | None = None

    @property
    def metric_names(self) -> list[str]:
        names: dict[str, None] = {}
        for values in self.scores.values():
            names.update(dict.fromkeys(values))
        return list(names)


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


# --- the statistics -----------------------------------------------------------------------------


def sign_flip_test(
    deltas: np.ndarray, permutations: int = 10_000, seed: int = 0
) -> tuple[float, bool]:
    """Two-sided paired randomization test of mean(deltas) = 0; returns (p, exact).

    Zero deltas are dropped first: flipping their sign changes nothing.
    """
    d = np.asarray(deltas, dtype=np.float64)
    d = d[d != 0]
    m = d.size
    total = float(d.sum())
    # A flip pattern "reaches" the observed statistic when its |sum| >= |observed sum|; the
    # tolerance keeps the observed pattern itself (and its mirror) counted despite rounding.
    threshold = abs(total) - 1e-9 * float(np.abs(d).sum())
    if m == 0:
        return 1.0, True
    if 2**m <= permutations:
        patterns = np.arange(2**m, dtype=np.uint32)
        bits = ((patterns[:, None] >> np.arange(m, dtype=np.uint32)) & 1).astype(np.float64)
        sums = 2 * (bits @ d) - total
        return float(np.count_nonzero(np.abs(sums) >= threshold)) / 2**m, True
    rng = np.random.default_rng(seed)
    groups = (m + 7) // 8
    padded = np.zeros(groups * 8)
    padded[:m] = d
    # table[g, byte] = 2 * (sum of the group's deltas whose bit is set): a flip pattern's signed
    # sum is sum_g table[g, byte_g] - total, i.e. +d where the bit is set, -d where it is not.
    table = (2 * (_BYTE_BITS @ padded.reshape(groups, 8).T)).T.ravel()
    offsets = np.arange(groups, dtype=np.int32) * 256
    count = 0
    done = 0
    while done < permutations:
        rows = min(_CHUNK, permutations - done)
        draws = rng.integers(0, 256, size=(rows, groups), dtype=np.uint8)
        sums = np.take(table, draws + offsets).sum(axis=1) - total
        count += int(np.count_nonzero(np.abs(sums) >= threshold))
        done += rows
    return (count + 1) / (permutations + 1), False


def bootstrap_ci(
    deltas: np.ndarray, resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> Any:
    """Percentile bootstrap interval of mean(deltas), queries resampled with replacement.

    ``deltas`` is one metric's (n,) array -> ``(low, high)``, or an (n, metrics) matrix -> a list
    of them; the metrics of a matrix share each resample of the queries (drawn once: the draws
    cost more than the sums).
    """
    d = np.asarray(deltas, dtype=np.float64)
    matrix = d.reshape(d.shape[0], -1)
    n, columns = matrix.shape
    if n == 0 or resamples < 1:
        nan = (math.nan, math.nan)
        return nan if d.ndim == 1 else [nan] * columns
    means = np.empty((resamples, columns))
    resampled: list[int] = []
    for j in range(columns):
        values, counts = np.unique(matrix[:, j], return_counts=True)
        if values.size <= 32 and values.size * 16 <= n:
            # Few distinct deltas (recall@k: -1, 0, 1): how often each is drawn is multinomial,
            # the same distribution as resampling indices, at a fraction of the cost (a few
            # binomial draws per resample instead of n index draws).
            rng = np.random.default_rng(seed)
            means[:, j] = rng.multinomial(n, counts / n, size=resamples) @ values / n
        else:
            resampled.append(j)
    if resampled:
        rng = np.random.default_rng(seed)
        cols = [np.ascontiguousarray(matrix[:, j]) for j in resampled]
        index_type = np.int32 if n < 2**31 else np.int64
        done = 0
        while done < resamples:
            rows = min(_CHUNK, resamples - done)
            draws = rng.integers(0, n, size=(rows, n), dtype=index_type)
            for j, col in zip(resampled, cols, strict=True):
                means[done : done + rows, j] = np.take(col, draws).sum(axis=1) / n
            done += rows
    tail = (1 - level) / 2 * 100
    bounds = np.percentile(means, [tail, 100 - tail], axis=0)
    intervals = [(float(bounds[0, j]), float(bounds[1, j])) for j in range(columns)]
    return intervals[0] if d.ndim == 1 else intervals


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error rate), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def min_detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = POWER) -> float:
    """Smallest true mean delta a paired test on n queries detects with this power (normal)."""
    if n < 2:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return z * sd / math.sqrt(n)


# --- the comparison -----------------------------------------------------------------------------


def as_table(side: ScoreTable | Scores, label: str) -> ScoreTable:
    if isinstance(side, ScoreTable):
        return side
    if not isinstance(side, Mapping):
        raise InputError(f"{label}: expected per-query scores (query id -> metric -> value)")
    return ScoreTable({str(q): dict(v) for q, v in side.items()}, label=label)


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
    if a.gold_hash and b.gold_hash and a.gold_hash != b.gold_hash:
        comparison.notes.append(
            "A and B were scored against different gold sets: compared on the queries both "
            "have; a query whose judgments changed between the two counts as a change"
        )
    return comparison


def _pick_metrics(a: ScoreTable, b: ScoreTable, metrics: Sequence[str] | str | None) -> list[str]:
    have_a, have_b = a.metric_names, set(b.metric_names)
    shared = [m for m in have_a if m in have_b]
    if metrics is None:
        if not shared:
            raise InputError(f"{a.label} and {b.label} have no metric in common")
        return shared
    names = [_metric_name(m, shared) for m in _split(metrics)]
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
    from goldmine.eval.metrics import parse_metric

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


# --- the two sides ------------------------------------------------------------------------------

HISTORY_PREFIX = "history:"


def resolve_side(
    ref: str,
    con: duckdb.DuckDBPyConnection | None = None,
    gold: Gold | str | None = None,
    *,
    metrics: Sequence[str] | str | None = None,
    rel_level: int = 1,
) -> ScoreTable:
    """A compare side from a reference: a run file, a history row, or a stored run.

    - an existing file: a run file, scored against ``gold`` (a ``Gold`` or a gold spec);
    - ``history:FILE:LABEL`` or ``history:FILE:ROW`` (1-based): a row of the history CSV. A row
      holds only means, so it is paired through the stored run its ``run_id`` names (``con``);
    - otherwise a stored run's id or label (``con`` required).
    """
    if Path(ref).is_file():
        return _file_side(ref, con, gold, metrics, rel_level)
    if ref.startswith(HISTORY_PREFIX):
        return _history_side(ref, con)
    if con is None:
        raise InputError(f"{ref!r} is not a file; a stored run needs the store (--db)")
    return stored_side(con, ref)


def stored_side(con: duckdb.DuckDBPyConnection, ref: str) -> ScoreTable:
    from goldmine.eval.store import find_run, run_scores

    run = find_run(con, ref)
    run_id = int(run["run_id"])
    rows = con.execute(
        "SELECT query_id, query FROM eval_queries WHERE run_id = ? AND query IS NOT NULL",
        [run_id],
    ).fetchall()
    label = f"run {run_id}" + (f" ({run['label']})" if run["label"] else "")
    return ScoreTable(
        scores=run_scores(con, run_id),
        label=label,
        texts=dict(rows),
        source=f"stored run {run_id}: {run['run_source']} on {run['gold_source']}",
        gold_hash=run["gold_hash"],
        run_id=run_id,
    )


def _file_side(
    ref: str,
    con: duckdb.DuckDBPyConnection | None,
    gold: Gold | str | None,
    metrics: Sequence[str] | str | None,
    rel_level: int,
) -> ScoreTable:
    from goldmine.eval.metrics import parse_metrics
    from goldmine.eval.runner import DEFAULT_METRICS, score_run_file

    if gold is None:
        raise InputError(
            f"{ref} is a run file: give --gold to score it (a gold file or a version, e.g. v3)"
        )
    if isinstance(gold, str):
        gold = _load_gold(gold, con)
    outcome = score_run_file(
        gold, Path(ref), parse_metrics(metrics or DEFAULT_METRICS), rel_level=rel_level
    )
    texts = {q: g.query for q, g in gold.queries.items() if g.query}
    return ScoreTable(
        scores=outcome.result.per_query,
        label=Path(ref).name,
        texts=texts,
        source=f"run file {ref} on {gold.source}",
        gold_hash=gold.hash,
    )


def _load_gold(spec: str, con: duckdb.DuckDBPyConnection | None) -> Gold:
    from goldmine.eval.runner import load_gold

    if Path(spec).exists() or con is None:
        return load_gold(spec)
    from goldmine.goldset.versions import load_gold as load_version

    return load_version(con, spec)


def _history_side(ref: str, con: duckdb.DuckDBPyConnection | None) -> ScoreTable:
    from goldmine.eval.history import read_history

    body = ref[len(HISTORY_PREFIX) :]
    path_text, sep, key = body.rpartition(":")
    if not sep or not path_text or not key:
        raise InputError(f"{ref!r}: write a history row as history:FILE:LABEL or history:FILE:ROW")
    path = Path(path_text)
    if not path.is_file():
        raise InputError("no such history file", path=path)
    rows = read_history(path)
    row = _history_row(rows, key)
    if row is None:
        raise NotFoundError(
            f"{path}: no history row with label {key!r}"
            + (f" (rows are numbered 1 to {len(rows)})" if key.isdigit() else "")
        )
    name = row.get("label") or f"row {key}"
    run_id = (row.get("run_id") or "").strip()
    needs = (
        f"history row {name!r} in {path} holds only the means; pairing per query needs the "
        "stored run"
    )
    if not run_id:
        raise InputError(f"{needs}, and this row has no run_id (the run was not stored)")
    if con is None:
        raise InputError(f"{needs} (run {run_id}): give the store with --db")
    try:
        side = stored_side(con, run_id)
    except GoldmineError as exc:
        raise InputError(f"{needs}: run {run_id} is not in this store ({exc})") from exc
    if row.get("gold_hash") and side.gold_hash and row["gold_hash"] != side.gold_hash:
        raise InputError(
            f"{needs}: stored run {run_id} was scored on another gold set than the row says "
            "(is this the store the history was written with?)"
        )
    side.label = f"{name} (history, run {run_id})"
    return side


def _history_row(rows: list[dict[str, str]], key: str) -> dict[str, str] | None:
    matches = [r for r in rows if r.get("label") == key]
    if matches:
        return matches[-1]
    if key.isdigit() and 1 <= int(key) <= len(rows):
        return rows[int(key) - 1]
    return None


def resolve_refs(
    refs: Sequence[str],
    *,
    gold: str | None = None,
    metrics: Sequence[str] | str | None = None,
    db: Path | None = None,
    rel_level: int = 1,
) -> list[ScoreTable]:
    """Each reference as a ``ScoreTable`` (see ``resolve_side``), for compare and power.

    Stored runs and history rows are resolved first, so a run file is scored on the metrics the
    other side has (or ``metrics``, or the default set). The store is opened only if needed.
    """
    from contextlib import nullcontext

    from goldmine.store import open_store

    files = [Path(r).is_file() for r in refs]
    gold_in_store = gold is not None and not Path(gold).exists()
    need_store = not all(files) or gold_in_store
    with open_store(db, create=False) if need_store else nullcontext() as con:
        sides: list[ScoreTable | None] = [
            None if is_file else resolve_side(ref, con)
            for ref, is_file in zip(refs, files, strict=True)
        ]
        known = [s.metric_names for s in sides if s is not None]
        names = metrics or (known[0] if known else None)
        loaded = _load_gold(gold, con) if gold is not None and any(files) else None
        return [
            side or resolve_side(ref, con, loaded, metrics=names, rel_level=rel_level)
            for ref, side in zip(refs, sides, strict=True)
        ]


def compare_refs(
    ref_a: str,
    ref_b: str,
    *,
    gold: str | None = None,
    metrics: Sequence[str] | str | None = None,
    db: Path | None = None,
    rel_level: int = 1,
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    bootstrap: int = 10_000,
) -> Comparison:
    """``goldmine eval compare A B``: ``resolve_refs`` both sides, then ``compare_runs``."""
    resolved = resolve_refs((ref_a, ref_b), gold=gold, metrics=metrics, db=db, rel_level=rel_level)
    return compare_runs(
        resolved[0],
        resolved[1],
        metrics,
        permutations=permutations,
        seed=seed,
        alpha=alpha,
        bootstrap=bootstrap,
    )


# --- for people ---------------------------------------------------------------------------------


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def noise_sentence(m: MetricComparison) -> str:
    """What "inside the noise" means at this size: the change it could not have seen."""
    if m.mde is None:
        return f"inside the noise: {m.metric} scored the same on every query on both sides"
    size = f"{m.mde:.2f}" if m.mde >= 0.01 else f"{m.mde:.4f}"
    return (
        f"inside the noise: at {m.n} queries a change under {size} {m.metric} cannot be seen "
        "(goldmine eval power: queries needed for a given change)"
    )


def format_comparison(c: Comparison) -> list[str]:
    """The compare as plain lines: who, on what, one row per metric, then the queries."""
    lines = [f"A  {c.label_a}  ({c.source_a})" if c.source_a else f"A  {c.label_a}"]
    lines.append(f"B  {c.label_b}  ({c.source_b})" if c.source_b else f"B  {c.label_b}")
    left_out = ""
    if c.only_a or c.only_b:
        left_out = (
            f"; left out: {len(c.only_a)} queries only A was scored on, "
            f"{len(c.only_b)} only B was (a grown or changed gold set)"
        )
    lines.append(f"paired on {c.n_queries} common queries{left_out}")
    lines.append(
        f"paired randomization test, {c.permutations:,} sign flips (seed {c.seed}); "
        f"bootstrap 95% interval, {c.bootstrap:,} resamples"
    )
    if c.correction:
        lines.append(
            f"{len(c.metrics)} metrics compared at once: p-values Holm-corrected across them"
        )
    lines.append("")
    width = max(len("metric"), *(len(m.metric) for m in c.metrics))
    lines.append(
        f"{'metric':<{width}}  {'A':>7}  {'B':>7}  {'delta':>8}  {'95% CI':<20}  "
        f"{'p' if not c.correction else 'p (Holm)':>9}  {'verdict':<16}  detectable"
    )
    for m in c.metrics:
        ci = f"[{m.ci[0]:+.4f}, {m.ci[1]:+.4f}]"
        mde = f"±{m.mde:.4f}" if m.mde is not None else "-"
        lines.append(
            f"{m.metric:<{width}}  {m.mean_a:>7.4f}  {m.mean_b:>7.4f}  {m.delta:>+8.4f}  "
            f"{ci:<20}  {_p(m.p_value):>9}  {m.verdict:<16}  {mde}"
        )
    lines.append(
        f"detectable: the smallest true change {c.n_queries} queries detect with "
        f"{POWER:.0%} power at alpha {c.alpha:g} (from the spread of the paired deltas)"
    )
    lines.extend(noise_sentence(m) for m in c.metrics if m.verdict == "inside the noise")
    lines.extend(f"note: {note}" for note in c.notes)
    for m in c.metrics:
        lines.append("")
        lines.append(f"{m.metric}: B won {m.wins} queries, lost {m.losses}, tied {m.ties}")
        for tag, queries in (("won ", m.won), ("lost", m.lost)):
            for q in queries:
                text = f"  {q.query}" if q.query and q.query != q.query_id else ""
                lines.append(
                    f"  {tag}  {q.query_id}  {q.a:.3f} -> {q.b:.3f} ({q.delta:+.3f}){text}"
                )
    return lines
