"""The working gold set: items, their labels, and the append-only history of every change.

An item moves candidate → drafted → verified | rejected. A retriever's proposal is a ``draft`` row
and is never gold. An item is verified only when a person has decided it: every drafted candidate
graded (``mark_rest`` grades the remaining ones not relevant in one step) with at least one grade
above 0, or an explicit "no answer"; ``settle`` applies that rule after every change, in both
directions. Every function here writes its change and the history row that records it together;
callers wrap a unit of work in ``goldmine.store.transaction``.

Two writers on one item: an item's version is the id of its last history row (every change writes
one). A writer that read the item at version V passes ``expected_version=V``; if the item changed
since, the write is refused with ``StaleItemError`` naming who changed it and when, so a review
open in one terminal never saves over a label given in another.

Time comes from ``now()``, which honours ``GOLDMINE_NOW`` (an ISO timestamp) so that tests and
scripted demos can run with a fixed or advanced clock.
"""

from __future__ import annotations

import getpass
import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from goldmine.errors import EXIT_CONFLICT, GoldmineError, InputError, NotFoundError
from goldmine.store import fetch_dicts
from goldmine.text import normalize_query, sha256_text

if TYPE_CHECKING:
    import duckdb

STATUSES = ("candidate", "drafted", "verified", "rejected")
GRADES = (0, 1, 2)
NOW_ENV = "GOLDMINE_NOW"
USER_ENV = "GOLDMINE_USER"


class StaleItemError(GoldmineError):
    """A write based on an old read of an item: someone changed it since (exit 5)."""

    exit_code = EXIT_CONFLICT

    def __init__(self, query_id: str, version: int, who: str | None, at: datetime | None):
        super().__init__(f"this query changed since you opened it (by {who or 'someone'} at {at})")
        self.query_id = query_id
        self.version = version
        self.who = who
        self.at = at


def now() -> datetime:
    """The current time, naive UTC at second precision; ``GOLDMINE_NOW`` overrides it."""
    fixed = os.environ.get(NOW_ENV)
    if fixed:
        try:
            value = datetime.fromisoformat(fixed)
        except ValueError as exc:
            raise InputError(f"{NOW_ENV}={fixed!r} is not an ISO timestamp") from exc
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.replace(microsecond=0)
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def default_user(by: str | None = None) -> str:
    if by:
        return by
    return os.environ.get(USER_ENV) or getpass.getuser() or "unknown"


def query_id_for(norm_query: str) -> str:
    """A stable id from the normalized text, so the same query gets the same id in any store."""
    return "q_" + sha256_text(norm_query)[:12]


def reserve(con: duckdb.DuckDBPyConnection, sequence: str, n: int) -> int:
    """Take ``n`` consecutive numbers from one of our sequences; returns the first."""
    if n <= 0:
        return 0
    first = con.execute(f"SELECT nextval('{sequence}')").fetchall()[0][0]
    if n > 1:
        con.execute(f"SELECT count(nextval('{sequence}')) FROM range(?)", [n - 1]).fetchall()
    return first


def current_snapshot(con: duckdb.DuckDBPyConnection) -> tuple[int | None, str | None]:
    """The current corpus snapshot (the highest snapshot_id) and its content hash."""
    rows = con.execute(
        "SELECT snapshot_id, content_hash FROM corpus_snapshots ORDER BY snapshot_id DESC LIMIT 1"
    ).fetchall()
    if rows:
        return rows[0][0], rows[0][1]
    rows = con.execute("SELECT max(snapshot_id) FROM chunks").fetchall()
    return (rows[0][0], None) if rows and rows[0][0] is not None else (None, None)


def record(
    con: duckdb.DuckDBPyConnection,
    query_id: str,
    action: str,
    by: str | None,
    detail: dict | None = None,
    at: datetime | None = None,
) -> None:
    """Append one history row. History is never updated or deleted."""
    con.execute(
        "INSERT INTO gold_history VALUES (nextval('gold_history_seq'), ?, ?, ?, ?, ?)",
        [
            query_id,
            at or now(),
            by,
            action,
            json.dumps(detail or {}, sort_keys=True, ensure_ascii=False),
        ],
    )


