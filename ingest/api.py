"""The ingest stage's functions, one per command; each takes an open store connection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest import batch
from goldmine.ingest import chat as _chat
from goldmine.ingest import corpus as _corpus
from goldmine.ingest import manual as _manual
from goldmine.ingest import searchlog as _searchlog
from goldmine.ingest import tickets as _tickets
from goldmine.ingest import traces as _traces
from goldmine.ingest import ubi as _ubi
from goldmine.ingest.batch import ImportResult
from goldmine.ingest.fields import parse_map, resolve_fields
from goldmine.ingest.files import InputFile
from goldmine.ingest.formats import discover
from goldmine.ingest.redact import Redactor, make_redactor

Mapping = list[str] | dict[str, str] | None


def _fields(mapping: Mapping) -> dict[str, str]:
    return mapping if isinstance(mapping, dict) else parse_map(mapping)


# A BEIR data set's folder (beir.util.download_and_unzip's): its corpus file beside its queries
# and qrels, which are gold import's.
BEIR_CORPUS = ("corpus.jsonl", "corpus.jsonl.gz")


def beir_corpus(path: str | Path) -> Path | None:
    """The corpus file of a BEIR folder given to ``ingest corpus``, else None."""
    folder = Path(path)
    if not folder.is_dir() or not (folder / "qrels").is_dir():
        return None
    return next((folder / name for name in BEIR_CORPUS if (folder / name).is_file()), None)


def _sheets(items: list[InputFile]) -> list[InputFile]:
    """For an import of events, tickets or chat: a file told TSV only by a tab in its first line
    (no suffix says so: Excel's "Unicode Text" is a .txt) is a sheet's export with a header
    row, read as a delimited file (DuckDB finds the tab). Read as a collection, a header of
    names no collection uses ("Search Query", "Subject") was a row, the columns id, text,
    title."""
    return [replace(item, format="csv") if item.format == "tsv" else item for item in items]


def _files(
    con: duckdb.DuckDBPyConnection,
    module: Any,
    paths: list[str | Path],
    fmt: str | None,
    mapping: Mapping,
    redactor: Redactor,
    options: dict[str, Any],
    encoding: str | None = None,
    **target_options: Any,
) -> ImportResult:
    """Import files with ``module.target``; --map is checked against ``module.ALIASES`` first,
    so a wrong name fails even for a file already imported."""
    fields = _fields(mapping)
    resolve_fields([], module.ALIASES, fields)
    if module is _corpus:
        paths = [beir_corpus(p) or p for p in paths]
    items = discover(paths, fmt, encoding, documents=module is _corpus)
    if module is _corpus:
        target_options["files"] = len(items)
    if module is _corpus and fmt is None:
        items = _corpus.collections(items)
    elif fmt is None:
        items = _sheets(items)
    target = module.target(fields, **target_options)
    return batch.run(con, target, items, redactor, {"map": fields, **options})


def searchlog(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    fmt: str | None = None,
    mapping: Mapping = None,
    redact: bool = False,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
    ts_format: str | None = None,
    encoding: str | None = None,
) -> ImportResult:
    """Search logs into ``search_events``; PII redaction only with ``redact``. ``ts_format``
    (strptime) reads timestamps no built-in layout reads, or settles 03/04/2026; ``encoding``
    reads files whose text is not UTF-8 (cp1252)."""
    redactor = make_redactor(redact, patterns, regions=regions)
    fields = _fields(mapping)
    export = set(fields) & set(_searchlog.analytics.MAP_PARTS)  # an export's --map
    events = {k: v for k, v in fields.items() if not export or k not in _searchlog.EXPORT_PARTS}
    if export and set(events) - {"query"}:
        raise InputError(
            "--map names an aggregated export's parts and a search event's together "
            f"({', '.join(sorted(fields))}): an export's are query, "
            f"{', '.join(_searchlog.EXPORT_PARTS)}"
        )
    resolve_fields([], _searchlog.ALIASES, events)
    options = {"map": fields, "redact": redact, **({"ts_format": ts_format} if ts_format else {})}
    items = discover(paths, fmt, encoding)
    items = items if fmt is not None else _sheets(items)
    return _searchlog.run(con, items, fields, redactor, options, ts_format)


def tickets(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    fmt: str | None = None,
    mapping: Mapping = None,
    redact: bool = True,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
    agents: list[str] | None = None,
    encoding: str | None = None,
) -> ImportResult:
    """Support tickets into ``tickets``; PII and @handles redacted unless ``redact=False``, as
    in chat. ``agents``: the brand's own handles, whose messages are replies, not tickets;
    ``encoding``: that of files whose text is not UTF-8."""
    redactor = make_redactor(redact, patterns, handles=True, regions=regions)
    options = {"redact": redact, **({"agents": sorted(agents)} if agents else {})}
    result = _files(con, _tickets, paths, fmt, mapping, redactor, options, encoding,
                    agents=agents)  # fmt: skip
    _count_no_question(con, result)
    return result


def _count_no_question(con: duckdb.DuckDBPyConnection, result: ImportResult) -> None:
    """Say per file how many tickets were kept but tagged no-question (left out of triage)."""
    for f in result.files:
        if f.batch_id is None or not f.stored:
            continue
        rows = con.execute(
            "SELECT count(*) FROM tickets WHERE batch_id = ? AND no_question", [f.batch_id]
        ).fetchall()
        f.extra["no_question"] = n = rows[0][0]
        if n:
            note = f"{n} tagged no-question (no question or problem stated; left out of triage)"
            f.note = f"{f.note}; {note}" if f.note else note


def chat(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    fmt: str | None = None,
    mapping: Mapping = None,
    redact: bool = True,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
    encoding: str | None = None,
) -> ImportResult:
    """Chat turns into ``chat_turns``; PII and @handles redacted unless ``redact=False``;
    ``encoding``: that of files whose text is not UTF-8."""
    redactor = make_redactor(redact, patterns, handles=True, regions=regions)
    return _files(con, _chat, paths, fmt, mapping, redactor, {"redact": redact}, encoding)


def traces(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    trace_format: str | None = None,
    doc_id: str | None = None,
    redact: bool = True,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
) -> ImportResult:
    """RAG traces into ``search_events`` (source ``traces``), one event per retrieval, and
    ``trace_retrievals``; the format is found per file unless given. PII and @handles are
    redacted unless ``redact=False``, as in chat."""
    target = _traces.target(trace_format, doc_id)
    items = discover(paths)
    redactor = make_redactor(redact, patterns, handles=True, regions=regions)
    options = {"redact": redact, "format": trace_format, "doc_id": doc_id}
    result = batch.run(con, target, items, redactor, options)
    _note_no_retrieval(result)
    return result


def _note_no_retrieval(result: ImportResult) -> None:
    """Say of a trace file whose spans hold no retrieval that none was one: its import stores
    nothing and is no error (a trace of LLM calls alone is a trace), but a retriever's spans in
    a layout not read as one (a span type of another tool's) look like that too."""
    for f in result.files:
        extra = f.extra or {}
        if extra.get("spans") and not extra.get("retrievals") and not extra.get("feedback_records"):
            note = (
                f"{extra['spans']} spans, none of them a retrieval (a span of kind RETRIEVER: "
                "OpenInference's openinference.span.kind, gen_ai.operation.name retrieval, "
                "LangSmith's run_type retriever, a Langfuse RETRIEVER observation)"
            )
            f.note = f"{f.note}; {note}" if f.note else note


def corpus(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    fmt: str | None = None,
    mapping: Mapping = None,
    label: str | None = None,
    encoding: str | None = None,
) -> ImportResult:
    """Chunks into a new corpus snapshot (unless the content equals the current one);
    ``encoding`` reads files whose text is not UTF-8 (cp1252)."""
    redactor = make_redactor(False)
    return _files(con, _corpus, paths, fmt, mapping, redactor, {"label": label}, encoding,
                  label=label)  # fmt: skip


def ubi(
    con: duckdb.DuckDBPyConnection,
    queries: str | Path,
    events: str | Path,
    click_actions: list[str] | None = None,
    redact: bool = False,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
) -> ImportResult:
    """UBI queries and events into ``search_events`` (source ``ubi``), clicks joined."""
    found = discover([queries]) + discover([events])
    if len(found) != 2:
        raise InputError("UBI wants one queries file and one events file")
    actions = click_actions or ["click"]
    batch.prepare(con)
    source = _ubi.source(con, found[0], found[1])
    redactor = make_redactor(redact, patterns, regions=regions)
    target = _ubi.target(actions, str(found[1].path), redactor)
    options = {"events": str(found[1].path), "click_actions": actions}
    result = batch.import_source(con, target, source, redactor, options)
    return ImportResult([result])


def add(
    con: duckdb.DuckDBPyConnection,
    queries: list[str],
    file: Path | None = None,
    source: str = "manual",
    note: str | None = None,
    redact: bool = True,
    patterns: list[str] | None = None,
    regions: list[str] | None = None,
) -> ImportResult:
    """Queries by hand into ``manual_queries``; the same query from the same source once. PII
    redacted in the queries, the source and the note unless ``redact=False``."""
    batch.prepare(con)
    redactor = make_redactor(redact, patterns, regions=regions)
    # The batch's options are stored too: they get the source and note as the rows do.
    who, said = _manual.redact_texts(con, [source, note], redactor)
    src = _manual.source(con, queries, file, who or source, said, redactor)
    options = {"source": who, "note": said, "redact": redact}
    result = batch.import_source(con, _manual.target(), src, redactor, options)
    return ImportResult([result])
