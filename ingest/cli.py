"""Command line for the ingest stage: ``goldmine ingest …``, ``add``, ``status``, ``rejects``.

Each command parses its options, opens the store for the import, calls one function of the stage
and prints the accounting (rows in = stored + rejected + already present) per file and in total.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from goldmine import signals
from goldmine.config import settings
from goldmine.errors import EXIT_EMPTY, GoldmineError, InputError
from goldmine.ingest.redact import configured_patterns, make_redactor
from goldmine.options import DbOption, JsonOption, db_flag, store_flag
from goldmine.output import Col, console, info, print_json, table
from goldmine.store import open_store, removed_on_input_error

ingest_app = typer.Typer(
    name="ingest",
    help="Import search logs, UBI, tickets, chat, RAG traces and the corpus into the store.",
    no_args_is_help=True,
)

Paths = Annotated[list[str], typer.Argument(help="Files, globs or folders.", show_default=False)]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="jsonl, json, csv, parquet, …; corpus also smart, trec, tsv (default: told by the "
        "file's content, else its name).",
    ),
]
MapOption = Annotated[
    list[str] | None,
    typer.Option(
        "--map",
        help="field=column for a field under another name (repeatable); a dotted column the "
        "file lacks is a path into an object column: query=search.query.",
    ),
]
EncodingOption = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        help="The text encoding of files not in UTF-8, e.g. cp1252 (what Excel on Windows saves "
        "as CSV in Western Europe); UTF-16 with a byte-order mark is told without it.",
    ),
]
PatternOption = Annotated[
    list[str] | None,
    typer.Option("--redact-pattern", help="NAME=REGEX: also replace matches with <NAME>."),
]
NoRedactOption = Annotated[
    bool, typer.Option("--no-redact", help="Store the text as it is (PII redaction is on).")
]
EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        help="duckdb: store every event here; spark: summarize per query and day on Spark, "
        "store the summary (needs goldmine[spark] and Java).",
    ),
]
MasterOption = Annotated[
    str | None,
    typer.Option(
        "--master",
        help="With --engine spark: local[2] (default; spark-submit's under it), spark://…, yarn.",
    ),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option("--conf", help="With --engine spark: a Spark setting key=value (repeatable)."),
]
SummaryDirOption = Annotated[
    str | None,
    typer.Option(
        "--summary-dir",
        help="With --engine spark: where Spark writes the Parquet summary (default: "
        "goldmine-summaries/ beside the store).",
    ),
]
AllowEmptyOption = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Exit 0 when every row was rejected (default: exit 4 with the top reasons).",
    ),
]


def _import(kind: str, db: Path | None, as_json: bool, allow_empty: bool, **kwargs: Any) -> None:
    """Run one import and print its accounting; an import whose every row was rejected then
    fails (exit 4), so a script or CI job does not go on with an empty week."""
    from goldmine.ingest import api
    from goldmine.ingest.status import top_reasons

    store = db_flag(db)
    if "patterns" in kwargs:
        kwargs["patterns"] = _patterns(kwargs["patterns"])
        kwargs["regions"] = settings().ingest.pii_regions  # phone regions ([ingest] pii_regions)
    # Detachable: an import lets go of the store while it stages a file (ingest.batch). A store
    # this import made is removed again if the import fails on its input.
    with removed_on_input_error(store), open_store(store, detachable=True) as con:
        result = getattr(api, kind)(con, **kwargs)
        if not allow_empty:
            _refuse_no_rows(con, result)
        empty = result.all_rejected and not allow_empty
        reasons = top_reasons(con, result.reject_batches()) if empty else []
    _print_result(result, as_json, store)
    if empty:
        raise _nothing_stored(result, reasons, store)


def _refuse_no_rows(con, result) -> None:
    """An import whose files hold no row at all (empty, or a header alone) fails as one whose
    every row is rejected does (exit 4), so a script does not go on with an empty week; its
    empty batches are forgotten, and a store the import made is removed again."""
    files = result.files
    # A trace file's spans are read even where none is a retrieval (no row): it held some; so
    # did a file of feedback alone (Phoenix annotations, LangSmith feedback records).
    extra = [f.extra or {} for f in files]
    if (
        not files
        or any(f.rows_in or f.skipped for f in files)
        or any(e.get("spans") or e.get("feedback_records") for e in extra)
    ):
        return
    ids = [f.batch_id for f in files if f.batch_id is not None]
    if ids:
        con.execute("DELETE FROM import_batches WHERE list_contains(?, batch_id)", [ids])
    named = files[0].path if len(files) == 1 else f"{len(files)} files"
    error = InputError(
        f"nothing stored: {named} holds no rows (an empty file, or a header alone); "
        "--allow-empty to accept an import that stores nothing"
    )
    error.exit_code = EXIT_EMPTY
    raise error


def _text_import(
    kind: str, paths: list[str], no_redact: bool, patterns: list[str] | None, db: Path | None,
    as_json: bool, allow_empty: bool, **kwargs: Any,
) -> None:  # fmt: skip
    """An import of people's text (tickets, chat, traces): PII redacted unless --no-redact."""
    _import(kind, db, as_json, allow_empty, paths=paths, redact=not no_redact, patterns=patterns,
            **kwargs)  # fmt: skip


