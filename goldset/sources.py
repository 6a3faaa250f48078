"""Every judgment has a source, and any two sources can be compared (``gold agreement --between``).

A source is named by a spec: ``rater:NAME`` (a person's blind ratings, or their labels on items
they reviewed alone), ``judge:MODEL`` (the model judge's newest grades), ``clicks:pbm`` /
``clicks:dbn`` (a click model's drafted grades, read from the draft history, since a person's
grade replaces the draft row), ``import:NAME`` (``gold import --as-source``: another team's
labels, qrels, an outside judge, after the file's grade map) and ``gold`` (what people verified).
A ``*`` after the colon stands for every source of that kind in the store.

Each spec is one SQL query giving (query_id, chunk_id, grade), chunk_id NULL for "no answer", so
the comparison is one code path for every pair: the units are the (query, chunk) pairs both
sources graded, where a "no answer" grades 0 every candidate shown for that query (its drafts and
whatever either side graded). Two raters who both said "no answer" therefore agree on each
shown candidate, and the query-level decision (answerable or not: some chunk above 0) is compared
beside the units with its own kappa. The figures come from per-query confusion matrices
(``goldset.kappa``); with runs, each run is scored under each source's grades and the two
rankings of runs compared (Kendall's tau, the largest rank swap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import InputError
from goldmine.goldset import kappa as kp
from goldmine.goldset.ranking import score_runs

if TYPE_CHECKING:
    import duckdb

    from goldmine.gold import Run

KINDS = ("rater", "judge", "clicks", "import")
SPEC_HELP = "rater:NAME, judge:MODEL, clicks:pbm|dbn, import:NAME (NAME may be *) or gold"

# Who wrote a label when no person did: such labels are no rater's.
_NOT_PEOPLE = ("model:", "retriever:", "clicks:", "import:")

# Each click model's newest grade of each (query, chunk) it drafted, from the draft history: a
# re-run lists only the pairs it scored again, and an earlier run's other drafts stand.
_CLICK_DRAFTS = """
    SELECT query_id, model, chunk_id, arg_max(grade, seq) AS grade FROM (
        SELECT h.query_id, json_extract_string(h.detail, '$.model') AS model, h.seq,
               json_extract_string(c, '$.chunk_id') AS chunk_id,
               CAST(json_extract(c, '$.grade') AS INTEGER) AS grade
        FROM gold_history h, unnest(json_extract(h.detail, '$.chunks[*]')) t(c)
        WHERE h.action = 'draft' AND json_extract_string(h.detail, '$.source') = 'clicks')
    GROUP BY ALL
"""

_LISTING = f"""
    SELECT DISTINCT spec FROM (
        SELECT 'rater:' || rater AS spec FROM gold_ratings
        UNION ALL
        SELECT 'rater:' || who FROM gold_labels
        WHERE kind = 'label' AND who IS NOT NULL AND grade IS NOT NULL AND NOT contains(who, '+')
          AND NOT starts_with(who, 'model:') AND NOT starts_with(who, 'retriever:')
          AND NOT starts_with(who, 'clicks:') AND NOT starts_with(who, 'import:')
        UNION ALL
        SELECT 'judge:' || model FROM gold_model_labels
        UNION ALL
        SELECT 'clicks:' || model FROM ({_CLICK_DRAFTS})
        UNION ALL
        SELECT source FROM gold_source_grades
        UNION ALL
        SELECT 'gold' FROM gold_items WHERE status = 'verified')
    ORDER BY spec
"""


@dataclass(frozen=True)
class Source:
    kind: str  # rater | judge | clicks | import | gold (ratings: the default report's)
    name: str | None = None

    def __str__(self) -> str:
        if self.kind == "ratings":  # the default report names raters as it always has
            return str(self.name)
        return self.kind if self.name is None else f"{self.kind}:{self.name}"


def sources(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every source that has grades in this store, as specs (``rater:ana``, ``import:nist``…)."""
    return [r[0] for r in con.execute(_LISTING).fetchall()]