def add_item(
    con: duckdb.DuckDBPyConnection,
    query: str,
    *,
    origin: str,
    by: str,
    query_id: str | None = None,
    reason: str | None = None,
    cluster_id: int | None = None,
    tags: list[str] | None = None,
    sources: list[str] | None = None,
    source_ids: list[str] | None = None,
    frequency: int | None = None,
    first_seen: datetime | None = None,
    last_seen: datetime | None = None,
    context: str | None = None,
    status: str = "candidate",
    at: datetime | None = None,
) -> str | None:
    """Add a candidate; returns its id, or None when the query (id or text) is already there."""
    if not query or not query.strip():
        raise InputError("an empty query cannot be a gold item")
    query = query.strip()  # a line break around it ("\nDo I need…") shows as an empty line
    norm = normalize_query(query)
    qid = query_id or query_id_for(norm)
    exists = con.execute(
        "SELECT count(*) FROM gold_items WHERE query_id = ? OR (? AND norm_query = ?)",
        [qid, query_id is None, norm],
    ).fetchall()[0][0]
    if exists:
        return None
    at = at or now()
    con.execute(
        """INSERT INTO gold_items (query_id, position, query, norm_query, context, cluster_id,
               status, tags, origin, reason, sources, source_ids, frequency, first_seen,
               last_seen, notes, created_at, updated_at)
           VALUES (?, nextval('gold_position_seq'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, [],
                   ?, ?)""",
        [
            qid,
            query,
            norm,
            context,
            cluster_id,
            status,
            sorted(set(tags or [])),
            origin,
            reason,
            sorted(set(sources or [])),
            list(source_ids or []),
            frequency,
            first_seen,
            last_seen,
            at,
            at,
        ],
    )
    record(con, qid, "add", by, {"origin": origin, "reason": reason, "status": status}, at)
    return qid


def get_item(con: duckdb.DuckDBPyConnection, query_id: str) -> dict:
    rows = fetch_dicts(con, "SELECT * FROM gold_items WHERE query_id = ?", [query_id])
    if not rows:
        raise NotFoundError(f"no gold item {query_id!r} (see `goldmine gold list`)")
    return rows[0]


def labels_of(con: duckdb.DuckDBPyConnection, query_id: str, kind: str | None = None) -> list[dict]:
    return fetch_dicts(
        con,
        """SELECT * FROM gold_labels WHERE query_id = ? AND (? IS NULL OR kind = ?)
           ORDER BY kind DESC, rank NULLS LAST, chunk_id""",
        [query_id, kind, kind],
    )


def chunk_info(con: duckdb.DuckDBPyConnection, chunk_id: str) -> dict | None:
    """The chunk as it is in the current snapshot, or None."""
    snapshot_id, _ = current_snapshot(con)
    rows = fetch_dicts(
        con,
        "SELECT chunk_id, doc_id, title, url, text, text_hash FROM chunks"
        " WHERE snapshot_id = ? AND chunk_id = ?",
        [snapshot_id, chunk_id],
    )
    return rows[0] if rows else None


def _touch(con: duckdb.DuckDBPyConnection, query_id: str, at: datetime) -> None:
    con.execute("UPDATE gold_items SET updated_at = ? WHERE query_id = ?", [at, query_id])


