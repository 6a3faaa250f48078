"""The model's answers in the store: every call kept (``gold_llm_calls``), answered ones a cache.

A call's key is a hash of what decides its answer: the kind of call, the model, the prompt's
version and the hashes of the texts it carries. An answered key is never asked again; a failed
one is (the failure is kept, with its reason and the text the model sent, for the user to read).
Of that text, the first ``goldmine.llm.KEEP_CHARS`` characters are kept, its whole length beside
them and ``truncated`` set when it was cut: an endpoint gone wrong can answer megabytes a call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from goldmine.errors import Interrupted
from goldmine.goldset.items import now, reserve
from goldmine.llm import KEEP_CHARS, AnswersCut, Usage, ask_all
from goldmine.text import sha256_text

if TYPE_CHECKING:
    import duckdb

    from goldmine.llm import Answer, Ask, Prompt, Settings


def asked(s: Settings, asks: list[Ask], description: str) -> tuple[list[Answer], Usage, bool]:
    """``ask_all``'s answers and usage, and whether Ctrl-C cut the asking short: the answers
    received by then come back all the same, for the caller to store (they are paid for) before
    it stops with ``kept_on_ctrl_c``."""
    if not asks:
        return [], Usage(), False
    try:
        return (*ask_all(s, asks, description=description), False)
    except AnswersCut as cut:
        return cut.answers, cut.usage, True


def kept_on_ctrl_c(answers: list[Answer], what: str) -> Interrupted:
    """The Ctrl-C stop once the answers received are stored: how many, and that a re-run asks
    only for the rest."""
    ok = sum(a.ok for a in answers)
    return Interrupted(
        f"stopped (Ctrl-C); the {ok:,} answers received are stored ({what}): run the command "
        "again to ask for the rest"
    )


def cache_key(kind: str, model: str, prompt_version: str, *parts: object) -> str:
    return sha256_text(json.dumps([kind, model, prompt_version, *parts], ensure_ascii=False))


def cached(con: duckdb.DuckDBPyConnection, keys: list[str]) -> dict[str, tuple[int, dict]]:
    """key -> (call_id, parsed answer) for the keys answered before."""
    if not keys:
        return {}
    rows = con.execute(
        """SELECT cache_key, max(call_id), arg_max(data, call_id) FROM gold_llm_calls
           WHERE ok AND cache_key IN (SELECT unnest(?::VARCHAR[])) GROUP BY cache_key""",
        [keys],
    ).fetchall()
    return {key: (call_id, json.loads(data)) for key, call_id, data in rows}


def record_calls(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    s: Settings,
    prompt: Prompt,
    answers: list[Answer],
) -> dict[str, int]:
    """Keep every answer, answered or failed; returns key -> call_id."""
    if not answers:
        return {}
    first = reserve(con, "gold_llm_call_seq", len(answers))
    at = now()
    rows = [
        (
            first + i,
            kind,
            a.key,
            s.shown_endpoint,
            s.model,
            prompt.version,
            a.ok,
            a.error,
            None if a.content is None else a.content[:KEEP_CHARS],
            None if a.content is None else len(a.content),
            len(a.content or "") > KEEP_CHARS,
            json.dumps(a.data, ensure_ascii=False, sort_keys=True) if a.ok else None,
            a.prompt_tokens,
            a.completion_tokens,
            a.attempts,
            a.seconds,
            at,
        )
        for i, a in enumerate(answers)
    ]
    insert_rows(con, "gold_llm_calls", _CALL_COLUMNS, rows)
    return {a.key: first + i for i, a in enumerate(answers)}


_CALL_COLUMNS = {
    "call_id": "Int64", "kind": "Utf8", "cache_key": "Utf8", "endpoint": "Utf8", "model": "Utf8",
    "prompt_version": "Utf8", "ok": "Boolean", "error": "Utf8", "content": "Utf8",
    "content_chars": "Int64", "truncated": "Boolean", "data": "Utf8", "prompt_tokens": "Int64",
    "completion_tokens": "Int64", "attempts": "Int64",
    "seconds": "Float64", "ts": "Datetime",
}  # fmt: skip


_SQL_TYPES = {
    "Utf8": "VARCHAR", "Int64": "BIGINT", "Float64": "DOUBLE", "Boolean": "BOOLEAN",
    "Datetime": "TIMESTAMP",
}  # fmt: skip


def insert_rows(con, table: str, columns: dict[str, str], rows: list[tuple]) -> None:
    """Insert many rows in one statement, not one a row: each column one list parameter, the
    lists unnested side by side. No dataframe library: importing one would cost a model run more
    than the insert (polars and pyarrow, 0.3-0.5 s, against 8 ms for 1,000 rows)."""
    if not rows:
        return
    lists = [list(values) for values in zip(*rows, strict=True)]
    unnest = ", ".join(f"unnest(?::{_SQL_TYPES[kind]}[])" for kind in columns.values())
    con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {unnest}", lists)


def failure_lines(answers: list[Answer], label: dict[str, str], limit: int = 5) -> list[str]:
    """A few failed answers, as 'what: why' lines for stderr."""
    return [f"{label.get(a.key, a.key)}: {a.error}" for a in answers if not a.ok][:limit]
