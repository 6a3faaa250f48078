"""How many queries does a comparison need? ``goldmine eval power``.

Fifty queries is a small sample. For each metric this module answers two questions from the
per-query deltas of two paired runs (B - A, on the queries both were scored on):

- the **detectable effect**: the smallest true mean delta today's number of queries detects with
  the asked power (default 0.80) at ``alpha`` (default 0.05, two-sided);
- the **queries needed** to detect a given effect (``effect``, e.g. 0.02 recall@5).

Two tests, each named in the output:

- **paired t-test**, the textbook calculation (Sakai's topic-set-size design): statsmodels'
  ``TTestPower`` solves the noncentral t exactly for the standardised effect ``d``, and the effect
  in the metric's units is ``d * sd(delta)`` (``sd`` with ddof 1);
- **paired randomization test, by simulation from the observed deltas** (Webber, Moffat and
  Zobel, CIKM 2008): the deltas are centred (the null), shifted by the effect, ``n`` of them drawn
  with replacement, and the same sign-flip test ``eval compare`` runs is applied to each of
  ``trials`` samples (``flips`` sign patterns each, ``p = (count + 1) / (flips + 1)``, rejected when
  ``p < alpha``). Power is the share of trials rejected. The detectable effect is found by bisection
  over the effect with the same draws for every effect (so power rises with the effect), and the
  queries needed by bisection over ``n`` from the t-test's answer. A recall@k delta takes only the
  values -1, 0 and 1, so the simulation, which keeps that shape, is the honest check on the
  t-test's normal-theory answer at small ``n``.

Where the two runs scored every query the same (no delta spread) or only one run is given, the
deltas' spread is unknown; it is taken as that of two uncorrelated systems with the runs' spread,
``sd = sqrt(var_A + var_B)`` (one run: ``sqrt(2 var)``), an upper bound for systems that share most
of their answers, and the simulation draws from ``score_i - score_perm(i)``. The basis is named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import InputError
from goldmine.eval.sides import as_table, resolve_refs

if TYPE_CHECKING:
    from goldmine.store import Store

TTEST_METHOD = (
    "paired t-test, two-sided: noncentral t solved by statsmodels TTestPower, "
    "effect = d x sd(delta) (Sakai's topic-set-size design)"
)
RANDOMIZATION_METHOD = (
    "paired randomization (sign-flip) test, two-sided, by simulation from the observed deltas: "
    "centred, shifted by the effect, resampled with replacement (Webber, Moffat and Zobel 2008)"
)
MAX_SIMULATED = 20_000  # the simulation's search for n stops here
_TRIAL_CHUNK = 200


@dataclass
class MetricPower:
    metric: str
    n_queries: int
    mean_delta: float | None  # None with one run
    sd_delta: float
    basis: str
    alpha: float
    power: float
    effect: float | None
    detectable_effect: float | None
    queries_needed: int | None
    power_at_effect: float | None  # the t-test's power for ``effect`` at today's n
    method: str = TTEST_METHOD
    randomization: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.effect is None:
            for key in ("effect", "queries_needed", "power_at_effect"):
                data.pop(key)
                data["randomization"].pop(key, None)
        return data


@dataclass
class PowerReport:
    labels: list[str]
    sources: list[str]
    metrics: list[MetricPower]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """One object keyed by metric name, as ``eval run`` spells it."""
        return {m.metric: m.to_json() for m in self.metrics}


# --- the t-test (statsmodels) -------------------------------------------------------------------


def _solver():
    try:
        from statsmodels.stats.power import TTestPower
    except ImportError as exc:  # pragma: no cover - statsmodels is in the models extra
        raise InputError(
            "eval power needs statsmodels: pip install statsmodels (or 'goldmine[models]')"
        ) from exc
    return TTestPower()


def ttest_detectable(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest true mean delta a two-sided paired t-test on ``n`` pairs detects (or None)."""
    if sd <= 1e-12 or n < 2:
        return None
    d = _solver().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power)
    return float(d) * sd


