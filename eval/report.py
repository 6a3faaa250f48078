"""How eval results read for a person: one line per metric, rounded like the seed lesson.

The lines are plain print() (rich's start-up is not worth it for unstyled text), and the metric
lines are plain ``name value`` (``recall@1 0.33``, ``MRR 0.56``) so they can be read
and grepped alike; the counts that qualify them (queries missing from the run, queries ignored,
no-answer queries, repeated ids) follow, each on its own line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from goldmine.eval.history import gold_changes, metric_value, run_labels
from goldmine.eval.scoring import duplicates_warning
from goldmine.output import Col, console, count, print_whole, table

if TYPE_CHECKING:
    from pathlib import Path

    from goldmine.eval.result import EvalOutcome


def display_name(name: str) -> str:
    """``mrr`` -> ``MRR``, ``mrr@10`` -> ``MRR@10``; other names as they are."""
    return "MRR" + name[3:] if name.startswith("mrr") else name


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "-"


def print_outcome(outcome: EvalOutcome, *, per_query: bool = False, verbose: bool = False) -> None:
    result = outcome.result
    gold = outcome.gold
    version = f" v{gold.version}" if gold.version is not None else ""
    if gold.source == version.strip():
        version = ""  # a version from the store is its own source
    print(
        f"gold {gold.source}{version}: {count(len(gold.queries), 'query')}, "
        f"{result.n_queries} answerable (sha256 {_short(gold.hash)})"
    )
    print(f"run  {outcome.run_source} ({outcome.run_format}, sha256 {_short(outcome.run_hash)})")
    if result.n_queries:
        for name, value in result.summary.items():
            print(f"{display_name(name)} {value:.2f}")
    else:  # 0.00 read as a retriever that finds nothing
        print(
            "no answerable query (none has a chunk graded relevant at -l "
            f"{result.rel_level}): no average to give; the no-answer queries are below"
        )
    _print_reranker(outcome)
    _print_counts(outcome, verbose)
    if per_query:
        _print_per_query(outcome)
    if outcome.run_id is not None:
        print(f"stored as run {outcome.run_id}" + (f" ({outcome.label})" if outcome.label else ""))


def _print_reranker(outcome: EvalOutcome) -> None:
    r = outcome.reranker
    if not r or not outcome.result.per_query:
        return
    kp, kc = r["k_prompt"], r["k_candidates"]
    print(
        f"k sent to the model {kp}, k from the first stage {kc}: "
        f"recall@{kp} {r['recall_at_prompt']:.2f}, recall@{kc} {r['recall_at_candidates']:.2f}, "
        f"MRR {r['mrr']:.2f}"
    )
    print(
        f"reranker opportunity: {r['opportunity_per_100']:.0f} queries per hundred have their "
        "answer in the candidates but not in the prompt"
    )
    print(f"reading: {r['reading']}")


def _print_counts(outcome: EvalOutcome, verbose: bool = False) -> None:
    result = outcome.result
    if result.missing:
        shown = ", ".join(result.missing[:5]) + (" …" if len(result.missing) > 5 else "")
        print(
            f"{len(result.missing)} gold queries missing from the run scored 0 "
            f"(counted in the averages): {shown}"
        )
    if result.ignored:
        print(f"{len(result.ignored)} run queries have no gold and were ignored")
    if result.n_duplicates:
        print(duplicates_warning(result))
    if result.errors:
        print(
            f"{count(len(result.errors), 'query')} failed to retrieve (scored 0): "
            + ", ".join(list(result.errors)[:5])
        )
    if result.no_answer:
        abstained = sum(r.abstained for r in result.no_answer)
        print(
            f"no-answer queries (left out of the averages): {len(result.no_answer)}, "
            f"abstained on {abstained} ({abstained / len(result.no_answer):.0%})"
            + ("" if verbose else "; each with --verbose or --json")
        )
        for r in result.no_answer if verbose else ():
            verdict = "abstained" if r.abstained else f"returned {r.returned}"
            print(
                f"  {r.query_id}: {verdict}"
                + (f"  {r.query}" if r.query and r.query != r.query_id else "")
            )


def _print_per_query(outcome: EvalOutcome) -> None:
    result = outcome.result
    cols = ["query", *(Col(display_name(n), wrap=True, justify="right") for n in result.summary)]
    rows = [[qid, *(f"{v:.2f}" for v in row.values())] for qid, row in result.per_query.items()]
    console().print(table(cols, rows, plain=True))


def print_runs(runs: list[dict[str, Any]]) -> None:
    """The runs grouped by the gold set they were scored on (named once, above its runs, in the
    order of each gold's newest run): a table with a column per metric where the terminal is wide
    enough, else two lines a run (what it was, then its metrics)."""
    if not runs:
        console().print("no eval runs stored yet (goldmine eval run --gold … --run …)")
        return
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        key = (run["gold_source"], run["gold_version"], run["gold_hash"])
        groups.setdefault(key, []).append(run)
    for n, ((source, version, digest), group) in enumerate(groups.items()):
        name = source if version is None or source == f"v{version}" else f"{source} v{version}"
        count = f"{len(group)} run{'s' if len(group) != 1 else ''}"
        heading = f"gold {name} (sha256 {_short(digest)}): {count}"
        console().print(("\n" if n else "") + heading, soft_wrap=True)
        _print_run_group(group)


_FOLDING_MIN = 12  # the least a label or run column may shrink to before the table gives up


def _print_run_group(group: list[dict[str, Any]]) -> None:
    names = list(dict.fromkeys(k for run in group for k in run["metrics"]))
    head = ["id", "time", "label", "run", "n", *map(display_name, names)]
    rows = [
        [
            str(run["run_id"]),
            run["created_at"].strftime("%Y-%m-%d %H:%M"),
            run["label"] or "",
            run["run_source"],
            str(run["n_queries"]),
            *(f"{run['metrics'][k]:.2f}" if k in run["metrics"] else "" for k in names),
        ]
        for run in group
    ]
    folds = {2, 3}  # label and run fold; numbers never wrap
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    needed = sum(min(w, _FOLDING_MIN) if i in folds else w for i, w in enumerate(widths))
    if needed + 2 * (len(head) - 1) > console().width:
        for run, row in zip(group, rows, strict=True):
            label = f"  {row[2]}" if row[2] else ""
            console().print(f"{row[0]:>3}  {row[1]}{label}  {row[3]}  ({row[4]} queries)")
            console().print(
                "     " + "  ".join(f"{display_name(k)} {v:.2f}" for k, v in run["metrics"].items())
            )
        return
    cols = [
        Col(column, wrap=i in folds, justify="left" if i in folds or column == "time" else "right")
        for i, column in enumerate(head)
    ]
    console().print(table(cols, rows, plain=True))


def print_history(
    path: Path, rows: list[dict[str, str]], names: list[str], fmt: str = "table"
) -> None:

    if not rows:
        print(f"{path}: no runs yet")
        return
    changed = {i for i, _ in gold_changes(rows)}
    header = ["#", "time", "run", "gold", "queries", *names]
    rows_out = []
    for i, (label, row) in enumerate(zip(run_labels(rows), rows, strict=True)):
        gold = (
            f"v{row['gold_version']}"
            if row.get("gold_version")
            else (row.get("gold_hash") or "")[:8]
        )
        values = [metric_value(row.get(m)) for m in names]
        rows_out.append(
            [
                str(i + 1),
                (row.get("time") or "")[:16].replace("T", " "),
                label,
                gold + ("*" if i in changed else ""),
                row.get("n_queries") or "",
                *("-" if v is None else f"{v:.4f}" for v in values),
            ]
        )
    if fmt == "tsv":  # for a script: every column whole, nothing else printed
        for line in [header, *rows_out]:
            print("\t".join(cell.replace("\t", " ") for cell in line))
        return
    cols = [Col(h, justify="left" if j in (1, 2, 3) else "right") for j, h in enumerate(header)]
    print_whole(table(cols, rows_out, plain=True))
    print(f"{len(rows)} runs in {path}")
    if changed:
        print(
            "* the gold set changed from the row before: means across it are over different "
            "queries (goldmine eval compare pairs two runs on their common queries)"
        )
