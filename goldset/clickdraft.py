"""Click-drafted grades in the store: ``goldmine gold draft --from clicks``.

The search events that record clicks (an import batch with any click at all, the rule triage
uses) are the sessions: each event's ranked ``result_ids`` (cut at ``depth``) and its
``clicked_ids``. An event belongs to a gold item when its query normalizes to the item's
``norm_query``; the click model (``goldmine.goldset.clicks``: PBM or DBN by EM) is fitted over the
events of every gold item, and a (query, chunk) shown ``min_shown`` times or more gets a score and
a proposed grade.

What is written, in one transaction, as ``gold draft`` and ``gold next`` write drafts: on the
items still open (candidate or drafted; a verified or rejected item was decided by a person and is
left alone), each proposed pair graded ``min_grade`` or more, with no person's label and a chunk in
the current snapshot, becomes a ``kind = 'draft'`` row with ``source = 'clicks'``, ``score`` the
model's score, ``rank`` its order by score within the query and ``suggested_grade`` the proposed
grade. It replaces any other source's draft of the same chunk. A re-run never removes what an
earlier click run drafted: a pair it scores again gets its new score and grade (even one under
``min_grade``), and a pair it does not score (shown fewer than this run's ``min_shown`` times, say)
keeps its draft as it was, so ``--min-shown 2`` after ``--min-shown 1`` loses nothing. An item left
``drafted`` with nothing to review (by a run before that rule) goes back to ``candidate``. A
candidate becomes drafted (``drafted_by = 'clicks:<model>'``); each item changed gets one history
row (action ``draft``, source ``clicks``) holding the model, its fitted parameters, the thresholds
and every drafted chunk's evidence (impressions, clicks, score, the DBN's attractiveness and
satisfaction), so its version moves; ``items.settle`` runs on each. An item whose proposals
are the click drafts it already holds is not changed: a re-run on the same sessions writes nothing
and moves no version (a writer holding that version is not refused for nothing). Nothing here is
gold: a person's review decides every draft.

Agreement: where people have labelled pairs the model also scores, the proposed grades are
compared with theirs (``clicks.agreement``: linear-weighted kappa, precision/recall of relevant,
AUC of the score), beside the naive baselines (clicked = relevant, click-through rate). With
``MIN_FIT_LABELS`` labelled pairs or more, the grade thresholds can be fitted on them
(``clicks.fit_thresholds``); the fit is judged by 5-fold cross-validation by query, and
``thresholds = 'auto'`` keeps it only when its out-of-fold kappa beats the fixed thresholds'.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import InputError, NotFoundError
from goldmine.goldset import items as gi
from goldmine.goldset.items import current_snapshot
from goldmine.store import WRITE_WAIT_S, Store, registered, transaction
from goldmine.text import normalize_query

if TYPE_CHECKING:
    import duckdb

SOURCE = "clicks"
THRESHOLDS = ("auto", "fixed", "fit")
MIN_FIT_LABELS = 30  # labelled pairs the model scores, to fit thresholds on
FOLDS = 5
OPEN = ("candidate", "drafted")


@dataclass
class ClickDraft:
    model: str
    n_events: int  # click-recording events of gold queries, with results shown
    n_queries: int  # gold items those events belong to
    n_pairs: int  # (query, chunk) pairs shown min_shown times or more
    items: int  # items whose drafts changed
    drafts: int  # draft rows written
    unchanged: int  # items whose proposals are those already stored: nothing written
    kept: int  # earlier click drafts this run does not score, kept as they were
    restored: int  # items drafted with nothing to review, put back to candidate
    skipped_decided: int  # unlabelled proposed pairs on verified or rejected items, left alone
    skipped_labelled: int  # proposed pairs a person has labelled
    missing_chunks: int  # proposed pairs whose chunk is not in the current snapshot
    thresholds: dict[str, Any]
    params: dict[str, Any]
    iterations: int
    snapshot_id: int | None
    agreement: dict[str, dict[str, Any]] | None = None
    cross_validated: dict[str, dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"source": SOURCE, **asdict(self)}


# --- reading the sessions -----------------------------------------------------------------------

_CLICKY = "SELECT DISTINCT batch_id FROM search_events WHERE len(clicked_ids) > 0"


def _gold_queries(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Raw query text of click-recording events -> the gold item it normalizes to."""

    by_norm = dict(con.execute("SELECT norm_query, query_id FROM gold_items").fetchall())
    texts = con.execute(
        f"""SELECT DISTINCT query FROM search_events
            WHERE batch_id IN ({_CLICKY}) AND len(result_ids) > 0"""
    ).fetchall()
    found = {}
    for (text,) in texts:
        qid = by_norm.get(normalize_query(text))
        if qid is not None:
            found[text] = qid
    return found


