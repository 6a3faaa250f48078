"""Several raters: dealing the queue out, blind double labels, adjudication and agreement.

``assign`` deals the items waiting for review to raters in turn; a share (``overlap``) of them
gets a second rater. Such a double item is labelled blind: each rater's judgement is kept apart
in ``gold_ratings`` (who, when), and neither sees the other's. When both are done, ``resolve``
compares them: the same grade on every candidate (or both "no answer") becomes the item's labels
and verifies it; any difference sends it to adjudication (``gold_disagreements``), where a third
person (or either rater, openly) decides it with ordinary grades. ``publish`` refuses while any
disagreement waits.

``agreement`` measures, over the (query, chunk) pairs two raters both judged, Cohen's kappa
(linear-weighted on the 0/1/2 grades, and unweighted on relevant vs not) for each pair, with a
bootstrap interval over queries and the confusion matrix (``goldset.kappa``, the same figures
scikit-learn gives; the pairs go through ``sources.compare``, as ``--between`` does), and
Krippendorff's alpha (ordinal, the ``krippendorff`` package) over every rater. A "no answer"
grades 0 every candidate shown for the item, so two raters who both said it agree on each.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError
from goldmine.goldset import items as gi

if TYPE_CHECKING:
    import duckdb

NO_ANSWER = "<no answer>"  # the key by which a judgement in a disagreement says "no answer"


@dataclass
class Assigned:
    items: int
    double: int
    per_rater: dict[str, int]


def parse_raters(text: str) -> list[str]:
    raters = [r.strip() for r in (text or "").split(",") if r.strip()]
    if len(set(raters)) != len(raters):
        raise InputError(f"--raters names someone twice: {text!r}")
    if not raters:
        raise InputError("--raters needs at least one name, e.g. --raters ana,ben,chen")
    return raters


def assign(
    con: duckdb.DuckDBPyConnection,
    raters: list[str],
    overlap: float,
    by: str,
    *,
    seed: int = 0,
) -> Assigned:
    """Deal the unassigned items waiting for review; ``overlap`` of them to two raters."""
    if not 0 <= overlap <= 1:
        raise InputError(f"--overlap is a share between 0 and 1, not {overlap}")
    if overlap > 0 and len(raters) < 2:
        raise InputError("an overlap needs at least two raters")
    waiting = [
        r[0]
        for r in con.execute(
            """SELECT query_id FROM gold_items
               WHERE status IN ('candidate', 'drafted')
                 AND query_id NOT IN (SELECT query_id FROM gold_assignments)
               ORDER BY position"""
        ).fetchall()
    ]
    rng = random.Random(seed)
    n_double = round(overlap * len(waiting))
    double = set(rng.sample(range(len(waiting)), n_double)) if n_double else set()
    rows: list[tuple[str, str]] = []
    per_rater = dict.fromkeys(raters, 0)
    turn = 0
    for i, qid in enumerate(waiting):
        first = raters[turn % len(raters)]
        turn += 1
        rows.append((qid, first))
        per_rater[first] += 1
        if i in double:
            second = raters[turn % len(raters)]
            turn += 1
            rows.append((qid, second))
            per_rater[second] += 1
    at = gi.now()
    if rows:
        con.executemany(
            "INSERT INTO gold_assignments VALUES (?, ?, ?, ?)", [(q, r, at, by) for q, r in rows]
        )
    return Assigned(len(waiting), len(double), per_rater)


def assignees(con: duckdb.DuckDBPyConnection, qid: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT rater FROM gold_assignments WHERE query_id = ? ORDER BY rater",
            [qid],
        ).fetchall()
    ]


def is_blind(con: duckdb.DuckDBPyConnection, qid: str, rater: str) -> bool:
    """Whether ``rater`` labels this item apart: a double item, theirs, not yet resolved."""
    people = assignees(con, qid)
    if len(people) < 2 or rater not in people:
        return False
    resolved = con.execute(
        "SELECT status = 'verified' OR query_id IN (SELECT query_id FROM gold_disagreements)"
        " FROM gold_items WHERE query_id = ?",
        [qid],
    ).fetchall()
    return not (resolved and resolved[0][0])


def ratings_of(con: duckdb.DuckDBPyConnection, qid: str, rater: str) -> dict[str | None, int]:
    """A rater's grades on one item; key None holds "no answer" (grade 0)."""
    return {
        (None if na else cid): grade
        for cid, grade, na in con.execute(
            "SELECT chunk_id, grade, no_answer FROM gold_ratings WHERE query_id = ? AND rater = ?",
            [qid, rater],
        ).fetchall()
    }


