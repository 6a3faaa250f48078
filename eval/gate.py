"""The CI gate of ``goldmine eval run``: fail the step on a floor or on a real regression.

``--fail-under recall@5=0.70`` is a floor on a mean. ``--fail-if-worse-than RUN`` fails only when
``compare`` calls the new run *worse* than RUN (its Holm-corrected randomization test under alpha),
not on any drop: on fifty queries a drop of a point is usually noise, and a gate that fails on
noise gets switched off.

Nothing here imports numpy at module level: ``eval run`` without a gate stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldmine.errors import GoldmineError, InputError
from goldmine.eval.sides import ScoreTable, resolve_side, stored_side
from goldmine.metrics import parse_metric

if TYPE_CHECKING:
    import duckdb

    from goldmine.eval.compare import Comparison
    from goldmine.eval.result import EvalOutcome
    from goldmine.store import Store


def parse_fail_under(items: Iterable[str] | str | None) -> dict[str, float]:
    """``["recall@5=0.70", "mrr=0.5"]`` (or comma-separated) -> ``{"recall@5": 0.7, ...}``.

    Metric names are normalised as ``--metrics`` normalises them (``P_5`` -> ``precision@5``).
    """

    if items is None:
        return {}
    if isinstance(items, str):
        items = [items]
    thresholds: dict[str, float] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise InputError(
                    f"--fail-under expects METRIC=VALUE, e.g. recall@5=0.70; got {part.strip()!r}"
                )
            try:
                floor = float(value)
            except ValueError:
                raise InputError(
                    f"--fail-under {part.strip()!r}: {value.strip()!r} is not a number"
                ) from None
            thresholds[parse_metric(name).name] = floor
    return thresholds


def check_fail_under(summary: Mapping[str, float], thresholds: Mapping[str, float]) -> list[str]:
    """One line per metric under its floor (or not computed); empty when the run passes."""
    failures = []
    for name, floor in thresholds.items():
        value = summary.get(name)
        if value is None:
            failures.append(
                f"--fail-under {name}={floor:g}: {name} was not computed (add it to --metrics)"
            )
        elif value < floor:
            failures.append(f"{name} {value:.4f} is under the --fail-under floor {floor:g}")
    return failures


def worse_than(
    outcome_scores: Any,
    ref: str,
    con: duckdb.DuckDBPyConnection | None,
    *,
    gold: Any = None,
    metrics: Iterable[str] | None = None,
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
) -> str | None:
    """One line when the new run is *worse* than ``ref`` by compare's verdict, else None.

    ``outcome_scores`` is the new run's per-query scores (``{query: {metric: value}}``), an
    ``EvalOutcome`` or a ``ScoreTable``; ``ref`` is what ``compare`` accepts as a side (a stored
    run id or label, a history row, or a run file scored against ``gold``). The metrics compared
    are those both have (or ``metrics``), Holm-corrected.
    """
    from goldmine.eval.compare import compare_runs, levels_differ

    new = _as_scores(outcome_scores)
    names = list(metrics) if metrics is not None else None
    level = new.rel_level if new.rel_level is not None else 1  # a run file scored as this one
    reference = resolve_side(ref, con, gold, metrics=names or new.metric_names, rel_level=level)
    if con is not None and new.run_id is not None and reference.run_id == new.run_id:
        reference = _earlier_run(con, ref, new.run_id)
    if levels_differ(reference, new):  # the same run at -l 2 is "worse" than itself at -l 1
        raise InputError(
            f"--fail-if-worse-than {ref}: {reference.label} was scored at -l "
            f"{reference.rel_level} and this run at -l {new.rel_level}; gate against a run scored "
            "at the same level"
        )
    comparison = compare_runs(
        reference, new, names, permutations=permutations, seed=seed, alpha=alpha
    )
    line = worse_line(comparison)
    if line and reference.gold_hash and new.gold_hash and reference.gold_hash != new.gold_hash:
        line += " (scored against another gold set: a changed judgment counts as a change)"
    return line


def worse_line(comparison: Comparison) -> str | None:
    """The metrics on which B is *worse* than A by the compare's verdict, as one line (each with
    its means, delta, 95% interval and p), or None when none is."""
    worse = [m for m in comparison.metrics if m.verdict == "worse"]
    if not worse:
        return None
    parts = [
        f"{m.metric} {m.mean_b:.4f} vs {m.mean_a:.4f} (delta {m.delta:+.4f}, 95% CI "
        f"[{m.ci[0]:+.4f}, {m.ci[1]:+.4f}], p {m.p_value:.4g}"
        + (" Holm" if comparison.correction else "")
        + ")"
        for m in worse
    ]
    return (
        f"worse than {comparison.label_a} on {comparison.n_queries} common queries: "
        + "; ".join(parts)
    )


def _earlier_run(con: duckdb.DuckDBPyConnection, ref: str, run_id: int) -> Any:
    """``--fail-if-worse-than main`` from a run labelled ``main``: the label's latest run is
    this one, just stored, so the reference is the one before it."""

    earlier = con.execute(
        "SELECT max(run_id) FROM eval_runs WHERE label = ? AND run_id < ?", [ref, run_id]
    ).fetchall()[0][0]
    if earlier is None:
        raise InputError(
            f"--fail-if-worse-than {ref}: that is this run itself (run {run_id}) and no earlier "
            "run has that label; name an earlier run"
        )
    return stored_side(con, str(earlier))


def _as_scores(value: Any) -> Any:

    if isinstance(value, ScoreTable):
        return value
    result = getattr(value, "result", None)
    if result is not None:  # an EvalOutcome
        label = getattr(value, "label", None) or "this run"
        texts = {q: g.query for q, g in value.gold.queries.items() if g.query}
        return ScoreTable(
            dict(result.per_query),
            label=label,
            texts=texts,
            gold_hash=value.gold.hash,
            run_id=getattr(value, "run_id", None),
            rel_level=result.rel_level,
        )
    if isinstance(value, Mapping):
        return ScoreTable({str(q): dict(v) for q, v in value.items()}, label="this run")
    raise TypeError(f"worse_than: per-query scores expected, got {type(value).__name__}")


class GateFailed(GoldmineError):
    """A run under a floor or worse than its reference: exit 1 (bad input stays 2), one
    ``gate failed: …`` line per failure."""

    label = "gate failed"

    def __init__(self, failures: list[str]) -> None:
        super().__init__(f"\n{self.label}: ".join(failures))
        self.failures = failures


@dataclass
class Gate:
    """What ``eval run`` was asked to enforce; ``enforce`` raises GateFailed naming each failure."""

    floors: dict[str, float] = field(default_factory=dict)
    reference: str | None = None

    @classmethod
    def parse(cls, fail_under: list[str], reference: str | None) -> Gate:
        return cls(parse_fail_under(fail_under), reference)

    def metrics(self) -> list[str]:
        """Metrics the gate needs scored beside the ones asked for."""
        return list(self.floors)

    def failures(self, outcome: EvalOutcome, store: Store | None) -> list[str]:
        lines = check_fail_under(outcome.result.summary, self.floors)
        if self.reference is not None:
            from goldmine.store import as_store

            with as_store(store).open(create=False) as con:
                worse = worse_than(outcome, self.reference, con, gold=outcome.gold)
            if worse:
                lines.append(worse)
        return lines

    def enforce(self, outcome: EvalOutcome, store: Store | None) -> None:
        lines = self.failures(outcome, store)
        if lines:
            raise GateFailed(lines)