def read_sessions(con: duckdb.DuckDBPyConnection, depth: int = 10):
    """The gold queries' sessions as ``clicks.Sessions`` (keys are (query_id, chunk_id)) and the
    number of events, or (None, 0) when there are none."""
    import polars as pl

    from goldmine.goldset.clicks import Sessions

    mapping = _gold_queries(con)
    if not mapping:
        return None, 0
    frame = pl.DataFrame(
        {"query": list(mapping), "query_id": list(mapping.values())},
        schema={"query": pl.Utf8, "query_id": pl.Utf8},
    )
    with registered(con, _gm_click_q=frame):
        rows = con.sql(
            f"""
            WITH ev AS (
                SELECT row_number() OVER (ORDER BY e.event_id, e.batch_id, e.ts) - 1 AS s,
                       m.query_id, e.result_ids[1:?] AS shown,
                       coalesce(e.clicked_ids, []) AS clicked
                FROM search_events e JOIN _gm_click_q m ON m.query = e.query
                WHERE e.batch_id IN ({_CLICKY}) AND len(e.result_ids) > 0
            ),
            flat AS (
                SELECT s, query_id, clicked, unnest(range(len(shown))) AS r,
                       unnest(shown) AS chunk_id
                FROM ev
            )
            SELECT s, r, query_id, chunk_id, list_contains(clicked, chunk_id) AS c,
                   dense_rank() OVER (ORDER BY query_id, chunk_id) - 1 AS p
            FROM flat WHERE chunk_id IS NOT NULL
            """,
            params=[depth],
        ).pl()
    if rows.height == 0:
        return None, 0
    keys = rows.unique("p").sort("p").select("query_id", "chunk_id").rows()
    data = Sessions.from_arrays(
        keys, rows["s"].to_numpy(), rows["r"].to_numpy(), rows["p"].to_numpy(), rows["c"].to_numpy()
    )
    return data, int(rows["s"].n_unique())


def _labels(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], int]:
    return {
        (q, c): int(g)
        for q, c, g in con.execute(
            "SELECT query_id, chunk_id, grade FROM gold_labels"
            " WHERE kind = 'label' AND grade IS NOT NULL"
        ).fetchall()
    }


# --- agreement and thresholds -------------------------------------------------------------------


def _signals(data, fitted) -> dict[str, tuple[np.ndarray, bool]]:
    """Each signal's scores, and whether its grades are the scores themselves (clicked)."""
    from goldmine.goldset.clicks import baselines

    base = baselines(data)
    return {
        fitted.model: (fitted.scores, False),
        "clicked": (base["clicked"].scores, True),
        "ctr": (base["ctr"].scores, False),
    }


