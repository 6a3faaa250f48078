"""The review session: the queue, the actions and the undo stack that both faces drive.

The terminal (``goldmine.goldset.review_tui``) and the page (``goldmine.goldset.web``) only
render a ``View`` and map keys or clicks to a ``ReviewSession``'s actions, so the rules live here
once, and the page imports none of the terminal's code.

A query is verified only once every candidate is decided (graded, or the rest marked not
relevant) with one answering it, or "no answer" says none does
(``goldmine.goldset.items.settle``), so quitting halfway leaves it in review and the next session
resumes at its first undecided candidate. A skip is kept in the store for this reviewer: the
skipped query comes back after every other one, in this session or the next. Each write checks
the item's version as it was shown: if someone changed the item in the meantime (another
terminal, the page, ``gold label``), the write is refused with who and when until ``reload``.
Every action is written at once, in its own short connection (or the one a page's request holds,
``ReviewSession.request``), so another terminal can run ``triage show`` or ``eval`` meanwhile and
quitting loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from goldmine.errors import InputError
from goldmine.goldset import disagreements, raters
from goldmine.goldset import items as gi
from goldmine.goldset.judge import suggestions
from goldmine.goldset.textmatch import CorpusSearch
from goldmine.store import Store, as_store, transaction

# What a refused write tells the reviewer; the terminal's key for it is r.
RELOAD_HINT = "r to reload"

# Every queue narrows alike (one cluster, tag, status or assignee; ``$only``: the item on screen,
# to stay on it while it still waits) and puts what this reviewer skipped (or could not tell) last,
# oldest skip first. ``_first`` composes a queue from its items and their order.
_SKIPS = """LEFT JOIN (SELECT query_id, max(ts) AS skipped_at FROM gold_skips WHERE who = $by
               GROUP BY query_id) s USING (query_id)"""
_NARROWED = """($cluster::BIGINT IS NULL OR i.cluster_id = $cluster)
      AND ($tag::VARCHAR IS NULL OR list_contains(i.tags, $tag))
      AND ($status::VARCHAR IS NULL OR i.status = $status)
      AND ($only::VARCHAR IS NULL OR i.query_id = $only)
      AND ($assignee::VARCHAR IS NULL
           OR i.query_id IN (SELECT query_id FROM gold_assignments WHERE rater = $assignee))"""
# Waiting: not decided yet, or verified half-read by an older goldmine (a draft left).
_WAITING = """(i.status IN ('candidate', 'drafted')
           OR (i.status = 'verified' AND EXISTS (SELECT 1 FROM gold_labels d
                                                 WHERE d.query_id = i.query_id
                                                   AND d.kind = 'draft')))"""


def _first(items: str, *where: str, order: str = "i.position") -> str:
    """The first item of ``items`` (``i``) that passes ``where`` and the narrowing."""
    conditions = "\n      AND ".join((*where, _NARROWED))
    return f"""
    SELECT i.query_id FROM {items}
    {_SKIPS}
    WHERE {conditions}
    ORDER BY s.skipped_at NULLS FIRST, {order}
    LIMIT 1