def ttest_queries_needed(
    sd: float, effect: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Pairs a two-sided paired t-test needs to detect ``effect`` (rounded up; at least 2)."""
    if sd <= 1e-12 or effect <= 0:
        return None
    solver = _solver()
    d = effect / sd
    if solver.power(d, 2, alpha) >= power:
        return 2
    return max(2, math.ceil(float(solver.solve_power(effect_size=d, alpha=alpha, power=power))))


def ttest_power(sd: float, n: int, effect: float, alpha: float = 0.05) -> float | None:
    if sd <= 1e-12 or n < 2:
        return None
    return float(_solver().power(effect / sd, n, alpha))


# --- the randomization test, by simulation ------------------------------------------------------


def randomization_power(
    pool: np.ndarray,
    effect: float,
    n: int,
    *,
    trials: int = 1000,
    flips: int = 500,
    alpha: float = 0.05,
    seed: int = 0,
) -> float:
    """Share of ``trials`` simulated samples whose sign-flip test rejects at ``alpha``.

    Each sample is ``n`` draws (with replacement) from ``pool`` centred on 0, plus ``effect``.
    The draws depend only on ``seed``, ``n`` and the pool's size, not on ``effect``: calls that
    differ in the effect alone see the same samples, so power rises with the effect.
    """
    centred = np.asarray(pool, dtype=np.float64)
    centred = centred - centred.mean()
    rng = np.random.default_rng(seed)
    # float32 for the (trials x n) @ (n x flips) product: twice as fast, and the sums' rounding
    # (about 1e-7 of |x|) is far under any difference a flip makes.
    signs = rng.integers(0, 2, size=(flips, n), dtype=np.int8).astype(np.float32) * 2 - 1
    rejected = 0
    done = 0
    while done < trials:
        rows = min(_TRIAL_CHUNK, trials - done)
        x = (centred[rng.integers(0, centred.size, size=(rows, n))] + effect).astype(np.float32)
        observed = np.abs(x.sum(axis=1, dtype=np.float64))
        tol = 1e-5 * np.abs(x).sum(axis=1, dtype=np.float64)
        null = np.abs(x @ signs.T)
        count = np.count_nonzero(null >= (observed - tol)[:, None], axis=1)
        rejected += int(np.count_nonzero((count + 1) / (flips + 1) < alpha))
        done += rows
    return rejected / trials


def randomization_detectable(
    pool: np.ndarray, n: int, start: float, *, power: float = 0.8, steps: int = 14, **sim: Any
) -> float | None:
    """The effect at which the simulated power reaches ``power`` (bisection from ``start``)."""
    if n < 2 or start <= 0:
        return None
    lo, hi = 0.0, start
    for _ in range(12):
        if randomization_power(pool, hi, n, **sim) >= power:
            break
        lo, hi = hi, hi * 2
    else:
        return None
    for _ in range(steps):
        mid = (lo + hi) / 2
        if randomization_power(pool, mid, n, **sim) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def randomization_queries_needed(
    pool: np.ndarray, effect: float, start: int, *, power: float = 0.8, **sim: Any
) -> int | None:
    """The smallest n whose simulated power reaches ``power`` (to 2%; None past MAX_SIMULATED)."""
    if effect <= 0 or start < 1:
        return None

    def enough(n: int) -> bool:
        return randomization_power(pool, effect, n, **sim) >= power

    hi = max(2, min(start, MAX_SIMULATED))
    if enough(hi):
        lo = 1
    else:
        lo = hi
        while True:
            if hi >= MAX_SIMULATED:
                return None
            hi = min(MAX_SIMULATED, hi * 2)
            if enough(hi):
                break
            lo = hi
    while hi - lo > max(1, hi // 50):
        mid = (lo + hi) // 2
        if mid >= 2 and enough(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- per metric ---------------------------------------------------------------------------------


def power_for(
    a: Any,
    b: Any | None = None,
    metrics: Sequence[str] | str | None = None,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    effect: float | None = None,
    trials: int = 1000,
    flips: int = 500,
    seed: int = 0,
) -> list[MetricPower]:
    """Power per metric for runs ``a`` and ``b`` (``ScoreTable``s or ``{query: {metric: v}}``).

    With ``b`` None, only ``a``'s spread is known (see the module doc).
    """
    from goldmine.eval.compare import _pair, _pick_metrics

    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1, got {alpha}")
    if not 0 < power < 1:
        raise InputError(f"--power must be between 0 and 1, got {power}")
    if effect is not None and effect <= 0:
        raise InputError(f"--effect must be above 0, got {effect}")
    if trials < 1 or flips < 1:
        raise InputError("--trials and --flips must be at least 1")
    a = as_table(a, "A")
    b_table = as_table(b, "B") if b is not None else None
    names = _pick_metrics(a, b_table or a, metrics)
    common = [q for q in a.scores if b_table is None or q in b_table.scores]
    if not common:
        raise InputError(f"{a.label} and {b_table.label} have no query in common: nothing to pair")
    sim = {"trials": trials, "flips": flips, "alpha": alpha, "seed": seed}
    rng = np.random.default_rng(seed)
    results = []
    for name in names:
        _, qids, va, vb = _pair(name, common, a, b_table or a)
        n = len(qids)
        if b_table is not None:
            pool = vb - va
            sd = float(pool.std(ddof=1)) if n > 1 else 0.0
            basis = "paired deltas"
            mean: float | None = float(pool.mean()) if n else 0.0
        else:
            sd, mean = 0.0, None
        if sd <= 1e-12 and n > 1:
            sd = math.sqrt(float(va.var(ddof=1) + vb.var(ddof=1)))
            pool = va - vb[rng.permutation(n)]
            basis = (
                "one run: the deltas of two uncorrelated systems with its spread, sqrt(2 var)"
                if b_table is None
                else "score spread, sqrt(var_A + var_B) (no query changed)"
            )
        mde = ttest_detectable(sd, n, alpha, power)
        needed = ttest_queries_needed(sd, effect, alpha, power) if effect else None
        rand: dict[str, Any] = {"method": RANDOMIZATION_METHOD, "trials": trials, "flips": flips}
        rand["seed"] = seed
        rand["detectable_effect"] = (
            randomization_detectable(pool, n, 2 * mde, power=power, **sim) if mde else None
        )
        if effect:
            rand["queries_needed"] = (
                randomization_queries_needed(pool, effect, needed, power=power, **sim)
                if needed
                else None
            )
            rand["power_at_effect"] = randomization_power(pool, effect, n, **sim) if sd else None
        results.append(
            MetricPower(
                metric=name,
                n_queries=n,
                mean_delta=mean,
                sd_delta=sd,
                basis=basis if n > 1 else "unknown: fewer than two queries",
                alpha=alpha,
                power=power,
                effect=effect,
                detectable_effect=mde,
                queries_needed=needed,
                power_at_effect=ttest_power(sd, n, effect, alpha) if effect else None,
                randomization=rand,
            )
        )
    return results


def power_refs(
    refs: Sequence[str],
    *,
    gold: str | None = None,
    metrics: Sequence[str] | str | None = None,
    store: Store | None = None,
    rel_level: int = 1,
    **settings: Any,
) -> PowerReport:
    """``goldmine eval power --runs A [B]``: resolve the runs as ``eval compare`` does."""

    if not 1 <= len(refs) <= 2:
        raise InputError(f"--runs takes one or two runs, got {len(refs)}")
    sides = resolve_refs(list(refs), gold=gold, metrics=metrics, store=store, rel_level=rel_level)
    b = sides[1] if len(sides) > 1 else None
    report = PowerReport(
        labels=[s.label for s in sides],
        sources=[s.source for s in sides],
        metrics=power_for(sides[0], b, metrics, **settings),
    )
    if b is not None:
        only = len(set(sides[0].scores) ^ set(b.scores))
        if only:
            report.notes.append(
                f"{only} queries were scored on one side only and are left out (paired on the "
                "queries both have)"
            )
    return report


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: int | None, simulated: bool = False) -> str:
    if value is None:
        return f"> {MAX_SIMULATED:,}" if simulated else "-"
    return f"{value:,}"


def format_power(report: PowerReport) -> list[str]:
    lines = [
        f"{tag}  {label}  ({source})" if source else f"{tag}  {label}"
        for tag, label, source in zip("AB", report.labels, report.sources, strict=False)
    ]
    first = report.metrics[0] if report.metrics else None
    if first is None:
        return lines
    effect = first.effect
    pairing = "paired" if len(report.labels) == 2 else "one run"
    lines.append(
        f"{pairing} on {first.n_queries} queries; alpha {first.alpha:g} (two-sided), "
        f"power {first.power:.0%}" + (f", effect {effect:g}" if effect else "")
    )
    lines.append("")
    width = max(len("metric"), *(len(m.metric) for m in report.metrics))
    header = f"{'metric':<{width}}  {'n':>5}  {'sd(delta)':>9}  {'detectable':>10}  {'(rand.)':>8}"
    if effect:
        header += f"  {'needed':>8}  {'(rand.)':>8}  {'power now':>9}"
    lines.append(header)
    for m in report.metrics:
        row = (
            f"{m.metric:<{width}}  {m.n_queries:>5}  {m.sd_delta:>9.4f}  "
            f"{_num(m.detectable_effect):>10}  {_num(m.randomization['detectable_effect']):>8}"
        )
        if effect:
            rand_needed = m.randomization.get("queries_needed")
            simulated = m.queries_needed is not None
            row += (
                f"  {_count(m.queries_needed):>8}  {_count(rand_needed, simulated):>8}"
                f"  {_num(m.power_at_effect, 2):>9}"
            )
        lines.append(row)
    lines.append("")
    lines.append(f"detectable, needed: {TTEST_METHOD}")
    lines.append(
        f"(rand.): {RANDOMIZATION_METHOD}; {first.randomization['trials']:,} trials x "
        f"{first.randomization['flips']:,} sign flips, seed {first.randomization['seed']}"
    )
    bases = dict.fromkeys(m.basis for m in report.metrics)
    lines.extend(f"sd(delta) from: {basis}" for basis in bases)
    lines.extend(f"note: {note}" for note in report.notes)
    for m in report.metrics:
        if m.detectable_effect is not None and m.effect is None:
            lines.append(
                f"at {m.n_queries} queries a change under {m.detectable_effect:.2f} {m.metric} "
                "cannot be seen; --effect X gives the queries needed for X"
            )
            break
    return lines
