"""From the one span table to search events: one stage whatever the format.

The query, the shown documents, the session and user (from the span, else its trace), the
feedback and the LLM's answer are read from ``gm_tspan``, ``gm_tdoc`` and ``gm_tfb`` (made by the
format modules), so no format has its own events; ``store`` adds what a trace says beside each
event to ``trace_retrievals``.
"""

from __future__ import annotations

from typing import Any

import duckdb

from goldmine.ingest.batch import repeats, store_new_rows
from goldmine.ingest.feedback import DONT_KNOW, thumbs
from goldmine.ingest.files import NOT_BLANK, RAW_LINE_OPTIONS, InputFile, run_sql
from goldmine.ingest.target import Target
from goldmine.ingest.traces import spans

SIDE_COLUMNS = (
    "format",
    "trace_id",
    "span_id",
    "parent_id",
    "answer",
    "dont_know",
    "scores",
    "content_hashes",
    "ids_from_content",
)

# The k-th staged row wanting the lines of hash h (counted per event and reason, which repeat
# with the line) takes the ((k - 1) % n + 1)-th of the n lines with that hash.
_WANT_LINES = """
CREATE OR REPLACE TEMP TABLE gm_want AS
SELECT rowid AS rid, gm_lh, event_id, reason FROM gm_stage
WHERE gm_lh IS NOT NULL AND line IS NULL AND (reason IS NOT NULL OR event_id IN (
    SELECT event_id FROM gm_stage WHERE reason IS NULL AND NOT gm_present
    GROUP BY event_id HAVING count(*) > 1))
"""

_MAP_LINES = f"""
CREATE OR REPLACE TEMP TABLE gm_linemap AS
SELECT * FROM (
    SELECT line, raw, hash(raw) AS lh
    FROM (SELECT row_number() OVER () AS line, raw FROM read_csv($gm_path, {RAW_LINE_OPTIONS}))
    WHERE {NOT_BLANK})
WHERE lh IN (SELECT gm_lh FROM gm_want)
"""

_PAIR_LINES = """
CREATE OR REPLACE TEMP TABLE gm_pair AS
WITH w AS (
    SELECT rid, gm_lh,
           row_number() OVER (PARTITION BY gm_lh, event_id, reason ORDER BY rid) AS k
    FROM gm_want
),
l AS (
    SELECT line, raw, lh, row_number() OVER (PARTITION BY lh ORDER BY line) AS j,
           count(*) OVER (PARTITION BY lh) AS n
    FROM gm_linemap
)
SELECT w.rid, l.line, l.raw FROM w JOIN l ON l.lh = w.gm_lh AND l.j = (w.k - 1) % l.n + 1;
"""


def number_lines(con: duckdb.DuckDBPyConnection, item: InputFile, redactor) -> None:
    """Give the streamed rows that need it their line and (redacted) text: the rejected ones,
    and those of an event id the file holds more than once (the first line's row is kept). One
    ordered read of the file, matching lines by their hash; nothing when no row needs it."""
    con.execute(_WANT_LINES)
    if not con.execute("SELECT count(*) FROM gm_want").fetchall()[0][0]:
        con.execute("DROP TABLE gm_want")
        return
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    run_sql(con, _MAP_LINES, params)
    con.execute(_PAIR_LINES)
    run_sql(
        con,
        f"""UPDATE gm_stage SET line = p.line,
                raw = CASE WHEN gm_stage.reason IS NOT NULL THEN {redactor.nested("p.raw")} END
            FROM gm_pair p WHERE gm_stage.rowid = p.rid""",
        redactor.sql_params(),
    )
    for name in ("gm_want", "gm_linemap", "gm_pair"):
        con.execute(f"DROP TABLE {name}")


def _pick_field(*fields: str) -> str:
    """A document's first field of these (``--doc-id`` checked by ``_doc_field``)."""
    parts = [f"max(val) FILTER (WHERE field = '{f}')" for f in fields]
    return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"