def compare_with_labels(
    data, fitted, labels: dict[tuple[str, str], int], enough: np.ndarray
) -> tuple[dict | None, dict | None, np.ndarray | None]:
    """Agreement with people's labels at the fixed thresholds; with enough labels, the
    cross-validated agreement with fitted thresholds. Returns (agreement, cross-validated,
    the labelled mask)."""
    from goldmine.goldset.clicks import agreement, cross_validate, grades, kappa

    labelled = np.array([k in labels for k in data.keys], dtype=bool) & enough
    if not labelled.any():
        return None, None, None
    human = np.array([labels.get(k, 0) for k in data.keys])[labelled]
    groups = np.array([k[0] for k in data.keys])[labelled]
    fixed, cv = {}, None
    signals = _signals(data, fitted)
    for name, (scores, literal) in signals.items():
        s = scores[labelled]
        proposed = s.astype(int) if literal else grades(s)
        fixed[name] = agreement(proposed, human, s, groups)
    enough_labels = labelled.sum() >= MIN_FIT_LABELS and 0 < (human >= 1).sum() < human.size
    if enough_labels and np.unique(groups).size >= FOLDS:
        cv = {}
        for name, (scores, _) in signals.items():
            s = scores[labelled]
            out_of_fold = cross_validate(s, human, groups, folds=FOLDS)
            row = agreement(out_of_fold, human, s, groups)
            row["fixed_kappa"] = fixed[name]["weighted_kappa"]
            row["fitted_kappa"] = kappa(human, out_of_fold)
            cv[name] = row
    return fixed, cv, labelled


def choose_thresholds(
    how: str, fitted, labels_mask, human: np.ndarray | None, cv: dict | None
) -> dict[str, Any]:
    from goldmine.goldset.clicks import HIGH, LOW, fit_thresholds

    fixed = {"low": LOW, "high": HIGH, "fitted": False}
    if how == "fixed":
        return {**fixed, "why": "fixed (--thresholds fixed)"}
    if cv is None:
        why = (
            f"fixed: fewer than {MIN_FIT_LABELS} labelled pairs the model scores (with relevant "
            f"and not relevant among them, over {FOLDS} queries or more) to fit on"
        )
        if how == "fit":
            raise InputError(f"--thresholds fit: {why.removeprefix('fixed: ')}")
        return {**fixed, "why": why}
    row = cv[fitted.model]
    if how == "auto" and row["fitted_kappa"] <= row["fixed_kappa"]:
        return {
            **fixed,
            "why": f"fixed: thresholds fitted on the labels did not agree better out of fold "
            f"(kappa {row['fitted_kappa']:.3f} against {row['fixed_kappa']:.3f})",
        }
    low, high = fit_thresholds(fitted.scores[labels_mask], human)
    return {
        "low": low,
        "high": high,
        "fitted": True,
        "why": f"fitted on {int(labels_mask.sum())} labelled pairs; out of fold kappa "
        f"{row['fitted_kappa']:.3f} against {row['fixed_kappa']:.3f} at the fixed thresholds",
    }


# --- the command's work -------------------------------------------------------------------------


def _global_params(fitted) -> dict[str, Any]:
    if fitted.model == "pbm":
        return {"gamma": [round(g, 6) for g in fitted.params["gamma"]]}
    return {"gamma": round(float(fitted.params["gamma"]), 6)}


