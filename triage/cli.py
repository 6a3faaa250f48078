"""Command line for the triage stage: ``goldmine triage run|show|export|cluster``.

Each command parses, opens the store for its unit of work, calls one function and prints. Nothing
here imports torch or sentence-transformers: only ``triage run`` embeds, inside the pipeline.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from goldmine import signals
from goldmine.config import settings
from goldmine.errors import InputError
from goldmine.options import DbOption, JsonOption, db_flag, store_flag
from goldmine.output import Col, clip, console, count, fit_table, info, print_json
from goldmine.store import open_store
from goldmine.text import printable
from goldmine.triage import runs
from goldmine.triage.pipeline import run_triage, summary
from goldmine.triage.queries import (
    ShowFilter,
    cluster_detail,
    export_queries,
    no_match,
    ranked_clusters,
    ranked_topics,
)


class Level(StrEnum):
    cluster = "cluster"
    topic = "topic"


triage_app = typer.Typer(
    help="Dedupe and cluster the queries, and put the failures no gold item covers on top.",
    no_args_is_help=True,
)


@triage_app.command("run")
def run_cmd(
    since: Annotated[
        datetime | None,
        typer.Option("--since", help="Only events at or after this date/time.", show_default=False),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Embedding model name or path (default: bundled MiniLM)."),
    ] = None,
    window: Annotated[
        int | None,
        typer.Option(
            "--window",
            help="Seconds within which a similar next query in the same "
            "session counts as a reformulation (default 300; [triage] "
            "reformulation_window).",
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="Embedding backend: torch, onnx or onnx-int8 (default: [embed] backend in "
            "goldmine.toml, else onnx-int8). The ONNX ones are exported from the local weights "
            "on first use and cached.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Normalize, dedupe, embed (only new texts), cluster (ids kept across runs), tag and rank."""

    # The pipeline opens the store for short spans only, so other commands can read meanwhile.
    configured = settings().triage  # goldmine.toml, checked when loaded
    window_s = signals.reformulation_window(window, configured.reformulation_window)
    result = run_triage(
        store_flag(db), since=since, model=model, window_s=window_s, backend=backend,
        no_answer_retriever=configured.no_answer_retriever,
    )  # fmt: skip
    info(summary(result, since))
    if result.timings:
        info("timings (s): " + ", ".join(f"{k} {v}" for k, v in result.timings.items()))
    if as_json:
        print_json(result.__dict__)


def _line(text: str | None) -> str:
    """A query as a listing shows it: its line ends and runs of white space one space (a text
    may start with a line end, as some of banking77's do)."""
    return " ".join((text or "").split())


def _fmt_rate(value: Any) -> str:
    return f"{value:.0%}" if value is not None else ""


def _seen(first: Any, last: Any) -> str:
    days = [f"{t:%Y-%m-%d}" for t in (first, last) if t is not None]
    return " – ".join(dict.fromkeys(days))


def _show_columns() -> list:
    """The show table's columns; at a narrow terminal the lowest ``keep`` goes first (the dates,
    then sources, new, variants, signals, volume, tags); id, priority, label, failed and
    coverage always stay, and the label wraps."""

    return [
        Col("id", justify="right"),
        Col("priority", justify="right"),
        Col("label", wrap=True, min_width=24),
        Col("volume", keep=6, justify="right"),
        Col("variants", keep=4, justify="right"),
        Col("failed", justify="right"),
        Col("signals", keep=5),
        Col("tags", keep=7, wrap=True),
        Col("sources", keep=2, wrap=True),
        Col("seen", keep=1, wrap=True),
        Col("new", keep=3),
        Col("covered"),
    ]


def _show_row(r: dict) -> list[str]:
    return [
        str(r["cluster_id"]),
        f"{r['priority']:.1f}",
        clip(_line(r["label"])) + ("\nterms: " + _terms(r["terms"]) if r.get("terms") else ""),
        str(r["volume"]),
        str(r["n_variants"]),
        _fmt_rate(r["failure_rate"]),
        "\n".join(f"{k} {v}" for k, v in r["signals"].items() if v),
        ", ".join(r["tags"] or []),
        ", ".join(r["sources"] or []),
        _seen(r["first_seen"], r["last_seen"]),
        "yes" if r["is_new"] else "",
        r["coverage"],
    ]