def _candidates(con, qid: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT chunk_id FROM gold_labels WHERE query_id = ?"
            " ORDER BY rank NULLS LAST, chunk_id",
            [qid],
        ).fetchall()
    ]


def rater_done(con, qid: str, rater: str) -> bool:
    """Done when the rater said "no answer", or graded every candidate and one answers: all
    0s wait for "no answer", as plain review waits (its ``a`` would else mark the next item)."""
    mine = ratings_of(con, qid, rater)
    if None in mine:
        return True
    candidates = _candidates(con, qid)
    return bool(candidates) and all(c in mine for c in candidates) and any(mine.values())


def rate(con, qid: str, chunk_id: str | None, grade: int, rater: str) -> None:
    """One blind judgement (``chunk_id`` None: no answer); then resolve if everyone is done."""
    if grade not in gi.GRADES:
        raise InputError(f"grade must be 0, 1 or 2, not {grade}")
    at = gi.now()
    if chunk_id is None:
        con.execute("DELETE FROM gold_ratings WHERE query_id = ? AND rater = ?", [qid, rater])
        con.execute("INSERT INTO gold_ratings VALUES (?, NULL, ?, 0, true, ?)", [qid, rater, at])
    else:
        con.execute(
            "DELETE FROM gold_ratings WHERE query_id = ? AND rater = ? AND chunk_id = ?",
            [qid, rater, chunk_id],
        )
        con.execute(
            "INSERT INTO gold_ratings VALUES (?, ?, ?, ?, false, ?)",
            [qid, chunk_id, rater, grade, at],
        )
    gi.record(con, qid, "rate", rater, {"chunk_id": chunk_id, "grade": grade}, at)
    resolve(con, qid, rater)


def rate_rest(con, qid: str, rater: str) -> int:
    """Grade 0 every candidate this rater has not judged; returns how many."""
    mine = ratings_of(con, qid, rater)
    rest = [c for c in _candidates(con, qid) if c not in mine]
    for chunk_id in rest:
        con.execute(
            "INSERT INTO gold_ratings VALUES (?, ?, ?, 0, false, ?)",
            [qid, chunk_id, rater, gi.now()],
        )
    if rest:
        gi.record(con, qid, "rate-rest", rater, {"chunk_ids": rest, "grade": 0})
        resolve(con, qid, rater)
    return len(rest)


def _judgement(con, qid: str, rater: str, candidates: list[str]) -> dict[str, int]:
    mine = ratings_of(con, qid, rater)
    if None in mine:
        return dict.fromkeys(candidates, 0) | {NO_ANSWER: 1}
    return {c: mine.get(c, 0) for c in candidates}


def resolve(con, qid: str, by: str) -> str | None:
    """When every rater of a double item is done: 'agreed' (labels written) or 'disagreed'."""
    people = assignees(con, qid)
    if len(people) < 2 or not all(rater_done(con, qid, r) for r in people):
        return None
    candidates = _candidates(con, qid)
    judged = {r: _judgement(con, qid, r, candidates) for r in people}
    first = judged[people[0]]
    if all(j == first for j in judged.values()):
        who = "+".join(people)
        if NO_ANSWER in first:
            gi.set_no_answer(con, qid, who)
        else:
            for chunk_id, grade in first.items():
                gi.set_grade(con, qid, chunk_id, grade, who, source="agreed", require_chunk=False)
        return "agreed"
    con.execute(
        "INSERT INTO gold_disagreements VALUES (?, ?, ?)",
        [qid, gi.now(), json.dumps(judged, sort_keys=True)],
    )
    gi.record(con, qid, "disagree", by, {"ratings": judged})
    return "disagreed"


def waiting_adjudication(con: duckdb.DuckDBPyConnection) -> list[dict]:
    return gi.fetch_dicts(
        con,
        """SELECT DISTINCT i.query_id, i.query, i.position FROM gold_items i
           JOIN gold_disagreements d USING (query_id)
           WHERE i.status NOT IN ('verified', 'rejected') ORDER BY i.position""",
    )


def all_ratings(con: duckdb.DuckDBPyConnection, qid: str) -> dict[str, dict[str | None, int]]:
    """Every rater's grades on one item, for the adjudicator to see: the assigned raters', and
    those a dispute recorded (an imported file against the person who labelled the item)."""
    out: dict[str, dict[str | None, int]] = {}
    for rater in assignees(con, qid):
        out[rater] = ratings_of(con, qid, rater)
    disputes = con.execute(
        "SELECT detail FROM gold_disagreements WHERE query_id = ? ORDER BY ts DESC", [qid]
    ).fetchall()
    for (detail,) in disputes:
        for rater, grades in json.loads(detail or "{}").items():
            if rater not in out:
                out[rater] = {(None if c == NO_ANSWER else c): g for c, g in grades.items()}
    return out


