"""``goldmine gold draft --from clicks``: a click model's grades as drafts (goldset.clickdraft)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from goldmine.output import console, count, info, print_json, table

if TYPE_CHECKING:
    from goldmine.store import Store

ClickModelOption = Annotated[
    str,
    typer.Option(
        "--click-model", help="--from clicks: pbm (position-based) or dbn (dynamic Bayesian)."
    ),
]
MinShownOption = Annotated[
    int,
    typer.Option(
        "--min-shown", help="--from clicks: draft only pairs shown this often or more.", min=1
    ),
]
ThresholdsOption = Annotated[
    str,
    typer.Option(
        "--thresholds",
        help="--from clicks: fixed (2 at 0.5, 1 at 0.2), fit (on people's labels), or auto "
        "(fitted when that agrees better out of fold).",
    ),
]
MinGradeOption = Annotated[
    int, typer.Option("--min-grade", help="--from clicks: draft pairs graded this or more.")
]

_NAMES = {"pbm": "PBM", "dbn": "DBN", "clicked": "clicked = relevant", "ctr": "click-through rate"}


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _with_interval(value: float | None, ci: list[float] | None) -> str:
    """A figure with its 95% interval over queries: alone, an AUC of 0.30 on 41 pairs or a kappa
    of 0.000 hides whether it could be chance."""
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" ({ci[0]:.2f} to {ci[1]:.2f})" if ci else " (no interval)")


def draft_clicks(
    store: Store,
    *,
    model: str,
    min_shown: int,
    min_grade: int,
    depth: int,
    thresholds: str,
    as_json: bool,
) -> None:
    from goldmine.goldset.clickdraft import draft_from_clicks

    result = draft_from_clicks(
        store, model, min_shown=min_shown, min_grade=min_grade, depth=depth, thresholds=thresholds
    )
    if as_json:
        print_json(result.to_json())
        return
    t = result.thresholds
    info(
        f"drafted {count(result.items, 'query')} from clicks ({_NAMES[model]} over "
        f"{result.n_events:,} "
        f"events of {count(result.n_queries, 'gold query')}, {result.iterations} EM iterations): "
        f"{result.drafts} candidate chunks, never gold until reviewed"
    )
    info(f"grades: 2 at score >= {t['high']:.3g}, 1 at >= {t['low']:.3g}; {t['why']}")
    left = [
        (result.skipped_decided, "on verified or rejected items"),
        (result.skipped_labelled, "already labelled by a person"),
        (result.missing_chunks, "not in the current corpus snapshot"),
    ]
    if any(n for n, _ in left):
        info("left alone: " + ", ".join(f"{n} pairs {why}" for n, why in left if n))
    if result.unchanged:
        info(f"{count(result.unchanged, 'query')} unchanged: their proposals are the drafts stored")
    if result.kept:
        info(
            f"{result.kept} click drafts of earlier runs kept as they were: this run does not "
            f"score them (shown fewer than {t['min_shown']} times)"
        )
    if result.restored:
        restored = count(result.restored, "query")
        info(f"{restored} drafted with nothing to review went back to candidate")
    if result.agreement:
        _agreement(result)
    else:
        info("no labelled pair is scored by the model yet: no agreement to report")


def _agreement(result: Any) -> None:
    n = next(iter(result.agreement.values()))["n_pairs"]
    shown = result.thresholds["min_shown"]
    rows = [
        [
            _NAMES.get(name, name),
            _with_interval(a["auc"], a.get("auc_ci95")),
            _with_interval(a["weighted_kappa"], a.get("weighted_kappa_ci95")),
            _num(a["precision"]),
            _num(a["recall"]),
            a.get("reading", ""),
        ]
        for name, a in result.agreement.items()
    ]
    title = f"agreement with people's labels on {n} pairs shown {shown}x or more (fixed thresholds)"
    columns = [
        "signal", "AUC (95% interval)", "weighted kappa (95%)", "precision", "recall", "reading"
    ]  # fmt: skip
    console().print(table(columns, rows, title=title))
    if result.cross_validated:
        cv = result.cross_validated
        info(
            "thresholds fitted on the other folds (5 folds by query), weighted kappa out of fold: "
            + "; ".join(
                f"{_NAMES.get(k, k)} {_num(v['fitted_kappa'])} (fixed {_num(v['fixed_kappa'])})"
                for k, v in cv.items()
            )
        )
