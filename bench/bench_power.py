"""Benchmark: does ``eval power``'s predicted number of queries give the promised power?

    .venv/bin/python bench/bench_power.py [--trials 1000]

Three synthetic pairs of systems, each a population of 5,000 queries with a known mean change
(B - A) in a metric of a different shape:

- ``ndcg``: a continuous score in [0, 1]: each query has a difficulty, each system adds its own
  noise, B is better by a shift (clipped to [0, 1]);
- ``recall@5``: a hit or a miss per query and system, B's hit rate a little higher: deltas are
  -1, 0 or 1;
- ``mrr``: the rank of the first answer drawn per query and system (geometric), B's rank a
  little better: skewed deltas, most 0.

For each, ``goldmine.eval.power.power_for`` (what ``eval power --effect`` runs) is given the
population's per-query scores and the known effect, and predicts the queries needed for power
0.80 at alpha 0.05 by the paired t-test and by the randomization test. Then ``--trials`` samples
of that many queries are drawn from the population and tested, the t-test with scipy's
``ttest_rel`` and the randomization test with ``eval compare``'s own sign-flip test (1,000
flips): the share rejected is the power achieved, against the 0.80 promised (target: within 5
points). The same for the detectable effect: at 50 queries, a change of the predicted size (the
deltas shifted to that mean) is detected that often.

A reality check, not a target: a team has a pilot of 50 queries, not the population. Twenty
50-query pilots each predict n by the t-test from their own deltas; the median achieved power
at those sizes, and the spread, are printed too.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

POPULATION = 5_000
PROMISED = 0.80
ALPHA = 0.05


def population(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = POPULATION
    if kind == "ndcg":
        q = rng.beta(2, 3, n)
        a = np.clip(q + rng.normal(0, 0.12, n), 0, 1)
        b = np.clip(q + 0.025 + rng.normal(0, 0.12, n), 0, 1)
    elif kind == "recall@5":
        q = rng.beta(2, 2, n)
        a = (rng.random(n) < q).astype(float)
        b = (rng.random(n) < np.minimum(1, q + 0.05)).astype(float)
    else:  # mrr
        p = rng.beta(2, 5, n)
        a = 1.0 / rng.geometric(p)
        b = 1.0 / rng.geometric(np.minimum(1, p * 1.15))
    return a, b


def achieved(
    deltas: np.ndarray, n: int, trials: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Share of ``trials`` samples of ``n`` deltas rejected by the t-test and the sign flips."""
    from scipy.stats import ttest_1samp

    from goldmine.eval.stats import sign_flip_test

    t_rej = r_rej = 0
    for trial in range(trials):
        x = deltas[rng.integers(0, deltas.size, n)]
        if x.std() > 0 and ttest_1samp(x, 0).pvalue < ALPHA:
            t_rej += 1
        if sign_flip_test(x, permutations=1000, seed=trial)[0] < ALPHA:
            r_rej += 1
    return t_rej / trials, r_rej / trials


def _mark(power: float) -> str:
    return "within" if abs(power - PROMISED) <= 0.05 else "OUTSIDE"


def main() -> None:
    from goldmine.eval.power import power_for, ttest_queries_needed

    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(18)
    print(
        f"promised power {PROMISED:.2f} at alpha {ALPHA}; {args.trials} trials each; "
        "target: achieved within +-0.05"
    )
    for kind in ("ndcg", "recall@5", "mrr"):
        a, b = population(kind, rng)
        deltas = b - a
        effect = float(deltas.mean())
        table_a = {f"q{i}": {kind: float(v)} for i, v in enumerate(a)}
        table_b = {f"q{i}": {kind: float(v)} for i, v in enumerate(b)}
        started = time.perf_counter()
        (mp,) = power_for(table_a, table_b, [kind], effect=effect, trials=1000, flips=500)
        took = time.perf_counter() - started
        n_t, n_r = mp.queries_needed, mp.randomization["queries_needed"]
        print(
            f"\n{kind}: true effect {effect:.4f}, sd(delta) {mp.sd_delta:.4f} "
            f"(power_for {took:.1f} s over {POPULATION:,} queries)"
        )
        pt, _ = achieved(deltas, n_t, args.trials, rng)
        _, pr = achieved(deltas, n_r, args.trials, rng)
        print(
            f"  queries needed: t-test {n_t} -> power {pt:.3f} ({_mark(pt)}); "
            f"randomization {n_r} -> power {pr:.3f} ({_mark(pr)}); ratio n_r / n_t "
            f"{n_r / n_t:.2f}"
        )
        # The detectable effect at 50 queries, as a location shift of the deltas.
        (m50,) = power_for(
            {q: table_a[q] for q in list(table_a)[:50]},
            {q: table_b[q] for q in list(table_b)[:50]},
            [kind],
        )
        pool50 = deltas[:50]
        for label, mde in (
            ("t-test", m50.detectable_effect),
            ("randomization", m50.randomization["detectable_effect"]),
        ):
            shifted = pool50 - pool50.mean() + mde
            p_t, p_r = achieved(shifted, 50, args.trials, rng)
            p = p_t if label == "t-test" else p_r
            print(f"  detectable at 50 queries ({label}): {mde:.4f} -> power {p:.3f} ({_mark(p)})")
        # Pilots of 50 queries predicting n from their own deltas (the t-test).
        powers, sizes = [], []
        for _ in range(20):
            pick = rng.choice(deltas.size, 50, replace=False)
            n_pilot = ttest_queries_needed(float(deltas[pick].std(ddof=1)), effect)
            sizes.append(n_pilot)
            powers.append(achieved(deltas, n_pilot, max(200, args.trials // 5), rng)[0])
        print(
            f"  20 pilots of 50 queries: n median {statistics.median(sizes):.0f} "
            f"[{min(sizes)}-{max(sizes)}] -> power median {statistics.median(powers):.3f} "
            f"[{min(powers):.3f}-{max(powers):.3f}]"
        )


if __name__ == "__main__":
    main()
