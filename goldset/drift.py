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

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from goldmine.errors import InputError, NotFoundError
from goldmine.goldset import bulk
from goldmine.goldset.items import current_snapshot, fetch_dicts, now
from goldmine.store import registered, transaction

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


def _passages(con: duckdb.DuckDBPyConnection, hashes: set[str]) -> dict[str, tuple[str, str]]:
    """Labelled passages by text hash, as (text, doc_id): the text kept at labelling time, else
    any snapshot's chunk with that hash; the document it was in, when a snapshot still says."""
    wanted = sorted(h for h in hashes if h)
    rows = con.execute(
        """WITH t AS (
               SELECT text_hash, text, NULL AS doc_id FROM gold_texts
               WHERE text_hash IN (SELECT unnest(?))
               UNION ALL
               SELECT text_hash, text, doc_id FROM chunks WHERE text_hash IN (SELECT unnest(?)))
           SELECT text_hash, any_value(text), any_value(doc_id) FROM t GROUP BY text_hash""",
        [wanted, wanted],
    ).fetchall()
    return {h: (text, doc) for h, text, doc in rows}


def _contained(
    con: duckdb.DuckDBPyConnection, passages: dict[str, tuple[str, str]], snapshot_id: int
) -> dict[str, list[tuple[str, float, str]]]:
    """Containment either way between each passage and the current chunks, in SQL (the test of
    ``_proposals``: whitespace collapsed, case folded). Chunks of the passage's own document are
    tried first, a cheap equi-join; only a passage no chunk of its document holds is compared
    with the whole corpus."""
    import polars as pl

    if not passages:
        return {}
    frame = pl.DataFrame(
        [(h, text, doc) for h, (text, doc) in passages.items()],
        orient="row",
        schema={"text_hash": pl.Utf8, "text": pl.Utf8, "doc_id": pl.Utf8},
    )
    squash = "trim(lower(regexp_replace(text, '\\s+', ' ', 'g')))"
    holds = (
        "length(p.old) > 0 AND (contains(c.new, p.old)"
        " OR (length(c.new) >= ? AND contains(p.old, c.new)))"
    )
    with registered(con, gold_passages=frame):
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE gold_remap_p AS
                SELECT text_hash, doc_id, {squash} AS old FROM gold_passages;
                CREATE OR REPLACE TEMP TABLE gold_remap_c AS
                SELECT chunk_id, doc_id, {squash} AS new FROM chunks
                WHERE snapshot_id = {int(snapshot_id)}"""
        )
    rows = con.execute(
        f"""SELECT p.text_hash, c.chunk_id, contains(c.new, p.old)
            FROM gold_remap_p p JOIN gold_remap_c c ON p.doc_id = c.doc_id AND {holds}
            ORDER BY 1, 2""",
        [MIN_PIECE],
    ).fetchall()
    left = sorted(set(passages) - {r[0] for r in rows})
    if left:
        rows += con.execute(
            f"""SELECT p.text_hash, c.chunk_id, contains(c.new, p.old)
                FROM (SELECT * FROM gold_remap_p WHERE text_hash IN (SELECT unnest(?))) p
                JOIN gold_remap_c c ON {holds}
                ORDER BY 1, 2""",
            [left, MIN_PIECE],
        ).fetchall()
    con.execute("DROP TABLE gold_remap_p; DROP TABLE gold_remap_c")
    found: dict[str, list[tuple[str, float, str]]] = {}
    for text_hash, chunk_id, holds_it in rows:
        found.setdefault(text_hash, []).append(
            (chunk_id, 100.0, "contains" if holds_it else "part of")
        )
    return found


def _proposals(old: str, chunks: list[tuple[str, str]]) -> list[tuple[str, float, str]]:
    """Proposals for a squashed passage among squashed (chunk_id, text) pairs."""
    contained = [
        (chunk_id, 100.0, "contains" if old in new else "part of")
        for chunk_id, new in chunks
        if old and (old in new or (len(new) >= MIN_PIECE and new in old))
    ]
    if contained:
        return contained
    from rapidfuzz import fuzz, process

    hits = process.extract(
        old, [t for _, t in chunks], scorer=fuzz.partial_ratio, score_cutoff=FUZZY_CUTOFF,
        limit=5,
    )  # fmt: skip
    return [(chunks[i][0], float(score), "fuzzy") for _, score, i in hits]


def remap(con: duckdb.DuckDBPyConnection, by: str) -> Remapped:
    """Drafts on the current chunks for every drifted label; the item goes back to review."""
    import polars as pl

    snapshot_id, _ = current_snapshot(con)
    drifted = drift(con)
    result = Remapped(labels=len(drifted))
    if not drifted:
        return result
    chunks = con.execute(
        "SELECT chunk_id, text, text_hash FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        [snapshot_id],
    ).fetchall()
    hashes = {c: h for c, _, h in chunks}
    passages = _passages(con, {d["text_hash"] for d in drifted})
    found_by_hash = _contained(con, passages, snapshot_id)
    squashed = None
    drafts: dict[tuple[str, str], list] = {}  # (query, chunk) -> [grade, rank, score]
    removed, history = [], []
    for label in drifted:
        qid, old_chunk, text_hash = label["query_id"], label["chunk_id"], label["text_hash"]
        if text_hash not in found_by_hash:  # nothing holds it: rapidfuzz, on the few left
            passage = passages.get(text_hash, (None, None))[0]
            if passage and squashed is None:
                squashed = [(c, _squash(t)) for c, t, _ in chunks]
            found_by_hash[text_hash] = _proposals(_squash(passage), squashed) if passage else []
        found = found_by_hash[text_hash]
        if not found:
            result.unmatched.append(label)
            continue
        removed.append((qid, old_chunk))
        for rank, (chunk_id, score, _how) in enumerate(found, 1):
            slot = drafts.setdefault((qid, chunk_id), [label["grade"], rank, score])
            slot[0] = max(slot[0], label["grade"])  # a merge keeps the best old grade
        detail = {
            "chunk_id": old_chunk, "grade": label["grade"], "reason": label["reason"],
            "proposed": [{"chunk_id": c, "score": s, "how": h} for c, s, h in found],
        }  # fmt: skip
        history.append((qid, "remap", json.dumps(detail, sort_keys=True)))
        result.proposals += len(found)
        result.items.add(qid)
    at = now()
    with transaction(con):
        if removed:
            frame = pl.DataFrame(removed, orient="row", schema={"query_id": pl.Utf8,
                                                                "chunk_id": pl.Utf8})  # fmt: skip
            with registered(con, gold_removed=frame):
                con.execute(
                    """DELETE FROM gold_labels WHERE kind = 'label' AND (query_id, chunk_id) IN
                       (SELECT (query_id, chunk_id) FROM gold_removed)"""
                )
        _put_drafts(con, drafts, "remap", hashes, snapshot_id, by, at)
        _append_history(con, history, by, at)
        _back_to_review(con, result.items, by, at, "remap")
    return result


def _put_drafts(con, drafts: dict, source: str, hashes: dict, snapshot_id, who: str, ts) -> None:
    """Drafts carrying old grades, in bulk. A chunk a person has graded is left alone; an
    existing draft of the same chunk keeps the higher suggested grade."""
    import polars as pl

    existing = dict(
        ((q, c), kind)
        for q, c, kind in con.execute(
            "SELECT query_id, chunk_id, max(kind) FROM gold_labels"
            " WHERE query_id IN (SELECT unnest(?)) GROUP BY ALL",
            [sorted({q for q, _ in drafts})],
        ).fetchall()
    )
    rows, bumps = [], []
    for (qid, chunk_id), (grade, rank, score) in sorted(drafts.items()):
        kind = existing.get((qid, chunk_id))
        if kind == "label":  # max(kind) is 'label' when a person's grade exists
            continue
        if kind == "draft":
            bumps.append((qid, chunk_id, grade))
            continue
        rows.append((qid, chunk_id, grade, rank, score, hashes.get(chunk_id)))
    if bumps:
        schema = {"query_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int64}
        with registered(con, gold_bumps=pl.DataFrame(bumps, orient="row", schema=schema)):
            con.execute(
                """UPDATE gold_labels SET suggested_grade = greatest(suggested_grade, b.grade)
                   FROM gold_bumps b WHERE gold_labels.query_id = b.query_id
                   AND gold_labels.chunk_id = b.chunk_id AND gold_labels.kind = 'draft'"""
            )
    if not rows:
        return
    frame = pl.DataFrame(rows, orient="row", schema={
        "query_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int64, "rank": pl.Int64,
        "score": pl.Float64, "text_hash": pl.Utf8,
    })  # fmt: skip
    with registered(con, gold_new_drafts=frame):
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank, score,
                   source, text_hash, snapshot_id, who, ts)
               SELECT query_id, chunk_id, 'draft', grade, rank, score, ?, text_hash, ?, ?, ?
               FROM gold_new_drafts""",
            [source, snapshot_id, who, ts],
        )


