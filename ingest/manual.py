"""Queries added by hand (``goldmine add``): "ask five colleagues what they would type".

Text typed by hand is redacted like an imported file's (a colleague pastes a customer's email
into a query or a note): here for ``add``, and through ``text_redactor`` for the gold set's
``add-query`` and notes, which the gold set's commands compose (the stage cannot import ingest).
"""

from __future__ import annotations

import csv
import hashlib
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from goldmine.config import IngestSettings
from goldmine.errors import InputError
from goldmine.ingest.batch import Source
from goldmine.ingest.fields import column_words
from goldmine.ingest.files import replace_raw
from goldmine.ingest.redact import Redactor, configured_patterns, install_macros, make_redactor
from goldmine.ingest.searchlog import ALIASES
from goldmine.ingest.target import Target

COLUMNS = ("query_id", "ts", "query", "source", "note")


def stage_sql(keys: list[str]) -> tuple[str, dict[str, Any]]:
    sql = """
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN gm_blank(raw ->> '$.query') THEN 'missing query' END
                AS reason,
            'm-' || left(md5(lower(trim(raw ->> '$.query')) || chr(31) || (raw ->> '$.source')), 16)
                AS query_id,
            now()::TIMESTAMP AS ts,
            trim(raw ->> '$.query') AS query,
            raw ->> '$.source' AS source,
            raw ->> '$.note' AS note
        FROM gm_raw
    """
    return sql, {}


def target() -> Target:
    return Target(
        source="manual",
        table="manual_queries",
        key=("query_id",),
        columns=COLUMNS,
        stage=stage_sql,
        redact=("query", "source", "note"),
    )


def hand_redactor(flag: bool | None, ingest: IngestSettings) -> Redactor:
    """The redaction of text typed by hand: ``--redact``/``--no-redact``, else ``[ingest]
    redact``, else on; with ``[ingest] redact_patterns``."""
    enabled = flag if flag is not None else ingest.redact if ingest.redact is not None else True
    patterns = configured_patterns(ingest.redact_patterns)
    return make_redactor(enabled, patterns, regions=ingest.pii_regions)


def redact_texts(
    con: duckdb.DuckDBPyConnection, texts: list[str | None], redactor: Redactor
) -> list[str | None]:
    """``texts`` redacted in one statement, in their order."""
    if not redactor.enabled or not texts:
        return list(texts)
    install_macros(con)
    sql = "SELECT i, $gm_texts[i] AS v FROM range(1, len($gm_texts) + 1) r(i)"
    for step in redactor.steps("v"):
        sql = f"SELECT i, {step} AS v FROM ({sql})"
    params = {"gm_texts": texts, **redactor.sql_params()}
    return [v for _, v in con.execute(f"{sql} ORDER BY i", params).fetchall()]


def text_redactor(redactor: Redactor) -> Callable[[str], str]:
    """One text at a time (a note, a query added to the gold set), on its own in-memory
    connection: the review page calls it from its request threads."""

    def redact(text: str) -> str:
        if not redactor.enabled:
            return text
        with duckdb.connect() as con:
            return redact_texts(con, [text], redactor)[0] or ""

    return redact


# A spreadsheet's name for the column of queries (searchlog's aliases, and a list's own words).
_QUERY_HEADERS = (*ALIASES["query"], "question", "questions", "queries", "search", "text")


def _read_queries(file: Path) -> str:
    """The text of ``--file``; ``-`` with no file of that name is stdin (``cat q.txt | goldmine
    add --file -``): add reads its input once, unlike an import, which hashes it first. A
    byte-order mark is no text."""
    if str(file) == "-" and not file.exists():
        return sys.stdin.buffer.read().decode("utf-8-sig")
    return file.read_text(encoding="utf-8-sig")


def listed_queries(text: str, file: Path) -> list[str]:
    """The queries of an ``add --file``: one a line, or, for a CSV or TSV saved from a sheet
    whose header names a query column (``query,owner``; ``Search Query``), that column's cells,
    read as CSV (quoted cells hold commas and line ends); or the queries of a topics file or of
    JSON (``goldmine.topics.query_texts``: Cranfield's cran.qry, TREC topics, JSON lines)."""
    from goldmine.ingest.logformats import sniff
    from goldmine.topics import query_texts

    if sniff(text[: 1 << 16].encode(), file.suffix.lower()) == "session_xml":
        raise InputError(
            "is a TREC Session Track log: its searches go in with goldmine ingest searchlog "
            "(its topics are gold import --topics')",
            path=file,
        )
    structured = query_texts(text, file)
    if structured is not None:
        return structured
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    delimiter = "\t" if "\t" in first else ","
    if delimiter not in first and file.suffix.lower() not in (".csv", ".tsv"):
        return lines
    # The header alone first: a plain list's text is no CSV (an unclosed quote runs to its end)
    cells = next(csv.reader([first], delimiter=delimiter), [])
    header = [column_words(cell) for cell in cells]
    column = next((header.index(h) for h in _QUERY_HEADERS if h in header), None)
    if column is None:
        return _id_and_query(lines) if delimiter == "\t" else lines
    try:
        rows = list(csv.reader(io.StringIO(text.lstrip("\r\n")), delimiter=delimiter))
    except csv.Error as exc:  # a cell past the csv module's field limit
        raise InputError(f"cannot read as CSV: {exc}", path=file) from exc
    return [row[column] for row in rows[1:] if len(row) > column]


def _id_and_query(lines: list[str]) -> list[str]:
    """The queries of a topics TSV (TREC's ``qid<TAB>query``, as ``topics.dl20.txt`` is):
    every line two fields, the first an id, each of one shape holding a digit (``1030303``,
    ``q12``; ``vpn<TAB>12`` is no such file), a first line of names (``qid<TAB>topic``) a
    header; else the lines as they are."""
    from goldmine.ingest.corpus_formats import id_shape

    rows = [line.split("\t") for line in lines if line.strip()]
    if rows and "9" not in id_shape(rows[0][0]):
        rows = rows[1:]  # a header row, whose names hold no digit
    shapes = {id_shape(r[0]) for r in rows}
    if rows and len(shapes) == 1 and "9" in next(iter(shapes)) and all(len(r) == 2 for r in rows):
        return [r[1] for r in rows]
    return lines


def source(
    con: duckdb.DuckDBPyConnection,
    queries: list[str],
    file: Path | None,
    who: str,
    note: str | None,
    redactor: Redactor,
) -> Source:
    """The queries as a batch source; a file is read one query a line, blank lines skipped.
    The queries are redacted before anything is made of them, the id and the batch's hash
    included (a hash of the text as typed could confirm a guessed address); ``who`` and
    ``note`` come redacted."""
    texts = list(queries)
    path = "-"
    if file is not None:
        try:
            texts += listed_queries(_read_queries(file), file)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", path=file) from exc
        path = str(file)
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise InputError("no query given (pass it as an argument, or --file with one a line)")
    texts = [t or "" for t in redact_texts(con, texts, redactor)]
    digest = hashlib.sha256("\n".join([who, note or "", *texts]).encode()).hexdigest()

    def read(con: duckdb.DuckDBPyConnection) -> None:
        replace_raw(
            con,
            "SELECT i AS line, json_object('query', $q[i], 'source', $who, 'note', $note)::VARCHAR"
            " AS raw, NULL::VARCHAR AS err FROM range(1, len($q) + 1) r(i)",
            {"q": texts, "who": who, "note": note},
        )

    return Source(path, "manual", None, digest, read)