def draft_from_clicks(
    store: Store,
    model: str = "pbm",
    *,
    min_shown: int = 2,
    min_grade: int = 1,
    depth: int = 10,
    thresholds: str = "auto",
    by: str | None = None,
) -> ClickDraft:
    """Fit ``model`` on the gold queries' sessions and write its grades as drafts (module doc)."""
    from goldmine.goldset.clicks import MODELS, fit, grades

    if model not in MODELS:
        raise InputError(f"--click-model must be one of {', '.join(MODELS)}, not {model!r}")
    if thresholds not in THRESHOLDS:
        raise InputError(f"--thresholds must be one of {', '.join(THRESHOLDS)}, not {thresholds!r}")
    if min_shown < 1 or depth < 1:
        raise InputError("--min-shown and --depth must be at least 1")
    if min_grade not in (0, 1, 2):
        raise InputError(f"--min-grade must be 0, 1 or 2, not {min_grade}")
    with store.open(create=False) as con:
        snapshot_id, _ = current_snapshot(con)
        data, n_events = read_sessions(con, depth)
        labels = _labels(con)
    if data is None:
        raise NotFoundError(
            "no search events with shown results and clicks belong to a gold query: import a "
            "search log or UBI events that record result_ids and clicked_ids "
            "(`goldmine ingest searchlog`), and add the queries (`goldmine gold starter`)"
        )
    fitted = fit(data, model)
    shown, clicks = data.counts()
    enough = shown >= min_shown
    agreement, cv, mask = compare_with_labels(data, fitted, labels, enough)
    human = np.array([labels.get(k, 0) for k in data.keys])[mask] if mask is not None else None
    chosen = choose_thresholds(thresholds, fitted, mask, human, cv)
    proposed = grades(fitted.scores, chosen["high"], chosen["low"])
    result = ClickDraft(
        model=model,
        n_events=n_events,
        n_queries=len({q for q, _ in data.keys}),
        n_pairs=int(enough.sum()),
        items=0,
        drafts=0,
        unchanged=0,
        kept=0,
        restored=0,
        skipped_decided=0,
        skipped_labelled=0,
        missing_chunks=0,
        thresholds={**chosen, "min_shown": min_shown, "min_grade": min_grade, "depth": depth},
        params=_global_params(fitted),
        iterations=fitted.iterations,
        snapshot_id=snapshot_id,
        agreement=agreement,
        cross_validated=cv,
    )
    rows = _proposals(data, fitted, proposed, shown, clicks, enough, proposed >= min_grade)

    with store.open(wait=WRITE_WAIT_S) as con, transaction(con):
        _write(con, rows, result, by or f"clicks:{model}")
    return result


def _proposals(data, fitted, proposed, shown, clicks, keep: np.ndarray, graded: np.ndarray):
    """The pairs scored with enough evidence (``keep``); ``proposed`` marks those graded
    ``min_grade`` or more, the rest only regrade a draft an earlier run made."""
    import polars as pl

    idx = np.flatnonzero(keep)
    cols: dict[str, Any] = {
        "query_id": [data.keys[i][0] for i in idx],
        "chunk_id": [data.keys[i][1] for i in idx],
        "proposed": graded[idx],
        "score": fitted.scores[idx].astype(np.float64),
        "grade": proposed[idx].astype(np.int64),
        "shown": shown[idx].astype(np.int64),
        "clicks": clicks[idx].astype(np.int64),
    }
    if fitted.model == "dbn":
        cols["attractiveness"] = np.asarray(fitted.params["attractiveness"])[idx]
        cols["satisfaction"] = np.asarray(fitted.params["satisfaction"])[idx]
    frame = pl.DataFrame(cols, schema_overrides={"query_id": pl.Utf8, "chunk_id": pl.Utf8})
    return frame


# Scores equal within this are the same proposal: EM's sums need not add in the same order.
SCORE_TOLERANCE = 1e-9


