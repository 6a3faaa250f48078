"""Labels that no longer fit the corpus, and labels that are old.

``drift`` lists labels whose chunk id is missing from the current snapshot or whose chunk text
changed since it was labelled (its text hash differs). ``remap`` proposes, for each such label, the
new chunks that hold the labelled passage: first by text containment in either direction (a chunk
split in two: each half lies inside the old text; chunks merged: the new text holds the old), then
by rapidfuzz partial matching. Proposals are drafts carrying the old grade as a suggestion, and the
item goes back to ``drafted`` until a person confirms them. ``stale`` sends labels older than a
given age back for a re-read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from goldmine.goldset.items import current_snapshot, fetch_dicts, now, record

from goldmine.errors import InputError, NotFoundError
from goldmine.store import transaction

if TYPE_CHECKING:
    import duckdb

FUZZY_CUTOFF = 85.0
MIN_PIECE = 20  # characters: a new chunk shorter than this is not taken as a piece of a passage


def drift(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Labels (grade > 0 or not) whose chunk is gone or whose text changed, with the reason."""
    snapshot_id, _ = current_snapshot(con)
    if snapshot_id is None:
        raise NotFoundError("no corpus in the store: nothing to compare the labels with")
    return fetch_dicts(
        con,
        """SELECT l.query_id, i.query, i.status, l.chunk_id, l.grade, l.text_hash,
                  l.snapshot_id AS labelled_snapshot, c.text_hash AS current_hash,
                  CASE WHEN c.chunk_id IS NULL THEN 'missing' ELSE 'changed' END AS reason
           FROM gold_labels l JOIN gold_items i USING (query_id)
           LEFT JOIN chunks c ON c.snapshot_id = ? AND c.chunk_id = l.chunk_id
           WHERE l.kind = 'label' AND i.status != 'rejected'
             AND (c.chunk_id IS NULL OR c.text_hash IS DISTINCT FROM l.text_hash)
           ORDER BY l.query_id, l.chunk_id""",
        [snapshot_id],
    )


@dataclass
class Remapped:
    labels: int = 0
    proposals: int = 0
    unmatched: list[dict] = field(default_factory=list)
    items: set[str] = field(default_factory=set)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _passage(con: duckdb.DuckDBPyConnection, text_hash: str | None) -> str | None:
    if text_hash is None:
        return None
    rows = con.execute(
        "SELECT text FROM gold_texts WHERE text_hash = ? UNION ALL"
        " SELECT text FROM chunks WHERE text_hash = ? LIMIT 1",
        [text_hash, text_hash],
    ).fetchall()
    return rows[0][0] if rows else None


def proposals_for(passage: str, chunks: list[tuple[str, str]]) -> list[tuple[str, float, str]]:
    """(chunk_id, score, how) for the chunks holding the passage; pure, for tests and remap."""
    old = _squash(passage)
    contained = []
    for chunk_id, text in chunks:
        new = _squash(text)
        if old and (old in new or (len(new) >= MIN_PIECE and new in old)):
            contained.append((chunk_id, 100.0, "contains" if old in new else "part of"))
    if contained:
        return contained
    from rapidfuzz import fuzz, process

    texts = [_squash(t) for _, t in chunks]
    hits = process.extract(
        old, texts, scorer=fuzz.partial_ratio, score_cutoff=FUZZY_CUTOFF, limit=5
    )
    return [(chunks[i][0], float(score), "fuzzy") for _, score, i in hits]


def remap(con: duckdb.DuckDBPyConnection, by: str) -> Remapped:
    """Drafts on the current chunks for every drifted label; the item goes back to review."""
    snapshot_id, _ = current_snapshot(con)
    drifted = drift(con)
    result = Remapped(labels=len(drifted))
    if not drifted:
        return result
    chunks = con.execute(
        "SELECT chunk_id, text, text_hash FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        [snapshot_id],
    ).fetchall()
    pairs = [(c, t) for c, t, _ in chunks]
    hashes = {c: h for c, _, h in chunks}
    at = now()
    with transaction(con):
        for label in drifted:
            qid, old_chunk = label["query_id"], label["chunk_id"]
            passage = _passage(con, label["text_hash"])
            found = proposals_for(passage, pairs) if passage else []
            if not found:
                result.unmatched.append(label)
                continue
            con.execute(
                "DELETE FROM gold_labels WHERE query_id = ? AND chunk_id = ? AND kind = 'label'",
                [qid, old_chunk],
            )
            for rank, (chunk_id, score, _how) in enumerate(found, 1):
                _put_draft(
                    con,
                    qid,
                    chunk_id,
                    label["grade"],
                    rank,
                    score,
                    "remap",
                    hashes.get(chunk_id),
                    snapshot_id,
                    by,
                    at,
                )
            record(
                con,
                qid,
                "remap",
                by,
                {
                    "chunk_id": old_chunk,
                    "grade": label["grade"],
                    "reason": label["reason"],
                    "proposed": [{"chunk_id": c, "score": s, "how": h} for c, s, h in found],
                },
                at,
            )
            result.proposals += len(found)
            result.items.add(qid)
        _back_to_review(con, result.items, by, at, "remap")
    return result