def dispute(
    con: duckdb.DuckDBPyConnection, qid: str, judged: dict, by: str, why: str, *, source: str
) -> bool:
    """Send an item to adjudication: ``judged`` is each side's grades (rater -> chunk -> grade,
    ``NO_ANSWER`` for "no answer"), e.g. the person's against ``source``'s (``import:FILE``).
    Neither side's grade is written: the chunks in dispute become candidates again, carrying
    the person's grade (``items.reopen``), until an adjudicator grades them. What ``source``
    said once is disputed once: imported again, before or after the adjudicator decided, it
    records nothing. Returns whether it was recorded."""
    earlier = con.execute(
        "SELECT detail FROM gold_disagreements WHERE query_id = ?", [qid]
    ).fetchall()
    if any(json.loads(d or "{}").get(source) == judged[source] for (d,) in earlier):
        return False
    at = gi.now()
    detail = json.dumps(judged, sort_keys=True)
    con.execute("INSERT INTO gold_disagreements VALUES (?, ?, ?)", [qid, at, detail])
    gi.record(con, qid, "disagree", by, {"ratings": judged, "why": why}, at)
    chunks = sorted({c for grades in judged.values() for c in grades if c != NO_ANSWER})
    gi.reopen(con, qid, chunks, by, why, at=at)
    return True


# --- agreement ----------------------------------------------------------------------------------


def _units(con) -> dict[tuple[str, str], dict[str, int]]:
    """(query, chunk) -> rater -> grade, over every double item's shown candidates (its drafts
    and whatever a rater graded); a "no answer" grades each of them 0."""
    rows = con.execute(
        """WITH shown AS (
               SELECT DISTINCT query_id, chunk_id FROM (
                   SELECT query_id, chunk_id FROM gold_labels
                   UNION ALL SELECT query_id, chunk_id FROM gold_ratings)
               WHERE chunk_id IS NOT NULL
                 AND query_id IN (SELECT query_id FROM gold_ratings))
           SELECT r.query_id, coalesce(r.chunk_id, s.chunk_id), r.rater,
                  CASE WHEN r.no_answer THEN 0 ELSE r.grade END
           FROM gold_ratings r LEFT JOIN shown s ON r.no_answer AND s.query_id = r.query_id
           WHERE coalesce(r.chunk_id, s.chunk_id) IS NOT NULL"""
    ).fetchall()
    units: dict[tuple[str, str], dict[str, int]] = {}
    for qid, cid, rater, grade in rows:
        units.setdefault((qid, cid), {})[rater] = grade
    return units


def rater_pairs(con: duckdb.DuckDBPyConnection, raters: list[str]) -> list[dict[str, Any]]:
    """Each pair of raters over their blind ratings, as ``gold agreement --between`` reports
    it, under today's key names (``raters``, ``n_items``, ``n_pairs``) beside the new ones."""
    from goldmine.goldset.sources import Source, compare

    out = []
    for ra, rb in combinations(raters, 2):
        report = compare(con, Source("ratings", ra), Source("ratings", rb))
        if report["n_units"]:
            out.append(
                {"raters": [ra, rb], "n_items": report["n_queries"],
                 "n_pairs": report["n_units"], **report}
            )  # fmt: skip
    return out


def agreement(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Pairwise Cohen's kappa and Krippendorff's alpha over the double-labelled items."""
    import krippendorff
    import numpy as np

    units = _units(con)
    raters = sorted({r for u in units.values() for r in u})
    pairs_out = rater_pairs(con, raters)
    alpha = None
    n_units = sum(1 for u in units.values() if len(u) >= 2)
    if raters and n_units:
        data = np.full((len(raters), len(units)), np.nan)
        for j, grades in enumerate(units.values()):
            for rater, grade in grades.items():
                data[raters.index(rater), j] = grade
        values = data[~np.isnan(data)]
        if len(set(values.tolist())) >= 2:
            alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    waiting = waiting_adjudication(con)
    return {
        "raters": raters,
        "pairs": pairs_out,
        "krippendorff_alpha": alpha,
        "krippendorff_n_units": n_units,
        "n_disagreements_waiting": len(waiting),
    }