def set_grade(
    con: duckdb.DuckDBPyConnection,
    query_id: str,
    chunk_id: str,
    grade: int,
    by: str,
    *,
    source: str = "review",
    at: datetime | None = None,
    require_chunk: bool = True,
) -> None:
    """A person's grade for one chunk; replaces an earlier grade or draft of the same chunk."""
    if grade not in GRADES:
        raise InputError(f"grade must be 0, 1 or 2 (2 answers, 1 useful context), not {grade}")
    item = get_item(con, query_id)
    at = at or now()
    chunk = chunk_info(con, chunk_id)
    if chunk is None and require_chunk:
        raise NotFoundError(f"no chunk {chunk_id!r} in the current corpus snapshot")
    snapshot_id, _ = current_snapshot(con)
    text_hash = chunk["text_hash"] if chunk else None
    if chunk:
        con.execute(
            "INSERT INTO gold_texts SELECT ?, ? WHERE NOT EXISTS"
            " (SELECT 1 FROM gold_texts WHERE text_hash = ?)",
            [text_hash, chunk["text"], text_hash],
        )
    previous = con.execute(
        "SELECT grade FROM gold_labels WHERE query_id = ? AND chunk_id = ? AND kind = 'label'",
        [query_id, chunk_id],
    ).fetchall()
    con.execute("DELETE FROM gold_labels WHERE query_id = ? AND chunk_id = ?", [query_id, chunk_id])
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, text_hash,
               snapshot_id, who, ts) VALUES (?, ?, 'label', ?, ?, ?, ?, ?, ?)""",
        [query_id, chunk_id, grade, source, text_hash, snapshot_id, by, at],
    )
    # The source (review, model-accept, label, agreed…) goes with the grade into history, and
    # from the label into a published version: who or what the grade came from is never lost.
    detail: dict[str, Any] = {
        "chunk_id": chunk_id, "grade": grade, "text_hash": text_hash, "source": source,
    }  # fmt: skip
    if previous:
        detail["previous"] = previous[0][0]
    record(con, query_id, "grade", by, detail, at)
    if item["no_answer"] and grade > 0:
        con.execute("UPDATE gold_items SET no_answer = false WHERE query_id = ?", [query_id])
    _touch(con, query_id, at)
    settle(con, query_id, by, at=at)


def add_draft(
    con: duckdb.DuckDBPyConnection,
    query_id: str,
    chunk_id: str,
    by: str,
    *,
    source: str,
    detail: dict | None = None,
    at: datetime | None = None,
) -> bool:
    """One more candidate chunk for an open item, as a draft after its others (never gold).

    Only an item still open (candidate or drafted) takes it: a verified or rejected item was
    decided by a person. A chunk the item already holds (drafted or labelled), or one missing
    from the current snapshot, is left as it is. Returns whether the draft was added; when it
    was, one history row (action ``draft``) records it with ``detail``, so the version moves.
    """
    item = get_item(con, query_id)
    chunk = chunk_info(con, chunk_id)
    held, last_rank = con.execute(
        """SELECT count(*) FILTER (WHERE chunk_id = ?),
                  coalesce(max(rank) FILTER (WHERE kind = 'draft'), 0)
           FROM gold_labels WHERE query_id = ?""",
        [chunk_id, query_id],
    ).fetchall()[0]
    if item["status"] not in ("candidate", "drafted") or chunk is None or held:
        return False
    at = at or now()
    snapshot_id, _ = current_snapshot(con)
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, text_hash,
               snapshot_id, who, ts) VALUES (?, ?, 'draft', ?, ?, ?, ?, ?, ?)""",
        [query_id, chunk_id, last_rank + 1, source, chunk["text_hash"], snapshot_id, by, at],
    )
    con.execute(
        """UPDATE gold_items SET updated_at = ?,
               drafted_by = CASE WHEN status = 'candidate' THEN ? ELSE drafted_by END,
               status = 'drafted' WHERE query_id = ?""",
        [at, by, query_id],
    )
    record(
        con, query_id, "draft", by,
        {"chunk_id": chunk_id, "source": source, "text_hash": chunk["text_hash"],
         "snapshot_id": snapshot_id, **(detail or {})},
        at,
    )  # fmt: skip
    settle(con, query_id, by, at=at)
    return True


def item_version(con: duckdb.DuckDBPyConnection, query_id: str) -> int:
    """The id of the item's last history row: it moves with every change to the item."""
    return con.execute(
        "SELECT coalesce(max(seq), 0) FROM gold_history WHERE query_id = ?", [query_id]
    ).fetchall()[0][0]


def check_version(con: duckdb.DuckDBPyConnection, query_id: str, expected: int | None) -> None:
    """Refuse a write made on a read older than the item's last change."""
    if expected is None:
        return
    rows = con.execute(
        "SELECT seq, who, ts FROM gold_history WHERE query_id = ? ORDER BY seq DESC LIMIT 1",
        [query_id],
    ).fetchall()
    current, who, at = rows[0] if rows else (0, None, None)
    if current != expected:
        raise StaleItemError(query_id, current, who, at)


def decision_counts(con: duckdb.DuckDBPyConnection, query_id: str) -> tuple[int, int, int]:
    """(graded, graded above 0, drafts still undecided) for one item."""
    return con.execute(
        """SELECT count(*) FILTER (WHERE kind = 'label'),
                  count(*) FILTER (WHERE kind = 'label' AND grade > 0),
                  count(*) FILTER (WHERE kind = 'draft')
           FROM gold_labels WHERE query_id = ?""",
        [query_id],
    ).fetchall()[0]


