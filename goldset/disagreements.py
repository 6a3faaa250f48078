"""Where the sources disagree: people's time goes first where checking a model's labels pays.

Every source of the store (``sources.sources``: people, the model judge, click models, imports and
the verified gold) gives its grades through its one SQL branch (``sources.grades_sql``); they are
stacked in one query, and a (query, chunk) unit graded by two or more sources scores the largest
gap between any two of their grades (``max - min``, 0-2). A source's "no answer" grades 0 every
chunk another source graded on that query, as in ``gold agreement``.

A unit stays open while it is still a candidate nobody decided (a draft row of the item): a
person's grade in review turns the draft into their label, and that settles it, whatever the
sources said. A person's grade that an import disputed (``raters.dispute`` reopens the chunk)
is read back from the dispute, so it still stands against the import. An item's score is its
largest open gap, then the sum of its open gaps; the ``disagreements`` review queue serves the
highest first. Items under blind double-labelling are left out until resolved: showing them
other sources' grades would break the blind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from goldmine.goldset.raters import NO_ANSWER
from goldmine.goldset.sources import grades_sql, parse, sources
from goldmine.store import fetch_dicts

if TYPE_CHECKING:
    import duckdb

# The order sources are named in on a candidate: the models' grades first.
_KIND_ORDER = {"judge": 0, "import": 1, "clicks": 2, "rater": 3, "gold": 4}


def units_sql(con: duckdb.DuckDBPyConnection) -> tuple[str, dict[str, Any]]:
    """The CTEs ``graded`` (every source's grades, one row per source and unit) and ``open_units``
    (query_id, chunk_id, gap, grades: a list of {source, grade}); no sources gives none."""
    branches, params = [], {}
    for i, spec in enumerate(sources(con)):
        sql, p = grades_sql(parse(spec), f"s{i}")
        params |= p
        params[f"n{i}"] = spec
        branches.append(f"SELECT $n{i} AS source, query_id, chunk_id, grade FROM ({sql})")
    if not branches:  # an empty store still answers, with no unit
        branches.append(
            "SELECT NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::INTEGER WHERE false"
        )
    stacked = "\n        UNION ALL ".join(branches)
    sql = f"""
        WITH g0 AS (SELECT * FROM ({stacked}) t(source, query_id, chunk_id, grade)),
        {_DISPUTED},
        g AS (SELECT * FROM (SELECT * FROM g0 UNION ALL SELECT * FROM disputed)
              WHERE grade BETWEEN 0 AND 2),
        na AS (SELECT DISTINCT source, query_id FROM g WHERE chunk_id IS NULL),
        chunks_of AS (SELECT DISTINCT query_id, chunk_id FROM g WHERE chunk_id IS NOT NULL),
        graded AS (
            SELECT g.source, g.query_id, g.chunk_id, g.grade
            FROM g ANTI JOIN na USING (source, query_id) WHERE g.chunk_id IS NOT NULL
            UNION ALL
            SELECT na.source, na.query_id, c.chunk_id, 0 FROM na JOIN chunks_of c USING (query_id)),
        drafts AS (SELECT DISTINCT query_id, chunk_id FROM gold_labels WHERE kind = 'draft'),
        open_units AS (
            SELECT query_id, chunk_id, max(grade) - min(grade) AS gap,
                   list({{'source': source, 'grade': grade}} ORDER BY source) AS grades
            FROM graded SEMI JOIN drafts USING (query_id, chunk_id)
            GROUP BY query_id, chunk_id
            HAVING count(DISTINCT source) >= 2 AND max(grade) > min(grade))
    """
    return sql, params


# A person's grades a dispute recorded (``raters.dispute``: an import against a person's label
# reopens the chunk, so the label is gone) stand as theirs where they have no other grade there.
_DISPUTED = f"""disputed AS (
            SELECT DISTINCT 'rater:' || r.key AS source, d.query_id,
                   nullif(c.key, '{NO_ANSWER}') AS chunk_id, c.value AS grade
            FROM (SELECT query_id, CAST(detail::JSON AS MAP(VARCHAR, MAP(VARCHAR, INTEGER))) AS m
                  FROM gold_disagreements) d,
                 unnest(map_entries(d.m)) u(r), unnest(map_entries(r.value)) v(c)
            WHERE NOT contains(r.key, ':')
              AND NOT EXISTS (SELECT 1 FROM g0 WHERE g0.source = 'rater:' || r.key
                              AND g0.query_id = d.query_id
                              AND g0.chunk_id IS NOT DISTINCT FROM nullif(c.key, '{NO_ANSWER}')))"""

# Items waiting for a blind double-labelling (as the review queue decides it): kept out.
_BLIND = """
    SELECT query_id FROM gold_assignments GROUP BY query_id HAVING count(DISTINCT rater) >= 2
    EXCEPT (SELECT query_id FROM gold_items WHERE status = 'verified' OR no_answer
            UNION SELECT query_id FROM gold_labels WHERE source = 'agreed'
            UNION SELECT query_id FROM gold_disagreements)
"""


def scored_sql(con: duckdb.DuckDBPyConnection) -> tuple[str, dict[str, Any]]:
    """The CTEs of ``units_sql`` and ``scored``: per item not rejected and not blind, its
    ``score`` (largest open gap), ``total`` (their sum) and ``n_units`` (open units)."""
    sql, params = units_sql(con)
    return (
        sql
        + f""",
        scored AS (
            SELECT u.query_id, max(u.gap) AS score, sum(u.gap) AS total, count(*) AS n_units
            FROM open_units u JOIN gold_items i USING (query_id)
            WHERE i.status != 'rejected' AND NOT (i.status = 'verified' AND i.no_answer)
              AND u.query_id NOT IN ({_BLIND})
            GROUP BY u.query_id)
    """,
        params,
    )


def listing(con: duckdb.DuckDBPyConnection, limit: int | None = None) -> list[dict[str, Any]]:
    """The disagreements queue in its order, each item with its open units and their grades
    (``gold review --queue disagreements --json``)."""
    sql, params = scored_sql(con)
    out = fetch_dicts(
        con,
        sql
        + """
        SELECT s.query_id, i.query, s.score, s.total AS total_gap, s.n_units,
               list({'chunk_id': u.chunk_id, 'gap': u.gap, 'grades': u.grades}
                    ORDER BY u.gap DESC, u.chunk_id) AS units
        FROM scored s JOIN gold_items i USING (query_id) JOIN open_units u USING (query_id)
        GROUP BY s.query_id, i.query, s.score, s.total, s.n_units, i.position
        ORDER BY s.score DESC, s.total DESC, i.position
        LIMIT $limit""",
        params | {"limit": limit},
    )
    for item in out:
        for unit in item["units"]:
            unit["grades"] = ordered(unit["grades"])
    return out


def item_grades(con: duckdb.DuckDBPyConnection, query_id: str) -> dict[str, list[dict]]:
    """Every source's grade on each of the item's open units: chunk_id -> [{source, grade}]."""
    sql, params = units_sql(con)
    rows = con.execute(
        sql + "SELECT chunk_id, gap, grades FROM open_units WHERE query_id = $qid",
        params | {"qid": query_id},
    ).fetchall()
    return {cid: ordered(grades) for cid, _gap, grades in sorted(rows, key=lambda r: -r[1])}


def ordered(grades: list[dict]) -> list[dict]:
    """A unit's grades with the models' first (judge, import, clicks, then people)."""
    return sorted(grades, key=lambda g: (_KIND_ORDER.get(g["source"].split(":")[0], 9),
                                         g["source"]))  # fmt: skip


def grades_text(grades: list[dict]) -> str:
    """``judge:gpt-x suggests 2 · import:nist 0 · clicks:dbn 1``: each source named."""
    return " · ".join(
        f"{g['source']} suggests {g['grade']}" if g["source"].startswith("judge:")
        else f"{g['source']} {g['grade']}"
        for g in grades
    )  # fmt: skip