def _put_draft(con, qid, chunk_id, grade, rank, score, source, text_hash, snapshot_id, who, ts):
    """A draft carrying the old grade; a chunk proposed twice keeps the higher grade, and a
    chunk a person has already graded is left alone."""
    existing = con.execute(
        "SELECT kind FROM gold_labels WHERE query_id = ? AND chunk_id = ?", [qid, chunk_id]
    ).fetchall()
    if any(kind == "label" for (kind,) in existing):
        return
    if existing:
        con.execute(
            "UPDATE gold_labels SET suggested_grade = greatest(suggested_grade, ?)"
            " WHERE query_id = ? AND chunk_id = ? AND kind = 'draft'",
            [grade, qid, chunk_id],
        )
        return
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank, score,
               source, text_hash, snapshot_id, who, ts)
           VALUES (?, ?, 'draft', ?, ?, ?, ?, ?, ?, ?, ?)""",
        [qid, chunk_id, grade, rank, score, source, text_hash, snapshot_id, who, ts],
    )


def _back_to_review(con, query_ids: set[str], by: str, at: datetime, why: str) -> None:
    for qid in sorted(query_ids):
        con.execute(
            "UPDATE gold_items SET status = 'drafted', updated_at = ? WHERE query_id = ?"
            " AND status = 'verified'",
            [at, qid],
        )
        record(con, qid, "status", by, {"status": "drafted", "why": why}, at)


_AGE = re.compile(r"^\s*(\d+)\s*([dwhmy]?)\s*$")
_UNIT_DAYS = {"d": 1, "": 1, "w": 7, "m": 30, "y": 365}


def parse_age(text: str) -> timedelta:
    """``180d``, ``26w``, ``6m``, ``1y``, ``12h`` (a bare number is days)."""
    match = _AGE.match(text or "")
    if not match:
        raise InputError(f"--older-than is written like 180d, 26w, 6m or 1y, not {text!r}")
    number, unit = int(match.group(1)), match.group(2)
    return timedelta(hours=number) if unit == "h" else timedelta(days=number * _UNIT_DAYS[unit])


def stale(
    con: duckdb.DuckDBPyConnection, older_than: timedelta, by: str, *, dry_run: bool = False
) -> list[dict]:
    """Verified items whose newest label is older than ``older_than``: back to review."""
    at = now()
    cutoff = at - older_than
    old = fetch_dicts(
        con,
        """SELECT i.query_id, i.query, max(l.ts) AS labelled_at, i.verified_at,
                  count(l.chunk_id) AS n_labels
           FROM gold_items i LEFT JOIN gold_labels l
             ON l.query_id = i.query_id AND l.kind = 'label'
           WHERE i.status = 'verified'
           GROUP BY ALL
           HAVING coalesce(max(l.ts), i.verified_at) < ?
           ORDER BY i.query_id""",
        [cutoff],
    )
    if dry_run or not old:
        return old
    with transaction(con):
        for item in old:
            qid = item["query_id"]
            labels = fetch_dicts(
                con, "SELECT * FROM gold_labels WHERE query_id = ? AND kind = 'label'", [qid]
            )
            con.execute("DELETE FROM gold_labels WHERE query_id = ?", [qid])
            for rank, lab in enumerate(labels, 1):
                _put_draft(
                    con,
                    qid,
                    lab["chunk_id"],
                    lab["grade"],
                    rank,
                    None,
                    "stale",
                    lab["text_hash"],
                    lab["snapshot_id"],
                    by,
                    at,
                )
            con.execute("UPDATE gold_items SET no_answer = false WHERE query_id = ?", [qid])
            record(
                con,
                qid,
                "stale",
                by,
                {
                    "labelled_at": item["labelled_at"].isoformat() if item["labelled_at"] else None,
                    "labels": {lab["chunk_id"]: lab["grade"] for lab in labels},
                    "older_than_days": older_than.days,
                },
                at,
            )
        _back_to_review(con, {i["query_id"] for i in old}, by, at, "stale")
    return old