"""


# The queue once someone was assigned items. A double-labelled item not resolved yet is only for
# its raters, until each has judged every candidate; a disagreement only for adjudication. A
# rater with assignments sees only theirs.
_RATERS = """
    WITH dbl AS (SELECT query_id FROM gold_assignments GROUP BY query_id
                 HAVING count(DISTINCT rater) >= 2),
    disputed AS (SELECT DISTINCT query_id FROM gold_disagreements),
    resolved AS (SELECT query_id FROM gold_items WHERE status = 'verified' OR no_answer
                 UNION SELECT query_id FROM gold_labels WHERE source = 'agreed'
                 UNION SELECT query_id FROM disputed),
    mine AS (SELECT DISTINCT query_id FROM gold_assignments WHERE rater = $by),
    rated AS (SELECT i.query_id FROM gold_items i
              WHERE EXISTS (SELECT 1 FROM gold_ratings r WHERE r.query_id = i.query_id
                            AND r.rater = $by AND r.no_answer)
                 OR (EXISTS (SELECT 1 FROM gold_ratings r WHERE r.query_id = i.query_id
                                AND r.rater = $by AND r.grade > 0)
                     AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.query_id = i.query_id
                                     AND NOT EXISTS (SELECT 1 FROM gold_ratings r
                                                     WHERE r.query_id = l.query_id
                                                       AND r.chunk_id = l.chunk_id
                                                       AND r.rater = $by))))"""
_QUEUE_SQL = _RATERS + _first(
    "gold_items i",
    f"""i.status != 'rejected'
      AND CASE
          WHEN i.query_id IN (SELECT query_id FROM dbl)
               AND i.query_id NOT IN (SELECT query_id FROM resolved) THEN
               i.query_id IN (SELECT query_id FROM mine)
               AND i.query_id NOT IN (SELECT query_id FROM rated)
          ELSE i.query_id NOT IN (SELECT query_id FROM disputed)
               AND (NOT EXISTS (SELECT 1 FROM mine) OR i.query_id IN (SELECT query_id FROM mine))
               AND {_WAITING}
          END""",
)

# Adjudication: the items whose raters (or an import and a person) disagreed, not decided since.
_ADJUDICATE_SQL = _first(
    "gold_items i",
    "i.status NOT IN ('rejected', 'verified')",
    "i.query_id IN (SELECT query_id FROM gold_disagreements)",
)

# The queue when nobody was assigned anything: no double items. An import can still dispute a
# person's grade (gold import): that item is adjudication's, unless it was verified since.
_ONE_RATER_QUEUE_SQL = _first(
    "gold_items i",
    "(i.status = 'verified' OR i.query_id NOT IN (SELECT query_id FROM gold_disagreements))",
    _WAITING,
)

# The disagreements queue (after ``disagreements.scored_sql``'s CTEs): items with an open unit,
# the largest gap first, then the sum of gaps.
_DISAGREEMENTS_QUEUE = _first(
    "gold_items i JOIN scored d USING (query_id)", order="d.score DESC, d.total DESC, i.position"
)


@dataclass(frozen=True)
class QueueFilter:
    """Which part of the queue to review: one cluster, one tag, one status (None: any)."""

    cluster: int | None = None
    tag: str | None = None
    status: str | None = None
    adjudicate: bool = False  # the disagreements of double-labelled items, instead
    assignee: str | None = None  # only the items assigned to this rater
    # Where the sources disagree most first (goldset.disagreements), instead of the queue's order.
    disagreements: bool = False

    def params(self, by: str, only: str | None) -> dict:
        """The queue SQL's parameters for reviewer ``by``, ``only``: the item on screen."""
        return {"by": by, "cluster": self.cluster, "tag": self.tag, "status": self.status,
                "assignee": self.assignee, "only": only}  # fmt: skip


QUEUES = ("all", "disagreements")


def queue_filter(queue: str, adjudicate: bool = False) -> QueueFilter:
    """The filter ``--queue`` and ``--adjudicate`` choose; an unknown queue is an input error."""
    if queue not in QUEUES:
        raise InputError(f"--queue is {' or '.join(QUEUES)}, not {queue!r}")
    if adjudicate and queue == "disagreements":
        raise InputError("--adjudicate and --queue disagreements are two queues: choose one")
    return QueueFilter(adjudicate=adjudicate, disagreements=queue == "disagreements")


@dataclass
class View:
    """Everything shown for one step: the item, its candidates and the one to grade now."""

    item: dict
    candidates: list[dict]
    current: dict | None
    verified: int
    total: int
    signals: dict | None = None
    examples: list[dict] = field(default_factory=list)
    version: int = 0
    blind: bool = False  # a double-labelled item: this rater's own grades, apart
    ratings: dict = field(default_factory=dict)  # adjudication: each rater's grades

    @property
    def suggested(self) -> bool:
        """Whether a model suggests a grade for any candidate: only then is ``m`` offered."""
        return any(c.get("suggestion") for c in self.candidates)


def suggester(suggestion: dict) -> str:
    """Who suggests a grade, in words: a model's grade is a suggestion, nobody graded it."""
    return "the click model" if suggestion.get("model") == "clicks" else "the model"


