"""Command line for the goldset stage: ``goldmine gold …``.

Each command opens the store for its unit of work, calls one function of the stage and prints.
Heavy modules (rich, polars, the retrievers) are imported inside the commands.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from goldmine.errors import InputError
from goldmine.goldset import cli_agreement, cli_clicks, cli_llm
from goldmine.goldset.cli_next import next_
from goldmine.goldset.disagreements import listing as disagreement_listing
from goldmine.goldset.draft import draft as run_draft
from goldmine.goldset.items import (
    decision_counts,
    default_user,
    get_item,
    list_items,
    progress_counts,
    show_item,
)
from goldmine.goldset.items import label as do_label
from goldmine.goldset.raters import agreement as measure
from goldmine.goldset.raters import assign as do_assign
from goldmine.goldset.raters import parse_raters
from goldmine.goldset.review import queue_filter
from goldmine.goldset.review_tui import run
from goldmine.goldset.versions import assert_verified, diff_versions, verify_versions
from goldmine.goldset.versions import publish as do_publish
from goldmine.options import DbOption, JsonOption, db_flag, store_flag
from goldmine.output import Col, clip, console, count, fit_table, info, print_json, table, warn
from goldmine.store import open_store, removed_on_input_error, transaction
from goldmine.text import printable
from goldmine.versions import list_versions, resolve_version, version_header

if TYPE_CHECKING:
    import duckdb

ByOption = Annotated[
    str | None,
    typer.Option("--by", help="Who did it (default: $GOLDMINE_USER, then the login name)."),
]


RedactOption = Annotated[
    bool | None,
    typer.Option(
        "--redact/--no-redact",
        help="Replace PII (emails, phones, …) in the text you type "
        "(default: [ingest] redact in goldmine.toml, else on).",
    ),
]


def _redaction(flag: bool | None) -> Callable[[str], str]:
    """What typed text (a query, a note) goes through before it is stored: ingest's redaction,
    composed here since the stage cannot import ingest."""
    from goldmine.config import settings
    from goldmine.ingest.manual import hand_redactor, text_redactor

    return text_redactor(hand_redactor(flag, settings().ingest))


@contextmanager
def _store(db, create: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store, opened for a gold command; one the command makes and that it fails on its
    input before writing anything to (a mistyped path, an empty qrels file) is removed again."""
    path = db_flag(db)
    if not create:
        with open_store(path, create=False) as con:
            yield con
        return
    with removed_on_input_error(path), open_store(path, create=True) as con:
        yield con


def _user(by: str | None) -> str:

    return default_user(by)


def _table(title: str, columns: list[str], rows: list[list]) -> None:

    console().print(table(columns, rows, title=title))


def _listing(
    rows: list[dict], as_json: bool, title: str, columns: list[str], cells: Callable[[dict], list]
) -> None:
    """A listing command's output: the rows as they are with --json, else a table of each
    row's ``cells``."""
    if as_json:
        print_json(rows)
    else:
        _table(title, columns, [cells(r) for r in rows])


