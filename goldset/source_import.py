"""``gold import FILE --as-source NAME``: another grader's judgments, kept beside the gold set.

A plain ``gold import`` makes a file's judgments people's gold (verified items, labels). A file
from another grader (TREC/BEIR qrels, another team's labels, an LLM judge run elsewhere) is
evidence to compare, not a decision: it goes to ``gold_source_grades`` as source ``import:NAME``,
one row per judgment with the grade on goldmine's scale (after ``--grade-map``), the grade as the
file wrote it, and the file and line it came from. The queries are matched to items as ``gold
import`` matches them (``exchange._match``: id, else normalized text); a query no item has becomes
a candidate item, so a person can review it, and two of the file's queries with the same text
become one. No label is written and nothing is verified: only a person makes gold.

A chunk id the current corpus does not hold is kept (``in_corpus`` false) and counted: the
judgment is still a judgment, and ``gold agreement`` decides what to compare. A query whose
judgments are all 0 (or none, in gold JSONL) is the source saying "no answer": one row with no
chunk. Importing the same NAME again replaces that source's rows; another NAME sits beside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from goldmine.errors import InputError
from goldmine.gold import GoldQuery
from goldmine.goldset import bulk
from goldmine.goldset.exchange import (
    GRADES,
    _is_header,
    _join,
    _match,
    beir_files,
    check_scale,
    check_topics,
    file_format,
    gold_entries,
    gold_line_records,
    is_tsv,
    levels_refused,
    numbered,
    qrels_topics,
    read_hf,
    read_ranx,
    sheet_judgments,
)
from goldmine.goldset.items import current_snapshot, now
from goldmine.readers import (
    NTCIR_LEVEL,
    SMART_RELEVANCE,
    is_qrels_header,
    no_grade,
    qrels_frame,
    refuse_twice,
    smart_relevance,
)
from goldmine.store import registered, transaction
from goldmine.text import normalize_query
from goldmine.topics import read_lines, read_topics

if TYPE_CHECKING:
    import duckdb

PREFIX = "import:"
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
# One judgment per row: the file's query id, the chunk (None: a query judged with no chunk),
# the grade as written, its line (None where the layout has none) and its place in the file.
_JUDGMENT = {"file_qid": pl.Utf8, "chunk_id": pl.Utf8, "raw_grade": pl.Utf8, "line": pl.Int64}


@dataclass
class SourceImported:
    source: str
    path: str
    format: str
    judgments: int = 0  # (query, chunk) grades stored
    queries: int = 0  # the file's judged queries
    matched: int = 0  # of those, joined to an item already there (by id or text)
    created: int = 0  # candidate items made for the rest
    not_in_corpus: int = 0  # judgments on a chunk id the current corpus does not hold
    chunks_not_in_corpus: int = 0  # distinct such chunk ids
    no_answer: int = 0  # items the source says have no answer
    replaced: int = 0  # rows this source had before, replaced
    notes: list[str] = field(default_factory=list)


def source_name(name: str) -> str:
    """``import:NAME`` for a valid NAME (letters, digits, ``-_.``; up to 64)."""
    if not _NAME.fullmatch(name or ""):
        raise InputError(
            f"--as-source takes a name of letters, digits, '-', '_' and '.' (up to 64), "
            f"not {name!r}"
        )
    return PREFIX + name


def import_source(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    name: str,
    *,
    by: str,
    fmt: str = "auto",
    topics: Path | None = None,
    grade_map: dict[int | str, int] | None = None,
    split: str = "test",
    topic_field: str = "title",
    id_prefix: str | None = None,
) -> SourceImported:
    """Store ``path``'s judgments as source ``import:NAME`` (see the module's docstring);
    ``id_prefix`` goes before each of the file's query ids."""
    source = source_name(name)
    fmt = file_format(path, fmt)
    if fmt == "goldmine":
        raise InputError(
            "a goldmine version file is restored as published (gold import without "
            "--as-source); --as-source reads TREC qrels, BEIR or gold JSONL",
            path=path,
        )
    notes: list[str] = []
    if fmt == "csv":  # a sheet's words are read through the map's labels as it is read
        sheet, numbers = sheet_judgments(path, grade_map, topics, notes, topic_field)
        off = [f"{k}={v}" for k, v in (grade_map or {}).items() if v not in GRADES]
        if sheet.labelled and off:  # named as written, not as the identity map it became
            raise InputError(f"--grade-map {off[0]} sends a grade off goldmine's 0-2 scale: a "
                             "source's grades are compared on it (gold agreement)")  # fmt: skip
        judgments = pl.DataFrame(sheet.rows, schema=_JUDGMENT, orient="row")
        texts = sheet.texts
    else:
        numbers = numbered(grade_map, fmt)
        judgments, texts = _read(path, fmt, topics, split, topic_field, notes)
    if not judgments.height:  # else the source's judgments would be replaced by none
        raise InputError("holds no judgment: nothing to import", path=path)
    if id_prefix:
        judgments = judgments.with_columns(file_qid=pl.lit(id_prefix) + pl.col("file_qid"))
        texts = {id_prefix + q: t for q, t in texts.items()}
    judgments = _graded(judgments, numbers, _judged_file(path, fmt, split))
    result = SourceImported(source=source, path=str(path), format=fmt, notes=notes)
    with transaction(con):
        mapping = _items_for(con, texts, source, by, path, result)
        _store(con, judgments, mapping, source, path, result)
    return result


