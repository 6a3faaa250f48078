"""One file, one batch, one transaction: the accounting every ingest command shares.

A batch is staged first, in temp tables that never reach the file: a clean JSONL or Parquet file
is parsed once by DuckDB's own reader; anything else (a malformed line, bad encoding, CSV, a JSON
document, chat threads to rebuild) is read record by record into ``gm_raw(line, raw, err)``. The
stage's SQL maps fields by name, finds the reason a record cannot be stored, and redacts. Then
one transaction writes the batch: its ``import_batches`` row, the rejects with line and reason,
and the new rows (an anti-join on the natural key, no PRIMARY KEY). So ``rows_in = stored +
rejected + already_present`` holds by construction, and a batch that fails or is interrupted
leaves nothing behind. A file whose hash a finished batch already has is not read again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from goldmine.errors import InputError, error_line
from goldmine.ingest.files import (
    InputFile,
    discover_keys,
    drop_raw,
    fix_reject_lines,
    materialized_rows,
    parquet_schema,
    reader_note,
    run_sql,
    sample_keys,
    streaming_rows,
    typed_reject_raw,
    typed_rows,
)
from goldmine.ingest.formats import read_raw
from goldmine.ingest.logformats import DATE_MACROS
from goldmine.ingest.pii import SECRET_MARKS
from goldmine.ingest.redact import Redactor, install_macros
from goldmine.ingest.scan import FileScan, blanked_copy, scan_file
from goldmine.ingest.target import Target
from goldmine.output import progress
from goldmine.readers import RESULT_ID_KEYS, RESULT_NESTED
from goldmine.signals import sql_list
from goldmine.store import (
    can_release,
    is_released,
    key_file,
    released,
    store_path,
    transaction,
)

COUNTS = ("rows_in", "stored", "rejected", "already_present")

# Where a result object keeps its id (``readers.RESULT_ID_KEYS``, beside it or nested), as JSON
# paths in the order they are tried; and where a search response stored whole keeps its list.
RESULT_ID_PATHS = [
    f"$.{where}{key}" for keys in RESULT_ID_KEYS
    for where in ("", *(f"{n}." for n in RESULT_NESTED)) for key in keys
]  # fmt: skip
RESULT_LIST_PATHS = ["$.hits.hits", "$.hits", "$.results", "$.documents", "$.matches",
                     "$.result", "$.points", "$.data"]  # fmt: skip

# Times as analytics tools and warehouses write them, month named or offset after a space:
# "Nov 23, 2026 8:37:51 AM" (Google's and Adobe's reports), "Nov 23, 2026 @ 03:33:17.673"
# (Kibana's Discover CSV), "2026-11-23 00:10:47.133 -0800" (Snowflake's TIMESTAMP_TZ), "23 Nov
# 2026 08:37:51". strptime's layouts; ``translate.TEXT_TIMES`` are Spark's for the same. Those
# with an offset are tried apart: in one list with those without, DuckDB 2's try_strptime read
# a row without an offset at the offset of the row before it.
TEXT_TIMES = (
    "%b %d, %Y %I:%M:%S %p", "%B %d, %Y %I:%M:%S %p", "%b %d, %Y %H:%M:%S",
    "%b %d, %Y @ %H:%M:%S.%g", "%b %d, %Y @ %H:%M:%S", "%d %b %Y %H:%M:%S", "%d %B %Y %H:%M:%S",
)  # fmt: skip
ZONED_TIMES = ("%Y-%m-%d %H:%M:%S.%g %z", "%Y-%m-%d %H:%M:%S.%f %z", "%Y-%m-%d %H:%M:%S %z")

# What exports write in a cell that holds nothing, lower-cased (gm_unset; Spark's _unset).
UNSET = ("-", "(not set)", "(none)", "null", "none", "n/a", "nan", "undefined")

# Timestamps: ISO 8601 with or without offset (converted to UTC), epoch seconds or
# milliseconds, and Twitter's "Wed Oct 11 06:55:44 +0000 2017".
# Ids lists: a JSON array (of ids, or of objects with an id) or a "a,b|c" string.
MACROS = (
    r"""