def parse(spec: str) -> Source:
    """A spec as written on the command line (a bare name is a rater: ``ana`` is
    ``rater:ana``); bad syntax is an ``InputError``."""
    text = spec.strip()
    if text == "gold":
        return Source("gold")
    if text and ":" not in text and "+" not in text:
        return Source("rater", text)
    kind, sep, name = text.partition(":")
    if not sep or kind not in KINDS or not name:
        raise InputError(f"a source is one of {SPEC_HELP}; not {spec!r}")
    return Source(kind, name)


def resolve(con: duckdb.DuckDBPyConnection, spec: str) -> list[Source]:
    """The stored sources a spec names (several for ``kind:*``); none is an ``InputError``
    that lists what the store has."""
    wanted = parse(spec)
    have = sources(con)
    if wanted.name == "*":
        found = [parse(s) for s in have if s.startswith(f"{wanted.kind}:")]
    else:
        found = [wanted] if str(wanted) in have else []
    if not found:
        listing = ", ".join(have) if have else "none yet"
        raise InputError(
            f"no source {wanted} in this store (a source is {SPEC_HELP}; a bare name is a "
            f"rater's); the sources it has: {listing}"
        )
    return found


def grades_sql(source: Source, param: str) -> tuple[str, dict[str, Any]]:
    """One query giving ``source``'s grades as (query_id, chunk_id, grade), chunk_id NULL for
    "no answer", one row per (query, chunk); its value is the parameter ``$<param>``."""
    p = f"${param}"
    if source.kind == "rater":
        sql = f"""
            SELECT query_id, chunk_id, arg_max(grade, ts) AS grade FROM (
                SELECT query_id, CASE WHEN no_answer THEN NULL ELSE chunk_id END AS chunk_id,
                       CASE WHEN no_answer THEN 0 ELSE grade END AS grade, ts
                FROM gold_ratings WHERE rater = {p}
                UNION ALL  -- their labels on items they were not double-rating
                SELECT query_id, chunk_id, grade, ts FROM gold_labels
                WHERE kind = 'label' AND who = {p} AND grade IS NOT NULL
                  AND query_id NOT IN (SELECT query_id FROM gold_ratings WHERE rater = {p})
                UNION ALL
                SELECT query_id, NULL, 0, verified_at FROM gold_items
                WHERE no_answer AND status = 'verified' AND verified_by = {p}
                  AND query_id NOT IN (SELECT query_id FROM gold_ratings WHERE rater = {p}))
            GROUP BY ALL"""
    elif source.kind == "ratings":  # a rater's blind ratings alone: the default report
        sql = f"""SELECT query_id, CASE WHEN no_answer THEN NULL ELSE chunk_id END AS chunk_id,
                         arg_max(CASE WHEN no_answer THEN 0 ELSE grade END, ts) AS grade
                  FROM gold_ratings WHERE rater = {p} GROUP BY ALL"""
    elif source.kind == "judge":
        sql = f"""SELECT query_id, chunk_id, arg_max(grade, ts) AS grade
                  FROM gold_model_labels WHERE model = {p} GROUP BY ALL"""
    elif source.kind == "clicks":
        sql = f"SELECT query_id, chunk_id, grade FROM ({_CLICK_DRAFTS}) WHERE model = {p}"
    elif source.kind == "import":
        sql = f"""SELECT query_id, chunk_id, coalesce(arg_max(grade, ts), 0) AS grade
                  FROM gold_source_grades
                  WHERE source = {p} AND (grade IS NOT NULL OR chunk_id IS NULL)
                  GROUP BY ALL"""
    else:  # gold: the verified items as eval reads them
        sql = """SELECT l.query_id, l.chunk_id, l.grade FROM gold_labels l
                 JOIN gold_items i USING (query_id)
                 WHERE i.status = 'verified' AND NOT i.no_answer AND l.kind = 'label'
                 UNION ALL
                 SELECT query_id, NULL, 0 FROM gold_items WHERE status = 'verified' AND no_answer"""
    value = source.name if source.kind != "import" else str(source)
    return sql, ({} if source.kind == "gold" else {param: value})


