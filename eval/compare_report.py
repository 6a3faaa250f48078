"""``eval compare`` for people: the comparison as plain lines, and what "inside the noise" means."""

from __future__ import annotations

from goldmine.eval.compare import Comparison, MetricComparison
from goldmine.eval.stats import POWER
from goldmine.output import count


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
        lines.append(f"{m.metric}: B won {count(m.wins, 'query')}, lost {m.losses}, tied {m.ties}")
        for tag, queries in (("won ", m.won), ("lost", m.lost)):
            for q in queries:
                text = f"  {q.query}" if q.query and q.query != q.query_id else ""
                lines.append(
                    f"  {tag}  {q.query_id}  {q.a:.3f} -> {q.b:.3f} ({q.delta:+.3f}){text}"
                )
    return lines