# --- reading -----------------------------------------------------------------------------------


def _judged_file(path: Path, fmt: str, split: str) -> Path:
    """The file whose lines (or Parquet rows) the judgments' ``line`` counts."""
    if fmt == "beir":
        return beir_files(path, split)[1]
    return path / "judgments.parquet" if fmt == "hf" else path


def _read(
    path: Path, fmt: str, topics: Path | None, split: str, field_: str, notes: list[str]
) -> tuple[pl.DataFrame, dict[str, str | None]]:
    """The file's judgments (``_JUDGMENT``) and each judged query's text."""
    if fmt in ("jsonl", "llamaindex"):
        return _jsonl(path, fmt, notes)
    if fmt == "beir":
        queries, qrels = beir_files(path, split)
        judged = _columns(qrels, tab=True) if is_tsv(qrels) else _records(qrels)
        return _with_text(judged, read_topics(queries), qrels)
    if fmt == "hf":  # what gold export --format hf writes: the texts are in it
        entries = read_hf(path)
        return _entries(entries, [1] * len(entries))  # Parquet rows have no line
    if fmt not in ("trec", "ranx", "qrels_jsonl"):
        raise InputError(
            f"--format for --as-source is trec, qrels_jsonl, beir, jsonl, llamaindex, ranx, hf or "
            f"csv, not "
            f"{fmt!r}"
        )
    texts = qrels_topics(path, fmt, topics, notes, field_)
    if fmt == "qrels_jsonl":  # ir_datasets' export: a judgment a line
        return _with_text(_records(path), texts, path)
    if fmt == "ranx":  # one JSON document: every judgment is at line 1
        entries = _join(read_ranx(path), texts, path)
        return _entries(entries, [1] * len(entries))
    return _with_text(_columns(path, tab=False, notes=notes), texts, path)


def _columns(path: Path, *, tab: bool, notes: list[str] | None = None) -> pl.DataFrame:
    """Qrels lines cut into columns by polars: TREC's ``qid iter doc grade`` (the second column
    is ``0`` or ``Q0``, both in the wild, and never read) or ``qid doc grade``; BEIR's
    tab-separated ``query-id corpus-id score`` after its header row."""
    lines = pl.DataFrame({"raw": read_lines(path)}, schema={"raw": pl.Utf8})
    lines = lines.with_row_index("line", offset=1)
    cut = pl.col("raw").str.split("\t") if tab else pl.col("raw").str.extract_all(r"\S+")
    parts = lines.with_columns(p=cut, n=cut.list.len()).filter(
        pl.col("raw").str.strip_chars() != ""
    )
    if tab:
        parts = parts.filter(~((pl.col("line") == 1) & pl.col("raw").str.starts_with("query")))
    else:  # trec_eval's comment lines, and a header row naming the columns, as read_qrels skips
        parts = parts.filter(~pl.col("raw").str.strip_chars_start().str.starts_with("#"))
        if parts.height and is_qrels_header(parts["p"][0].to_list()):
            parts = parts.slice(1)
    wanted = [3] if tab else [3, 4]
    bad = parts.filter(~pl.col("n").is_in(wanted)).head(1)
    if bad.height:
        shape = "query-id, corpus-id, score" if tab else "query id, iteration, doc id, grade"
        raise InputError(f"expected {shape}, got {bad['n'][0]} columns", path=path,
                         line=int(bad["line"][0]))  # fmt: skip
    if not tab and smart_relevance(parts["p"].to_list()):  # query, document, 0, 0
        if notes is not None:
            notes.append(SMART_RELEVANCE)
        doc, grade = pl.col("p").list.get(1).str.strip_chars(), pl.lit("1")
    else:
        doc, grade = (pl.col("p").list.get(i).str.strip_chars() for i in (-2, -1))
    return parts.select(
        file_qid=pl.col("p").list.get(0).str.strip_chars(),
        chunk_id=doc,
        raw_grade=grade,
        line=pl.col("line").cast(pl.Int64),
    )