def drafted_how(candidate: dict) -> str:
    """How a candidate came to be shown: its source and score, and a person's earlier grade
    (a chunk re-opened by ``gold stale`` or an import's dispute). A model's or the click model's
    grade is not one: it is shown as their suggestion."""
    how = candidate["source"] or ""
    if candidate["score"] is not None:
        how += f" {candidate['score']:.3g}"
    if candidate["suggested_grade"] is not None and candidate["source"] not in ("model", "clicks"):
        how += f", was graded {candidate['suggested_grade']}"
    return how


@dataclass
class Undo:
    """One action to take back: the item as it was before, and its version just after."""

    what: str
    query_id: str
    saved: dict | None  # None for a skip
    version_after: int | None = None


class ReviewSession:
    def __init__(
        self,
        store: Store | Path | None,
        by: str,
        queue: QueueFilter | None = None,
        redact: Callable[[str], str] | None = None,
        searcher: CorpusSearch | None = None,
    ):
        self.store = as_store(store)  # the command's (a script's path is made one here)
        self.by = by
        # The corpus's search index, built on the first search and kept (the page shares one).
        self.searcher = searcher or CorpusSearch()
        # A note can paste a customer's email: the command hands in the PII redaction.
        self.redact = redact
        self.queue = queue or QueueFilter()
        self.focus: str | None = None
        self.versions: dict[str, int] = {}  # the version of each item as last shown
        self.undo_stack: list[Undo] = []
        self.message = ""
        self.stale = False  # a write was refused: the item changed under the reviewer
        self._shared = None  # one connection for every step of a request (see ``request``)

    def _store(self):
        if self._shared is not None:
            return nullcontext(self._shared)
        return self.store.open(create=False)

    @contextmanager
    def request(self):
        """Open the store once for what follows (an action and the next view), then close it."""
        with self.store.open(create=False) as con:
            self._shared = con
            try:
                yield con
            finally:
                self._shared = None

    # --- reading -------------------------------------------------------------------------------

    def _next_item(self, con) -> str | None:
        if self.queue.disagreements:
            return self._next_disagreement(con)
        if self.queue.adjudicate:
            return self._first_waiting(con, _ADJUDICATE_SQL)
        several = con.execute("SELECT EXISTS (SELECT 1 FROM gold_assignments)").fetchall()[0][0]
        return self._first_waiting(con, _QUEUE_SQL if several else _ONE_RATER_QUEUE_SQL)

    def _next_disagreement(self, con) -> str | None:
        sql, params = disagreements.scored_sql(con)
        return self._first_waiting(con, sql + _DISAGREEMENTS_QUEUE, params)

    def _first_waiting(self, con, sql: str, params: dict | None = None) -> str | None:
        # Stay on the item while it is still waiting for this reviewer, else the queue's first.
        for only in ([self.focus] if self.focus else []) + [None]:
            rows = con.execute(sql, (params or {}) | self.queue.params(self.by, only)).fetchall()
            if rows:
                return rows[0][0]
        return None

    def view(self, extra: Callable | None = None) -> View | None:
        """The next step to show; ``extra(con, item)`` reads more in the same connection."""
        with self._store() as con:
            qid = self._next_item(con)
            if qid is None:
                self.focus = None
                return None
            self.focus = qid
            item = gi.get_item(con, qid)
            version = gi.item_version(con, qid)
            if not self.stale:
                # While a conflict is on screen the old version stays, so no key but r writes.
                self.versions[qid] = version
            snapshot_id, _ = gi.current_snapshot(con)
            candidates = _candidates(con, qid, snapshot_id)
            blind = raters.is_blind(con, qid, self.by)
            if blind:
                candidates = self._blind(con, qid, candidates)
            else:
                # Not on a blind item: the double-labelled ones stay an unprompted sample.
                _suggest(con, item, candidates)
                item = {**item, "no_answer": None in raters.ratings_of(con, qid, self.by)}
            ratings = raters.all_ratings(con, qid) if self.queue.adjudicate else {}
            current = next((c for c in candidates if c["kind"] == "draft"), None)
            if self.queue.disagreements and not blind:
                current = _disputed_first(con, qid, candidates) or current
            signals = gi.fetch_dicts(
                con,
                """SELECT n_events, n_sessions, n_zero_results, n_no_click, n_reformulated,
                          n_negative_feedback, n_tickets, n_chat_fail, failure_rate
                   FROM triage_queries WHERE norm_query = ?""",
                [item["norm_query"]],
            )
            from goldmine.goldset.provenance import origins

            examples = origins(con, [item["norm_query"]], limit=20)[item["norm_query"]].examples
            verified, total = gi.progress_counts(con)
            if extra is not None:
                extra(con, item)
        return View(
            item,
            candidates,
            current,
            verified,
            total,
            signals[0] if signals else None,
            examples,
            version,
            blind,
            ratings,
        )

    def _blind(self, con, qid: str, candidates: list[dict]) -> list[dict]:
        """The candidates as this rater judged them so far, nobody else's grades shown."""
        mine = raters.ratings_of(con, qid, self.by)
        shown = []
        for c in candidates:
            grade = mine.get(c["chunk_id"], 0 if None in mine else None)
            rated = grade is not None
            shown.append({**c, "kind": "label" if rated else "draft", "grade": grade})
        shown.sort(key=lambda c: (c["kind"] != "label", c["rank"] is None, c["rank"] or 0))
        return shown

    # --- acting --------------------------------------------------------------------------------

    def _act(self, qid: str, what: str, fn: Callable, blind_fn: Callable | None = None) -> bool:
        """Write one action if the item is still as shown; returns whether it was written.

        On a double-labelled item of this rater's, ``blind_fn`` writes the rater's own judgement
        instead: nobody else writes those rows, so no version check is needed.
        """
        if self.stale:
            return False
        try:
            with self._store() as con, transaction(con):
                blind = blind_fn is not None and raters.is_blind(con, qid, self.by)
                if not blind:
                    gi.check_version(con, qid, self.versions.get(qid))
                saved = gi.snapshot_item(con, qid)
                (blind_fn if blind else fn)(con)
                con.execute("DELETE FROM gold_skips WHERE query_id = ? AND who = ?", [qid, self.by])
                after = gi.item_version(con, qid)
        except gi.StaleItemError as exc:
            self._conflict(exc)
            return False
        self.versions[qid] = after
        self.undo_stack.append(Undo(what, qid, saved, None if blind else after))
        return True

    def _conflict(self, exc: gi.StaleItemError) -> None:
        self.stale = True
        self.focus = exc.query_id
        self.message = f"{exc.message}: {RELOAD_HINT}"

    def reload(self) -> None:
        """Accept what the item is now: the next view shows it and writes go on from there."""
        self.stale = False
        self.versions.pop(self.focus or "", None)
        self.message = "reloaded: this is the query as it is now"

    def grade(self, qid: str, chunk_id: str, grade: int, source: str = "review") -> None:
        with self._store() as con:
            gi.get_item(con, qid)  # an unknown query is that, not a candidate it lacks
        if not self._holds(qid, chunk_id):
            # Only a candidate shown is graded: the page once sent an id HTML had changed (a
            # NUL as U+FFFD), which became a label on a chunk no draft and no corpus held.
            self.message = f"no candidate {chunk_id!r} on this query: grade one it shows"
            return
        if self._act(
            qid,
            f"grade {chunk_id}={grade}",
            lambda con: gi.set_grade(
                con, qid, chunk_id, grade, self.by, source=source, require_chunk=False
            ),
            lambda con: raters.rate(con, qid, chunk_id, grade, self.by),
        ):
            self.message = f"graded {chunk_id} = {grade}"

    def _holds(self, qid: str, chunk_id: str) -> bool:
        """Whether the item holds ``chunk_id`` as a draft or a label (a candidate review shows)."""
        with self._store() as con:
            return bool(
                con.execute(
                    "SELECT count(*) FROM gold_labels WHERE query_id = ? AND chunk_id = ?",
                    [qid, chunk_id],
                ).fetchall()[0][0]
            )

    def accept_suggestion(self, qid: str, chunk_id: str) -> None:
        """Take the model's grade for this candidate as the reviewer's own (source
        ``model-accept``), read from the store, never from what a page sent."""
        with self._store() as con:
            item = gi.get_item(con, qid)
            snapshot_id, _ = gi.current_snapshot(con)
            candidates = [
                c for c in _candidates(con, qid, snapshot_id) if c["chunk_id"] == chunk_id
            ]
            blind = raters.is_blind(con, qid, self.by)
            if not blind:
                _suggest(con, item, candidates)
        suggestion = candidates[0].get("suggestion") if candidates else None
        if suggestion is None:
            self.message = "no model suggestion for this candidate: grade it 2, 1 or 0"
            return
        self.grade(qid, chunk_id, suggestion["grade"], "model-accept")

    def rest_not_relevant(self, qid: str) -> None:
        marked: list[int] = []
        if self._act(
            qid,
            "rest not relevant",
            lambda con: marked.append(gi.mark_rest(con, qid, self.by)),
            lambda con: marked.append(raters.rate_rest(con, qid, self.by)),
        ):
            n = marked[0]
            self.message = (
                f"marked {n} remaining candidate{'s' if n != 1 else ''} not relevant"
                if n
                else "no candidate left to grade: [s] search or [a] no answer"
            )

    def no_answer(self, qid: str) -> None:
        if self._act(
            qid,
            "no answer",
            lambda con: gi.set_no_answer(con, qid, self.by),
            lambda con: raters.rate(con, qid, None, 0, self.by),
        ):
            self._finish(qid, "marked: no answer in the corpus")

    def reject(self, qid: str) -> None:
        if self._act(qid, "reject", lambda con: gi.set_status(con, qid, "rejected", self.by)):
            self._finish(qid, "rejected")

    def note(self, qid: str, text: str) -> None:
        text = text.strip()
        if text and self.redact:
            text = self.redact(text)
        if text and self._act(qid, "note", lambda con: gi.add_note(con, qid, text, self.by)):
            self.message = "note added"

    def skip(self, qid: str, why: str = "skip") -> None:
        """Later, not now (``why='unsure'``: can't tell); the item comes back after the others."""
        with self._store() as con, transaction(con):
            con.execute("DELETE FROM gold_skips WHERE query_id = ? AND who = ?", [qid, self.by])
            con.execute(
                "INSERT INTO gold_skips VALUES (?, ?, now()::TIMESTAMP, ?)", [qid, self.by, why]
            )
        self.undo_stack.append(Undo("can't tell" if why == "unsure" else "skip", qid, None))
        self._finish(
            qid,
            "marked: can't tell; it comes back after the others"
            if why == "unsure"
            else "skipped: it comes back after the others",
        )

    def _finish(self, qid: str, message: str) -> None:
        if self.focus == qid:
            self.focus = None
        self.message = message

    def undo(self) -> None:
        if not self.undo_stack:
            self.message = "nothing to undo"
            return
        step = self.undo_stack[-1]
        try:
            with self._store() as con, transaction(con):
                if step.saved is None:
                    con.execute(
                        "DELETE FROM gold_skips WHERE query_id = ? AND who = ?",
                        [step.query_id, self.by],
                    )
                else:
                    blind = step.version_after is None  # a blind rating: this rater's own rows
                    if not blind:
                        gi.check_version(con, step.query_id, step.version_after)
                    gi.restore_item(con, step.saved, self.by, rater=self.by if blind else None)
                    self.versions[step.query_id] = gi.item_version(con, step.query_id)
        except gi.StaleItemError as exc:
            self._conflict(exc)
            self.message = f"cannot undo {step.what}: {self.message}"
            return
        self.undo_stack.pop()
        self._after_undo(step.query_id)
        self.focus = step.query_id
        self.message = f"undone: {step.what}"

    def _after_undo(self, qid: str) -> None:
        """The item is now as this session's previous step on it left it, at the version the
        undo's own history row gave it: that step's undo checks against this version."""
        for i in range(len(self.undo_stack) - 1, -1, -1):
            earlier = self.undo_stack[i]
            if earlier.query_id == qid and earlier.version_after is not None:
                self.undo_stack[i] = replace(earlier, version_after=self.versions[qid])
                return

    def search(self, text: str, limit: int = 5) -> list[dict]:
        """The corpus's best chunks for ``text`` by BM25, as the page's search gives them."""
        with self._store() as con:
            return self.searcher.search(con, text, limit)

    def add_candidate(self, qid: str, chunk_id: str) -> None:
        with self._store() as con:
            missing = gi.chunk_info(con, chunk_id) is None
        if missing:  # a search hit is in the corpus: an id that is not came from elsewhere
            self.message = f"no chunk {chunk_id!r} in the current corpus snapshot: nothing added"
            return

        def put(con) -> None:
            snapshot_id, _ = gi.current_snapshot(con)
            con.execute(
                "DELETE FROM gold_labels WHERE query_id = ? AND chunk_id = ? AND kind = 'draft'",
                [qid, chunk_id],
            )
            con.execute(
                """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, text_hash,
                       snapshot_id, who, ts)
                   SELECT ?, chunk_id, 'draft', 0, 'search', text_hash, snapshot_id, ?, ?
                   FROM chunks WHERE snapshot_id = ? AND chunk_id = ?""",
                [qid, self.by, gi.now(), snapshot_id, chunk_id],
            )
            gi.record(con, qid, "search-add", self.by, {"chunk_id": chunk_id})
            gi.settle(con, qid, self.by)  # a new candidate to decide: not verified until it is

        if self._act(qid, f"add {chunk_id}", put):
            self.focus = qid
            self.message = f"added {chunk_id} from search: grade it now"