def settle(con: duckdb.DuckDBPyConnection, query_id: str, by: str, *, at=None) -> bool:
    """Verified exactly when decided: "no answer", or every candidate graded and one above 0.

    An item that stops being decided (its only answer regraded 0, a new candidate added) goes
    back to ``drafted``. A rejected item stays rejected unless the person decides it. Returns
    whether the item is verified.
    """
    item = get_item(con, query_id)
    graded, relevant, undecided = decision_counts(con, query_id)
    decided = bool(item["no_answer"]) or (relevant > 0 and undecided == 0)
    at = at or now()
    if decided and item["status"] != "verified":
        con.execute(
            "UPDATE gold_items SET status = 'verified', verified_by = ?, verified_at = ?,"
            " updated_at = ? WHERE query_id = ?",
            [by, at, at, query_id],
        )
        record(con, query_id, "verify", by, {"no_answer": bool(item["no_answer"])}, at)
    elif not decided and item["status"] == "verified":
        con.execute(
            "UPDATE gold_items SET status = 'drafted', verified_by = NULL, verified_at = NULL,"
            " updated_at = ? WHERE query_id = ?",
            [at, query_id],
        )
        why = "candidates not graded yet" if undecided else "no chunk graded above 0"
        record(con, query_id, "status", by, {"status": "drafted", "why": why}, at)
    return decided