def _records(path: Path) -> pl.DataFrame:
    """BEIR's and MTEB's qrels as JSON lines or Parquet, one judgment a record (a Parquet row's
    place is its row number); ids as the text they print as."""
    frame, _ = qrels_frame(path)
    return frame.select(file_qid="qid", chunk_id="doc", raw_grade="grade", line="place")


def _with_text(
    judgments: pl.DataFrame, topics: dict[str, str], path: Path
) -> tuple[pl.DataFrame, dict[str, str | None]]:
    judged = judgments["file_qid"].unique(maintain_order=True).to_list()
    check_topics(judged, topics, path)
    return judgments, {q: topics[q] for q in judged}


def _jsonl(path: Path, fmt: str, notes: list[str]) -> tuple[pl.DataFrame, dict[str, str | None]]:
    """Gold JSONL (or a LlamaIndex dataset's queries) as judgments; a query with none
    (``"no_answer": true``, ``"relevant": []``) is one row with no chunk."""
    records = gold_line_records(path, fmt, notes)  # read once: its entries and their lines
    entries = gold_entries(records, path)
    lines = [n for n, obj in records if not _is_header(obj)]
    return _entries(entries, lines)


def _entries(
    entries: list[GoldQuery], lines: list[int]
) -> tuple[pl.DataFrame, dict[str, str | None]]:
    """Judged queries as judgments, each at its line; a query with none (a no-answer) is one row
    with no chunk."""
    rows: list[tuple] = []
    for n, e in zip(lines, entries, strict=True):
        rows += [(e.query_id, c, str(g), n) for c, g in e.judged.items()] or [
            (e.query_id, None, None, n)
        ]
    frame = pl.DataFrame(rows, schema=_JUDGMENT, orient="row")
    return frame, {e.query_id: e.query for e in entries}


def _graded(judgments: pl.DataFrame, grade_map: dict[int, int] | None, path: Path) -> pl.DataFrame:
    """``grade`` on goldmine's scale: the written grade as a whole number (an NTCIR level, L2,
    as its number when a map reads levels), through the map."""
    level = pl.col("raw_grade").str.extract(f"^{NTCIR_LEVEL.pattern}$", 1)
    if grade_map is None:
        levels = judgments.filter(level.is_not_null()).head(1)
        if levels.height:
            raise levels_refused(judgments["raw_grade"].drop_nulls(), path, levels["line"][0])
    else:
        _on_the_scale(grade_map)
    number = pl.coalesce(level, pl.col("raw_grade")).cast(pl.Float64, strict=False)
    checked = judgments.with_columns(number=number)
    bad = checked.filter(pl.col("raw_grade").is_not_null() & no_grade(pl.col("number"))).head(1)
    if bad.height:
        raise InputError(f"grade {bad['raw_grade'][0]!r} is not a whole number in range",
                         path=path, line=bad["line"][0])  # fmt: skip
    graded = checked.with_columns(grade=pl.col("number").cast(pl.Int64)).drop("number")
    unit = "row" if path.suffix.lower() == ".parquet" else "line"
    refuse_twice(graded.rename({"line": "place"}), path, unit, ("file_qid", "chunk_id"))
    found = sorted(graded["grade"].drop_nulls().unique().to_list())
    if grade_map is None:
        check_scale([GoldQuery("grades", "", {str(g): g for g in found})], path)
        return graded
    unmapped = [g for g in found if g not in grade_map]
    if unmapped:
        raise InputError(f"--grade-map has no entry for grade(s) {unmapped}", path=path)
    return graded.with_columns(
        grade=pl.col("grade").replace_strict(grade_map, default=None, return_dtype=pl.Int64)
    )


def _on_the_scale(grade_map: dict[int, int]) -> None:
    """A source's grades are compared on goldmine's 0-2 scale (``gold agreement``): a map
    sending a grade off it would drop that judgment out of every comparison."""
    off = [f"{g}={to}" for g, to in grade_map.items() if to not in GRADES]
    if off:
        raise InputError(f"--grade-map {off[0]} sends a grade off goldmine's 0-2 scale: a "
                         "source's grades are compared on it (gold agreement)")  # fmt: skip


# --- writing -----------------------------------------------------------------------------------


def _items_for(
    con: duckdb.DuckDBPyConnection,
    texts: dict[str, str | None],
    source: str,
    by: str,
    path: Path,
    result: SourceImported,
) -> dict[str, str]:
    """File query id -> the item it joins: the one ``_match`` finds, else a candidate made for
    the first of the file's queries with its normalized text."""
    entries = [GoldQuery(q, t or "", {}) for q, t in texts.items()]
    matches = _match(con, entries, path)
    result.queries, result.matched = len(texts), len(matches)
    created: dict[str, str] = {}  # normalized text -> the item made for it
    new: list[dict] = []
    for q, text in texts.items():
        if q in matches:
            continue
        if not text or not text.strip():
            raise InputError(f"query {q!r} has no text and no item has its id", path=path)
        norm = normalize_query(text)
        if norm not in created:
            created[norm] = q
            new.append({"query_id": q, "query": text.strip(), "norm_query": norm})
        matches[q] = created[norm]
    _add_candidates(con, new, source, by, path)
    result.created = len(new)
    return matches


