"""``goldmine eval power``: the detectable effect and the queries needed, per metric.

Added to ``goldmine.eval.options.eval_app`` on import; numpy and statsmodels are imported inside the
command.
"""

from __future__ import annotations

from typing import Annotated

import typer

from goldmine.eval.options import RunRelLevelOption, SharedMetricsOption, eval_app
from goldmine.options import DbOption, JsonOption, store_flag


@eval_app.command("power", context_settings={"allow_extra_args": True})
def power_command(
    ctx: typer.Context,
    runs: Annotated[
        list[str],
        typer.Option(
            "--runs",
            help="One or two runs: stored runs (id or label), run files, or history:FILE:ROW. "
            "Write them after one flag (--runs a b). With one, its spread stands in for the "
            "deltas'.",
        ),
    ],
    gold: Annotated[
        str | None,
        typer.Option("--gold", "-g", help="Gold set to score run files against (file or v3)."),
    ] = None,
    metrics: SharedMetricsOption = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level (two-sided).")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="The power asked for.")] = 0.8,
    effect: Annotated[
        float | None,
        typer.Option("--effect", help="A true change to detect: report the queries it needs."),
    ] = None,
    trials: Annotated[
        int, typer.Option("--trials", help="Simulated samples per randomization figure.", min=1)
    ] = 1000,
    flips: Annotated[
        int, typer.Option("--flips", help="Sign flips per simulated randomization test.", min=1)
    ] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulation.")] = 0,
    rel_level: RunRelLevelOption = 1,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """How small a change these queries can see, and how many queries a given change needs."""
    from goldmine.eval.power import format_power, power_refs

    report = power_refs(
        [*runs, *ctx.args],  # --runs a b: click leaves b among the extra arguments
        gold=gold,
        metrics=metrics,
        store=store_flag(db),
        rel_level=rel_level,
        alpha=alpha,
        power=power,
        effect=effect,
        trials=trials,
        flips=flips,
        seed=seed,
    )
    if json_output:
        from goldmine.output import print_json

        print_json(report.to_json())
        return
    print("\n".join(format_power(report)))