def reopen(
    con: duckdb.DuckDBPyConnection,
    query_id: str,
    chunk_ids: list[str],
    by: str,
    why: str,
    *,
    source: str = "dispute",
    at=None,
) -> None:
    """Put decided chunks back to a person (adjudication): each one's label becomes a candidate
    carrying its grade (``suggested_grade``) and who gave it, as ``gold stale`` does; a chunk a
    "no answer" item has no label for comes back suggested 0, and "no answer" is lifted. The
    next grade given to each chunk decides it; ``settle`` keeps the item open until then."""
    get_item(con, query_id)
    at = at or now()
    snapshot_id, _ = current_snapshot(con)
    con.execute(
        """UPDATE gold_labels SET kind = 'draft', suggested_grade = grade, grade = NULL,
               rank = NULL, score = NULL, source = ?
           WHERE query_id = ? AND kind = 'label' AND list_contains(?, chunk_id)""",
        [source, query_id, chunk_ids],
    )
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, source, text_hash,
               snapshot_id, who, ts)
           SELECT ?, w.chunk_id, 'draft', 0, ?, c.text_hash, c.snapshot_id,
                  (SELECT verified_by FROM gold_items WHERE query_id = ?), ?
           FROM (SELECT unnest(?::VARCHAR[]) AS chunk_id) w
           LEFT JOIN chunks c ON c.snapshot_id = ? AND c.chunk_id = w.chunk_id
           WHERE w.chunk_id NOT IN (SELECT chunk_id FROM gold_labels WHERE query_id = ?)""",
        [query_id, source, query_id, at, chunk_ids, snapshot_id, query_id],
    )
    con.execute(
        "UPDATE gold_items SET no_answer = false, updated_at = ? WHERE query_id = ?",
        [at, query_id],
    )
    record(con, query_id, "reopen", by, {"chunk_ids": sorted(chunk_ids), "why": why}, at)
    settle(con, query_id, by, at=at)


def verify(con: duckdb.DuckDBPyConnection, query_id: str, by: str, *, at=None) -> bool:
    """Verified when decided (see ``settle``); returns whether it is."""
    return settle(con, query_id, by, at=at)


def mark_rest(
    con: duckdb.DuckDBPyConnection, query_id: str, by: str, *, grade: int = 0, at=None,
    source: str = "review-rest",
) -> int:  # fmt: skip
    """Grade every candidate still undecided ``grade`` (0: not relevant); returns how many."""
    get_item(con, query_id)
    at = at or now()
    chunk_ids = [
        r[0]
        for r in con.execute(
            """UPDATE gold_labels SET kind = 'label', grade = ?, source = ?, who = ?, ts = ?
               WHERE query_id = ? AND kind = 'draft' RETURNING chunk_id""",
            [grade, source, by, at, query_id],
        ).fetchall()
    ]
    if chunk_ids:
        # The passages, as set_grade keeps them, so a later re-chunking can remap these labels.
        con.execute(
            """INSERT INTO gold_texts SELECT DISTINCT c.text_hash, c.text
               FROM chunks c JOIN gold_labels l
                 ON l.chunk_id = c.chunk_id AND l.snapshot_id = c.snapshot_id
               WHERE l.query_id = ? AND list_contains(?, l.chunk_id)
                 AND c.text_hash NOT IN (SELECT text_hash FROM gold_texts)""",
            [query_id, chunk_ids],
        )
        detail = {"chunk_ids": sorted(chunk_ids), "grade": grade, "source": source}
        record(con, query_id, "grade-rest", by, detail, at)
        _touch(con, query_id, at)
        settle(con, query_id, by, at=at)
    return len(chunk_ids)


def set_no_answer(con: duckdb.DuckDBPyConnection, query_id: str, by: str, *, at=None) -> None:
    """Verified with an explicit empty set: the corpus does not answer this query."""
    get_item(con, query_id)
    at = at or now()
    con.execute(
        "UPDATE gold_labels SET grade = 0 WHERE query_id = ? AND kind = 'label' AND grade > 0",
        [query_id],
    )
    con.execute(
        "UPDATE gold_items SET no_answer = true, updated_at = ? WHERE query_id = ?", [at, query_id]
    )
    record(con, query_id, "no-answer", by, {}, at)
    # "No answer" decides every candidate still waiting: none of them answers.
    mark_rest(con, query_id, by, at=at, source="no-answer")
    settle(con, query_id, by, at=at)


def set_status(
    con: duckdb.DuckDBPyConnection, query_id: str, status: str, by: str, *, at=None, why=None
) -> None:
    if status not in STATUSES:
        raise InputError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    get_item(con, query_id)
    at = at or now()
    con.execute(
        "UPDATE gold_items SET status = ?, updated_at = ? WHERE query_id = ?",
        [status, at, query_id],
    )
    record(
        con,
        query_id,
        status if status == "rejected" else "status",
        by,
        {"status": status, **({"why": why} if why else {})},
        at,
    )


def add_note(con: duckdb.DuckDBPyConnection, query_id: str, note: str, by: str, *, at=None) -> None:
    get_item(con, query_id)
    at = at or now()
    con.execute(
        "UPDATE gold_items SET notes = list_append(coalesce(notes, []), ?), updated_at = ?"
        " WHERE query_id = ?",
        [note, at, query_id],
    )
    record(con, query_id, "note", by, {"note": note}, at)


def label(
    con: duckdb.DuckDBPyConnection,
    query_id: str,
    grades: dict[str, int],
    *,
    no_answer: bool = False,
    rest_not_relevant: bool = False,
    by: str,
    note: str | None = None,
    expected_version: int | None = None,
) -> dict:
    """The non-interactive review: grade chunks, the rest, or "no answer"; returns the item after.

    ``expected_version`` (from ``item_version`` when the caller read the item) refuses the write
    with ``StaleItemError`` if someone changed the item since.
    """
    if no_answer and grades:
        raise InputError("give either --chunk grades or --no-answer, not both")
    if not no_answer and not grades and not rest_not_relevant and not note:
        raise InputError(
            "nothing to label: give --chunk ID=GRADE, --rest-not-relevant, --no-answer or --note"
        )
    get_item(con, query_id)
    check_version(con, query_id, expected_version)
    at = now()
    for chunk_id, grade in grades.items():
        set_grade(con, query_id, chunk_id, grade, by, source="label", at=at)
    if rest_not_relevant and not no_answer:
        mark_rest(con, query_id, by, at=at, source="label-rest")
    if no_answer:
        set_no_answer(con, query_id, by, at=at)
    if note:
        add_note(con, query_id, note, by, at=at)
    return get_item(con, query_id)


# --- undo: the review loop snapshots an item before each action and can put it back ---------


# Per-item rows besides the labels that an action can change and undo must put back.
_ITEM_TABLES = ("gold_ratings", "gold_disagreements")


def snapshot_item(con: duckdb.DuckDBPyConnection, query_id: str) -> dict:
    item = get_item(con, query_id)
    saved = {"item": item, "labels": labels_of(con, query_id)}
    for table in _ITEM_TABLES:
        saved[table] = fetch_dicts(con, f"SELECT * FROM {table} WHERE query_id = ?", [query_id])
    return saved


def _put_rows(con: duckdb.DuckDBPyConnection, table: str, query_id: str, rows: list[dict]) -> None:
    con.execute(f"DELETE FROM {table} WHERE query_id = ?", [query_id])
    for row in rows:
        con.execute(
            f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )


def restore_item(
    con: duckdb.DuckDBPyConnection, saved: dict, by: str, rater: str | None = None
) -> None:
    """The item as ``saved`` holds it. ``rater``: the undo of that rater's blind rating, which
    puts back their ratings alone: another rater's, made since, stay."""
    item, labels = saved["item"], saved["labels"]
    qid = item["query_id"]
    at = now()
    con.execute(
        "UPDATE gold_items SET status = ?, no_answer = ?, notes = ?, verified_by = ?,"
        " verified_at = ?, updated_at = ? WHERE query_id = ?",
        [
            item["status"],
            item["no_answer"],
            item["notes"],
            item["verified_by"],
            item["verified_at"],
            at,
            qid,
        ],
    )
    _put_rows(con, "gold_labels", qid, labels)
    for table in _ITEM_TABLES:
        if table not in saved:
            continue
        rows = saved[table]
        if rater is not None and table == "gold_ratings":
            others = fetch_dicts(
                con, "SELECT * FROM gold_ratings WHERE query_id = ? AND rater <> ?", [qid, rater]
            )
            rows = [r for r in rows if r["rater"] == rater] + others
        _put_rows(con, table, qid, rows)
    record(con, qid, "undo", by, {"status": item["status"]}, at)