-- The key of a record that has none, from its content (see content_hash).
CREATE OR REPLACE TEMP MACRO gm_content_hash(s) AS md5(s);
CREATE OR REPLACE TEMP MACRO gm_id_key(x) AS x;
CREATE OR REPLACE TEMP MACRO gm_ts_any(s) AS coalesce(
    try_cast(s AS TIMESTAMPTZ)::TIMESTAMP,
    CASE WHEN regexp_full_match(trim(s), '[0-9]{9,10}(\.[0-9]+)?')
             THEN make_timestamp((trim(s)::DOUBLE * 1000000)::BIGINT)
         WHEN regexp_full_match(trim(s), '[0-9]{12,13}') THEN make_timestamp(trim(s)::BIGINT * 1000)
         -- microseconds (GA4's BigQuery event_timestamp), nanoseconds
         WHEN regexp_full_match(trim(s), '[0-9]{15,16}') THEN make_timestamp(trim(s)::BIGINT)
         WHEN regexp_full_match(trim(s), '[0-9]{18,19}')
             THEN make_timestamp((trim(s)::HUGEINT // 1000)::BIGINT)
    END,
    try_strptime(s, '%a %b %d %H:%M:%S %z %Y')::TIMESTAMP,
    CASE WHEN regexp_matches(trim(s), '^[A-Za-z]{3}|^[0-9]{1,2} [A-Za-z]{3}|[0-9] [+-][0-9]{4}$')
        THEN coalesce(try_strptime(trim(s), GM_TEXT_TIMES),
                      try_strptime(trim(s), GM_ZONED_TIMES)::TIMESTAMP) END
);
-- A plain ISO date-time without a zone (the common case) casts straight to TIMESTAMP, twice as
-- fast as the TIMESTAMPTZ route, which is kept for anything carrying an offset or a zone name.
CREATE OR REPLACE TEMP MACRO gm_ts(s) AS CASE
    WHEN regexp_full_match(
        s, '[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?)?')
        THEN try_cast(s AS TIMESTAMP)
    ELSE gm_ts_any(s) END;
CREATE OR REPLACE TEMP MACRO gm_jtype(t) AS (
    CASE WHEN t IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN 'a number'
         WHEN t = 'BOOLEAN' THEN 'a boolean'
         WHEN t = 'OBJECT' THEN 'an object' WHEN t = 'ARRAY' THEN 'a list' ELSE lower(t) END
);
-- One result given as JSON: a string or number as itself; an object's chunk_id, else its id or
-- _id, else its doc_id, beside it or in its nested document (RESULT_ID_PATHS); NULL for an
-- object with none (its JSON text is no id).
CREATE OR REPLACE TEMP MACRO gm_result_id(e) AS CASE
    WHEN json_type(e) = 'OBJECT' THEN list_filter(json_extract_string(e, RESULT_ID_PATHS),
                                                  lambda v: v IS NOT NULL)[1]
    ELSE json_extract_string(e, '$') END;
-- The list of results in a search service's response stored whole (RESULT_LIST_PATHS).
CREATE OR REPLACE TEMP MACRO gm_result_list(s) AS list_filter(
    json_extract(s, RESULT_LIST_PATHS), lambda v: json_type(v) = 'ARRAY')[1];
-- What exports write in a cell that holds nothing (Kibana's "-", Google Analytics' "(not set)",
-- pandas' "nan", a JavaScript "undefined"): no value, never an id or a user.
CREATE OR REPLACE TEMP MACRO gm_unset(s) AS
    CASE WHEN strlen(s) <= 16 AND list_contains(@UNSET@, lower(trim(s))) THEN NULL ELSE s END;
CREATE OR REPLACE TEMP MACRO gm_ids(s) AS (
    CASE WHEN s IS NULL OR gm_unset(s) IS NULL THEN NULL
         WHEN starts_with(s, '["') OR s = '[]' THEN coalesce(
             try(from_json(s, '["VARCHAR"]')),
             list_filter(regexp_split_to_array(trim(s), '\s*[,;|]\s*'), lambda e: e <> ''))
         WHEN starts_with(ltrim(s), '[') AND json_valid(s) THEN list_transform(
             from_json(s, '["JSON"]'), lambda e: gm_result_id(e))
         WHEN starts_with(ltrim(s), '{') AND json_valid(s) THEN list_transform(
             from_json(gm_result_list(s), '["JSON"]'), lambda e: gm_result_id(e))
         ELSE list_filter(regexp_split_to_array(trim(s), '\s*[,;|]\s*'),
                          lambda e: e <> '' AND gm_unset(e) IS NOT NULL) END
);
-- The JSON type of a value given as JSON text, from its first character.
CREATE OR REPLACE TEMP MACRO gm_jtype_of(j) AS (
    CASE WHEN j IS NULL THEN 'NULL' ELSE
    CASE left(j, 1) WHEN '"' THEN 'VARCHAR' WHEN '[' THEN 'ARRAY' WHEN '{' THEN 'OBJECT'
         WHEN 'n' THEN 'NULL' WHEN 't' THEN 'BOOLEAN' WHEN 'f' THEN 'BOOLEAN'
         ELSE 'DOUBLE' END END
);
""".replace("GM_TEXT_TIMES", sql_list(TEXT_TIMES))
    .replace("GM_ZONED_TIMES", sql_list(ZONED_TIMES))
    .replace("RESULT_ID_PATHS", sql_list(tuple(RESULT_ID_PATHS)))
    .replace("RESULT_LIST_PATHS", sql_list(tuple(RESULT_LIST_PATHS)))
    .replace("@UNSET@", sql_list(UNSET))
)


@dataclass
class FileResult:
    path: str
    source: str
    format: str
    batch_id: int | None
    rows_in: int = 0
    stored: int = 0
    rejected: int = 0
    already_present: int = 0
    skipped: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(out.pop("extra"))
        return out


@dataclass
class ImportResult:
    files: list[FileResult]

    @property
    def total(self) -> dict[str, int]:
        return {k: sum(getattr(f, k) for f in self.files) for k in COUNTS}

    @property
    def all_rejected(self) -> bool:
        """Rows came in and every one was rejected: nothing stored, and not because the rows
        were already there (an import of a file read before is not empty in this sense)."""
        total = self.total
        return total["rows_in"] > 0 and total["rejected"] == total["rows_in"]

    def reject_batches(self) -> list[tuple[int, str]]:
        """(batch id, path) of each file with rejects: where ``goldmine rejects`` finds them."""
        return [(f.batch_id, f.path) for f in self.files if f.rejected and f.batch_id is not None]

    def as_dict(self) -> dict[str, Any]:
        return {"files": [f.as_dict() for f in self.files], "total": self.total}


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Session settings and macros every ingest statement relies on."""
    con.execute("SET TimeZone = 'UTC'")
    # DuckDB tracks each statement's progress for our bar on stderr (``following``); its own bar
    # would write to stdout, which --json keeps for the result.
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    con.execute("SET progress_bar_time = 0")
    install_macros(con)
    con.execute(MACROS)
    con.execute(DATE_MACROS)  # day/month dates (ingest.logformats)


def run(
    con: duckdb.DuckDBPyConnection,
    target: Target,
    items: list[InputFile],
    redactor: Redactor,
    options: dict[str, Any] | None = None,
) -> ImportResult:
    prepare(con)
    results = []
    # Files are hashed (and line-based ones scanned for what the reader would lose, see
    # ingest.scan) in a thread (hashlib, zlib and DuckDB release the GIL), so a file that cannot
    # be a known one is staged while its hash is computed.
    hasher = ThreadPoolExecutor(max_workers=1)
    try:
        with progress(
            f"importing {target.source}", total=_UNITS * len(items), percent=True
        ) as advance:
            for item in items:
                scanning = hasher.submit(
                    scan_file, item.path, item.compression, _lined(item), item.encoding
                )
                source = file_source(item, scanning)
                try:
                    result = import_source(con, target, source, redactor, options or {}, advance)
                except InputError as exc:
                    kept = results if target.finish is None else []  # else undone below
                    raise in_file_error(exc, item.path, kept) from exc
                results.append(result)
        _finish(con, target, results, complete=True)
    except BaseException:
        # A command that gathers its files keeps nothing of them when one fails (Ctrl-C too):
        # its finish undoes the batches written so far. An error in that undoing must not hide
        # the first one.
        with contextlib.suppress(Exception):
            _finish(con, target, results, complete=False)
        raise
    finally:
        hasher.shutdown(wait=True, cancel_futures=True)
    checkpoint_appends(con)
    return ImportResult(results)


def in_file_error(exc: InputError, path: str | Path, kept: list[FileResult]) -> InputError:
    """A file's error naming the file (when it names none) and the files before it that stay
    imported (``kept``): which of several files failed, and what was kept, went unsaid."""
    if type(exc) is not InputError:  # a subclass tells its caller what to do, as it is
        return exc
    message = exc.message
    if exc.path is not None:
        line = f":{exc.line}" if exc.line is not None else ""
        message = message.removeprefix(f"{exc.path}{line}: ")
    kept = [r for r in kept if r.batch_id is not None and not r.skipped]
    if not kept and exc.path is not None:
        return exc
    if kept:
        names = ", ".join(Path(r.path).name for r in kept[:3]) + (" …" if len(kept) > 3 else "")
        message += f" (the {len(kept)} file(s) before it stay imported: {names})"
    return InputError(message, path=exc.path or path, line=exc.line)


def _finish(
    con: duckdb.DuckDBPyConnection, target: Target, results: list[FileResult], complete: bool
) -> None:
    if target.finish is not None:
        with transaction(con):
            target.finish(con, target, [r for r in results if r.batch_id is not None], complete)


def checkpoint_appends(con: duckdb.DuckDBPyConnection) -> None:
    """Checkpoint the batches now, without merging row groups. An insert in parallel leaves a
    partly filled row group per thread; the checkpoint's vacuum would then, depending on how
    the rows fell, merge one with its neighbours and rewrite a third of the new data (a second
    per 500k rows, at the close). The few small row groups cost a scan nothing measurable."""
    con.execute("SET max_vacuum_tasks = 0")  # a global setting: reset at once
    try:
        con.execute("CHECKPOINT")
    finally:
        con.execute("RESET max_vacuum_tasks")


@dataclass(frozen=True)
class Source:
    """What one batch reads: a file, or (``goldmine add``) text given on the command line.

    ``read`` materializes the records as ``gm_raw(line, raw, err)``; ``file`` allows the
    streaming path, which parses a clean JSONL or Parquet file once, straight from disk.
    """

    path: str
    label: str
    size: int | None
    hashing: str | Future[str]  # the content hash, or its computation under way
    read: Callable[[duckdb.DuckDBPyConnection], list[str] | None]  # see formats.read_raw
    file: InputFile | None = None

    def _hashed(self) -> str | FileScan:
        return self.hashing if isinstance(self.hashing, str) else self.hashing.result()

    @property
    def file_hash(self) -> str:
        got = self._hashed()
        return got.sha256 if isinstance(got, FileScan) else got

    def scan(self) -> FileScan | None:
        """What the file's scan found (None if it was not scanned); raises the scan's InputError
        for a compressed stream that ends early."""
        got = self._hashed()
        return got if isinstance(got, FileScan) else None


# The formats read as lines of text, which the scan checks for lines the reader would lose.
_LINE_FORMATS = (
    "jsonl", "csv", "smart", "trec", "tsv", "session_xml", "clicklog", "analytics", "accesslog",
    "solrlog",
)  # fmt: skip


def _lined(item: InputFile) -> bool:
    return item.format in _LINE_FORMATS


def file_source(item: InputFile, hashing: str | Future[str | FileScan] | None = None) -> Source:
    return Source(
        str(item.path),
        item.label,
        item.path.stat().st_size,
        scan_file(item.path, item.compression, _lined(item), item.encoding)
        if hashing is None
        else hashing,
        lambda con: read_raw(con, item),
        item,
    )


def _known_batch(con, target: Target, source: Source) -> list[tuple]:
    """The finished batch that read this file before, if any. One whose every row was rejected
    stored nothing, so the file is read again: an import refused for its dates or fields is
    imported again with the option that reads them (--ts-format, --map), which must not be
    skipped as "already imported"."""
    return con.execute(
        "SELECT batch_id, rows_in, rejected FROM import_batches WHERE source = ? AND file_hash = ? "
        "AND finished_at IS NOT NULL AND NOT (rows_in > 0 AND rejected = rows_in) "
        "ORDER BY batch_id LIMIT 1",
        [target.source, source.file_hash],
    ).fetchall()


def _may_be_known(con, target: Target, source: Source) -> bool:
    """Whether a finished batch could have this file's content: one of the same size (or of
    unknown size). If none, the hash cannot match, so staging need not wait for it."""
    if isinstance(source.hashing, str):
        return True
    return con.execute(
        "SELECT count(*) > 0 FROM import_batches WHERE source = ? AND finished_at IS NOT NULL "
        "AND (size_bytes = ? OR size_bytes IS NULL)",
        [target.source, source.size],
    ).fetchall()[0][0]


def import_source(
    con: duckdb.DuckDBPyConnection,
    target: Target,
    source: Source,
    redactor: Redactor,
    options: dict[str, Any],
    advance: Callable[[int], None] = lambda n=1: None,
) -> FileResult:
    """Stage the file in temp tables, then write the batch in one transaction."""
    result = FileResult(source.path, target.source, source.label, None)
    known = not target.reread and _may_be_known(con, target, source)
    done = _known_batch(con, target, source) if known else []
    if done:
        # The same rows as then: its rejects are rejected again (the hint names that batch, which
        # lists them), never counted as present; its stored and present rows are present.
        result.batch_id, result.rows_in, result.rejected = done[0]
        result.already_present, result.skipped = result.rows_in - result.rejected, True
        result.note = f"already imported (batch {result.batch_id}, same file hash)"
        advance(_UNITS)
        return result
    try:
        if target.macros:
            con.execute(target.macros)
        content_hash(con, redactor)
        with following(con, advance, _STAGE_UNITS):
            _stage_apart(con, target, source, redactor)
        # The insert runs in any order (see store_new_rows), set outside the transaction: a
        # failed statement aborts it, and nothing could be reset until it is rolled back.
        with following(con, advance, _UNITS - _STAGE_UNITS), _any_order(con), transaction(con):
            _write_batch(con, target, source, result, options)
    finally:
        con.execute("DROP TABLE IF EXISTS gm_stage")
        drop_raw(con)
    return result


# A file's share of the bar: staging (parse, check, redact) takes most of an import's time.
_UNITS = 100
_STAGE_UNITS = 60


@contextmanager
def following(
    con: duckdb.DuckDBPyConnection, advance: Callable[[int], None], units: int
) -> Iterator[None]:
    """Move the bar ``units`` across the statements run inside, as DuckDB reports the running
    statement's progress (polled from a thread; a multi-statement step moves with each)."""
    given = 0

    def move_to(target: int) -> None:
        nonlocal given
        if target > given:
            advance(target - given)
            given = target

    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.2):
            try:
                share = con.query_progress()
            except duckdb.Error:
                return
            if share > 0:
                move_to(int(units * min(share, 99.0) / 100))

    watcher = None
    if getattr(advance, "visible", False):
        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
    try:
        yield
    finally:
        done.set()
        if watcher is not None:
            watcher.join()
        move_to(units)


def define_known(con: duckdb.DuckDBPyConnection, target: Target, check: bool = True) -> bool:
    """Define ``gm_stored(key…)``: whether a row with this natural key is already stored (the
    anti-join), and ``gm_seen_line(hash)``: whether a stored row came from a line with this hash
    (see ``line_key``). Into an empty table nothing is, and the macros are plain ``false``: the
    stage then has no join. ``check=False`` makes them ``false`` regardless. True if empty."""
    args = [f"gm_a{i}" for i in range(len(target.key))]
    # With the store let go, the copies _snapshot_known made stand in for the table.
    apart = is_released(con)
    table = "gm_known_keys" if apart else target.table
    empty = con.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {table})").fetchall()[0][0]
    match = " AND ".join(f"gm_t.{k} = {a}" for k, a in zip(target.key, args, strict=True))
    body = f"EXISTS (SELECT 1 FROM {table} gm_t WHERE {match})"
    body = "false" if empty or not check else body
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_stored({', '.join(args)}) AS {body}")
    # An event id of digits alone stored at another time for another query, or over a day away:
    # another search, from an export that numbers each file's rows 1..N. The same event
    # exported again keeps its query, and its time but for precision or a zone (a day at most).
    # Only a store holding such ids pays for the join.
    query_hash = "gm_k.gm_query_hash" if apart else "hash(gm_k.query)"
    numbered = (
        f"(SELECT event_id, ts, {query_hash} AS gm_qh FROM {table} gm_k "
        f"WHERE regexp_full_match(event_id, '{NUMBERED}'))"
    )
    far = _timed_ids(target) and check and not empty
    far = far and con.execute(f"SELECT EXISTS {numbered}").fetchall()[0][0]
    other = (
        f"EXISTS (SELECT 1 FROM {numbered} gm_k WHERE gm_k.event_id = gm_a AND gm_k.ts <> gm_b "
        "AND (abs(epoch(gm_k.ts) - epoch(gm_b)) > 86400 OR gm_k.gm_qh <> hash(gm_c)))"
        if far
        else "false"
    )
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_stored_far_off(gm_a, gm_b, gm_c) AS {other}")
    if target.place is not None:
        # the copy holds the known columns under their names (``expr AS name``)
        columns = [k.split(" AS ")[-1] for k in target.known] if apart else target.known
        known = ", ".join((*target.key, *columns))
        where = "" if check else " WHERE false"
        view = f"SELECT {known} FROM {table}{where}"
        con.execute(f"CREATE OR REPLACE TEMP VIEW gm_known_rows AS {view}")
    seen = "false"
    if check and not empty and LINE_HASH in target.columns:
        lines = "gm_known_lines" if apart else target.table
        hashed = f"(SELECT {LINE_HASH} FROM {lines} WHERE {LINE_HASH} IS NOT NULL)"
        if con.execute(f"SELECT EXISTS {hashed}").fetchall()[0][0]:
            seen = f"coalesce(gm_h IN {hashed}, false)"
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_seen_line(gm_h) AS {seen}")
    return empty


# A target storing this column keeps, per row read from a JSONL line, a hash of the line (under
# ``line_key``): a weekly file's lines that are already stored are then known without parsing.
LINE_HASH = "line_hash"
# Bumped when a change to the stage could give an already stored line another key or reason.
_LINE_KEY_VERSION = 2  # 2: a time out of range (gm_in_time), num_results < 0: rejects


def line_key(target: Target, params: dict[str, Any], redactor: Redactor) -> str | None:
    """What a line's hash is salted with: everything a line's key and reason depend on besides
    its text (the code's rules, DuckDB's version, how fields are mapped). A line read another
    way never matches, and is parsed and checked by its key as usual. None (no hash kept) when
    redacting: the hash is of the text before redaction, and with the row's other fields stored,
    a guessed email could be checked against it."""
    if LINE_HASH not in target.columns or "gm_reading" not in params or redactor.enabled:
        return None
    parts = [_LINE_KEY_VERSION, duckdb.__version__, target.source, target.table]
    return json.dumps([*parts, params["gm_reading"]])


def _stage_apart(con, target: Target, source: Source, redactor: Redactor) -> None:
    """Stage the file with the store let go where the connection allows (``store.released``):
    the rows already stored are known from a copy of their keys and line hashes taken first,
    so readers can open the store while a big file is parsed, checked and redacted; the store
    is held again only to write. If another import finished meanwhile, or the target's stage
    reads a store table, the file is staged again with the store held."""
    if not can_release(con):
        define_known(con, target)
        _stage_checked(con, target, source, redactor)
        return
    mark = _store_mark(con)
    _snapshot_known(con, target)
    try:
        with released(con):
            define_known(con, target)
            _stage_checked(con, target, source, redactor)
        if _store_mark(con) == mark:
            return
    except duckdb.CatalogException:
        pass
    finally:
        con.execute(
            "DROP VIEW IF EXISTS gm_known_rows; DROP TABLE IF EXISTS gm_known_keys; "
            "DROP TABLE IF EXISTS gm_known_lines"
        )
    define_known(con, target)
    _stage_checked(con, target, source, redactor)


def _store_mark(con) -> tuple:
    """What changes when any import finishes."""
    return tuple(con.execute("SELECT count(*), max(batch_id) FROM import_batches").fetchall()[0])


# An event id that is a row's number in its file, as a spreadsheet or a notebook writes one.
NUMBERED = "[0-9]{1,18}"


def _timed_ids(target: Target) -> bool:
    """Whether the target's rows are events keyed by an id and stamped with a time."""
    return target.key == ("event_id",) and "ts" in target.columns


def _snapshot_known(con, target: Target) -> None:
    """Copy the stored rows' natural keys and line hashes into temp tables, for
    ``define_known`` to read while the store is let go."""
    times = (
        ("ts", f"CASE WHEN regexp_full_match(event_id, '{NUMBERED}') THEN hash(query) END "
               "AS gm_query_hash")
        if _timed_ids(target) and "ts" not in target.known
        else ()
    )  # fmt: skip
    keys = ", ".join((*target.key, *target.known, *times))
    # A target whose stage asks no stored key (a corpus snapshot): a copy of every stored chunk
    # id for each file of a sharded corpus would be wasted.
    none = "" if target.asks_stored else " WHERE false"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE gm_known_keys AS SELECT {keys} FROM {target.table}{none}"
    )
    hashes = (
        f"SELECT {LINE_HASH} FROM {target.table} WHERE {LINE_HASH} IS NOT NULL"
        if LINE_HASH in target.columns
        else "SELECT NULL::UHUGEINT AS line_hash WHERE false"
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE gm_known_lines AS {hashes}")


def _stage(con, target: Target, source: Source, redactor: Redactor) -> None:
    if not _stage_streaming(con, target, source, redactor):
        _stage_materialized(con, target, source, redactor)


def _stage_checked(con, target: Target, source: Source, redactor: Redactor) -> None:
    """Stage the file; if its scan (done meanwhile) found lines the reader loses without a word
    (too long, NUL bytes), or line ends it stopped at, stage it again from a copy where those
    lines are blank and the line ends plain, and add each bad line as a reject. Odd line ends
    alone matter only where the reader stopped: a CSV's quoted fields may hold a bare LF between
    CRLF records (banking77's do), which DuckDB's CSV reader reads. A scan's error (a compressed
    stream that ends early) comes before any other. A file DuckDB cannot read as it is (a zip
    archive, text in another encoding: ``InputFile.read_from_copy``) is read from the copy
    alone, its padding at the end (``FileScan.tail``) left out."""
    stopped, item = False, source.file
    direct = item is None or not item.read_from_copy
    if direct:
        try:
            _stage(con, target, source, redactor)
        except InputError:
            scan = source.scan()
            if scan is None or not scan.needs_copy:
                raise
            stopped = True
    scan = source.scan()
    if direct and (scan is None or not (scan.bad or scan.tail or (stopped and scan.odd_line_ends))):
        return
    folder = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    copy = blanked_copy(item.path, item.compression, scan or FileScan(""),
                        Path(folder or tempfile.gettempdir()), item.encoding)  # fmt: skip
    try:
        clean = replace(item, path=copy, compression="none", encoding="utf-8")
        again = Source(source.path, source.label, source.size, source.hashing,
                       lambda con: read_raw(con, clean), clean)  # fmt: skip
        _stage(con, target, again, redactor)
    except InputError as exc:  # name the user's file, not the copy
        if type(exc) is not InputError:  # a subclass tells the caller what to do, as it is
            raise
        said = exc.message.removeprefix(f"{copy}: ").replace(str(copy), source.path)
        raise InputError(said, path=source.path) from exc
    finally:
        copy.unlink(missing_ok=True)
    if scan is not None and scan.bad:
        con.execute(
            "INSERT INTO gm_stage (line, reason) SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[])",
            [[b.line for b in scan.bad], [b.reason for b in scan.bad]],
        )


def _stage_streaming(con, target: Target, source: Source, redactor: Redactor) -> bool:
    """Stage a JSONL or Parquet file parsed once by DuckDB's reader; False when the file needs
    the line-by-line path (bad encoding, a reshaping target)."""
    item = source.file
    if item is not None and target.stream is not None:
        return _stage_own_stream(con, target, source, redactor)
    if item is None or not target.streaming or item.format not in ("jsonl", "parquet"):
        return False
    if target.reshape and target.reshapes is None:
        return False
    try:
        schema = parquet_schema(con, item) if item.format == "parquet" else None
        keys = list(schema) if schema is not None else sample_keys(con, item)
    except duckdb.Error:
        return False
    if target.reshape and target.reshapes(keys):  # records another tool's way: reshaped first
        return False
    stage_sql, params = target.stage(keys)
    if "gm_columns" not in params:
        return False
    try:
        if item.format == "jsonl":
            _stage_jsonl(con, target, item, stage_sql, params, redactor)
        else:
            rows, rows_params = streaming_rows(con, item, params["gm_columns"], schema)
            _create_stage(con, rows, stage_sql, {**params, **rows_params}, target, redactor)
        # Reading a rejected row's line may still fail (invalid UTF-8): the record-by-record
        # path reports that line by line.
        fix_reject_lines(con, item, redactor)
    except (duckdb.InvalidInputException, duckdb.ConversionException):
        return False
    return True


# Records sampled to tell a self-reading target's format: enough to see every kind of record a
# file starts with, few enough that a file of large records (a trace with its documents) is not
# held in memory for it under a small memory limit.
_FORMAT_SAMPLE = 2000


def _stage_own_stream(con, target: Target, source: Source, redactor: Redactor) -> bool:
    """Stage a file the target reads itself, in no particular row order (see Target.stream);
    False when it cannot (another format, bad encoding): the record-by-record path then."""
    item = source.file
    try:
        # The keys only tell the format (the target maps no fields by them): a few records do.
        keys = sample_keys(con, item, _FORMAT_SAMPLE) if item.format == "jsonl" else []
        with _any_order(con):
            if not target.stream(con, item, keys):
                return False
            stage_sql, params = target.stage(keys)
            _create_stage(con, "", stage_sql, params, target, redactor, source.path)
        if target.number is not None:
            target.number(con, item, redactor)
    except (duckdb.InvalidInputException, duckdb.ConversionException):
        return False
    return True


def _stage_jsonl(
    con, target: Target, item: InputFile, stage_sql: str, params: dict, redactor
) -> None:
    """Stage a JSONL file in one parallel pass, in no particular row order: DuckDB's reader
    gives no record number, and keeping the file's order costs a tenth of the import. The
    order matters for two things only, paid for when they occur: the rejects' lines (a light
    second pass, in order, numbers them) and which of a repeated key's rows came first (the
    records are then read in order into ``gm_read`` and staged again)."""
    columns, key = params["gm_columns"], line_key(target, params, redactor)
    rows, rows_params = streaming_rows(con, item, columns, line_key=key)
    with _any_order(con):
        _create_stage(con, rows, stage_sql, {**params, **rows_params}, target, redactor)
    if target.store is None and repeats(con, target):
        # gm_read is written in file order (its rowid numbers the records); the stage need not be.
        rows, rows_params = streaming_rows(con, item, columns, numbered=True, line_key=key)
        with _any_order(con):
            _create_stage(con, rows, stage_sql, {**params, **rows_params}, target, redactor)
        return
    rejected = con.execute("SELECT count(reason) FROM gm_stage").fetchall()[0][0]
    if rejected:
        _number_rejects(con, target, rows, stage_sql, {**params, **rows_params}, rejected, redactor)


@contextmanager
def _any_order(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Let a statement write its rows in any order (it runs faster in parallel)."""
    con.execute("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        con.execute("RESET preserve_insertion_order")


_GOOD_NEW = "SELECT * FROM gm_stage WHERE reason IS NULL AND NOT gm_present"


def repeats(con: duckdb.DuckDBPyConnection, target: Target) -> bool:
    """Whether a natural key occurs more than once among the new good rows."""
    keys = ", ".join(target.key)
    sql = f"SELECT count(*) > count(DISTINCT ({keys})) FROM ({_GOOD_NEW})"
    return con.execute(sql).fetchall()[0][0]


def _number_rejects(
    con, target: Target, rows: str, stage_sql: str, params: dict, rejected: int, redactor
) -> None:
    """Replace the stage's rejected rows by the same rejects numbered in file order: the stage
    SQL again, in order, keeping only the reason (the optimizer drops the rest). The reason does
    not depend on what is stored, so the already-stored checks (joins, which would lose the
    order) are switched off for this pass: a line known by its hash, good when it was stored,
    is parsed and found good again."""
    define_known(con, target, check=False)
    try:
        run_sql(
            con,
            f"CREATE OR REPLACE TEMP TABLE gm_order AS WITH gm_rows AS NOT MATERIALIZED ({rows}) "
            f"SELECT reason FROM ({stage_sql})",
            params,
        )
    finally:
        define_known(con, target)
    numbered = con.execute("SELECT count(reason) FROM gm_order").fetchall()[0][0]
    if numbered != rejected:  # the same SQL over the same file: never expected
        raise duckdb.InvalidInputException("rejects differ between two reads of the file")
    con.execute("DELETE FROM gm_stage WHERE reason IS NOT NULL")
    # A reason may quote the value it could not read: redacted as in the stage (_wrap).
    run_sql(
        con,
        f"INSERT INTO gm_stage (line, reason) SELECT rowid + 1, {redactor.nested('reason')} "
        "FROM gm_order WHERE reason IS NOT NULL",
        redactor.sql_params(),
    )
    con.execute("DROP TABLE gm_order")


def _stage_materialized(con, target: Target, source: Source, redactor: Redactor) -> None:
    typed = source.read(con)
    # A target that reshapes only some records' layout (reshapes) leaves the others' typed read
    if target.reshape and (target.reshapes is None or target.reshapes(typed or discover_keys(con))):
        typed = None
        target.reshape(con, discover_keys(con))
    keys = typed or discover_keys(con)
    stage_sql, params = target.stage(keys)
    rows = ""
    if "gm_columns" in params:
        columns = params["gm_columns"]
        rows = typed_rows(columns, typed) if typed else materialized_rows(columns)
    _create_stage(con, rows, stage_sql, params, target, redactor, source.path)
    if typed and rows:
        typed_reject_raw(con, redactor)


def _create_stage(
    con,
    rows: str,
    stage_sql: str,
    params: dict[str, Any],
    target: Target,
    redactor: Redactor,
    path: str | None = None,
) -> None:
    cte = f"WITH gm_rows AS NOT MATERIALIZED ({rows}) " if "gm_columns" in params else ""
    staged = _wrap(stage_sql, target, redactor)
    if target.place is not None:
        staged = target.place(staged)
    if target.store is None and not target.marks_present:
        staged = _mark_present(staged, target)
    sql = "CREATE OR REPLACE TEMP TABLE gm_stage AS " + cte + staged
    keyed = {**params, **redactor.sql_params()}
    if redactor.enabled and (target.pseudonymize or target.pseudonymize_lists):
        keyed["gm_pseudonym_key"] = pseudonym_key(con)
    _execute(con, sql, keyed, path)


def _mark_present(staged: str, target: Target) -> str:
    """Flag rows whose key is already stored and keep only their key: in a weekly file that
    overlaps the last, half the rows need neither staging nor writing."""
    keys = ", ".join(f"s.{k}" for k in target.key)
    light = ", ".join(
        f"CASE WHEN gm_present THEN NULL ELSE {c} END AS {c}"
        for c in target.columns
        if c not in target.key and c != "ts"  # ts: the batch watermark
    )
    return f"""
        SELECT * REPLACE ({light}) FROM (
            SELECT s.*, (s.reason IS NULL AND gm_stored({keys})) AS gm_present
            FROM ({staged}) s)
    """


def _write_batch(
    con, target: Target, source: Source, result: FileResult, options: dict[str, Any]
) -> None:
    batch_id = con.execute("SELECT nextval('batch_id_seq')").fetchall()[0][0]
    result.batch_id = batch_id
    con.execute(
        "INSERT INTO import_batches (batch_id, source, path, size_bytes, file_hash, format, "
        "started_at, options) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            batch_id,
            target.source,
            source.path,
            source.size,
            source.file_hash,
            source.label,
            _now(),
            json.dumps(options, default=str),
        ],
    )
    result.rows_in, result.rejected = con.execute(
        "SELECT count(*), count(reason) FROM gm_stage"
    ).fetchall()[0]
    con.execute(
        "INSERT INTO rejects (batch_id, path, line, reason, raw) "
        "SELECT ?, ?, line, reason, raw FROM gm_stage WHERE reason IS NOT NULL ORDER BY line",
        [batch_id, source.path],
    )
    result.stored = (target.store or store_new_rows)(con, target, batch_id)
    result.already_present = result.rows_in - result.stored - result.rejected
    result.note = result.note or reader_note(con) or _encoding_note(con, source)
    finish_batch(con, batch_id, result, target)
    if target.summary:
        result.extra = target.summary(con, batch_id)


def _encoding_note(con: duckdb.DuckDBPyConnection, source: Source) -> str:
    """What to try when rows were not UTF-8 in a file read as UTF-8: the file is refused only
    when its first lines are in another encoding, so a few such lines, or a file whose accents
    start past its first 64 KiB, are rejects alone."""
    if source.file is None or source.file.encoding != "utf-8":  # text given, or --encoding
        return ""
    n = con.execute(
        "SELECT count(*) FROM gm_stage WHERE starts_with(reason, 'invalid UTF-8')"
    ).fetchall()[0][0]
    if not n:
        return ""
    return (
        f"{n} {'row is' if n == 1 else 'rows are'} not UTF-8: a file saved in another encoding "
        "(Excel's Windows-1252) reads with --encoding cp1252, or the encoding it was saved in"
    )


def finish_batch(con, batch_id: int, result: FileResult, target: Target) -> None:
    times = []
    if "ts" in target.columns:
        times.append("(SELECT max(ts) FROM gm_stage WHERE reason IS NULL)")
    if LINE_HASH in target.columns:
        # A line known by its hash was not parsed: its time is its stored row's.
        times.append(
            f"(SELECT max(ts) FROM {target.table} WHERE {LINE_HASH} IN "
            f"(SELECT {LINE_HASH} FROM gm_stage WHERE gm_seen))"
        )
    watermark = None
    if times:  # greatest() skips NULLs
        watermark = con.execute(f"SELECT greatest({', '.join(times)})").fetchall()[0][0]
    con.execute(
        "UPDATE import_batches SET finished_at = ?, rows_in = ?, stored = ?, rejected = ?, "
        "already_present = ?, watermark = ? WHERE batch_id = ?",
        [
            _now(),
            result.rows_in,
            result.stored,
            result.rejected,
            result.already_present,
            watermark,
            batch_id,
        ],
    )


def store_new_rows(con: duckdb.DuckDBPyConnection, target: Target, batch_id: int) -> int:
    """Insert the good rows whose natural key is neither stored (``gm_present``, found while
    staging: the anti-join) nor earlier in the file."""
    cols = ", ".join(target.columns)
    keys = ", ".join(target.key)
    good = _GOOD_NEW
    # The window that keeps a key's first row costs a sort; most files repeat no key. When one
    # does, every staged row has its record number in ``line`` (see ``_stage_jsonl``).
    repeated = repeats(con, target)
    if repeated and target.table == "search_events":
        good = _searches_apart(good)
    elif repeated:
        good += f" QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY line) = 1"
    sql = f"INSERT INTO {target.table} (batch_id, {cols}) SELECT ?, {cols} FROM ({good})"
    # Run in any order (import_source): the rows are then written compressed as they come,
    # where an ordered insert left the checkpoint a second of work per 500k rows. Nothing reads
    # the stored order (rejects are listed by line).
    return con.execute(sql, [batch_id]).fetchall()[0][0]


# A row like the first of its key, one event written twice: the same user, and the same time
# or the same query within a day (an export's row again, its query edited or its time cut to
# the second). Another user, or another query at another time, is another search.
_LIKE_FIRST = """coalesce(user_id IS NOT DISTINCT FROM first_value(user_id) OVER gm_w
    AND (coalesce(ts = first_value(ts) OVER gm_w, false)
         OR query = first_value(query) OVER gm_w
            AND coalesce(abs(epoch(ts) - epoch(first_value(ts) OVER gm_w)) <= 86400, true)),
    false)"""


def _apart(rows: str, suffix: str, like: str = _LIKE_FIRST) -> str:
    """``rows`` with each key's first row kept, a later row ``like`` it (SQL) dropped, and a
    row unlike it keyed ``event_id || suffix`` (SQL; ``gm_n`` is the row's place under its
    key)."""
    return f"""
        SELECT * EXCLUDE (gm_n, gm_like) REPLACE (
            CASE WHEN gm_n = 1 THEN event_id ELSE event_id || {suffix} END AS event_id)
        FROM (SELECT *, row_number() OVER gm_w AS gm_n, {like} AS gm_like
              FROM ({rows}) WINDOW gm_w AS (PARTITION BY event_id ORDER BY line))
        WHERE gm_n = 1 OR NOT gm_like"""


def _searches_apart(good: str) -> str:
    """The rows of a file repeating a key, as searches. A key made from the row's content ('h-…',
    no event id in the file) repeated is a search made again (a list of queries, a day's rows):
    each is stored, the n-th as KEY~n. An id the file gives again like its first row
    (``_LIKE_FIRST``) is one event written twice, its first row kept; else it is another search
    (Amplitude numbers events per device), stored as ID@TIME, and ID@TIME~n past the first at
    one time (``translate.stored_events`` keys Spark's alike)."""
    numbered = "'~' || gm_n"
    made = _apart(f"SELECT * FROM ({good}) WHERE starts_with(event_id, 'h-')", numbered, "false")
    given = f"SELECT * FROM ({good}) WHERE NOT starts_with(event_id, 'h-')"
    timed = _apart(given, "'@' || coalesce(strftime(ts, '%Y%m%dT%H%M%S'), 'n' || gm_n)")
    return f"{made} UNION ALL BY NAME {_apart(timed, numbered)}"


def _wrap(stage_sql: str, target: Target, redactor: Redactor) -> str:
    """Drop the raw text of good rows, then redact the text columns and the rejects' raw."""
    sql = f"SELECT * REPLACE (CASE WHEN reason IS NOT NULL THEN raw END AS raw) FROM ({stage_sql})"
    if not redactor.enabled:
        return sql
    ids, lists = target.pseudonymize, target.pseudonymize_lists
    # A reject's reason may quote the value it could not read ("unparseable timestamp: …").
    cols = (*target.redact, *ids, *lists, "raw", "reason")
    if ids or lists:  # the ids as they came, for their pseudonyms
        sql = f"SELECT *, {', '.join(f'{c} AS gm_orig_{c}' for c in (*ids, *lists))} FROM ({sql})"
    if lists:  # a list of ids redacted as one text, split again below
        joined = ", ".join(f"{_joined_ids(c)} AS {c}" for c in lists)
        sql = f"SELECT * REPLACE ({joined}) FROM ({sql})"
    # Whether each text may hold what a built-in pattern matches, tested once, before the steps.
    flags = [f"gm_may_{c}" for c in cols]
    tests = ", ".join(f"{_may_match(redactor, c)} AS {f}" for c, f in zip(cols, flags, strict=True))
    sql = f"SELECT *, {tests} FROM ({sql})"
    step_lists = [redactor.steps(c, f) for c, f in zip(cols, flags, strict=True)]
    for depth in range(len(step_lists[0])):
        replaced = ", ".join(
            f"{steps[depth]} AS {c}" for c, steps in zip(cols, step_lists, strict=True)
        )
        sql = f"SELECT * REPLACE ({replaced}) FROM ({sql})"
    if ids:
        sql = f"SELECT * REPLACE ({_pseudonyms(ids)}) FROM ({sql})"
    if lists:
        sql = f"SELECT * REPLACE ({', '.join(_pseudonym_list(c) for c in lists)}) FROM ({sql})"
    helpers = [*flags, *(f"gm_orig_{c}" for c in (*ids, *lists))]
    return f"SELECT * EXCLUDE ({', '.join(helpers)}) FROM ({sql})"


# An address in an id: an @ (typed in fullwidth too, U+FF20), one taken from a URL (encoded
# once or twice), or one spelled out ("jane [at] example [dot] com", "jane AT example DOT com"),
# as the text's test finds them. A record's own id is tested for these alone (_id_key).
_ADDRESS_MAY_MATCH = (
    r"[@\x{FF20}]|%(?:25)?40|(?i:[\[({]\s*at\s*[\])}])|(?i:\sat\s+[a-z0-9-]+\s+dot\s)"
)

# An id (user_id, session_id) nearly always has a digit, so the general test lets every row
# through; each built-in kind needs more: an @ (email, handle), a colon (IPv6), a digit-dot-digit
# (IPv4), seven digits with at most a few separators between starting on a token boundary
# (phone, card: pii.py matches digits on token boundaries, so the digits of `s00000001` are
# none), or an IBAN's country and check digits.
_ID_MAY_MATCH = (
    r":|[0-9][.][0-9]|(^|[^0-9A-Za-z])[0-9](?:[^0-9A-Za-z]{0,3}[0-9]){6}"
    r"|[A-Za-z]{2}[0-9]{2} ?[A-Za-z0-9]{4}|"
    + _ADDRESS_MAY_MATCH
    # every credential's literal start (a JWT, a cloud or service key used as an id): the
    # redaction's own list, so a new one reaches ids too; and an Indian PAN
    + "|"
    + SECRET_MARKS
    + r"|[A-Za-z]{5}[0-9]{4}[A-Za-z]"
)


# A list of ids (results, clicks) is read for an address or a credential only: a document's
# id holds dotted numbers and long digit runs ("doc-192.168.1.1.pdf", "release-2.4.1.0") that
# the other types would take, and a changed id no longer names its chunk.
_IDS_MAY_MATCH = r"@|%(?:25)?40|" + SECRET_MARKS


def _may_match(redactor: Redactor, col: str) -> str:
    if col.endswith(("_id", "_ids")):
        constant = _IDS_MAY_MATCH if col.endswith("_ids") else _ID_MAY_MATCH
        pattern = constant.replace("'", "''")  # a constant, not a user's value
        return f"regexp_matches({col}, '{pattern}')"
    return redactor.may_match(col)


# The key of the pseudonyms below lives beside the store, never in it (``<store>.key``, 0600):
# someone holding the store file alone cannot confirm a guessed address (an unkeyed hash would
# let them), while every import into the store gives an id the same pseudonym, so a session
# split across two files stays one. A store in memory has a key for the process.
_PROCESS_KEY = secrets.token_hex(16)
_keys: dict[Path, str] = {}


def content_hash(con, redactor: Redactor) -> None:
    """Define ``gm_content_hash``: the key of a record without one is a hash of its content
    before redaction; when redacting, keyed like the pseudonyms, else the stored key of an event
    would confirm a guessed address or phone number in it (an unkeyed md5 of the rest, all
    stored, and the guess)."""
    body, id_key = "md5(s)", "x"
    if redactor.enabled:
        key = pseudonym_key(con)  # hex made here, never user text: safe inside the SQL
        body = f"md5('{key}' || chr(31) || s)"
        id_key = _id_key(redactor, key)
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_content_hash(s) AS {body}")
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_id_key(x) AS {id_key}")


def _id_key(redactor: Redactor, key: str) -> str:
    """SQL of ``gm_id_key(x)``: a record's own id (an event's, a ticket's) that holds PII
    (``alice@example.com:1700000000``) as its redacted text and a keyed hash of it, as
    ``_pseudonyms`` writes a session id; any other id as it came. The key a stored row is known
    by, computed before the already-stored check, so every import of the id finds the same
    row."""
    # Its digits are not tested: event ids are numbers far more often than phones
    # ("ev-000000123" sent every row of a 300k-event redacted import through the UDF).
    pattern = _ADDRESS_MAY_MATCH.replace("'", "''")  # a constant, not a user's value
    redacted = redactor.steps("x", "true")[0]  # the test is made here, once
    return (
        f"CASE WHEN regexp_matches(x, '{pattern}') "
        f"THEN coalesce(nullif({redacted}, x) || '~' || left(sha256('{key}' || x), 16), x) "
        "ELSE x END"
    )


def pseudonym_key(con) -> str:
    path = store_path(con)
    if path is None:
        return _PROCESS_KEY
    if path not in _keys:
        file = key_file(path)
        if not file.exists() and not os.environ.get(NEW_KEY_ENV) and _redacted_before(con):
            # A new key gives every redacted id and content key a new pseudonym: an overlapping
            # file's rows would all be stored a second time.
            raise InputError(
                f"{file}, the key this store's redacted imports were keyed with, is missing: "
                f"restore it from a backup, or set {NEW_KEY_ENV}=1 to go on with a new one (rows "
                "imported again are then stored again, and sessions split across the two keys)"
            )
        _keys[path] = _read_or_make_key(file)
    return _keys[path]


NEW_KEY_ENV = "GOLDMINE_NEW_PSEUDONYM_KEY"


def _redacted_before(con) -> bool:
    """Whether an import into this store was redacted (its options say so)."""
    return con.execute(
        "SELECT EXISTS (SELECT 1 FROM import_batches "
        "WHERE try_cast(json_extract(options, '$.redact') AS BOOLEAN))"
    ).fetchall()[0][0]


def _read_or_make_key(file: Path) -> str:
    try:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            key = file.read_text(encoding="ascii", errors="replace").strip()
        except OSError as exc:  # a folder, or a file this user may not read
            raise InputError(f"{file}: cannot read the pseudonym key ({exc.strerror})") from None
        if not re.fullmatch(r"[0-9a-f]{32,128}", key):  # it goes into SQL as a literal
            raise InputError(
                f"{file} holds no pseudonym key; remove it to make a new one"
            ) from None
        return key
    except OSError:  # a read-only folder: a key for this process only
        return _PROCESS_KEY
    key = secrets.token_hex(16)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key + "\n")
    return key


def _pseudonyms(ids: tuple[str, ...]) -> str:
    """An id the redaction changed (a session id that is an email) becomes the redacted text and
    a keyed hash of the original (``<EMAIL>~1f0c…``): no address is stored, and two sessions stay
    two, which the session rules (reformulation, follow-up, n_sessions) partition by. An id the
    redaction left alone is kept as it is."""
    return ", ".join(
        f"CASE WHEN {c} IS DISTINCT FROM gm_orig_{c} THEN {_pseudonym(c, f'gm_orig_{c}')} "
        f"ELSE {c} END AS {c}"
        for c in ids
    )


def _pseudonym(redacted: str, original: str) -> str:
    """SQL: the redacted text and a keyed hash of the original (``<EMAIL>~1f0c…``)."""
    return f"{redacted} || '~' || left(sha256($gm_pseudonym_key || {original}), 16)"


def _joined_ids(col: str) -> str:
    """A list of ids as one text, each apart by chr(31) (no pattern matches across it; a NULL
    id as '', to keep the places)."""
    return f"array_to_string(list_transform({col}, lambda x: coalesce(x, '')), chr(31))"


def _pseudonym_list(col: str) -> str:
    """The list of ids again, each the redaction changed a pseudonym as ``_pseudonyms`` makes
    one (a click's id and the result's it opened stay equal); a list none changed as it came.
    A user's pattern that took a separator leaves one pseudonym of the whole."""
    orig, parts = f"gm_orig_{col}", f"string_split({col}, chr(31))"
    one = (
        "CASE WHEN p[2] IS NULL OR p[1] IS NOT DISTINCT FROM p[2] THEN p[2] "
        f"ELSE {_pseudonym('p[1]', 'p[2]')} END"
    )
    return (
        f"CASE WHEN {orig} IS NULL OR {col} IS NOT DISTINCT FROM {_joined_ids(orig)} THEN {orig} "
        f"WHEN len({parts}) = len({orig}) "
        f"THEN list_transform(list_zip({parts}, {orig}), lambda p: {one}) "
        f"ELSE [{_pseudonym(col, _joined_ids(orig))}] "
        f"END AS {col}"
    )


def _execute(con, sql: str, params: dict[str, Any], path: str | None = None):
    """Run with only the named parameters the SQL uses (DuckDB refuses unused ones)."""
    try:
        return run_sql(con, sql, params)
    except duckdb.ConversionException as exc:
        raise InputError(f"cannot convert a value: {error_line(exc)}", path=path) from exc


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