def _candidates(con, qid: str, snapshot_id: int | None) -> list[dict]:
    """An item's labels and drafts, with their chunk as it is in the current snapshot.

    Two reads, not a join: the chunks are looked up by id through their index, where a join
    would hash the whole corpus on every step.
    """
    rows = gi.fetch_dicts(
        con,
        """SELECT chunk_id, kind, grade, suggested_grade, rank, score, source FROM gold_labels
           WHERE query_id = ?
           ORDER BY kind = 'label' DESC, source = 'search' DESC, ts, rank NULLS LAST, chunk_id""",
        [qid],
    )
    chunks = {
        c["chunk_id"]: c
        for c in gi.fetch_dicts(
            con,
            """SELECT chunk_id, title, text, doc_id, url FROM chunks
               WHERE chunk_id IN (SELECT unnest(?::VARCHAR[])) AND snapshot_id = ?""",
            [[r["chunk_id"] for r in rows], snapshot_id],
        )
    }
    empty = {"title": None, "text": None, "doc_id": None, "url": None}
    return [{**r, **{k: v for k, v in chunks.get(r["chunk_id"], empty).items()
                     if k != "chunk_id"}} for r in rows]  # fmt: skip


def _suggest(con, item: dict, candidates: list[dict]) -> None:
    """Each candidate's ``suggestion``: the model's grade and reason (gold draft --judge llm),
    or, for the chunk a model wrote the question from (gold synth), grade 2."""

    found = suggestions(con, item["query_id"])
    for c in candidates:
        if c["chunk_id"] in found:
            s = found[c["chunk_id"]]
            c["suggestion"] = {
                "grade": s["grade"],
                "reason": s["reason"],
                "model": s["model"],
                "note": s["note"],
            }
        elif c["source"] == "model" and c["suggested_grade"] is not None:
            c["suggestion"] = {
                "grade": c["suggested_grade"],
                "reason": "the model wrote this question from this chunk",
                "model": (item.get("drafted_by") or "model:?").removeprefix("model:"),
            }
        elif c["source"] == "clicks" and c["suggested_grade"] is not None:
            c["suggestion"] = {
                "grade": c["suggested_grade"],
                "reason": f"the click model's grade (score {c['score']:.2f}; see gold show)",
                "model": "clicks",
            }


def _disputed_first(con, qid: str, candidates: list[dict]) -> dict | None:
    """Each open unit's candidate gets its sources' ``grades``; the one with the largest gap
    is the one to grade now."""
    found = disagreements.item_grades(con, qid)  # largest gap first
    for c in candidates:
        if c["kind"] == "draft" and c["chunk_id"] in found:
            c["grades"] = found[c["chunk_id"]]
    by_id = {c["chunk_id"]: c for c in candidates if "grades" in c}
    return next((by_id[cid] for cid in found if cid in by_id), None)
