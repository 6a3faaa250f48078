"""Published gold versions: frozen, hashed, never changed; what the eval pins to.

``publish`` turns every verified item into one canonical JSON line (keys sorted) and stores those
lines as they are; the version's content hash is the sha256 of the lines joined by newlines. So an
export is the stored lines under a header, ``verify`` can recompute every hash from the store, and
an import that restores a version gets back the same bytes. There is no code path that rewrites a
stored version: publishing always takes a new number, and importing a version whose number exists
with other content is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError, StoreError
from goldmine.goldset.items import current_snapshot, fetch_dicts, now
from goldmine.store import transaction
from goldmine.text import sha256_text
from goldmine.versions import (
    FORMAT_VERSION,
    iso,
    judged_of,
    list_versions,
    resolve_version,
    version_items,
    version_lines,
)

if TYPE_CHECKING:
    import duckdb


def dump_line(obj: Any) -> str:
    """The one canonical JSON serialisation: keys sorted, UTF-8 kept, default separators."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def content_hash(lines: list[str]) -> str:
    return sha256_text("".join(line + "\n" for line in lines))


# --- freezing ---------------------------------------------------------------------------------


def item_records(con: duckdb.DuckDBPyConnection, items: list[dict]) -> list[dict]:
    """The verified items as the dicts a version freezes; labels and history read in one go."""
    labels: dict[str, list[dict]] = {}
    for row in fetch_dicts(
        con,
        """SELECT query_id, chunk_id, grade, text_hash, snapshot_id, who AS "by", ts AS at,
                  source
           FROM gold_labels WHERE kind = 'label'
             AND query_id IN (SELECT unnest(?::VARCHAR[]))
           ORDER BY query_id, chunk_id""",
        [[i["query_id"] for i in items]],
    ):
        labels.setdefault(row["query_id"], []).append(row)
    history: dict[str, list[dict]] = {}
    for row in fetch_dicts(
        con,
        """SELECT query_id, ts AS at, who AS "by", action, detail FROM gold_history
           WHERE query_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY seq""",
        [[i["query_id"] for i in items]],
    ):
        history.setdefault(row["query_id"], []).append(
            {
                "action": row["action"],
                "at": iso(row["at"]),
                "by": row["by"],
                "detail": json.loads(row["detail"]) if row["detail"] else {},
            }
        )
    return [
        item_record(item, labels.get(item["query_id"], []), history.get(item["query_id"], []))
        for item in items
    ]


def item_record(item: dict, labels: list[dict], history: list[dict]) -> dict:
    """One verified item, its person-made labels and its history, as a version freezes it."""
    qid = item["query_id"]
    relevant = {r["chunk_id"]: r["grade"] for r in labels if r["grade"] > 0}
    if item["no_answer"]:
        relevant = {}
    not_relevant = {
        r["chunk_id"]: min(r["grade"], 0) for r in labels if r["chunk_id"] not in relevant
    }
    return {
        "query_id": qid,
        "query": item["query"],
        "norm_query": item["norm_query"],
        "context": item["context"],
        "relevant": relevant,
        "not_relevant": not_relevant,
        "no_answer": bool(item["no_answer"]),
        "tags": list(item["tags"] or []),
        "notes": list(item["notes"] or []),
        "provenance": {
            "origin": item["origin"],
            "reason": item["reason"],
            "cluster_id": item["cluster_id"],
            "sources": list(item["sources"] or []),
            "source_ids": list(item["source_ids"] or []),
            "frequency": item["frequency"],
            "first_seen": iso(item["first_seen"]),
            "last_seen": iso(item["last_seen"]),
        },
        "label_text_hashes": {r["chunk_id"]: r["text_hash"] for r in labels},
        "snapshot": sorted({r["snapshot_id"] for r in labels if r["snapshot_id"] is not None}),
        # Each label's source (review, model-accept, import…) is frozen with it. Versions
        # published before it was recorded keep their lines (and hashes) as they were.
        "labelled": {
            r["chunk_id"]: {
                "at": iso(r["at"]),
                "by": r["by"],
                "snapshot_id": r["snapshot_id"],
                "source": r["source"],
            }
            for r in labels
        },
        "verified_by": item["verified_by"],
        "verified_at": iso(item["verified_at"]),
        "history": history,
    }


@dataclass
class Published:
    version: int
    content_hash: str
    n_items: int
    n_answerable: int
    n_no_answer: int
    n_labels: int
    n_drifted: int = 0  # labels whose chunk is gone from, or changed in, the current corpus


