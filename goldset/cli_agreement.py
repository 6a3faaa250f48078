"""Printing ``gold agreement``: any two sources (``--between A B``) and the default report of
every pair of raters, in one layout (goldset/cli.py hands over to these).

A figure is printed with what it can be taken to say beside it (``kappa.reading``): "n=4: too
few to say" under ten units, "no better than chance" when its interval holds chance, and why
an interval is missing, so nobody reads a bare 0.00 as a finding.
"""

from __future__ import annotations

from math import ceil
from pathlib import Path
from typing import Any

from goldmine.errors import InputError
from goldmine.options import db_flag
from goldmine.output import print_json
from goldmine.store import open_store


def agreement_between(
    db: Path | None,
    specs: tuple[str, str],
    runs: list[Path],
    metric: str,
    relevant_from: int,
    as_json: bool,
) -> None:
    """``gold agreement --between A B``: one report per pair the two specs name (a ``*``
    names every source of its kind; ``--json`` then prints a list of reports)."""
    from goldmine.goldset.sources import between
    from goldmine.metrics import parse_metric
    from goldmine.readers import read_run

    m = parse_metric(metric)
    with open_store(db_flag(db), create=False) as con:
        _no_stored_runs(con, runs)
        read = [read_run(path) for path in runs]
        reports = between(con, *specs, relevant_from=relevant_from, runs=read, metric=m)
    if as_json:  # a list exactly when a * was given, so a script knows the shape beforehand
        print_json(reports if any(spec.endswith(":*") for spec in specs) else reports[0])
        return
    for report in reports:
        print_report(report, relevant_from)


def _no_stored_runs(con, runs: list[Path]) -> None:
    """A --runs value naming a stored eval run rather than a file: the store keeps only that
    run's scores, never its ranking, so it cannot be scored under other judgments."""
    for path in runs:
        if path.exists():
            continue
        stored = con.execute(
            "SELECT count(*) FROM eval_runs WHERE label = ? OR run_source = ?", [str(path)] * 2
        ).fetchall()[0][0]
        if stored:
            raise InputError(
                f"{path} is a stored eval run, which keeps only its scores: write its ranking "
                f"with `goldmine eval run … --save-run FILE` and give --runs FILE"
            )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _ci(interval: list[float] | None) -> str:
    return "" if not interval else f" [{interval[0]:.2f}, {interval[1]:.2f}]"


def figure(
    name: str, value: float | None, ci: list[float] | None, n: int, *,
    chance: float | None = 0.0, queries: int | None = None,
) -> str:  # fmt: skip
    """``name value [low, high]``, and what it can be taken to say when that needs saying."""
    from goldmine.goldset.kappa import reading

    note = reading(value, ci, n, chance=chance, queries=queries)
    return f"{name} {_fmt(value)}{_ci(ci)}" + (f" ({note})" if note else "")


def print_report(r: dict[str, Any], relevant_from: int = 1) -> None:
    a, b = r["sources"]
    if not r["n_units"]:
        print(f"{a} / {b}: no (query, chunk) graded by both, nothing to compare")
        return
    print(f"{a} (rows) / {b} (columns): {r['n_queries']} queries, {r['n_units']} units")
    print_figures(r, relevant_from)
    print_systems(r.get("systems"), a, b)


def print_figures(r: dict[str, Any], relevant_from: int = 1) -> None:
    """The unit figures, the confusion matrix and the query-level decision of one pair."""
    n, q = r["n_units"], r["n_queries"]
    print(
        "  "
        + "; ".join([
            figure("weighted kappa", r["kappa_weighted"], r["kappa_weighted_ci95"], n, queries=q),
            figure(f"relevant-or-not kappa (grade {relevant_from}+)", r["kappa_relevant"],
                   r["kappa_relevant_ci95"], n, queries=q),
            figure("raw agreement", r["observed_agreement"],
                   r["confusion"].get("observed_agreement_ci95"), n, chance=None, queries=q),
        ])
    )  # fmt: skip
    print_confusion(r["confusion"])
    ans = r["answerable"]
    one_sided = {0, ans["n"]} & {ans["answerable_a"], ans["answerable_b"]}
    print(
        f"  answerable or not: {ans['n']} queries, both answerable {ans['both_answerable']}, "
        f"both no answer {ans['both_no_answer']}; "
        + (
            "kappa n/a (one side takes every query alike: the decision's agreement cannot "
            "be measured)"
            if one_sided
            else figure("kappa", ans["kappa"], ans["kappa_ci95"], ans["n"])
        )
    )