def _spark_options(engine: str, master: str | None, conf: list[str] | None, summary_dir):
    """The Spark engine's options, or None for the DuckDB engine (which takes none of them)."""

    if engine not in ("duckdb", "spark"):
        raise InputError(f"--engine is duckdb or spark, not {engine!r}")
    if engine == "duckdb":
        if master or conf or summary_dir:
            raise InputError("--master, --conf and --summary-dir need --engine spark")
        return None
    from goldmine.ingest.spark import Options, parse_conf

    return Options(
        master=master,
        conf=parse_conf(conf),
        summary_dir=summary_dir,
        window_s=signals.reformulation_window(None, settings().triage.reformulation_window),
    )


def _patterns(flag: list[str] | None) -> list[str]:
    """Redaction patterns: goldmine.toml's first, then the flag's."""
    return configured_patterns(settings().ingest.redact_patterns) + list(flag or [])


def _spark_import(
    kind: str, db, as_json: bool, allow_empty: bool, options, redact, patterns, **kwargs
) -> None:
    """A Spark import: Spark runs with the store closed, the batch is written after; PII
    redacted as the DuckDB engine redacts it."""
    from goldmine.ingest import spark

    options = replace(
        options,
        redactor=make_redactor(redact, _patterns(patterns), regions=settings().ingest.pii_regions),
    )
    store = db_flag(db)
    result = getattr(spark, kind)(store_flag(db), options=options, **kwargs)
    _print_result(result, as_json, store)
    if result.all_rejected and not allow_empty:
        reasons = {}
        for f in result.files:
            for reason, n in f.extra.get("reject_reasons", {}).items():
                kind_ = reason.split(": ")[0]
                reasons[kind_] = reasons.get(kind_, 0) + n
        top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        raise _nothing_stored(result, top, store)


def _rejects_command(result, store: Path | None) -> str:
    """The command that lists this import's rejects, as it can be typed (the real batch ids)."""
    import shlex

    ids = sorted({batch_id for batch_id, _ in result.reject_batches()})
    where = f" --db {shlex.quote(str(store))}" if store is not None else ""
    if len(ids) == 1:
        return f"goldmine rejects --batch {ids[0]}{where}"
    # Several files: all rejects, or each batch in turn.
    return f"goldmine rejects{where} (batches {', '.join(map(str, ids))})"