# Half-read items: a person graded some candidates (one above 0) and left others undecided, or
# an older goldmine verified the item at its first grade. Never frozen without being asked.
_PARTIAL_SQL = """
    SELECT i.query_id, i.query, i.status, i.position,
           count(*) FILTER (WHERE l.kind = 'label') AS graded,
           count(*) AS candidates
    FROM gold_items i JOIN gold_labels l USING (query_id)
    WHERE i.status != 'rejected' AND NOT i.no_answer
    GROUP BY ALL
    HAVING count(*) FILTER (WHERE l.kind = 'draft') > 0
       AND count(*) FILTER (WHERE l.kind = 'label' AND l.grade > 0) > 0
    ORDER BY i.position
"""


def partial_items(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Items with a relevant grade and candidates still undecided, in review order."""
    return fetch_dicts(con, _PARTIAL_SQL)


def _refuse_partial(partial: list[dict]) -> None:
    n = len(partial)
    shown = "; ".join(
        f"{p['query_id']} {p['query']!r} ({p['graded']} of {p['candidates']} graded)"
        for p in partial[:10]
    )
    more = f"; and {n - 10} more" if n > 10 else ""
    raise InputError(
        f"{n} item{' has' if n == 1 else 's have'} candidates not graded yet: {shown}{more}. "
        "Finish them in `goldmine gold review`, publish them with the grades they have "
        "(--allow-partial), or leave them out (--skip-partial)"
    )


class Unchanged(InputError):
    """Publish found the working set as the latest version froze it: no copy is made."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"nothing changed since v{version}: not publishing a copy (--allow-unchanged "
            "makes this exit 0, for a job that publishes whatever changed)"
        )
        self.version = version


def publish(
    con: duckdb.DuckDBPyConnection,
    message: str,
    by: str,
    *,
    allow_partial: bool = False,
    skip_partial: bool = False,
) -> Published:
    """Freeze every verified item as version N+1, in one transaction.

    Items with candidates still undecided refuse the publish unless ``allow_partial`` (frozen with
    the grades they have; their drafts are never gold) or ``skip_partial`` (left out).
    """
    if not message or not message.strip():
        raise InputError('publish needs a message (-m "what changed")')
    if allow_partial and skip_partial:
        raise InputError("give --allow-partial or --skip-partial, not both")
    with transaction(con):
        _refuse_disputed(con)
        items = _publishable(con, allow_partial, skip_partial)
        at = now()
        # Publishing is not a change to an item, so it adds no item history: an item untouched
        # since the last version freezes to the same line, and a version file diffs cleanly.
        records = item_records(con, items)
        lines = [dump_line(r) for r in records]
        digest = content_hash(lines)
        latest = con.execute(
            "SELECT version, content_hash FROM gold_versions ORDER BY version DESC LIMIT 1"
        ).fetchall()
        if latest and latest[0][1] == digest:
            raise Unchanged(latest[0][0])
        version = latest[0][0] + 1 if latest else 1
        snapshot_id, snapshot_hash = current_snapshot(con)
        n_no_answer = sum(1 for r in records if not r["relevant"])
        n_labels = sum(len(r["label_text_hashes"]) for r in records)
        n_answerable = len(records) - n_no_answer
        counts = [len(records), n_answerable, n_no_answer, n_labels]
        con.execute(
            "INSERT INTO gold_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [version, message, digest, at, by, FORMAT_VERSION, *counts, snapshot_id, snapshot_hash],
        )
        insert_version_items(con, version, [r["query_id"] for r in records], lines)
    return Published(version, digest, *counts, _drifted(con, snapshot_id, version))


def _refuse_disputed(con: duckdb.DuckDBPyConnection) -> None:
    """An item two raters (or an import and a person) disagree on waits for adjudication."""
    disputed = con.execute(
        """SELECT count(DISTINCT query_id) FROM gold_disagreements
           WHERE query_id IN (SELECT query_id FROM gold_items
                              WHERE status NOT IN ('verified', 'rejected'))"""
    ).fetchall()[0][0]
    if disputed:
        raise InputError(
            f"{disputed} item{' waits' if disputed == 1 else 's wait'} for adjudication "
            "(two raters, or an imported file and a person, disagree): see and decide them "
            "with `goldmine gold review --adjudicate`"
        )


def _publishable(
    con: duckdb.DuckDBPyConnection, allow_partial: bool, skip_partial: bool
) -> list[dict[str, Any]]:
    """The verified items, with or without those whose candidates are still undecided."""
    partial = partial_items(con)
    if partial and not (allow_partial or skip_partial):
        _refuse_partial(partial)
    partial_ids = [p["query_id"] for p in partial]
    items = fetch_dicts(
        con,
        """SELECT * FROM gold_items
           WHERE (status = 'verified' AND NOT list_contains(?, query_id))
              OR (? AND list_contains(?, query_id))
           ORDER BY query_id""",
        [partial_ids, allow_partial, partial_ids],
    )
    if not items:
        raise InputError("nothing to publish: no item is verified yet (review or label first)")
    return items


def _drifted(con: duckdb.DuckDBPyConnection, snapshot_id: int | None, version: int) -> int:
    """The version's labels whose chunk text differs in the current corpus snapshot."""
    if snapshot_id is None:
        return 0
    return con.execute(
        """SELECT count(*) FROM gold_labels l JOIN gold_items i USING (query_id)
           LEFT JOIN chunks c ON c.snapshot_id = ? AND c.chunk_id = l.chunk_id
           WHERE l.kind = 'label'
             AND i.query_id IN (SELECT query_id FROM gold_version_items WHERE version = ?)
             AND c.text_hash IS DISTINCT FROM l.text_hash""",
        [snapshot_id, version],
    ).fetchall()[0][0]


def insert_version_items(
    con: duckdb.DuckDBPyConnection, version: int, query_ids: list[str], lines: list[str]
) -> None:
    """The frozen lines of a version, written in one statement."""
    import polars as pl

    frame = pl.DataFrame({"query_id": query_ids, "item": lines}, schema={
        "query_id": pl.Utf8, "item": pl.Utf8})  # fmt: skip
    con.register("gold_frozen", frame)
    con.execute("INSERT INTO gold_version_items SELECT ?, query_id, item FROM gold_frozen",
                [version])  # fmt: skip
    con.unregister("gold_frozen")


# --- reading versions --------------------------------------------------------------------------


# --- integrity ---------------------------------------------------------------------------------


@dataclass
class Check:
    version: int
    stored: str
    recomputed: str
    n_items: int
    expected_items: int

    @property
    def ok(self) -> bool:
        return self.stored == self.recomputed and self.n_items == self.expected_items


def verify_versions(con: duckdb.DuckDBPyConnection) -> list[Check]:
    """Recompute every version's content hash from its frozen lines."""
    checks = []
    for v in list_versions(con):
        lines = version_lines(con, v["version"])
        checks.append(
            Check(v["version"], v["content_hash"], content_hash(lines), len(lines), v["n_items"])
        )
    return checks


def assert_verified(checks: list[Check]) -> None:
    bad = [c for c in checks if not c.ok]
    if bad:
        parts = [
            f"v{c.version}: stored hash {c.stored[:12]}…, recomputed {c.recomputed[:12]}…"
            f" ({c.n_items} of {c.expected_items} items)"
            for c in bad
        ]
        raise StoreError(
            "published versions were changed after publishing: "
            + "; ".join(parts)
            + ". Published versions never change: restore them from an exported file."
        )


# --- diff -------------------------------------------------------------------------------------


def diff_versions(con: duckdb.DuckDBPyConnection, a: str, b: str) -> dict:
    """Queries added, removed and relabelled (grade changes per chunk) from version a to b."""
    va, vb = resolve_version(con, a), resolve_version(con, b)
    items_a, items_b = version_items(con, va), version_items(con, vb)
    added = sorted(set(items_b) - set(items_a))
    removed = sorted(set(items_a) - set(items_b))
    relabelled = []
    for qid in sorted(set(items_a) & set(items_b)):
        ja, jb = judged_of(items_a[qid]), judged_of(items_b[qid])
        changes = [
            {"chunk_id": c, "from": ja.get(c), "to": jb.get(c)}
            for c in sorted(set(ja) | set(jb))
            if ja.get(c) != jb.get(c)
        ]
        if changes or items_a[qid]["no_answer"] != items_b[qid]["no_answer"]:
            relabelled.append(
                {
                    "query_id": qid,
                    "query": items_b[qid]["query"],
                    "no_answer": [items_a[qid]["no_answer"], items_b[qid]["no_answer"]],
                    "changes": changes,
                }
            )
    return {
        "from": f"v{va}",
        "to": f"v{vb}",
        "added": [{"query_id": q, "query": items_b[q]["query"]} for q in added],
        "removed": [{"query_id": q, "query": items_a[q]["query"]} for q in removed],
        "relabelled": relabelled,
        "unchanged": len(set(items_a) & set(items_b)) - len(relabelled),
    }