def _changed_items(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The open items whose click drafts would change, in queue order: a chunk drafted or
    dropped, another grade, rank, score or chunk text, another source's draft of a proposed chunk
    to replace, or a candidate to mark drafted. An item whose proposals are those stored is left
    alone, so a re-run on the same sessions writes nothing and moves no version."""
    return [
        r[0]
        for r in con.execute(
            """WITH old AS (
                   SELECT query_id, chunk_id, suggested_grade AS grade, rank, score, text_hash,
                          snapshot_id
                   FROM gold_labels WHERE kind = 'draft' AND source = $source),
               diff AS (
                   SELECT coalesce(n.query_id, o.query_id) AS query_id
                   FROM _gm_click_rows n FULL JOIN old o
                     ON o.query_id = n.query_id AND o.chunk_id = n.chunk_id
                   WHERE n.chunk_id IS NULL OR o.chunk_id IS NULL
                      OR n.grade IS DISTINCT FROM o.grade OR n.rank IS DISTINCT FROM o.rank
                      OR NOT abs(n.score - o.score) <= $tolerance
                      OR n.text_hash IS DISTINCT FROM o.text_hash
                      OR o.snapshot_id IS DISTINCT FROM n.snapshot_id
                   UNION ALL
                   SELECT l.query_id FROM gold_labels l JOIN _gm_click_rows n
                     ON n.query_id = l.query_id AND n.chunk_id = l.chunk_id
                   WHERE l.kind = 'draft' AND l.source != $source)
               SELECT query_id FROM gold_items
               WHERE status IN ('candidate', 'drafted') AND (
                   query_id IN (SELECT query_id FROM diff)
                   OR status = 'candidate' AND query_id IN (SELECT query_id FROM _gm_click_rows))
               ORDER BY position""",
            {"source": SOURCE, "tolerance": SCORE_TOLERANCE},
        ).fetchall()
    ]


# This run's pairs (proposed, or regrading an earlier click draft) and the earlier click drafts
# it does not score, kept as they are (their own text hash and snapshot), each with what decides
# whether it may be written: an open item, no person's label, a chunk in the corpus.
_ROWS = """
CREATE OR REPLACE TEMP TABLE _gm_click_rows AS
WITH old AS (
    SELECT query_id, chunk_id, suggested_grade AS grade, score, text_hash, snapshot_id
    FROM gold_labels WHERE kind = 'draft' AND source = $source),
run AS (
    SELECT r.* EXCLUDE (proposed), false AS kept FROM _gm_clicks r
    WHERE r.proposed OR (r.query_id, r.chunk_id) IN (SELECT (query_id, chunk_id) FROM old)),
earlier AS (
    SELECT o.query_id, o.chunk_id, o.score, o.grade, true AS kept,
           o.text_hash AS kept_hash, o.snapshot_id AS kept_snapshot
    FROM old o ANTI JOIN _gm_clicks r USING (query_id, chunk_id)),
rows AS (SELECT * FROM run UNION ALL BY NAME SELECT * FROM earlier)
SELECT *, row_number() OVER (PARTITION BY query_id, open AND NOT labelled AND in_corpus
                             ORDER BY score DESC, chunk_id)
          AS rank  -- the draft's rank: its order by score among those kept
FROM (
    SELECT u.* EXCLUDE (kept_hash, kept_snapshot), i.status IN ('candidate', 'drafted') AS open,
           EXISTS (SELECT 1 FROM gold_labels l WHERE l.query_id = u.query_id
                   AND l.chunk_id = u.chunk_id AND l.kind = 'label') AS labelled,
           CASE WHEN u.kept THEN u.kept_hash ELSE c.text_hash END AS text_hash,
           CASE WHEN u.kept THEN u.kept_snapshot ELSE $snapshot END AS snapshot_id,
           u.kept OR c.chunk_id IS NOT NULL AS in_corpus
    FROM rows u JOIN gold_items i USING (query_id)
    LEFT JOIN chunks c ON c.snapshot_id = $snapshot AND c.chunk_id = u.chunk_id)
"""


def _write(con: duckdb.DuckDBPyConnection, rows, result: ClickDraft, who: str) -> None:
    """The proposals on the items still open, as drafts; one history row per item changed."""

    at = gi.now()
    snapshot_id = result.snapshot_id
    with registered(con, _gm_clicks=rows):
        con.execute(_ROWS, {"source": SOURCE, "snapshot": snapshot_id})
    decided, labelled, missing, kept = con.execute(
        """SELECT count(*) FILTER (WHERE NOT open AND NOT labelled AND NOT kept),
                  count(*) FILTER (WHERE labelled AND NOT kept),
                  count(*) FILTER (WHERE open AND NOT labelled AND NOT in_corpus),
                  count(*) FILTER (WHERE open AND NOT labelled AND kept)
           FROM _gm_click_rows"""
    ).fetchall()[0]
    result.skipped_decided, result.skipped_labelled = decided, labelled
    result.missing_chunks, result.kept = missing, kept
    con.execute("DELETE FROM _gm_click_rows WHERE NOT open OR labelled OR NOT in_corpus")
    touched = _changed_items(con)
    result.unchanged = con.execute(
        "SELECT count(DISTINCT query_id) FROM _gm_click_rows WHERE NOT list_contains(?, query_id)",
        [touched],
    ).fetchall()[0][0]
    if touched:
        _replace(con, touched, who, at)
        _record(con, touched, result, who, at)
    con.execute("DROP TABLE _gm_click_rows")
    result.restored = _restore_empty(con, who, at)


def _replace(con: duckdb.DuckDBPyConnection, touched: list[str], who: str, at) -> None:
    """The touched items' click drafts (and other sources' drafts of their chunks) replaced."""
    con.execute(
        """DELETE FROM gold_labels WHERE kind = 'draft' AND list_contains(?, query_id) AND (
               source = ?
               OR (query_id, chunk_id) IN (SELECT (query_id, chunk_id) FROM _gm_click_rows))""",
        [touched, SOURCE],
    )
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank, score,
               source, text_hash, snapshot_id, who, ts)
           SELECT query_id, chunk_id, 'draft', grade, rank, score, ?, text_hash, snapshot_id, ?, ?
           FROM _gm_click_rows WHERE list_contains(?, query_id)""",
        [SOURCE, who, at, touched],
    )
    con.execute(
        """UPDATE gold_items SET updated_at = ?,
               status = CASE WHEN status = 'candidate' THEN 'drafted' ELSE status END,
               drafted_by = CASE WHEN status = 'candidate' THEN ? ELSE drafted_by END
           WHERE list_contains(?, query_id)""",
        [at, who, touched],
    )