def _append_history(con, rows: list[tuple[str, str, str]], who: str, ts) -> None:
    """(query_id, action, detail JSON) rows, in order, in one statement."""
    bulk.append_history(con, [bulk.history_row(q, a, d, at=ts, who=who) for q, a, d in rows])


def _back_to_review(con, query_ids: set[str], by: str, at: datetime, why: str) -> None:
    ids = sorted(query_ids)
    moved = [
        r[0]
        for r in con.execute(
            "UPDATE gold_items SET status = 'drafted', updated_at = ?"
            " WHERE query_id IN (SELECT unnest(?)) AND status = 'verified' RETURNING query_id",
            [at, ids],
        ).fetchall()
    ]
    detail = json.dumps({"status": "drafted", "why": why}, sort_keys=True)
    _append_history(con, [(q, "status", detail) for q in sorted(moved)], by, at)


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
    ids = [i["query_id"] for i in old]
    labels = fetch_dicts(
        con,
        "SELECT query_id, chunk_id, grade FROM gold_labels WHERE kind = 'label'"
        " AND query_id IN (SELECT unnest(?)) ORDER BY query_id, chunk_id",
        [ids],
    )
    by_item: dict[str, dict[str, int]] = {}
    for lab in labels:
        by_item.setdefault(lab["query_id"], {})[lab["chunk_id"]] = lab["grade"]
    history = [
        (
            item["query_id"],
            "stale",
            json.dumps(
                {
                    "labelled_at": item["labelled_at"].isoformat() if item["labelled_at"] else None,
                    "labels": by_item.get(item["query_id"], {}),
                    "older_than_days": older_than.days,
                },
                sort_keys=True,
            ),
        )  # fmt: skip
        for item in old
    ]
    with transaction(con):
        # Each label becomes a draft carrying its grade, on the chunk and snapshot it was made on.
        con.execute(
            "DELETE FROM gold_labels WHERE kind = 'draft' AND query_id IN (SELECT unnest(?))",
            [ids],
        )
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank, score,
                   source, text_hash, snapshot_id, who, ts)
               SELECT query_id, chunk_id, 'draft', grade,
                      row_number() OVER (PARTITION BY query_id ORDER BY chunk_id), NULL,
                      'stale', text_hash, snapshot_id, ?, ?
               FROM gold_labels WHERE kind = 'label' AND query_id IN (SELECT unnest(?))""",
            [by, at, ids],
        )
        con.execute(
            "DELETE FROM gold_labels WHERE kind = 'label' AND query_id IN (SELECT unnest(?))",
            [ids],
        )
        con.execute(
            "UPDATE gold_items SET no_answer = false WHERE query_id IN (SELECT unnest(?))", [ids]
        )
        _append_history(con, history, by, at)
        _back_to_review(con, set(ids), by, at, "stale")
    return old