def _add_candidates(
    con: duckdb.DuckDBPyConnection, rows: list[dict], source: str, by: str, path: Path
) -> None:
    """Candidate items for the file's queries no item had, in one statement, each with its
    ``add`` history row."""
    if not rows:
        return
    at = now()
    reason = f"judged by {source} ({path.name})"
    frame = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "query": pl.Utf8,
                                       "norm_query": pl.Utf8})  # fmt: skip
    with registered(con, gold_source_new=frame):
        con.execute(
            """INSERT INTO gold_items (query_id, position, query, norm_query, status, no_answer,
                   tags, origin, reason, sources, source_ids, notes, created_at, updated_at)
               SELECT query_id, nextval('gold_position_seq'), query, norm_query, 'candidate',
                      false, [], $source, $reason, ['import'], [query_id], [], $at, $at
               FROM gold_source_new""",
            {"source": source, "reason": reason, "at": at},
        )
    detail = {"origin": source, "reason": reason, "status": "candidate"}
    bulk.append_history(
        con, [bulk.history_row(r["query_id"], "add", detail, at=at, who=by) for r in rows]
    )


# Each item's judgments (the last in the file where a chunk is judged twice for one item), with
# whether the current corpus holds the chunk; then a "no answer" row for each item none of whose
# judgments is above 0, at the line of its first judgment.
_INSERT_SQL = """
    INSERT INTO gold_source_grades
    WITH j AS (
        SELECT m.query_id, i.chunk_id, arg_max(i.grade, i.ord) AS grade,
               arg_max(i.raw_grade, i.ord) AS raw_grade, arg_max(i.line, i.ord) AS line
        FROM gold_source_incoming i JOIN gold_source_items m USING (file_qid)
        WHERE i.chunk_id IS NOT NULL GROUP BY ALL)
    SELECT $source, j.query_id, j.chunk_id, j.grade, j.raw_grade, c.chunk_id IS NOT NULL,
           $file, j.line, $at
    FROM j LEFT JOIN (SELECT DISTINCT chunk_id FROM chunks WHERE snapshot_id = $snapshot) c
      USING (chunk_id)
    UNION ALL
    SELECT $source, m.query_id, NULL, NULL, NULL, true, $file, min(i.line), $at
    FROM gold_source_incoming i JOIN gold_source_items m USING (file_qid)
    WHERE m.query_id NOT IN (SELECT query_id FROM j WHERE grade > 0)
    GROUP BY m.query_id
"""


def _store(
    con: duckdb.DuckDBPyConnection,
    judgments: pl.DataFrame,
    mapping: dict[str, str],
    source: str,
    path: Path,
    result: SourceImported,
) -> None:
    """This source's rows, in place of the ones it had."""
    result.replaced = con.execute(
        "SELECT count(*) FROM gold_source_grades WHERE source = ?", [source]
    ).fetchall()[0][0]
    con.execute("DELETE FROM gold_source_grades WHERE source = ?", [source])
    snapshot_id, _ = current_snapshot(con)
    items = pl.DataFrame(
        {"file_qid": list(mapping), "query_id": list(mapping.values())},
        schema={"file_qid": pl.Utf8, "query_id": pl.Utf8},
    )
    incoming = judgments.with_row_index("ord")
    with registered(con, gold_source_incoming=incoming, gold_source_items=items):
        con.execute(_INSERT_SQL, {"source": source, "file": str(path), "at": now(),
                                  "snapshot": snapshot_id})  # fmt: skip
    (result.judgments, result.not_in_corpus, result.chunks_not_in_corpus,
     result.no_answer) = con.execute(
        """SELECT count(chunk_id), count(chunk_id) FILTER (WHERE NOT in_corpus),
                  count(DISTINCT chunk_id) FILTER (WHERE NOT in_corpus),
                  count(*) FILTER (WHERE chunk_id IS NULL)
           FROM gold_source_grades WHERE source = ?""",
        [source],
    ).fetchall()[0]  # fmt: skip
    if result.not_in_corpus:
        where = f"snapshot {snapshot_id}" if snapshot_id else "the store (no corpus ingested)"
        result.notes.append(
            f"{result.not_in_corpus} judgments name {result.chunks_not_in_corpus} chunk ids not "
            f"in {where}: kept, with in_corpus false"
        )