def print_confusion(c: dict[str, Any]) -> None:
    rows, columns = c["rows"], c["columns"]
    width = len(rows) + 2
    print(f"  {'':>{width}}  {columns}")
    print(f"  {rows:>{width}}" + "".join(f"{g:>6}" for g in c["grades"]))
    for grade, counts in zip(c["grades"], c["counts"], strict=True):
        print(f"  {grade:>{width}}" + "".join(f"{n:>6}" for n in counts))
    shares = "; ".join(
        f"{side} " + ", ".join(f"{g}: {s:.0%}" for g, s in zip(c["grades"], values, strict=True))
        for side, values in c["shares"].items()
    )
    print(f"  each grade's share: {shares}")
    if c["more_lenient"]:
        print(f"  {c['more_lenient']} is the more lenient (higher grades on the same units)")
    else:
        print("  neither side grades higher on the same units")


def print_systems(s: dict[str, Any] | None, a: str, b: str) -> None:
    """Each run's metric under both sources, Kendall's tau and the run that moves the most."""
    if not s:
        return
    swap = s["largest_swap"]
    moved = (
        f"largest swap: {swap['run']}, place {swap['place_a']} under {a}, {swap['place_b']} "
        f"under {b}" if swap["positions"] else "no run changes place"
    )  # fmt: skip
    print(
        f"systems by {s['metric']} over {s['n_queries']} queries, {s['n_runs']} runs: "
        f"Kendall's tau {_fmt(s['kendall_tau'])}; {moved}"
    )
    for run in s["runs"]:
        print(f"  {run['run']}: {a} {run['a']:.4f}, {b} {run['b']:.4f}")


def print_rater_pairs(pairs: list[dict[str, Any]]) -> None:
    """The default report's pairs: today's first line, then the same figures as --between."""
    for pair in pairs:
        a, b = pair["raters"]
        print(f"{a} / {b}: {pair['n_items']} items, {pair['n_pairs']} judged chunks")
        print_figures(pair)


def print_judge_agreement(db: Path | None, model: str, width: float = 0.2) -> None:
    """After ``gold draft --judge llm``: the judge against each person on the candidates both
    graded, or how many double-graded candidates a kappa interval narrower than ``width`` needs."""
    from goldmine.goldset.kappa import units_needed
    from goldmine.goldset.sources import Source, compare, sources
    from goldmine.output import info

    judge = Source("judge", model)
    with open_store(db, create=False) as con:
        people = [s for s in sources(con) if s.startswith("rater:")]
        reports = [compare(con, judge, Source("rater", p.split(":", 1)[1])) for p in people]
        per_item = con.execute(
            "SELECT count(*) / greatest(count(DISTINCT query_id), 1) FROM gold_model_labels"
            " WHERE model = ?",
            [model],
        ).fetchall()[0][0]
    reports = [r for r in reports if r["n_units"]]
    for r in reports:
        ci, n = r["kappa_weighted_ci95"], r["n_units"]
        line = f"the judge against {r['sources'][1]} on {n} candidates both graded: " + figure(
            "weighted kappa", r["kappa_weighted"], ci, n, queries=r["n_queries"]
        )
        if ci is None or ci[1] - ci[0] >= width:
            need = units_needed(width, ci, n)
            line += f"; an interval narrower than {width:g} needs about {need}"
        info(line)
    if not reports:
        need = units_needed(width)
        info(
            "no candidate has both the judge's grade and a person's yet: a kappa interval "
            f"narrower than {width:g} needs at least {need} double-graded candidates (about "
            f"{ceil(need / max(per_item, 1))} items); review some: `goldmine gold review`"
        )