def events_sql(state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One row per retrieval (or unreadable record) with all it takes from its trace."""
    fmt = state.get("format") or state.get("forced") or "traces"
    doc_field = state.get("doc_field")
    the_id = _pick_field(*((doc_field,) if doc_field else spans.ID_FIELDS))
    content = _pick_field(*spans.CONTENT_FIELDS)
    # The joins by trace and span run over narrow rows (ids, times, the fields they read); the
    # retrievals' wide columns (documents, raw text) join them once, at the end, by span number.
    # A streamed span has no number: its row id in gm_tspan is one, above any other.
    sql = f"""
    WITH spans AS (
        SELECT coalesce(sid, 100000000000000 + rowid) AS sid, err, trace_id, span_id, parent_id,
               kind, ts, session_id, user_id, output
        FROM gm_tspan
    ),
    retr_ids AS (SELECT DISTINCT trace_id, span_id FROM spans WHERE kind = 'RETRIEVER'),
    ctx AS (
        SELECT trace_id, max(session_id) AS session_id, max(user_id) AS user_id
        FROM spans WHERE trace_id IS NOT NULL AND (session_id IS NOT NULL OR user_id IS NOT NULL)
        GROUP BY trace_id
    ),
    r AS (
        SELECT s.sid, s.trace_id, s.span_id, s.ts, s.session_id, s.user_id FROM spans s
        WHERE s.err IS NOT NULL OR (s.kind = 'RETRIEVER' AND NOT EXISTS (
            SELECT 1 FROM retr_ids p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_id))
    ),
    llm AS (SELECT trace_id, ts, output FROM spans WHERE kind = 'LLM' AND output IS NOT NULL),
    roots AS (
        SELECT trace_id, max(output) AS output FROM spans
        WHERE kind IN ('TRACE', 'OTHER') AND parent_id IS NULL AND output IS NOT NULL
        GROUP BY trace_id
    ),
    ans AS (
        SELECT r.sid, arg_min(l.output, l.ts) AS answer
        FROM r JOIN llm l ON l.trace_id = r.trace_id
            AND (r.ts IS NULL OR l.ts IS NULL OR l.ts >= r.ts)
        GROUP BY r.sid
    ),
    fbv AS (
        SELECT coalesce(f.trace_id, s.trace_id) AS trace_id, f.span_id,
               f.span_id IS NOT NULL AND f.span_id IN (SELECT span_id FROM retr_ids)
                   AS on_retriever,
               coalesce({thumbs("f.label")},
                        CASE WHEN f.score < 0.5 THEN 'down' WHEN f.score >= 0.5 THEN 'up' END)
                   AS verdict
        FROM gm_tfb f
        LEFT JOIN (SELECT DISTINCT span_id, trace_id FROM spans WHERE span_id IS NOT NULL) s
            ON f.trace_id IS NULL AND s.span_id = f.span_id
    ),
    fb AS (
        SELECT r.sid, CASE WHEN bool_or(f.verdict = 'down') THEN 'down'
                           WHEN bool_or(f.verdict = 'up') THEN 'up' END AS feedback
        FROM r JOIN fbv f ON f.trace_id = r.trace_id
            AND (NOT f.on_retriever OR f.span_id = r.span_id)
        GROUP BY r.sid
    ),
    docs AS (
        SELECT sid, i, {the_id} AS id, {content} AS content,
               try_cast(max(val) FILTER (WHERE field = 'score') AS DOUBLE) AS score
        FROM gm_tdoc GROUP BY sid, i
    ),
    shown AS (
        SELECT sid, list({{
            'id': coalesce(id, 'sha256:' || left(sha256(content), 16)),
            'hash': sha256(content), 'score': score,
            'from_content': id IS NULL AND content IS NOT NULL}} ORDER BY i) AS items
        FROM docs GROUP BY sid
    ),
    found AS MATERIALIZED (
        SELECT r.sid, ans.answer AS gm_llm_answer, roots.output AS gm_root_output,
            coalesce(r.session_id, ctx.session_id) AS gm_session,
            coalesce(r.user_id, ctx.user_id) AS gm_user, fb.feedback AS gm_feedback,
            shown.items AS gm_shown
        FROM r LEFT JOIN ctx USING (trace_id) LEFT JOIN roots USING (trace_id)
        LEFT JOIN ans USING (sid) LEFT JOIN fb USING (sid) LEFT JOIN shown USING (sid)
    )
    SELECT t.*, coalesce(f.gm_llm_answer, t.answer, f.gm_root_output) AS gm_answer,
        f.gm_session, f.gm_user, f.gm_feedback,
        list_filter(coalesce(t.items, f.gm_shown, []), lambda e: e.id IS NOT NULL) AS gm_items,
        $gm_format || ':' || coalesce(t.trace_id, '') || ':' || t.span_id AS gm_event
    FROM (SELECT * REPLACE (coalesce(sid, 100000000000000 + rowid) AS sid) FROM gm_tspan
          WHERE err IS NOT NULL OR kind = 'RETRIEVER') t
    JOIN found f USING (sid)
    """
    return sql, {"gm_format": fmt}


def stage_sql(state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The rows over the spans reshape or stream made (the events of ``events_sql``, not
    materialized): reason, the search event, the side."""
    fmt = state.get("format") or state.get("forced") or "traces"
    events, _ = events_sql(state)
    sql = (
        """
    SELECT *, reason IS NULL AND gm_stored(event_id) AS gm_present FROM (
    SELECT line, raw, lh AS gm_lh,
        CASE WHEN err IS NOT NULL THEN err
             WHEN span_id IS NULL THEN 'missing span id'
             WHEN failed THEN 'retrieval failed: ' || coalesce(nullif(trim(status_msg), ''),
                                                               'error status')
             WHEN gm_blank(query) THEN 'missing query (span ' || span_id || ')'
             WHEN ts_text IS NOT NULL AND ts IS NULL
                 THEN 'unparseable timestamp: ' || left(ts_text, 60)
        END AS reason,
        gm_event AS event_id, 'traces' AS source, ts, gm_session AS session_id,
        gm_user AS user_id, trim(query) AS query,
        list_transform(gm_items, lambda e: e.id) AS result_ids,
        len(gm_items)::INTEGER AS num_results, NULL::VARCHAR[] AS clicked_ids,
        gm_feedback AS feedback, NULL::JSON AS extra,
        $gm_format AS format, trace_id, span_id, parent_id, gm_answer AS answer,
        coalesce(regexp_matches(gm_answer, $gm_dont_know), false) AS dont_know,
        list_transform(gm_items, lambda e: e.score) AS scores,
        list_transform(gm_items, lambda e: e.hash) AS content_hashes,
        len(list_filter(gm_items, lambda e: e.from_content))::INTEGER AS ids_from_content
    FROM ("""
        + events
        + """) gm_tev)
    """
    )
    return sql, {"gm_format": fmt, "gm_dont_know": DONT_KNOW}


def store(
    con: duckdb.DuckDBPyConnection, target: Target, batch_id: int, state: dict[str, Any]
) -> int:
    """The new events into search_events (the anti-join every import uses), and what a trace
    adds to each into trace_retrievals, in the same transaction: the same rows, so the same
    first row of an event id the file holds twice (a window paid only then). The file's
    feedback then comes to the retrievals stored before it (``give_feedback``)."""
    stored = store_new_rows(con, target, batch_id)
    side = ", ".join(SIDE_COLUMNS)
    first = ""
    if repeats(con, target):
        first = "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY line) = 1"
    con.execute(
        f"""INSERT INTO trace_retrievals (event_id, batch_id, {side})
            SELECT event_id, ?, {side} FROM gm_stage WHERE reason IS NULL AND NOT gm_present
            {first}""",
        [batch_id],
    )
    state["given"] = give_feedback(con, batch_id, state.get("format") or state.get("forced"))
    return stored


# The file's feedback on retrievals stored by earlier imports, matched by the ids it names: the
# retrieval's own span; its trace (feedback on a span that is no retrieval of it, or on the
# trace itself); with no trace id, the retrieval's parent span or a root span whose id is the
# trace's (a LangSmith root run). Equi-joins only: the stored retrievals may be millions.
_GIVE_FEEDBACK = f"""
WITH f AS (
    SELECT trace_id, span_id, coalesce({thumbs("label")},
           CASE WHEN score < 0.5 THEN 'down' WHEN score >= 0.5 THEN 'up' END) AS verdict
    FROM gm_tfb
),
tr AS (SELECT event_id, trace_id, span_id, parent_id FROM trace_retrievals
       WHERE format = $gm_format AND batch_id <> $gm_batch),
hit AS (
    SELECT tr.event_id, f.verdict FROM f JOIN tr ON tr.span_id = f.span_id
    WHERE f.trace_id IS NULL OR f.trace_id = tr.trace_id
    UNION ALL
    SELECT tr.event_id, f.verdict FROM f JOIN tr ON tr.trace_id = f.trace_id
    WHERE f.span_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM tr t2 WHERE t2.trace_id = f.trace_id AND t2.span_id = f.span_id)
    UNION ALL
    SELECT tr.event_id, f.verdict FROM f JOIN tr ON tr.parent_id = f.span_id
    WHERE f.trace_id IS NULL
    UNION ALL
    SELECT tr.event_id, f.verdict FROM f JOIN tr ON tr.trace_id = f.span_id
    WHERE f.trace_id IS NULL AND tr.span_id <> f.span_id
),
v AS (
    SELECT event_id, CASE WHEN bool_or(verdict = 'down') THEN 'down' ELSE 'up' END AS verdict
    FROM hit WHERE verdict IS NOT NULL GROUP BY event_id
)
UPDATE search_events e
SET feedback = CASE WHEN e.feedback = 'down' OR v.verdict = 'down' THEN 'down' ELSE 'up' END
FROM v WHERE e.event_id = v.event_id
  AND e.feedback IS DISTINCT FROM
      CASE WHEN e.feedback = 'down' OR v.verdict = 'down' THEN 'down' ELSE 'up' END
"""


def give_feedback(con: duckdb.DuckDBPyConnection, batch_id: int, fmt: str | None) -> int:
    """Give retrievals stored by earlier imports the verdicts this file holds for them, as a
    click file gives searches their clicks: Phoenix's span annotations and LangSmith's feedback
    are exported apart from the spans, and re-exported spans carry feedback that came in since.
    A thumbs-down wins, as within a file. How many retrievals changed."""
    if fmt is None or not con.execute("SELECT count(*) FROM gm_tfb").fetchall()[0][0]:
        return 0
    params = {"gm_format": fmt, "gm_batch": batch_id}
    return con.execute(_GIVE_FEEDBACK, params).fetchall()[0][0]


def summary(con: duckdb.DuckDBPyConnection, state: dict[str, Any]) -> dict[str, Any]:
    """What the file held besides the rows: its spans, its retrievals, the nested ones (not
    rows), and the documents that had no id (their content hash stands in). A staged row is an
    unreadable record or a retrieval that is not nested, so the nested ones are the retrievals
    that are not rows: one scan of the spans, no join."""
    spans, retrievals, unreadable = con.execute(
        """SELECT count(*) FILTER (WHERE err IS NULL AND kind <> 'TRACE'),
                  count(*) FILTER (WHERE kind = 'RETRIEVER'), count(err)
           FROM gm_tspan"""
    ).fetchall()[0]
    rows, without_id = con.execute(
        "SELECT count(*), coalesce(sum(ids_from_content) FILTER (WHERE reason IS NULL), 0) "
        "FROM gm_stage"
    ).fetchall()[0]
    feedback = con.execute("SELECT count(*) FROM gm_tfb").fetchall()[0][0]
    return {
        "format": state.get("format") or state.get("forced"),
        "feedback_records": feedback,
        "retrievals_given_feedback": state.pop("given", 0),
        "spans": spans,
        "retrievals": retrievals,
        "nested_retrievals": retrievals - (rows - unreadable),
        "documents_without_id": int(without_id),
    }
