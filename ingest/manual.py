"""Queries added by hand (``goldmine add``): "ask five colleagues what they would type"."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.batch import Source, Target
from goldmine.ingest.files import replace_raw

COLUMNS = ("query_id", "ts", "query", "source", "note")


def stage_sql(keys: list[str]) -> tuple[str, dict[str, Any]]:
    sql = """
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN nullif(trim(raw ->> '$.query'), '') IS NULL THEN 'missing query' END
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
        redact=("query", "note"),
    )


def source(queries: list[str], file: Path | None, who: str, note: str | None) -> Source:
    """The queries as a batch source; a file is read one query a line, blank lines skipped."""
    texts = list(queries)
    path = "-"
    if file is not None:
        try:
            texts += file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", path=file) from exc
        path = str(file)
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise InputError("no query given (pass it as an argument, or --file with one a line)")
    digest = hashlib.sha256("\n".join([who, note or "", *texts]).encode()).hexdigest()

    def read(con: duckdb.DuckDBPyConnection) -> None:
        replace_raw(
            con,
            "SELECT i AS line, json_object('query', $q[i], 'source', $who, 'note', $note)::VARCHAR"
            " AS raw, NULL::VARCHAR AS err FROM range(1, len($q) + 1) r(i)",
            {"q": texts, "who": who, "note": note},
        )

    return Source(path, "manual", None, digest, read)
