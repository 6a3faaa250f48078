"""Published gold versions read back: what eval pins to and the gold set's commands show.

A version is frozen by ``goldmine.goldset.versions.publish`` (canonical JSON lines, hashed); this
module only reads them. It is in the core because both stages read versions: eval scores against
one (``eval run -g v3``, ``eval compare``) and must not import the gold set's stage to do so.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from goldmine.errors import InputError, NotFoundError
from goldmine.gold import Gold, GoldQuery
from goldmine.store import fetch_dicts

if TYPE_CHECKING:
    import duckdb

FORMAT = "goldmine-gold"
FORMAT_VERSION = 1

_HEADER = (
    "format_version, version, message, content_hash, published_at, published_by, n_items,"
    " n_answerable, n_no_answer, n_labels, snapshot_id, snapshot_hash"
)
_LISTED = (
    "version, message, content_hash, published_at, published_by, n_items, n_answerable,"
    " n_no_answer, n_labels"
)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_spec(spec: str | int) -> str | int:
    text = str(spec).strip().lower()
    if text == "latest":
        return "latest"
    digits = text[1:] if text.startswith("v") else text
    if not digits.isdigit():
        raise InputError(f"a version is written v3, 3 or latest, not {spec!r}")
    return int(digits)


def resolve_version(con: duckdb.DuckDBPyConnection, spec: str | int) -> int:
    """The version number for "v3", "3", 3 or "latest"; NotFoundError when there is none."""
    parsed = _parse_spec(spec)
    known = [r[0] for r in con.execute("SELECT version FROM gold_versions ORDER BY 1").fetchall()]
    if not known:
        raise NotFoundError("no gold version is published yet (run `goldmine gold publish -m …`)")
    if parsed == "latest":
        return known[-1]
    if parsed not in known:
        listed = ", ".join(f"v{v}" for v in known)
        raise NotFoundError(f"no gold version v{parsed} (published: {listed})")
    return int(parsed)


def version_header(con: duckdb.DuckDBPyConnection, version: int) -> dict:
    rows = fetch_dicts(con, f"SELECT {_HEADER} FROM gold_versions WHERE version = ?", [version])
    if not rows:
        raise NotFoundError(f"no gold version v{version}")
    v = rows[0]
    return {
        "format": FORMAT,
        "format_version": v["format_version"],
        "version": v["version"],
        "message": v["message"],
        "content_hash": v["content_hash"],
        "published_at": iso(v["published_at"]),
        "published_by": v["published_by"],
        "counts": {
            "items": v["n_items"],
            "answerable": v["n_answerable"],
            "no_answer": v["n_no_answer"],
            "labels": v["n_labels"],
        },
        "snapshot": {"snapshot_id": v["snapshot_id"], "content_hash": v["snapshot_hash"]},
    }


def version_lines(con: duckdb.DuckDBPyConnection, version: int) -> list[str]:
    rows = con.execute(
        "SELECT item FROM gold_version_items WHERE version = ? ORDER BY query_id", [version]
    ).fetchall()
    return [r[0] for r in rows]


def version_items(con: duckdb.DuckDBPyConnection, version: int) -> dict[str, dict]:
    return {(d := json.loads(line))["query_id"]: d for line in version_lines(con, version)}


def list_versions(con: duckdb.DuckDBPyConnection) -> list[dict]:
    return fetch_dicts(con, f"SELECT {_LISTED} FROM gold_versions ORDER BY version", [])


def judged_of(item: dict) -> dict[str, int]:
    """chunk id -> grade, with the chunks judged not relevant at grade 0."""
    judged = dict(item.get("not_relevant") or {})
    judged.update(item.get("relevant") or {})
    return judged


def load_gold(con: duckdb.DuckDBPyConnection, spec: str) -> Gold:
    """A published version as the eval's ``Gold`` ("v3", "3" or "latest")."""

    version = resolve_version(con, spec)
    header = version_header(con, version)
    queries = {
        qid: GoldQuery(
            query_id=qid, query=item["query"], judged=judged_of(item), context=item.get("context")
        )
        for qid, item in version_items(con, version).items()
    }
    return Gold(
        queries=queries,
        source=f"v{version}",
        hash=header["content_hash"],
        format="goldmine-version",
        version=version,
    )
