"""What a source's import is: the table its rows go to and how they are made from a file's records.

Each source (search logs, tickets, chat, traces, corpora, analytics exports) defines a ``Target``;
``ingest.batch`` runs any of them. It lives apart from the batch engine so that a source module
needs only this definition, not the engine that reads every format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    from goldmine.ingest.files import InputFile
    from goldmine.ingest.redact import Redactor


@dataclass(frozen=True)
class Target:
    """Where a source's rows go and how they are made from the file's records.

    ``stage(keys)`` returns SQL (and the parameters it uses) selecting ``line``, ``raw``,
    ``reason`` (NULL for a good row) and every name in ``columns``, over ``gm_rows`` (through
    ``field_access``) or over ``gm_raw``; ``ts`` among the columns gives the watermark.
    ``redact`` names the text columns PII redaction applies to; ``pseudonymize`` the id columns
    it applies to that rows are grouped by (a session): see ``_pseudonyms``. ``reshape`` rewrites
    ``gm_raw`` first (chat threads); ``store`` replaces the anti-join insert (corpus snapshots);
    ``place`` completes the staged rows from the stored ones (chat's turn numbers).
    """

    source: str
    table: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    stage: Callable[[list[str]], tuple[str, dict[str, Any]]]
    redact: tuple[str, ...] = ()
    pseudonymize: tuple[str, ...] = ()
    # Lists of ids (the results shown, the clicks) an id of which may hold PII: a clicked URL's
    # "?email=…". Each id the redaction changes becomes a pseudonym, as ``pseudonymize``'s.
    pseudonymize_lists: tuple[str, ...] = ()
    macros: str = ""
    # False when the stage SQL needs every row's line number (a streamed row has it only when
    # rejected). Like a record-by-record one, a streamed row with ``err`` must be rejected.
    streaming: bool = True
    reshape: Callable[[duckdb.DuckDBPyConnection, list[str]], None] | None = None
    # Whether ``reshape`` changes records of these keys (None: always). A file it leaves alone
    # keeps the streaming path, which a reshaping target otherwise gives up.
    reshapes: Callable[[list[str]], bool] | None = None
    store: Callable[[duckdb.DuckDBPyConnection, Target, int], int] | None = None
    summary: Callable[[duckdb.DuckDBPyConnection, int], dict[str, Any]] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # The stage SQL selects ``gm_present`` itself, found before its heavy per-row work.
    marks_present: bool = False
    # A target that reads a file's lines itself: ``stream(con, file, keys)`` makes what
    # ``stage`` reads straight from the file and returns True, or False to take the
    # record-by-record path (``reshape``); ``number(con, file, redactor)`` then gives the staged
    # rows that need one their line and text (rejects).
    stream: Callable[[duckdb.DuckDBPyConnection, InputFile, list[str]], bool] | None = None
    number: Callable[[duckdb.DuckDBPyConnection, InputFile, Redactor], None] | None = None
    # ``place(staged)`` wraps the staged rows (redacted, ids pseudonymized, as they are stored)
    # in SQL that gives them what depends on the stored rows: chat numbers a conversation's new
    # turns after its stored ones. It reads the stored rows as ``gm_known_rows``: their key and
    # the ``known`` columns (a name, or ``expr AS name``), from the table or, while the store is
    # let go, from a copy.
    place: Callable[[str], str] | None = None
    known: tuple[str, ...] = ()
    # ``finish(con, target, files, complete)`` runs once after every file is written, in a
    # transaction, and may change their results (a corpus in several files made one snapshot);
    # with ``complete`` false, when a file failed, it undoes what the command wrote. ``reread``:
    # a file read before is read again rather than skipped by its hash.
    # (its files are ``batch.FileResult``s, not named here: batch imports this module)
    finish: Callable[[duckdb.DuckDBPyConnection, Target, list[Any], bool], None] | None = None
    reread: bool = False
    # Whether the stage asks which keys are stored (``gm_stored``): a corpus snapshot does not.
    asks_stored: bool = True
