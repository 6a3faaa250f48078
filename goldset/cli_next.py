"""``goldmine gold next``: what to label next, to settle a comparison or to grow the set."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldmine.errors import InputError
from goldmine.goldset.items import default_user
from goldmine.goldset.next import CLUSTER_METHOD, METHOD, cluster_information, plan_for_compare
from goldmine.options import DbOption, JsonOption, db_flag, store_flag
from goldmine.output import clip, count, print_json
from goldmine.readers import read_run
from goldmine.store import open_store
from goldmine.text import printable


def next_(
    ctx: typer.Context,
    for_compare: Annotated[
        list[Path] | None,
        typer.Option(
            "--for-compare",
            help="Two run files (--for-compare a.trec b.trec): the unjudged pairs whose labels "
            "would most change their comparison, queued for review in that order.",
            dir_okay=False,
        ),
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", help="Pairs to propose (with --for-compare).", min=1)
    ] = 20,
    k: Annotated[int, typer.Option("--k", "-k", help="The cut-off of DCG@k.", min=1)] = 10,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list the pairs; queue nothing.")
    ] = False,
    top: Annotated[
        int, typer.Option("--top", help="Uncovered clusters to list (without --for-compare).")
    ] = 20,
    by: Annotated[str | None, typer.Option("--by", help="Who queues them.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """What to label next: pairs that settle a comparison, or the uncovered clusters worth most."""

    runs = [*(for_compare or []), *(Path(a) for a in ctx.args)]
    if not runs:
        _clusters(db, top, as_json)
        return
    if len(runs) != 2:
        raise InputError(f"--for-compare takes two run files, got {len(runs)}")

    for path in runs:
        if not path.is_file():
            raise InputError(
                f"{path}: gold next reads run files (a stored run keeps only its scores; "
                "`eval run --save-run FILE` writes what a retriever returned)"
            )
    plan = plan_for_compare(
        store_flag(db), read_run(runs[0]), read_run(runs[1]), k=k, budget=budget, queue=not dry_run,
        by=default_user(by),
    )  # fmt: skip
    if as_json:
        print_json(plan.to_json())
        return
    _print_plan(plan)


def _print_plan(plan) -> None:

    lo, hi = plan.bounds
    print(f"A  {plan.label_a}\nB  {plan.label_b}")
    print(
        f"{count(plan.n_queries, 'query')} in both runs and the gold set; "
        f"{plan.n_unjudged} unjudged "
        f"pairs could change DCG@{plan.k} (B - A)"
    )
    print(
        f"mean DCG@{plan.k} delta: {plan.known:+.4f} from the judged chunks, somewhere in "
        f"[{lo:+.4f}, {hi:+.4f}] whatever the unjudged are; "
        f"judging these {len(plan.pairs)} leaves a width of {plan.width_after:.4f}"
    )
    print(f"weights: {METHOD}\n")
    print(f"{'#':>3}  {'weight':>6}  {'A':>4}  {'B':>4}  query  chunk")
    for i, p in enumerate(plan.pairs, 1):
        ranks = ["-" if r is None else str(r) for r in (p.rank_a, p.rank_b)]
        text = f"  {clip(p.query)}" if p.query else ""
        print(printable(f"{i:>3}  {p.weight:>6.4f}  {ranks[0]:>4}  {ranks[1]:>4}  "
                        f"{p.query_id}{text}  {p.chunk_id}"))  # fmt: skip
    for note in plan.notes:
        print(f"note: {note}")
    if plan.queued and plan.queued["unchanged"]:
        print("already queued for review as proposed: nothing written (goldmine gold review)")
    elif plan.queued:
        print(
            f"queued {plan.queued['pairs']} pairs on {plan.queued['items']} items for review, "
            "in this order: goldmine gold review"
        )
    elif plan.pairs:
        print("nothing queued (--dry-run)")


def _clusters(db, top: int, as_json: bool) -> None:

    with open_store(db_flag(db), create=False) as con:
        rows = cluster_information(con, top)
    if as_json:
        print_json({"method": CLUSTER_METHOD, "clusters": rows})
        return
    print(f"uncovered clusters, most expected information first ({CLUSTER_METHOD})\n")
    print(f"{'cluster':>7}  {'info':>8}  {'volume':>6}  {'failure':>7}  {'novelty':>7}  label")
    for r in rows:
        print(
            f"{r['cluster_id']:>7}  {r['information']:>8.2f}  {r['volume']:>6}  "
            f"{r['failure_rate']:>7.2f}  {r['novelty']:>7.2f}  {printable(clip(r['label']))}"
            + ("  (in review: its item waits)" if r["coverage"] == "in review" else "")
        )
    if not rows:
        print("every cluster is covered by a verified or published gold item")
    else:
        print("\nadd one: goldmine gold add-query --cluster ID")