def _record(
    con: duckdb.DuckDBPyConnection, touched: list[str], result: ClickDraft, who: str, at
) -> None:
    """One history row per touched item: this run's evidence for each chunk it drafted, and the
    chunks kept from earlier runs."""
    evidence: dict[str, list[dict]] = {q: [] for q in touched}
    earlier: dict[str, list[str]] = {q: [] for q in touched}
    for row in gi.fetch_dicts(
        con, "SELECT * EXCLUDE (open, labelled, in_corpus, text_hash, snapshot_id, rank)"
        " FROM _gm_click_rows WHERE list_contains(?, query_id)"
        " ORDER BY query_id, score DESC, chunk_id", [touched],
    ):  # fmt: skip
        qid = row.pop("query_id")
        if row.pop("kept"):
            earlier[qid].append(row["chunk_id"])
            continue
        evidence[qid].append(
            {k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()}
        )
    provenance = {
        "source": SOURCE,
        "model": result.model,
        "params": result.params,
        "thresholds": {k: result.thresholds[k] for k in ("low", "high", "fitted", "min_shown")},
        "iterations": result.iterations,
        "events": result.n_events,
        "snapshot_id": result.snapshot_id,
    }
    for qid in touched:
        kept = {"kept": earlier[qid]} if earlier[qid] else {}
        gi.record(con, qid, "draft", who, {**provenance, "chunks": evidence[qid], **kept}, at)
        gi.settle(con, qid, who, at=at)
    result.items = len(touched)
    result.drafts = sum(len(v) for v in evidence.values())


def _restore_empty(con: duckdb.DuckDBPyConnection, who: str, at) -> int:
    """Items ``drafted`` with no row at all (nothing to review, nothing labelled), as a re-run
    before this rule could leave them, back to ``candidate`` with a history row each."""
    empty = [
        r[0]
        for r in con.execute(
            """SELECT query_id FROM gold_items i WHERE status = 'drafted' AND NOT no_answer
               AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.query_id = i.query_id)
               ORDER BY position"""
        ).fetchall()
    ]
    if not empty:
        return 0
    con.execute(
        "UPDATE gold_items SET status = 'candidate', drafted_by = NULL, updated_at = ? "
        "WHERE list_contains(?, query_id)",
        [at, empty],
    )
    why = "drafted with nothing to review"
    for qid in empty:
        gi.record(con, qid, "status", who, {"status": "candidate", "why": why}, at)
    return len(empty)