# --- reading ---------------------------------------------------------------------------------


def list_items(con: duckdb.DuckDBPyConnection, status: list[str] | None = None) -> list[dict]:
    for s in status or []:
        if s not in STATUSES:
            raise InputError(f"status must be one of {', '.join(STATUSES)}, not {s!r}")
    return fetch_dicts(
        con,
        """SELECT i.query_id, i.status, i.query, i.no_answer, i.cluster_id, i.tags, i.frequency,
                  i.origin, i.verified_by, i.updated_at, i.position,
                  count(l.chunk_id) FILTER (WHERE l.kind = 'label' AND l.grade > 0) AS n_relevant,
                  count(l.chunk_id) FILTER (WHERE l.kind = 'label') AS n_labels,
                  count(l.chunk_id) FILTER (WHERE l.kind = 'draft') AS n_drafts
           FROM gold_items i LEFT JOIN gold_labels l USING (query_id)
           WHERE ? OR list_contains(?, i.status)
           GROUP BY ALL ORDER BY i.position""",
        [not status, list(status or [])],
    )


def show_item(con: duckdb.DuckDBPyConnection, query_id: str) -> dict:
    item = get_item(con, query_id)
    item["labels"] = labels_of(con, query_id, "label")
    item["drafts"] = labels_of(con, query_id, "draft")
    item["model_grades"], item["source_grades"] = other_grades(con, query_id)
    item["history"] = history_of(con, query_id)
    item["version"] = item_version(con, query_id)
    return item


def other_grades(con: duckdb.DuckDBPyConnection, query_id: str) -> tuple[list[dict], list[dict]]:
    """The grades beside people's for one item: each model judge's newest per chunk (source
    ``judge:MODEL``, with its reason), and every imported source's (``gold_source_grades``; a
    row without a chunk is that source saying the query has no answer)."""
    model = fetch_dicts(
        con,
        """SELECT chunk_id, 'judge:' || model AS source, arg_max(grade, ts) AS grade,
                  arg_max(reason, ts) AS reason, arg_max(prompt_version, ts) AS prompt_version,
                  max(ts) AS at
           FROM gold_model_labels WHERE query_id = ? GROUP BY chunk_id, model
           ORDER BY chunk_id, source""",
        [query_id],
    )
    imported = fetch_dicts(
        con,
        """SELECT source, chunk_id, grade, raw_grade, in_corpus, file, line, ts AS at
           FROM gold_source_grades WHERE query_id = ? ORDER BY source, chunk_id NULLS FIRST""",
        [query_id],
    )
    return model, imported


def history_of(con: duckdb.DuckDBPyConnection, query_id: str) -> list[dict]:
    rows = fetch_dicts(
        con,
        'SELECT ts AS at, who AS "by", action, detail FROM gold_history'
        " WHERE query_id = ? ORDER BY seq",
        [query_id],
    )
    for row in rows:
        row["detail"] = json.loads(row["detail"]) if row["detail"] else {}
    return rows


def progress_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(verified, total) over the items not rejected: "12 of 50 verified"."""
    verified, total = con.execute(
        "SELECT count(*) FILTER (WHERE status = 'verified'), count(*) FILTER"
        " (WHERE status != 'rejected') FROM gold_items"
    ).fetchall()[0]
    return verified, total