def starter(
    n: Annotated[int, typer.Option("--n", min=1, help="How many queries to propose.")] = 50,
    by_source: Annotated[
        str | None,
        typer.Option(
            "--by-source",
            help="Places per source, e.g. searchlog=20,tickets=15 (default: in proportion to "
            "each source's events, at least 1 each, 2 when --n >= 50).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the hash ties break by.")] = 0,
    with_composition: Annotated[
        bool,
        typer.Option(
            "--composition",
            help="With --json: an object, {picks: [...], composition: {...}} (the set beside the "
            "traffic), instead of the list of picks.",
        ),
    ] = False,
    by: ByOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Propose a starter set covering head, tail, failures, awkward queries and every source;
    says why, and what the set holds beside the traffic."""
    from goldmine.goldset.starter import composition_rows, parse_by_source, propose

    places = parse_by_source(by_source) if by_source is not None else None
    with _store(db) as con:
        found = propose(con, n, _user(by), seed=seed, by_source=places)
    picks = found.picks
    if as_json:
        # A list of picks, as scripts read it; the composition is the text report's (and
        # --composition's, for a script that wants it).
        picked = [
            {
                "query_id": p.query_id,
                "query": p.query["query"],
                "reasons": p.reasons,
                "cluster_id": p.query["cluster_id"],
                "band": p.query["band"],
                "tags": p.query["tags"],
                "source": p.source,
                "failing": p.query["failing"],
            }
            for p in picks
        ]
        print_json({"picks": picked, "composition": found.composition} if with_composition
                   else picked)  # fmt: skip
        return
    _table(
        f"{len(picks)} new candidates",
        ["query_id", "query", "source", "why"],
        [[p.query_id, clip(p.query["query"]), p.source, "; ".join(p.reasons)] for p in picks],
    )
    if not picks:
        info("nothing new to propose: every query triage knows is already in the set")
        return
    if len(picks) < n:
        info(f"{len(picks)} of the {n} asked: every other query triage knows is in the set")
    _table(
        "composition: the set beside the traffic",
        ["by", "value", "picks", "set", "traffic"],
        composition_rows(found.composition),
    )


def add_query(
    queries: Annotated[
        list[str] | None, typer.Argument(help="Query texts or gold query ids.")
    ] = None,
    cluster: Annotated[
        list[int] | None,
        typer.Option("--cluster", help="Add a triage cluster's representative query (repeatable)."),
    ] = None,
    by: ByOption = None,
    redact: RedactOption = None,
    db: DbOption = None,
) -> None:
    """Add specific queries, or clusters' representatives, as candidates."""
    from goldmine.goldset.starter import add_queries

    if not queries and not cluster:
        raise InputError("give a query, a query id, or --cluster ID")
    redactor = _redaction(redact)
    with _store(db) as con:
        added = add_queries(
            con, list(queries or []), list(cluster or []), _user(by), redact=redactor
        )
    for qid, text, is_new in added:
        print(printable(f"{'added' if is_new else 'already in the set'}\t{qid}\t{text}"))


def draft(
    retriever: Annotated[str, typer.Option(help="bm25, dense or hybrid.")] = "bm25",
    k: Annotated[int, typer.Option("-k", help="Chunks to propose per query.")] = 10,
    from_: Annotated[
        str, typer.Option("--from", help="retriever, or clicks: a click model over the search log.")
    ] = "retriever",
    click_model: cli_clicks.ClickModelOption = "pbm",
    min_shown: cli_clicks.MinShownOption = 2,
    min_grade: cli_clicks.MinGradeOption = 1,
    thresholds: cli_clicks.ThresholdsOption = "auto",
    judge: Annotated[
        str | None, typer.Option("--judge", help="llm: a model grades every candidate too.")
    ] = None,
    limit: cli_llm.LimitOption = None,
    base_url: cli_llm.BaseUrlOption = None,
    model: cli_llm.ModelOption = None,
    concurrency: cli_llm.ConcurrencyOption = None,
    timeout: cli_llm.TimeoutOption = None,
    max_failures: cli_llm.MaxFailuresOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Propose the top-k chunks for every candidate without a label (never gold by itself)."""

    if limit is not None and judge is None:
        raise InputError("--limit caps the model's grades: give it with --judge llm")
    if from_ == "clicks":
        if judge is not None:
            raise InputError("--judge grades a retriever's drafts: not with --from clicks")
        cli_clicks.draft_clicks(
            store_flag(db), model=click_model, min_shown=min_shown, min_grade=min_grade, depth=k,
            thresholds=thresholds, as_json=as_json,
        )  # fmt: skip
        return
    if from_ != "retriever":
        raise InputError(f"--from must be retriever or clicks, not {from_!r}")
    settings = cli_llm.judge_settings(judge, base_url, model, concurrency, timeout, max_failures)
    # The work opens the store for short spans only, so other commands can read meanwhile.
    store = store_flag(db)
    result = run_draft(store, retriever, k, by=f"retriever:{retriever}")
    if settings is not None:
        cli_llm.judge_draft(store, settings, as_json, drafted=result.__dict__, limit=limit)
        return
    if as_json:
        print_json(result.__dict__)
        return
    info(
        f"drafted {count(result.items, 'query')} with {result.retriever} over snapshot "
        f"{result.snapshot_id}: {result.drafts} candidate chunks"
    )


def review(
    by: ByOption = None,
    web: Annotated[
        bool, typer.Option("--web", help="Review in the browser (needs goldmine[web]).")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="--web: address to listen on (0.0.0.0 warns).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="--web: port (0: a free one).")] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="--web: print the URL, do not open a browser.")
    ] = False,
    adjudicate: Annotated[
        bool,
        typer.Option(
            "--adjudicate",
            help="Decide the items whose raters (or an imported file and a person) disagree, "
            "seeing both.",
        ),
    ] = False,
    queue: Annotated[
        str,
        typer.Option(
            "--queue",
            help="all (the queue's order) or disagreements: the items where the sources' "
            "grades differ most first, each source's grade shown.",
        ),
    ] = "all",
    redact: RedactOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="--queue disagreements: list it as JSON, in order.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Review drafted queries, one key per action; resumes where you left off.

    In the terminal by default; --web serves the same loop as a local page and prints its URL
    (with a token: keep it to yourself).
    """
    chosen = queue_filter(queue, adjudicate)
    if as_json:
        if not chosen.disagreements:
            raise InputError("--json lists the disagreements queue: add --queue disagreements")
        with open_store(db_flag(db), create=False) as con:
            print_json(disagreement_listing(con))
        return
    if web:
        from goldmine.lazy import require

        require("web")
        from goldmine.goldset.web import serve

        serve(
            store_flag(db), _user(by), host=host, port=port, open_browser=not no_open,
            redact=_redaction(redact), queue=chosen,
        )  # fmt: skip
        return

    run(store_flag(db), _user(by), queue=chosen, redact=_redaction(redact))


def assign(
    raters: Annotated[
        str, typer.Option("--raters", help="Comma-separated names, e.g. ana,ben,chen.")
    ],
    overlap: Annotated[
        float,
        typer.Option("--overlap", help="Share of items labelled by two raters, blind (0-1)."),
    ] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Which items get a second rater.")] = 0,
    by: ByOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deal the items waiting for review out to raters; a share of them to two, blind."""

    names = parse_raters(raters)
    with _store(db, create=False) as con, transaction(con):
        result = do_assign(con, names, overlap, _user(by), seed=seed)
    if as_json:
        print_json({"items": result.items, "double": result.double, "raters": result.per_rater})
        return
    print(
        f"assigned {result.items} items, {result.double} of them to two raters: "
        + ", ".join(f"{name} {n}" for name, n in result.per_rater.items())
    )


def agreement(
    judge: Annotated[
        str | None, typer.Option("--judge", help="llm: the model's grades against each person's.")
    ] = None,
    between: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--between",
            help="Two sources: rater:NAME, judge:MODEL, clicks:pbm|dbn, import:NAME (NAME may "
            "be *) or gold.",
        ),
    ] = None,
    run: Annotated[
        list[Path] | None,
        typer.Option("--runs", "--run", help="A run file (repeat); two or more rank the systems."),
    ] = None,
    metric: Annotated[str, typer.Option("--metric", help="--runs: the metric.")] = "ndcg@10",
    relevant_from: Annotated[
        int, typer.Option("--relevant-from", help="--between: the grade relevant starts at.")
    ] = 1,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """How far raters agree on the double-labelled items: kappa per pair, Krippendorff's alpha;
    or any two sources with --between."""

    if between is not None:
        cli_agreement.agreement_between(db, between, list(run or []), metric, relevant_from,
                                        as_json)  # fmt: skip
        return
    if judge is not None:
        cli_llm.agreement_llm(db_flag(db), judge, list(run or []), metric, as_json)
        return
    with _store(db, create=False) as con:
        result = measure(con)
    if as_json:
        print_json(result)
        return
    if not result["pairs"]:
        print("no item was labelled by two raters yet: `goldmine gold assign --overlap 0.2`")
        return
    cli_agreement.print_rater_pairs(result["pairs"])
    print(
        f"Krippendorff's alpha (ordinal, {len(result['raters'])} raters, "
        f"{result['krippendorff_n_units']} chunks): {_fmt(result['krippendorff_alpha'])}"
    )
    if result["n_disagreements_waiting"]:
        print(
            f"{result['n_disagreements_waiting']} disagreements wait: "
            "`goldmine gold review --adjudicate`"
        )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _parse_chunks(values: list[str]) -> dict[str, int]:

    grades = {}
    for value in values:
        chunk_id, sep, grade = value.rpartition("=")
        if not sep or not chunk_id or grade.strip() not in ("0", "1", "2"):
            raise InputError(f"--chunk is written ID=GRADE with grade 0, 1 or 2, not {value!r}")
        if grades.get(chunk_id, int(grade)) != int(grade):
            raise InputError(
                f"--chunk gives {chunk_id!r} two grades, {grades[chunk_id]} and {int(grade)}: "
                "give it once"
            )
        grades[chunk_id] = int(grade)
    return grades


def label(
    query_id: Annotated[str, typer.Argument(help="The gold query id.")],
    chunk: Annotated[
        list[str] | None,
        typer.Option(
            "--chunk", help="CHUNK_ID=GRADE (2 answers, 1 useful context, 0 not); repeatable."
        ),
    ] = None,
    no_answer: Annotated[
        bool, typer.Option("--no-answer", help="The corpus does not answer this query.")
    ] = False,
    rest_not_relevant: Annotated[
        bool,
        typer.Option(
            "--rest-not-relevant",
            help="Grade every candidate not given with --chunk 0 (not relevant).",
        ),
    ] = False,
    if_version: Annotated[
        int | None,
        typer.Option(
            "--if-version",
            help="Refuse (exit 5) if the item changed since this version "
            "(`gold show --json` gives it).",
        ),
    ] = None,
    by: ByOption = None,
    note: Annotated[str | None, typer.Option("--note", help="A note on the item.")] = None,
    redact: RedactOption = None,
    db: DbOption = None,
) -> None:
    """Grade chunks for a query, or record "no answer", without the interactive loop.

    The query is verified once every candidate is graded (--rest-not-relevant grades the rest 0)
    with one above 0, or with --no-answer.
    """

    grades = _parse_chunks(chunk or [])
    if note:
        note = _redaction(redact)(note)
    with _store(db) as con, transaction(con):
        was = get_item(con, query_id)["status"]
        item = do_label(
            con,
            query_id,
            grades,
            no_answer=no_answer,
            rest_not_relevant=rest_not_relevant,
            by=_user(by),
            note=note,
            expected_version=if_version,
        )
        _, _, undecided = decision_counts(con, query_id)
    print(f"{query_id}\t{item['status']}" + ("\tno answer" if item["no_answer"] else ""))
    if was == "rejected" and item["status"] != "rejected":
        warn(f"{query_id} was rejected: deciding it takes it back into the set")
    if undecided:
        warn(
            f"{undecided} candidate{'s' if undecided != 1 else ''} not graded yet: grade "
            f"{'them' if undecided != 1 else 'it'} with --chunk ID=GRADE, or --rest-not-relevant"
        )


def _list_columns() -> list[Col]:
    """`gold list`'s columns. The id and status stay whole at any width (a script greps them
    out of a pipe's 80 columns, where every column used to fold); the query and tags wrap, and
    the tags, then the cluster and counts, give way first."""
    return [
        Col("query_id"),
        Col("status"),
        Col("query", wrap=True, min_width=20),
        Col("relevant", keep=5, justify="right"),
        Col("labels", keep=4, justify="right"),
        Col("drafts", keep=3, justify="right"),
        Col("cluster", keep=2, justify="right"),
        Col("tags", keep=1, wrap=True),
    ]


def _list_row(r: dict) -> list[str]:
    return [
        r["query_id"],
        r["status"] + (" (no answer)" if r["no_answer"] else ""),
        clip(r["query"]),
        str(r["n_relevant"]),
        str(r["n_labels"]),
        str(r["n_drafts"]),
        "" if r["cluster_id"] is None else str(r["cluster_id"]),
        ", ".join(r["tags"] or []),
    ]


def list_(
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help="candidate, drafted, verified or rejected (repeatable)."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The items, with status, grades and where they came from."""

    with _store(db, create=False) as con:
        rows = list_items(con, status)
        verified, total = progress_counts(con)
    if as_json:
        print_json(rows)
        return
    title = f"{verified} of {total} verified"
    console().print(fit_table(_list_columns(), [_list_row(r) for r in rows], title=title))
    if not rows:
        info("no items: run `goldmine gold starter` or `goldmine gold add-query`")


def show(
    query_id: Annotated[str, typer.Argument(help="The gold query id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One item: status, grades, drafts, provenance and its full history."""

    with _store(db, create=False) as con:
        item = show_item(con, query_id)
    if as_json:
        print_json(item)
        return
    for key in (
        "query_id",
        "query",
        "status",
        "no_answer",
        "context",
        "tags",
        "cluster_id",
        "origin",
        "reason",
        "sources",
        "source_ids",
        "frequency",
        "first_seen",
        "last_seen",
        "notes",
        "drafted_by",
        "verified_by",
        "verified_at",
    ):
        if item[key] not in (None, [], ""):
            print(printable(f"{key}: {item[key]}"))
    _table(
        "labels",
        ["chunk_id", "grade", "by", "source", "at", "text_hash"],
        [
            [r["chunk_id"], r["grade"], r["who"], r["source"], r["ts"], (r["text_hash"] or "")[:12]]
            for r in item["labels"]
        ],
    )
    _grades_by_source(item)
    if item["drafts"]:
        _table(
            "drafts",
            ["rank", "chunk_id", "score", "source", "suggested"],
            [
                [r["rank"], r["chunk_id"], r["score"], r["source"], r["suggested_grade"]]
                for r in item["drafts"]
            ],
        )
    _table(
        "history",
        ["at", "by", "action", "detail"],
        [[h["at"], h["by"], h["action"], h["detail"]] for h in item["history"]],
    )


NO_ANSWER_ROW = "(no answer)"


def _grades_by_source(item: dict) -> None:
    """People's grade of each chunk beside the model judge's and every imported source's, and
    the judge's reason: one row per chunk any of them graded."""
    others = item["model_grades"] + item["source_grades"]
    if not others:
        return
    names = sorted({o["source"] for o in others}, key=lambda x: (not x.startswith("judge:"), x))
    grade = {(o["source"], o["chunk_id"] or NO_ANSWER_ROW): o["grade"] for o in others}
    people = {r["chunk_id"]: f"{r['grade']} {r['who']} ({r['source']})" for r in item["labels"]}
    if item["no_answer"]:
        people[NO_ANSWER_ROW] = f"yes {item['verified_by'] or ''}".strip()
    for o in item["source_grades"]:
        if o["chunk_id"] is None:
            grade[(o["source"], NO_ANSWER_ROW)] = "yes"
    reasons: dict[str, list[str]] = {}
    for m in item["model_grades"]:
        reasons.setdefault(m["chunk_id"], []).append(m["reason"] or "")
    chunks = sorted(set(people) | {c for _, c in grade})
    _table(
        "grades by source",
        ["chunk_id", "person", *names, "model's reason"],
        [
            [c, people.get(c), *(grade.get((n, c)) for n in names), "; ".join(reasons.get(c, []))]
            for c in chunks
        ],
    )


def publish(
    message: Annotated[str, typer.Option("-m", "--message", help="What changed.")],
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Publish items with candidates not graded yet, with the grades they have.",
        ),
    ] = False,
    skip_partial: Annotated[
        bool,
        typer.Option(
            "--skip-partial", help="Leave items with candidates not graded yet out of the version."
        ),
    ] = False,
    allow_unchanged: Annotated[
        bool,
        typer.Option(
            "--allow-unchanged",
            help="Nothing changed since the latest version: say so and exit 0, making no version "
            "(for a job that publishes whatever changed). Without it, exit 2.",
        ),
    ] = False,
    by: ByOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Freeze every verified item as the next version, hashed, in one transaction.

    Items with candidates not graded yet refuse the publish (exit 2, listed) unless
    --allow-partial or --skip-partial says what to do with them.
    """
    from goldmine.goldset.versions import Unchanged

    with _store(db) as con:
        try:
            p = do_publish(
                con, message, _user(by), allow_partial=allow_partial, skip_partial=skip_partial
            )
        except Unchanged as unchanged:
            if not allow_unchanged:
                raise
            if as_json:
                print_json({"published": False, "version": unchanged.version, "message": message})
            else:
                info(f"nothing changed since v{unchanged.version}: no version made")
            return
    if as_json:
        print_json({"published": True, **p.__dict__, "message": message})
    else:
        print(
            f"published v{p.version}: {count(p.n_items, 'query')} ({p.n_answerable} answerable, "
            f"{p.n_no_answer} no answer), {p.n_labels} labels, hash {p.content_hash[:12]}"
        )
    if p.n_drifted:
        from goldmine.output import warn

        warn(
            f"{p.n_drifted} labels point at chunks missing from, or changed in, the current "
            "corpus: `goldmine gold drift` lists them, `goldmine gold remap` proposes new ones"
        )


def versions(db: DbOption = None, as_json: JsonOption = False) -> None:
    """The published versions."""

    with _store(db, create=False) as con:
        rows = list_versions(con)
    _listing(
        rows,
        as_json,
        "gold versions",
        ["version", "published", "by", "queries", "no answer", "hash", "message"],
        lambda r: [
            f"v{r['version']}",
            r["published_at"],
            r["published_by"],
            r["n_items"],
            r["n_no_answer"],
            r["content_hash"][:12],
            r["message"],
        ],
    )


def verify(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Recompute every published version's content hash; fails (exit 1) if one changed."""

    with _store(db, create=False) as con:
        checks = verify_versions(con)
    if as_json:
        print_json(
            {
                "ok": all(c.ok for c in checks),
                "versions": [{**c.__dict__, "ok": c.ok} for c in checks],
            }
        )
    else:
        for c in checks:
            print(
                f"v{c.version}\t{'ok' if c.ok else 'CHANGED'}\t{c.n_items} items\t"
                f"{c.recomputed[:12]}"
            )
    assert_verified(checks)


def diff(
    a: Annotated[str, typer.Argument(help="Older version (v2, 2, latest).")],
    b: Annotated[str, typer.Argument(help="Newer version.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queries added, removed and relabelled between two versions."""

    with _store(db, create=False) as con:
        d = diff_versions(con, a, b)
    if as_json:
        print_json(d)
        return
    print(
        f"{d['from']} → {d['to']}: {len(d['added'])} added, {len(d['removed'])} removed, "
        f"{len(d['relabelled'])} relabelled, {d['unchanged']} unchanged"
    )
    for q in d["added"]:
        print(printable(f"+ {q['query_id']}\t{q['query']}"))
    for q in d["removed"]:
        print(printable(f"- {q['query_id']}\t{q['query']}"))
    for q in d["relabelled"]:
        changes = ", ".join(f"{c['chunk_id']} {c['from']}→{c['to']}" for c in q["changes"])
        if q["no_answer"][0] != q["no_answer"][1]:
            changes += f"{', ' if changes else ''}no answer {q['no_answer'][0]}→{q['no_answer'][1]}"
        print(printable(f"~ {q['query_id']}\t{q['query']}\t{changes}"))


def export(
    version: Annotated[str, typer.Option("--version", help="v3, 3 or latest.")] = "latest",
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder to write into; - puts the jsonl version on stdout."),
    ] = Path("gold"),
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl, trec or beir; or for other tools: ranx (Qrels JSON), ir_measures "
            "(TREC qrels TSV), hf (Parquet + dataset card for Hugging Face datasets).",
        ),
    ] = "jsonl",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write a version as a deterministic, sorted file (gold/v0003.jsonl), TREC, BEIR, or for
    ranx, ir_measures and Hugging Face datasets."""
    from goldmine.goldset.exchange import export_version, version_file_lines

    if str(out) == "-":  # stdout: the version file alone is one file (jq, another store)
        if fmt != "jsonl":
            raise InputError(f"--out - (stdout) takes the one-file jsonl format; --format {fmt} "
                             "writes several files: give --out a folder")  # fmt: skip
        with _store(db, create=False) as con:
            lines = version_file_lines(con, resolve_version(con, version))
        sys.stdout.write("".join(line + "\n" for line in lines))
        return
    with _store(db, create=False) as con:
        paths = export_version(con, version, out, fmt)
        header = version_header(con, resolve_version(con, version))
    if as_json:
        print_json(
            {
                "version": header["version"],
                "format": fmt,
                "content_hash": header["content_hash"],
                "n_items": header["counts"]["items"],
                "paths": paths,
            }
        )
        return
    for path in paths:
        print(path)


def import_(
    path: Annotated[
        Path,
        typer.Argument(
            help="A version file, gold JSONL, TREC qrels, a BEIR or MTEB folder (qrels as TSV, "
            "JSON lines or Parquet), what gold export wrote for ranx (.json) or Hugging Face "
            "(a folder), or a spreadsheet's CSV; gzip, bz2 or xz read too."
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto, goldmine, jsonl (gold lines, Tevatron's, or DPR's JSON array), trec, "
            "qrels_jsonl (a judgment a JSON line, as ir_datasets exports qrels), beir, ranx, hf, "
            "csv (a spreadsheet: a header row naming query or query_id, doc_id and grade or "
            "label; comma, semicolon or tab) or llamaindex (an EmbeddingQAFinetuneDataset "
            ".json).",
        ),
    ] = "auto",
    topics: Annotated[
        Path | None,
        typer.Option(
            "--topics",
            help="Query texts for qrels: TREC <top> topics, TREC-COVID XML, a TREC Session "
            "Track log, JSONL, id<TAB>text "
            "(a header row is read), or SMART .I/.W (Cranfield's cran.qry, numbered by position "
            "as its qrels are).",
        ),
    ] = None,
    topic_field: Annotated[
        str,
        typer.Option(
            "--topic-field",
            help="Which text of a topic is the query: title (default), desc or narr.",
        ),
    ] = "title",
    grade_map: Annotated[
        str | None,
        typer.Option(
            "--grade-map",
            help="How the file's grades read on goldmine's 0-2 scale, one entry per grade, e.g. "
            "1=2,2=2,3=1,4=1,-1=0 (Cranfield), L0=0,L1=1,L2=2,L3=2 (NTCIR's levels) or, for a "
            'spreadsheet that grades in words, "not relevant=0,partially relevant=1,highly '
            'relevant=2" (any case). Needed when a grade is outside 0-2 or a word.',
        ),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels split.")] = "test",
    as_source: Annotated[
        str | None,
        typer.Option(
            "--as-source",
            help="Keep the file's judgments as source import:NAME beside the gold set (never "
            "gold; queries no item has become candidates) for gold agreement --between. The "
            "same NAME again replaces that source's judgments.",
        ),
    ] = None,
    id_prefix: Annotated[
        str | None,
        typer.Option(
            "--id-prefix",
            help="Put this before each of the file's query ids (b-: topic 1 is b-1), for a "
            "team whose ids are another numbering than the set's: an id the set gives another "
            "text is refused without it. Queries still join the set's by text.",
        ),
    ] = None,
    by: ByOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Restore an exported version, or add TREC/BEIR/gold-JSONL judgments as verified items.

    A judged query the set already has (same id or normalized text) joins that item; a grade
    that differs from a person's goes to adjudication, never over it. With --as-source NAME
    the judgments are another source's, kept beside the gold set."""
    from goldmine.goldset.exchange import import_path, parse_grade_map

    if as_source is not None:
        _import_source(path, as_source, fmt, topics, topic_field, parse_grade_map(grade_map),
                       split, _user(by), db, as_json, id_prefix)  # fmt: skip
        return
    with _store(db) as con:
        r = import_path(
            con,
            path,
            by=_user(by),
            fmt=fmt,
            topics=topics,
            grade_map=parse_grade_map(grade_map),
            split=split,
            topic_field=topic_field,
            id_prefix=id_prefix,
        )
    if as_json:
        print_json(r.__dict__)
    elif r.format == "goldmine":
        state = "restored" if r.restored else "unchanged"
        print(
            f"v{r.version} {state}: {r.added} items added to the working set, "
            f"{r.labels} labels, {r.no_answer} no answer"
        )
    else:
        print(
            f"imported {r.added} verified queries ({r.format}), {r.labels} labels, "
            f"{r.no_answer} no answer, {r.already_present} already in the set (matched by id "
            f"or text); labels: {r.labels_new} new, {r.labels_same} the same, "
            f"{r.labels_different} different"
        )
    for note in r.notes:
        warn(note)


def _import_source(
    path: Path, name: str, fmt: str, topics: Path | None, topic_field: str,
    grade_map: dict[int | str, int] | None, split: str, by: str, db: Path | None, as_json: bool,
    id_prefix: str | None = None,
) -> None:  # fmt: skip
    """``gold import --as-source NAME``: goldset/source_import.py."""
    from goldmine.goldset.source_import import import_source

    with _store(db) as con:
        r = import_source(con, path, name, by=by, fmt=fmt, topics=topics, grade_map=grade_map,
                          split=split, topic_field=topic_field, id_prefix=id_prefix)  # fmt: skip
    if r.replaced:
        info(f"replaced the {r.replaced} rows {r.source} had (the same name imported before)")
    if as_json:
        print_json(r.__dict__)
    else:
        print(
            f"{r.source}: {count(r.judgments, 'judgment')} on {count(r.queries, 'query')} "
            f"({r.matched} matched to "
            f"items by id or text, {r.created} created as candidates), {r.not_in_corpus} on "
            f"chunks not in the corpus, {r.no_answer} no answer; kept beside the gold set, "
            "never gold without a person"
        )
    for note in r.notes:
        warn(note)


def drift(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Labels whose chunk is gone from the current corpus or whose text changed."""
    from goldmine.goldset.drift import drift as find_drift

    with _store(db, create=False) as con:
        rows = find_drift(con)
    _listing(
        rows,
        as_json,
        f"{len(rows)} drifted labels",
        ["query_id", "chunk_id", "grade", "reason", "query"],
        lambda r: [r["query_id"], r["chunk_id"], r["grade"], r["reason"], clip(r["query"])],
    )
    if rows and not as_json:
        info("`goldmine gold remap` proposes the new chunks that hold these passages")


def remap(by: ByOption = None, db: DbOption = None) -> None:
    """Propose, as drafts to confirm, the new chunks holding each drifted label's passage."""
    from goldmine.goldset.drift import remap as do_remap

    with _store(db) as con:
        r = do_remap(con, _user(by))
    print(
        f"{r.labels} drifted labels: {r.proposals} proposals on {len(r.items)} queries, "
        f"{len(r.unmatched)} without a match; review them with `goldmine gold review`"
    )
    for u in r.unmatched:
        warn(f"{u['query_id']}: no chunk holds the passage of {u['chunk_id']} any more")


def stale(
    older_than: Annotated[str, typer.Option("--older-than", help="Age: 180d, 26w, 6m, 1y.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List only.")] = False,
    by: ByOption = None,
    db: DbOption = None,
) -> None:
    """Send labels older than an age back for a re-read (as drafts with their old grade)."""
    from goldmine.goldset.drift import parse_age
    from goldmine.goldset.drift import stale as do_stale

    age = parse_age(older_than)
    with _store(db) as con:
        rows = do_stale(con, age, _user(by), dry_run=dry_run)
    verb = "would go back" if dry_run else "sent back"
    print(f"{count(len(rows), 'query')} labelled before {older_than} ago {verb} for a re-read")
    for r in rows:
        print(printable(f"{r['query_id']}\t{r['labelled_at'] or r['verified_at']}\t{r['query']}"))


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the root app."""
    gold = typer.Typer(
        name="gold",
        help="Curate the gold set: starter, draft, review, publish, export/import, drift.",
        no_args_is_help=True,
    )
    gold.command("starter")(starter)
    gold.command("synth")(cli_llm.synth)
    gold.command("add-query")(add_query)
    gold.command("draft")(draft)
    gold.command("review")(review)
    gold.command("label")(label)
    gold.command("assign")(assign)
    gold.command("agreement")(agreement)
    gold.command("list")(list_)
    gold.command("show")(show)
    gold.command("publish")(publish)
    gold.command("versions")(versions)
    gold.command("verify")(verify)
    gold.command("diff")(diff)
    gold.command("export")(export)
    gold.command("import")(import_)
    gold.command("drift")(drift)
    gold.command("remap")(remap)
    gold.command("stale")(stale)

    gold.command("next", context_settings={"allow_extra_args": True})(next_)
    app.add_typer(gold)