def _pair_sql(a: Source, b: Source) -> tuple[str, dict[str, Any]]:
    """The CTEs ``a``, ``b`` (grades, in 0-2), ``both_q`` (queries both judged) and ``ax``,
    ``bx``: each side's grades with a "no answer" spread as 0 over the query's shown candidates."""
    sql_a, params_a = grades_sql(a, "source_a")
    sql_b, params_b = grades_sql(b, "source_b")
    sql = f"""
        WITH a AS (SELECT * FROM ({sql_a}) WHERE grade BETWEEN 0 AND 2),
        b AS (SELECT * FROM ({sql_b}) WHERE grade BETWEEN 0 AND 2),
        both_q AS (SELECT query_id FROM a INTERSECT SELECT query_id FROM b),
        na_a AS (SELECT DISTINCT query_id FROM a WHERE chunk_id IS NULL),
        na_b AS (SELECT DISTINCT query_id FROM b WHERE chunk_id IS NULL),
        shown AS (
            SELECT DISTINCT query_id, chunk_id FROM (
                SELECT query_id, chunk_id FROM gold_labels
                UNION ALL SELECT query_id, chunk_id FROM a
                UNION ALL SELECT query_id, chunk_id FROM b)
            WHERE chunk_id IS NOT NULL AND query_id IN (SELECT query_id FROM both_q)),
        ax AS (
            SELECT query_id, chunk_id, grade FROM a
            WHERE chunk_id IS NOT NULL AND query_id NOT IN (SELECT query_id FROM na_a)
            UNION ALL
            SELECT query_id, chunk_id, 0 FROM shown WHERE query_id IN (SELECT query_id FROM na_a)),
        bx AS (
            SELECT query_id, chunk_id, grade FROM b
            WHERE chunk_id IS NOT NULL AND query_id NOT IN (SELECT query_id FROM na_b)
            UNION ALL
            SELECT query_id, chunk_id, 0 FROM shown WHERE query_id IN (SELECT query_id FROM na_b))
    """
    return sql, params_a | params_b


def units(con: duckdb.DuckDBPyConnection, a: Source, b: Source) -> dict[str, np.ndarray]:
    """The units both graded: arrays ``query`` (numbered 0..), ``a`` and ``b`` (grades), and
    ``query_id`` (the query of each number)."""
    sql, params = _pair_sql(a, b)
    got = con.execute(
        sql
        + """
        SELECT dense_rank() OVER (ORDER BY query_id) - 1 AS query, query_id,
               ax.grade AS a, bx.grade AS b
        FROM ax JOIN bx USING (query_id, chunk_id)""",
        params,
    ).fetchnumpy()
    return {k: np.asarray(v) for k, v in got.items()}


def answerable(con: duckdb.DuckDBPyConnection, a: Source, b: Source) -> dict[str, np.ndarray]:
    """Per query both judged, whether each side takes it as answerable (a grade above 0 and
    no "no answer"): arrays ``a`` and ``b`` of 0/1."""
    sql, params = _pair_sql(a, b)
    got = con.execute(
        sql
        + """,
        side_a AS (SELECT query_id, max(grade) > 0 AS yes FROM ax GROUP BY query_id),
        side_b AS (SELECT query_id, max(grade) > 0 AS yes FROM bx GROUP BY query_id)
        SELECT q.query_id, coalesce(sa.yes, false)::INTEGER AS a,
               coalesce(sb.yes, false)::INTEGER AS b
        FROM both_q q LEFT JOIN side_a sa USING (query_id) LEFT JOIN side_b sb USING (query_id)
        ORDER BY q.query_id""",
        params,
    ).fetchnumpy()
    return {k: np.asarray(v) for k, v in got.items()}


def judged(con: duckdb.DuckDBPyConnection, source: Source, queries: list[str]):
    """``source``'s grades on ``queries`` as eval reads a gold set: query -> chunk -> grade
    (a "no answer" query has no relevant chunk)."""
    sql, params = grades_sql(source, "source")
    out: dict[str, dict[str, int]] = {q: {} for q in queries}
    rows = con.execute(
        f"SELECT query_id, chunk_id, grade FROM ({sql}) WHERE chunk_id IS NOT NULL"
        " AND query_id IN (SELECT unnest($queries::VARCHAR[]))",
        params | {"queries": queries},
    ).fetchall()
    for qid, cid, grade in rows:
        out[qid][cid] = grade
    return out