@triage_app.command("show")
def show_cmd(
    top: Annotated[int, typer.Option("--top", help="How many clusters.")] = 20,
    uncovered: Annotated[
        bool, typer.Option("--uncovered", help="Only clusters no gold item covers.")
    ] = False,
    new: Annotated[
        bool,
        typer.Option(
            "--new",
            help="Only clusters first seen after the previous run that saw less traffic "
            "(an older newest search or fewer queries; a run with nothing new keeps the last "
            "week's), or made since that run (a late week's new intents too).",
        ),
    ] = False,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only clusters with a query so tagged (typo, …).")
    ] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="Only clusters with traffic from this source.")
    ] = None,
    level: Annotated[
        Level,
        typer.Option(
            "--level",
            help="cluster: the clusters (each at the grain of an intent); topic: the topics "
            "(groups of neighbouring clusters), each with its clusters beneath. --top counts "
            "rows of the level.",
        ),
    ] = Level.cluster,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The ranked clusters: label, volume, variants, failure rate and signals, tags, coverage."""

    wanted = ShowFilter(top, uncovered, new, tag, source)
    ranked = ranked_topics if level is Level.topic else ranked_clusters
    with open_store(db_flag(db), create=False) as con:
        runs.warn_unfinished(con)
        rows = ranked(con, wanted)
        why_none = None if rows else no_match(con, wanted)
    if as_json:
        print_json(rows)
        return
    if why_none:
        info(why_none)
        return
    if level is Level.topic:
        rows = [line for t in rows for line in _topic_rows(t)]
    else:
        rows = [_show_row(r) for r in rows]
    console().print(fit_table(_show_columns(), rows))


def _topic_rows(t: dict) -> list[list[str]]:
    """A topic's line (its sums over the clusters shown), then each cluster's own, indented."""
    head = [
        f"topic {t['topic_id']}",
        f"{t['priority']:.1f}",
        f"{clip(_line(t['label']))}\n{t['n_clusters']} "
        f"cluster{'s' if t['n_clusters'] != 1 else ''}",
        str(t["volume"]),
        str(sum(c["n_variants"] for c in t["clusters"])),
        _fmt_rate(t["failure_rate"]),
        *[""] * 6,
    ]
    clusters = []
    for c in t["clusters"]:
        row = _show_row(c)
        row[0], row[2] = f"  {row[0]}", "  " + row[2].replace("\n", "\n  ")
        clusters.append(row)
    return [head, *clusters]


@triage_app.command("export")
def export_cmd(
    file: Annotated[
        Path,
        typer.Argument(
            help="Output .parquet (texts exact) or .csv (for a spreadsheet: a text starting "
            "like a formula, =+-@, gets the text prefix ').",
            dir_okay=False,
        ),
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One row per distinct query: text, normalized, cluster, canonical, counts, signals, tags."""
    if not file.parent.is_dir():  # polars' own error was a traceback, after the whole query
        raise InputError(f"no folder {file.parent} to write {file.name} in", path=file)
    with open_store(db_flag(db), create=False) as con:
        runs.warn_unfinished(con)
        n = export_queries(con, file)
    if as_json:
        print_json({"path": str(file), "format": file.suffix.lower()[1:], "n_queries": n})
        return
    info(f"wrote {count(n, 'query')} to {file}")


_SIGNAL_COLUMNS = ("n_zero_results", "n_no_click", "n_reformulated", "n_negative_feedback",
                   "n_tickets", "n_chat_fail")  # fmt: skip


def _terms(terms: list[str]) -> str:
    """A cluster's distinctive terms, each at most a word's length (a pasted URL is one)."""
    return ", ".join(clip(t, TERM_CLIP) for t in terms)


# A term is a word or two: past this it is a pasted token (a URL, a key), shown by its start.
TERM_CLIP = 40


def _detail_row(q: dict, prefix: str) -> list:
    """One query of ``triage cluster``: a variant is indented under the query it varies."""
    return [
        prefix + clip(q["query"]),
        q["n_events"],
        q["n_sessions"],
        _fmt_rate(q["failure_rate"]),
        ", ".join(f"{k[2:]} {q[k]}" for k in _SIGNAL_COLUMNS if q[k]),
        ", ".join(q["tags"] or []),
        " | ".join(clip(e) for e in q["examples"] or []),
        " | ".join(clip(t) for t in q["previous_turns"] or []),
    ]


@triage_app.command("cluster")
def cluster_cmd(
    cluster_id: Annotated[int, typer.Argument(metavar="ID", help="A cluster id from `show`.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every query in one cluster once (counts, signals, sessions, other spellings, previous
    turns), its fuzzy variants beneath it."""

    with open_store(db_flag(db), create=False) as con:
        runs.warn_unfinished(con)
        detail = cluster_detail(con, cluster_id)
    if as_json:
        print_json(detail)
        return
    console().print(
        f"cluster {detail['cluster_id']}: {clip(_line(detail['label']))!r} — "
        f"volume {detail['volume']}, "
        f"{_fmt_rate(detail['failure_rate'])} failed, priority {detail['priority']:.1f}, "
        f"covered: {detail['coverage']}"
    )
    if detail.get("terms"):
        console().print("terms: " + _terms(detail["terms"]), markup=False)
    if detail.get("central"):
        central = (clip(_line(printable(q))) for q in detail["central"])
        console().print("central: " + " | ".join(central), markup=False)
    rows = [
        _detail_row(q, prefix)
        for head in detail["queries"]
        for q, prefix in [(head, ""), *((v, "  ↳ ") for v in head["variants"])]
    ]
    console().print(fit_table(_cluster_columns(), [[str(c) for c in r] for r in rows]))


def _cluster_columns() -> list:
    """``triage cluster``'s columns; at a narrow terminal the lowest ``keep`` goes first (the
    previous turns, sessions, other spellings, tags); query, events and failed always stay."""
    return [
        Col("query", wrap=True, min_width=24),
        Col("events", justify="right"),
        Col("sessions", keep=2, justify="right"),
        Col("failed", justify="right"),
        Col("signals", keep=5, wrap=True),
        Col("tags", keep=4, wrap=True),
        Col("other spellings", keep=3, wrap=True),
        Col("previous turn", keep=1, wrap=True),
    ]


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the root app."""
    app.add_typer(triage_app, name="triage")