def _nothing_stored(result, reasons: list[tuple[str, int]], store: Path | None):

    total = result.total
    top = ", ".join(f"{kind} ({n:,})" for kind, n in reasons)
    times = ""
    if reasons and reasons[0][0].startswith("unparseable timestamp"):
        times = (
            "; times in a layout goldmine does not read are named with --ts-format (strftime, "
            "e.g. --ts-format '%d.%m.%Y %H:%M'), another column with --map ts=COLUMN"
        )
    error = GoldmineError(
        f"nothing stored: all {total['rows_in']:,} rows were rejected ({top}){times}; "
        f"see them with: {_rejects_command(result, store)} "
        "(--allow-empty to accept an import that stores nothing)"
    )
    error.exit_code = EXIT_EMPTY
    return error


@ingest_app.command("searchlog")
def searchlog_cmd(
    paths: Paths,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="jsonl, json, csv, parquet, session_xml (TREC Session Track), clicklog (a row "
            "per click), analytics (query and count rows), accesslog (a web server's access "
            "log: GET /search?q=…), solrlog (solr.log) or ubi (default: told by the file's content "
            "and name).",
        ),
    ] = None,
    mapping: MapOption = None,
    redact: Annotated[bool, typer.Option("--redact", help="Redact PII in queries.")] = False,
    patterns: PatternOption = None,
    click_action: Annotated[
        list[str] | None,
        typer.Option(
            "--click-action", help="With --format ubi: event action names that count as clicks."
        ),
    ] = None,
    ts_format: Annotated[
        str | None,
        typer.Option(
            "--ts-format",
            help="strptime layout of the timestamps, e.g. '%d/%m/%Y %H:%M', for dates no "
            "built-in layout reads or whose day/month order the file does not show.",
        ),
    ] = None,
    encoding: EncodingOption = None,
    engine: EngineOption = "duckdb",
    master: MasterOption = None,
    conf: ConfOption = None,
    summary_dir: SummaryDirOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """Search logs (JSONL, CSV, Parquet, TREC Session Track XML, click-level logs; gzip, zstd,
    bzip2, xz or zip): one row per search as shown, or with --engine spark one row per query and
    day, summarized where the logs are."""
    spark = _spark_options(engine, master, conf, summary_dir)
    if ts_format is not None and (spark is not None or fmt == "ubi"):
        raise InputError("--ts-format is read by the DuckDB engine's search log import only")
    extra = {"ts_format": ts_format} if ts_format is not None else {}
    if encoding is not None:
        if spark is not None or fmt == "ubi":
            raise InputError("--encoding is read by the DuckDB engine's search log import only")
        extra["encoding"] = encoding
    if fmt == "ubi":
        _ubi(paths, click_action, redact, patterns, db, as_json, allow_empty, spark)
        return
    _either(
        "searchlog",
        spark,
        db,
        as_json,
        allow_empty,
        redact,
        patterns,
        paths=paths,
        fmt=fmt,
        mapping=mapping,
        **extra,
    )


@ingest_app.command("ubi")
def ubi_cmd(
    queries: Annotated[str, typer.Argument(help="ubi_queries: JSON, JSONL or a _search dump.")],
    events: Annotated[str, typer.Argument(help="ubi_events: JSON, JSONL or a _search dump.")],
    click_action: Annotated[
        list[str] | None,
        typer.Option(
            "--click-action", help="Event action names that count as clicks (default: click)."
        ),
    ] = None,
    redact: Annotated[bool, typer.Option("--redact", help="Redact PII in queries.")] = False,
    patterns: PatternOption = None,
    engine: EngineOption = "duckdb",
    master: MasterOption = None,
    conf: ConfOption = None,
    summary_dir: SummaryDirOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """User Behavior Insights: ubi_queries joined to their click events by query_id."""
    spark = _spark_options(engine, master, conf, summary_dir)
    _ubi([queries, events], click_action, redact, patterns, db, as_json, allow_empty, spark)


def _ubi(paths, click_action, redact, patterns, db, as_json, allow_empty, spark=None) -> None:

    if len(paths) != 2:
        raise InputError("UBI wants two files: QUERIES EVENTS")
    _either(
        "ubi",
        spark,
        db,
        as_json,
        allow_empty,
        redact,
        patterns,
        queries=paths[0],
        events=paths[1],
        click_actions=click_action or ["click"],
    )


def _either(kind: str, spark, db, as_json, allow_empty, redact, patterns, **kwargs) -> None:
    """The import on Spark when ``spark`` holds its options, else on DuckDB."""
    if spark is not None:
        _spark_import(kind, db, as_json, allow_empty, spark, redact, patterns, **kwargs)
    else:
        _import(kind, db, as_json, allow_empty, redact=redact, patterns=patterns, **kwargs)


AgentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent",
        help="The brand's own handle (author id): its messages are replies, not tickets "
        "(repeatable; for exports without an inbound column).",
    ),
]