# --- the report ---------------------------------------------------------------------------------


def answerable_report(con, a: Source, b: Source) -> dict[str, Any]:
    """Agreement on the query-level decision, answerable or not, with its own kappa."""
    side = answerable(con, a, b)
    n = len(side["a"])
    per_query = kp.confusions(np.arange(n), side["a"], side["b"], n)
    figures = kp.figures(per_query)
    return {
        "kappa": figures["kappa_relevant"],
        "n": n,
        "kappa_ci95": figures["kappa_relevant_ci95"],
        "observed_agreement": figures["observed_agreement"],
        "answerable_a": int(side["a"].sum()),
        "answerable_b": int(side["b"].sum()),
        "both_answerable": int(((side["a"] == 1) & (side["b"] == 1)).sum()),
        "both_no_answer": int(((side["a"] == 0) & (side["b"] == 0)).sum()),
    }


def compare(
    con: duckdb.DuckDBPyConnection,
    a: Source,
    b: Source,
    *,
    relevant_from: int = 1,
    runs: list[Run] | None = None,
    metric: Any = None,
) -> dict[str, Any]:
    """The report for one pair of sources (the ``--json`` keys of ``gold agreement --between``)."""
    if relevant_from not in (1, 2):
        raise InputError(f"--relevant-from is 1 or 2, not {relevant_from}")
    u = units(con, a, b)
    n_queries = len(np.unique(u["query"]))
    per_query = kp.confusions(u["query"], u["a"], u["b"], n_queries)
    out: dict[str, Any] = {
        "sources": [str(a), str(b)],
        "n_units": int(len(u["a"])),
        "n_queries": n_queries,
        **kp.matrix_report(per_query, str(a), str(b), relevant_from),
        "answerable": answerable_report(con, a, b),
    }
    if runs:
        out["systems"] = systems(con, a, b, runs, metric)
    return out


def systems(con, a: Source, b: Source, runs: list[Run], metric: Any) -> dict[str, Any]:
    """Each run scored under each source's grades over the queries both judged (where either
    has a relevant chunk); Kendall's tau between the two orderings and the largest rank swap."""
    if len(runs) < 2:
        raise InputError("give two or more --runs to compare how the sources rank them")
    side = answerable(con, a, b)
    queries = [
        str(q) for q, x, y in zip(side["query_id"], side["a"], side["b"], strict=True) if x or y
    ]
    rows, tau = score_runs(
        runs, metric, {"a": judged(con, a, queries), "b": judged(con, b, queries)}, queries
    )
    return {
        "metric": metric.name,
        "n_runs": len(rows),
        "n_queries": len(queries),
        "kendall_tau": tau,
        "largest_swap": largest_swap(rows),
        "runs": rows,
    }


def largest_swap(rows: list[dict]) -> dict[str, Any]:
    """The run whose place differs most between the two rankings (best first, ties by name)."""
    place_a = {r["run"]: i for i, r in enumerate(sorted(rows, key=lambda r: (-r["a"], r["run"])))}
    place_b = {r["run"]: i for i, r in enumerate(sorted(rows, key=lambda r: (-r["b"], r["run"])))}
    run = max(place_a, key=lambda r: (abs(place_a[r] - place_b[r]), r))
    return {
        "run": run,
        "place_a": place_a[run] + 1,
        "place_b": place_b[run] + 1,
        "positions": abs(place_a[run] - place_b[run]),
    }


def between(
    con: duckdb.DuckDBPyConnection, spec_a: str, spec_b: str, **options: Any
) -> list[dict[str, Any]]:
    """Every pair the two specs name (a ``*`` names several), each with its report; a source is
    never compared with itself."""
    pairs = [(x, y) for x in resolve(con, spec_a) for y in resolve(con, spec_b) if x != y]
    if not pairs:
        raise InputError(f"{spec_a} and {spec_b} name the same source: nothing to compare")
    return [compare(con, x, y, **options) for x, y in pairs]