@ingest_app.command("tickets")
def tickets_cmd(
    paths: Paths,
    fmt: FormatOption = None,
    mapping: MapOption = None,
    no_redact: NoRedactOption = False,
    patterns: PatternOption = None,
    agent: AgentOption = None,
    encoding: EncodingOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """Support tickets: Zendesk-style JSON export, CSV, or a support-tweet export (customers'
    messages only); question = subject + first question."""
    _text_import("tickets", paths, no_redact, patterns, db, as_json, allow_empty,
                 fmt=fmt, mapping=mapping, agents=agent or [], encoding=encoding)  # fmt: skip


@ingest_app.command("chat")
def chat_cmd(
    paths: Paths,
    fmt: FormatOption = None,
    mapping: MapOption = None,
    no_redact: NoRedactOption = False,
    patterns: PatternOption = None,
    encoding: EncodingOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """Chat: JSONL of turns or conversations, or message CSV with reply-to ids (threads
    rebuilt)."""
    _text_import("chat", paths, no_redact, patterns, db, as_json, allow_empty,
                 fmt=fmt, mapping=mapping, encoding=encoding)  # fmt: skip


@ingest_app.command("traces")
def traces_cmd(
    paths: Paths,
    trace_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="openinference, otel, langfuse, langsmith or openai (default: from the content).",
        ),
    ] = None,
    doc_id: Annotated[
        str | None,
        typer.Option(
            "--doc-id",
            help="The document field holding the chunk id, e.g. metadata.chunk_id "
            "(default: id, chunk_id, metadata.chunk_id, metadata.id; else the content hash).",
        ),
    ] = None,
    no_redact: NoRedactOption = False,
    patterns: PatternOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """RAG traces (OpenInference/Phoenix, OTLP JSON with GenAI attributes, Langfuse, LangSmith,
    OpenAI chat logs): each retrieval becomes a search event with its chunk ids as results."""
    _text_import("traces", paths, no_redact, patterns, db, as_json, allow_empty,
                 trace_format=trace_format, doc_id=doc_id)  # fmt: skip


@ingest_app.command("corpus")
def corpus_cmd(
    paths: Paths,
    fmt: FormatOption = None,
    mapping: MapOption = None,
    label: Annotated[str | None, typer.Option("--label", help="A name for the snapshot.")] = None,
    encoding: EncodingOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """Corpus chunks (JSONL/Parquet, BEIR corpus.jsonl, SMART, TREC SGML, TSV collections; RAG
    stores' exports: LlamaIndex docstore.json, LangChain and Haystack documents, Elasticsearch
    responses and _bulk bodies, Qdrant, Weaviate and Chroma records; told by content): each
    import is a snapshot."""
    _import("corpus", db, as_json, allow_empty, paths=paths, fmt=fmt, mapping=mapping, label=label,
            encoding=encoding)  # fmt: skip


def add_cmd(
    queries: Annotated[list[str] | None, typer.Argument(help="The queries.")] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help="Queries, one a line; or a CSV/TSV saved from a sheet whose header names the "
            "query column (query, question, Search Query …), that column's cells; or a topics "
            "file (TREC <top>, TREC-COVID XML, SMART .I/.W as cran.qry, qid<TAB>query) or JSON "
            "(lines or an array of objects with a query, question or text; a LlamaIndex "
            "dataset), their queries. - reads stdin.",
        ),
    ] = None,
    source: Annotated[str, typer.Option("--source", help="Who or where from.")] = "manual",
    note: Annotated[str | None, typer.Option("--note", help="A note kept with each.")] = None,
    redact: Annotated[
        bool | None,
        typer.Option(
            "--redact/--no-redact",
            help="Replace PII in the queries, source and note (default: [ingest] redact, else on).",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add queries by hand ("ask five colleagues what they would type")."""
    from goldmine.ingest.manual import hand_redactor

    enabled = hand_redactor(redact, settings().ingest).enabled
    # Not an ingest command: a query typed by hand is refused by name (exit 2), never silently.
    _import(
        "add", db, as_json, True, queries=queries or [], file=file, source=source, note=note,
        redact=enabled, patterns=[],
    )  # fmt: skip


def status_cmd(db: DbOption = None, as_json: JsonOption = False) -> None:
    """What is in the store: rows per table and source, the corpus snapshot, the latest triage
    run, the gold set's items by status and its latest version, the last batches."""
    from goldmine.ingest.status import status
    from goldmine.triage.runs import warn_unfinished

    with open_store(db_flag(db), create=False) as con:
        warn_unfinished(con)  # a killed triage run is marked and named, before it is shown
        data = status(con)
    if as_json:
        print_json(data)
        return
    _print_status(data)


def rejects_cmd(
    batch: Annotated[int | None, typer.Option("--batch", help="Only this batch.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many rows.")] = 100,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rejected rows with file, line and reason."""
    from goldmine.ingest.status import rejects

    with open_store(db_flag(db), create=False) as con:
        rows = rejects(con, batch, limit)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console().print("no rejected rows" + (f" in batch {batch}" if batch is not None else ""))
        return
    cols = ("batch_id", "path", "line", "reason", "raw")
    console().print(_table(cols, [[r[c] for c in cols] for r in rows], "rejects"))


_COUNTS = {"rows_in", "stored", "rejected", "already_present", "rows"}
# Short headers, so the tables fit 80 columns (a CI log); --json keeps the full keys.
_HEADERS = {"batch_id": "batch", "already_present": "present", "finished_at": "finished"}


def _cell(column: str, value: Any) -> str:
    """A value as a person reads it; --json keeps the exact one."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if column in _COUNTS and isinstance(value, int):
        return f"{value:,}"
    if column == "path" and value != "total":
        return _short_path(str(value))
    if column == "raw":
        text = " ".join(str(value).split())
        return text if len(text) <= 120 else text[:119] + "…"
    return str(value)


def _short_path(path: str) -> str:
    """Relative to the working directory when the file is under it; a long one keeps its end,
    where the file's name is (--json has the whole path)."""
    with contextlib.suppress(ValueError, OSError):
        path = str(Path(path).resolve().relative_to(Path.cwd()))
    return path if len(path) <= 40 else "…" + path[-39:]


def _table(columns, rows, title=None):

    # A column empty in every row (a note no file needed) only takes width.
    keep = [i for i, _ in enumerate(columns) if any(r[i] not in (None, "") for r in rows)]
    keep = keep if rows else list(range(len(columns)))
    cols = []
    for i in keep:
        numeric = columns[i] in _COUNTS or columns[i] in ("batch_id", "line")
        header = _HEADERS.get(columns[i], columns[i].replace("_", " "))
        # Numbers and times keep one line; the path folds when the terminal is narrow.
        wrap = not (numeric or columns[i].endswith("_at"))
        cols.append(Col(header, wrap=wrap, justify="right" if numeric else "left"))
    return table(cols, [[_cell(columns[i], row[i]) for i in keep] for row in rows], title=title)


def _print_result(result, as_json: bool, store: Path | None = None) -> None:

    if as_json:
        print_json(result.as_dict())
        return
    cols = ("path", "batch_id", "rows_in", "stored", "rejected", "already_present", "note")
    rows = [[getattr(f, c) for c in cols] for f in result.files]
    total = result.total
    rows.append(["total", "", *(total[c] for c in cols[2:6]), ""])
    console().print(_table(cols, rows))
    info(
        f"rows in {total['rows_in']} = stored {total['stored']} + rejected {total['rejected']}"
        f" + already present {total['already_present']}"
    )
    if total["rejected"] and not result.all_rejected:  # else the error line names them
        info(f"see the rejected rows with: {_rejects_command(result, store)}")
    for f in result.files:  # a server log's rows are its searches: its other requests said
        if skipped := (f.extra or {}).get("requests_not_searches"):
            said = "1 request was" if skipped == 1 else f"{skipped:,} requests were"
            info(f"{f.path}: {said} no search (no search words, a later page, a redirect, a "
                 "crawler's, a shard's part of a search): not rows")  # fmt: skip
        if events := (f.extra or {}).get("events_not_searches"):
            said = "1 event was" if events == 1 else f"{events:,} events were"
            info(f"{f.path}: {said} no search (GA4's events other than view_search_results, "
                 "Vespa's requests without a query): not rows")  # fmt: skip


def _triage_line(run: dict | None) -> str:
    if run is None:
        return "triage: not run yet"
    if run["status"] != "done":  # its counts are not set: say what triage show serves
        served = run.get("served")
        shown = (f"triage show serves run {served['run_id']}, {served['n_queries'] or 0:,} "
                 f"queries in {served['n_clusters'] or 0:,} clusters" if served
                 else "no run has finished yet")  # fmt: skip
        return f"triage: run {run['run_id']} {run['status']}; {shown}"
    return (f"triage: run {run['run_id']} {run['status']}, {run['n_queries'] or 0:,} queries in "
            f"{run['n_clusters'] or 0:,} clusters")  # fmt: skip


def _gold_line(gold: dict) -> str:
    items = gold["items"]
    if not items:
        return "gold set: no items yet"
    n = sum(items.values())
    parts = ", ".join(f"{count:,} {status}" for status, count in items.items())
    latest = gold["latest_version"]
    published = f"latest version v{latest['version']}" if latest else "nothing published yet"
    return f"gold set: {n:,} items ({parts}); {published}"


def _print_status(data) -> None:

    out = console()
    out.print(
        _table(
            ("table", "source", "rows"),
            [[c["table"], c["source"], c["rows"]] for c in data["counts"]],
            "store",
        )
    )
    corpus = data["corpus"]
    out.print(
        f"corpus: snapshot {corpus['snapshot_id']}, {corpus['n_chunks']} chunks"
        if corpus
        else "corpus: none imported"
    )
    out.print(_triage_line(data["triage"]), markup=False)
    out.print(_gold_line(data["gold"]), markup=False)
    cols = (
        "batch_id",
        "source",
        "path",
        "rows_in",
        "stored",
        "rejected",
        "already_present",
        "finished_at",
    )
    if out.width >= 110 or not data["batches"]:
        out.print(_table(cols, [[b[c] for c in cols] for b in data["batches"]], "last batches"))
        return
    # A narrow terminal (a CI log is 80 columns): one line per batch reads better than a table
    # whose every cell folds.
    out.print("last batches", highlight=False)
    for b in data["batches"]:
        counts = ", ".join(
            f"{_cell(c, b[c])} {_HEADERS.get(c, c).replace('_', ' ')}" for c in cols[4:7]
        )
        out.print(
            f"  {b['batch_id']:>4}  {b['source']:<9} {_cell('path', b['path'])}\n"
            f"        {_cell('rows_in', b['rows_in'])} in = {counts}"
            f"  ({_cell('finished_at', b['finished_at']) or 'unfinished'})",
            highlight=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the root app."""
    app.add_typer(ingest_app)
    app.command("add")(add_cmd)
    app.command("status")(status_cmd)
    app.command("rejects")(rejects_cmd)
