"""Gold versions in and out of the store as files: goldmine JSONL, TREC qrels, BEIR.

The goldmine version file (``gold/v0003.jsonl``) is a header line (``format_version``, version,
message, content hash, who/when, counts; no ``query_id``) and then one line per item, sorted by
``query_id`` with keys sorted, exactly as the version froze them. Importing it restores the version
as published, so export → import into an empty store → export gives the same bytes.

TREC qrels (+ topics; NTCIR's ``topic docid L2`` levels through ``--grade-map L2=2,…``), BEIR and
MTEB folders (``queries.jsonl`` + ``qrels/test.tsv``, or the qrels as JSON lines or Parquet, as
Hugging Face serves them) and the minimal gold JSONL (``query_id``, ``query``, ``relevant``) come
in as new verified items, with the file as provenance.
Their grades are kept as written unless ``--grade-map`` says how they read on goldmine's scale
(2 fully answers, 1 useful context, 0 not relevant). Cranfield's judgment codes, for instance, run
the other way (1 is "a complete answer", 4 "of minimum interest", -1 "no interest"), so its raw
``cranqrel`` is imported with ``--grade-map 1=2,2=2,3=1,4=1,-1=0``: every code 1-4 stays relevant
(MAP and recall match the published figures) and codes 1-2 become "answers".
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import InputError
from goldmine.files import require_file
from goldmine.gold import GRADE_LIMIT, GoldQuery
from goldmine.gold_records import (
    is_llamaindex,
    json_records,
    llamaindex_records,
    mined_negatives,
    query_id,
    query_text,
    relevant_key,
)
from goldmine.goldset import bulk
from goldmine.goldset.interop import check_ids
from goldmine.goldset.items import (
    current_snapshot,
    get_item,
    now,
    query_id_for,
    set_no_answer,
    settle,
)
from goldmine.goldset.raters import NO_ANSWER, dispute
from goldmine.goldset.sheets import (
    WANTED,
    Sheet,
    delimiter_of,
    label_key,
    names_query_text,
    read_sheet,
)
from goldmine.goldset.versions import content_hash, dump_line, insert_version_items
from goldmine.readers import (
    SMART_RELEVANCE,
    first_line,
    foreign_judgments,
    is_delimited,
    is_qrels_header,
    is_qrels_record,
    judge,
    judge_frame,
    looks_like_trec_run,
    ntcir_level,
    qrels_frame,
    read_grade,
    read_relevant,
    smart_relevance,
)
from goldmine.store import registered, transaction
from goldmine.text import normalize_query
from goldmine.topics import (
    file_head,
    json_lines,
    one_line,
    read_lines,
    read_text,
    read_topics,
)
from goldmine.versions import (
    FORMAT,
    FORMAT_VERSION,
    judged_of,
    resolve_version,
    version_header,
    version_lines,
)

if TYPE_CHECKING:
    import duckdb

EXPORT_FORMATS = ("jsonl", "trec", "beir", "ranx", "ir_measures", "hf")
IMPORT_FORMATS = ("auto", "goldmine", "jsonl", "trec", "qrels_jsonl", "beir", "ranx", "hf", "csv",
                  "llamaindex")  # fmt: skip


# --- export ------------------------------------------------------------------------------------


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(line + "\n" for line in lines)
    return path


def export_version(
    con: duckdb.DuckDBPyConnection, spec: str, out_dir: Path, fmt: str = "jsonl"
) -> list[Path]:
    """Write one version as files under ``out_dir``; returns the paths written."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    if fmt in ("ranx", "ir_measures", "hf"):  # other tools' formats: goldset/interop.py
        from goldmine.goldset.interop import export_interop

        return export_interop(con, spec, out_dir, fmt)
    version = resolve_version(con, spec)
    stem = f"v{version:04d}"
    if fmt == "jsonl":
        return [_write(out_dir / f"{stem}.jsonl", version_file_lines(con, version))]
    lines = version_lines(con, version)
    items = [json.loads(line) for line in lines]
    qrels = [
        (item["query_id"], chunk_id, grade)
        for item in items
        for chunk_id, grade in sorted(judged_of(item).items())
    ]
    check_ids(qrels, fmt)  # trec or beir, before a file is written
    if fmt == "trec":
        return [
            _write(out_dir / f"{stem}.qrels", [f"{q} 0 {c} {g}" for q, c, g in qrels]),
            _write(
                out_dir / f"{stem}.topics.tsv",
                [f"{i['query_id']}\t{one_line(i['query'])}" for i in items],
            ),
        ]
    folder = out_dir / f"{stem}-beir"
    queries = [
        dump_line({"_id": i["query_id"], "text": i["query"], "metadata": {"tags": i["tags"]}})
        for i in items
    ]
    tsv = ["query-id\tcorpus-id\tscore", *(f"{q}\t{c}\t{g}" for q, c, g in qrels)]
    paths = [_write(folder / "queries.jsonl", queries), _write(folder / "qrels" / "test.tsv", tsv)]
    corpus = _beir_corpus(con, version, folder / "corpus.jsonl")
    return [corpus, *paths] if corpus else paths


def version_file_lines(con: duckdb.DuckDBPyConnection, version: int) -> list[str]:
    """The lines of a version's file (the lossless jsonl export): its header, then its items,
    sorted."""
    return [dump_line(version_header(con, version)), *version_lines(con, version)]


_CORPUS_BATCH = 50_000  # chunks made JSON (by DuckDB) and written at a time


def _beir_corpus(con: duckdb.DuckDBPyConnection, version: int, path: Path) -> Path | None:
    """``corpus.jsonl`` of the version's corpus snapshot as BEIR reads it (``_id``, ``title``,
    ``text``, an object a line): BEIR's loader and MTEB refuse a folder without one. None, and
    no file, when the store holds no chunk of that snapshot (a version imported from another
    store, or published before any corpus)."""
    rows = con.execute(
        "SELECT c.snapshot_id FROM gold_versions v JOIN chunks c USING (snapshot_id) "
        "WHERE v.version = ? LIMIT 1",
        [version],
    ).fetchall()
    if not rows:
        return None
    reader = con.sql(
        "SELECT to_json({'_id': chunk_id, 'title': coalesce(title, ''), 'text': text})::VARCHAR "
        "FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        params=[rows[0][0]],
    ).to_arrow_reader(_CORPUS_BATCH)
    try:
        with path.open("w", encoding="utf-8", newline="\n") as handle:
            for batch in reader:
                handle.write("\n".join(batch.column(0).to_pylist()) + "\n")
    finally:
        reader.close()  # an unread result would keep the connection busy
    return path


# --- reading files -----------------------------------------------------------------------------


def _is_header(obj: dict) -> bool:
    return "format_version" in obj and "query_id" not in obj


_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")


def _suffix(path: Path) -> str:
    """The suffix that says the layout: ``gold.jsonl.gz`` is JSONL."""
    inner = path.with_suffix("") if path.suffix.lower() in _COMPRESSED_SUFFIXES else path
    return inner.suffix.lower()


# What gold import reads, for the errors that say so.
IMPORT_LAYOUTS = (
    "TREC qrels ('qid 0 docid grade', with --topics), JSON lines qrels ({query_id, doc_id, "
    "relevance} a line, as ir_datasets exports them, with --topics), a BEIR or MTEB folder "
    "(queries.jsonl and "
    "qrels/test.tsv, .jsonl or .parquet), gold JSONL ({query_id, query, relevant}), a goldmine "
    "version file, ranx's qrels JSON, what gold export --format hf writes (a folder of "
    "queries.parquet and judgments.parquet) or a spreadsheet's CSV whose header names "
    f"{WANTED}"
)


def detect_format(path: Path) -> str:
    if path.is_dir():
        hf = (path / "queries.parquet").is_file() and (path / "judgments.parquet").is_file()
        return "hf" if hf else "beir"
    head = file_head(path)
    _refuse_binary(path, head)  # first: a zip's header bytes may read as a delimited line
    if _is_sheet(head):
        return "csv"
    _refuse_foreign(path, head)
    if _suffix(path) in (".jsonl", ".json", ".ndjson"):
        text = read_text(path)
        if _suffix(path) == ".json":
            document = _json_document(text)
            if is_llamaindex(document):
                return "llamaindex"
            if _is_ranx(document):
                return "ranx"
        first = next((obj for _, obj in json_records(text, path)[:1]), {})
        if is_qrels_record(first):  # ir_datasets' export, a BEIR qrels file out of its folder
            return "qrels_jsonl"
        return "goldmine" if _is_header(first) and first.get("format") == FORMAT else "jsonl"
    return "trec"


def _is_sheet(head: bytes) -> bool:
    """A spreadsheet's CSV, by the file's first bytes (``head``): comma- or semicolon-separated
    (``readers.is_delimited``), or a TSV whose header names a query text column (TREC's and
    BEIR's qrels carry no text)."""
    first = first_line(head.decode("utf-8-sig", errors="replace"))
    if first.startswith(("{", "[", "<")):
        return False
    if "\t" in first:
        return names_query_text(first)
    return is_delimited(first, delimiter_of(first))


def _refuse_binary(path: Path, head: bytes) -> None:
    """A workbook, a zip or Parquet alone, told by their first bytes (``head``), refused saying
    what to do."""
    if head[:4] == b"PK\x03\x04":
        book = b"xl/" in head or b"opendocument.spreadsheet" in head
        raise InputError(
            "is an Excel or OpenDocument workbook: save the sheet as CSV (CSV UTF-8) and import "
            "that"
            if book
            else "is a zip archive: unpack it and import the judgments inside",
            path=path,
        )
    if head[:4] == b"PAR1":
        raise InputError(f"is a Parquet file: gold import reads Parquet in a folder; it reads "
                         f"{IMPORT_LAYOUTS}", path=path)  # fmt: skip


def _refuse_foreign(path: Path, head: bytes) -> None:
    """A file in a layout gold import does not read (a Label Studio export, ...) is refused
    saying what it reads, rather than misread as TREC qrels. The first 64 KiB (``head``) tell,
    but for a JSON array, which is read whole."""
    text = head.decode("utf-8-sig", errors="replace")  # the readers check the encoding
    if text.lstrip().startswith("["):
        text = "\n".join(read_lines(path))
    foreign = foreign_judgments(text)
    if foreign:
        raise InputError(f"{foreign}: gold import reads {IMPORT_LAYOUTS}", path=path)


def _json_document(text: str) -> object:
    """A .json file's one document, or None where it is none (JSON lines)."""
    try:
        return json.loads(text.lstrip("\ufeff"))
    except ValueError:
        return None


def _is_ranx(obj: object) -> bool:
    """Whether a JSON document is one object of objects, ``{query_id: {doc_id: grade}}`` (ranx's
    and pytrec_eval's qrels, as gold export --format ranx writes them)."""
    return (
        isinstance(obj, dict)
        and "query_id" not in obj
        and all(isinstance(value, dict) for value in obj.values())
    )


def _grade(value, path: Path, line: int, levels: bool = False) -> int:
    """A grade as every reader reads one (``readers.read_grade``: a whole number within
    GRADE_LIMIT), or, with ``levels`` (a --grade-map to read them), an NTCIR level: L2 is 2."""
    level = ntcir_level(str(value)) if levels else None
    if level is not None:
        return read_grade(level, path, line)
    if isinstance(value, str):  # the common spelling, read once (read_grade tries several);
        try:  # int() of a float or bool would truncate 2.5 to 2 and take true for 1
            number = int(value)
        except ValueError:
            pass
        else:
            if abs(number) <= GRADE_LIMIT:
                return number
    return read_grade(value, path, line)


def levels_refused(tokens: Iterable[str], path: Path, line: int | None) -> InputError:
    """NTCIR levels read without a --grade-map: the error names the levels ``tokens`` hold and
    a map for them (which level is an answer is the file's scale to say, so none is assumed)."""
    found = sorted({level for t in tokens if (level := ntcir_level(t)) is not None})
    suggested = ",".join("L" + entry for entry in _suggest_map(found, best_first=False).split(","))
    return InputError(
        f"grades are NTCIR levels ({', '.join(f'L{g}' for g in found)}): say how each reads on "
        f"goldmine's 0-2 scale with --grade-map, e.g. --grade-map {suggested}",
        path=path,
        line=line,
    )


def gold_line_records(
    path: Path, fmt: str = "jsonl", notes: list[str] | None = None
) -> list[tuple[int, dict]]:
    """The gold lines of a file, each at its place: JSON lines or a JSON array of them (DPR's
    files), or a LlamaIndex dataset's queries (``fmt`` llamaindex). ``notes`` gets what is left
    out: mined negatives, a LlamaIndex query with no relevant_docs entry."""
    notes = [] if notes is None else notes
    text = read_text(path)
    if fmt == "llamaindex":
        document = _json_document(text)
        if not is_llamaindex(document):
            raise InputError(
                "a LlamaIndex dataset is one JSON object with 'queries' (id -> text) and "
                "'relevant_docs' (id -> ids)",
                path=path,
            )
        records, unjudged = llamaindex_records(document, path)
        if unjudged:
            notes.append(f"{unjudged:,} queries with no relevant_docs entry left out: no judgment")
        return records
    records = json_records(text, path)
    if note := mined_negatives(records):
        notes.append(note)
    return records


def read_minimal_jsonl(
    path: Path, notes: list[str] | None = None, fmt: str = "jsonl"
) -> list[GoldQuery]:
    """The judged queries of a gold JSONL file (``gold_entries`` of ``gold_line_records``)."""
    return gold_entries(gold_line_records(path, fmt, notes), path)


def gold_entries(records: list[tuple[int, dict]], path: Path) -> list[GoldQuery]:
    """``{"query_id", "query", "relevant": [ids] | {id: grade}}`` per line (or in the other
    spellings of ``goldmine.gold_records``); a header is skipped.

    A query with no answer in the corpus says so: ``"no_answer": true``, or a ``relevant``
    that is there and empty (``[]``, as goldmine's own files and eval's readers write it). A
    record without either field is no judgment, never a "no answer"; a file with no judgment at
    all is not a gold set (a search log has queries and no labels)."""
    entries, unjudged, lines = [], [], {}
    for n, obj in records:
        if _is_header(obj):
            continue
        said = relevant_key(obj) is not None
        judged = _judged(obj, path, n)
        if query_id(obj) is None and query_text(obj) is None:
            raise InputError("a line needs query_id or query", path=path, line=n)
        no_answer = obj.get("no_answer") is True
        if no_answer and any(g > 0 for g in judged.values()):
            raise InputError(
                "says no_answer but lists relevant chunks: one or the other", path=path, line=n
            )
        if not said and not no_answer:
            unjudged.append(n)
        query, given = query_text(obj), query_id(obj)
        qid = query_id_for(normalize_query(str(query))) if given is None else str(given)
        if qid in lines:  # as eval's reader refuses it: which line holds is the file's to say
            raise InputError(f"query {qid!r} appears twice (lines {lines[qid]} and {n}): one "
                             "line a query", path=path, line=n)  # fmt: skip
        lines[qid] = n
        entries.append(GoldQuery(qid, query, judged, obj.get("context")))
    if entries and len(unjudged) == len(entries):
        raise InputError(
            "holds no judgments (no relevant field and no no_answer field in any record): "
            "is it a search log? use goldmine ingest searchlog",
            path=path,
        )
    if unjudged:
        raise InputError(
            f"{len(unjudged):,} record(s) have no judgments, first at line {unjudged[0]}: list "
            'the relevant chunks, or say "no_answer": true (or "relevant": []) for a query the '
            "corpus cannot answer",
            path=path,
            line=unjudged[0],
        )
    return entries


def _judged(obj: dict, path: Path, n: int) -> dict[str, int]:
    """ids (grade 1 each), an object id -> grade, or {id, grade} objects: what eval reads."""
    key = relevant_key(obj)
    return read_relevant(obj[key] if key else None, path, n)


def read_qrels(
    path: Path, levels: bool = False, notes: list[str] | None = None
) -> dict[str, dict[str, int]]:
    """TREC qrels (``qid iter docid grade``); three columns (``qid docid grade``) also read, as
    NTCIR's ``topic docid L2`` are (their levels only with ``levels``: a --grade-map given); a
    SMART collection's relevance file (``qid docid 0 0``: ``readers.smart_relevance``) as the
    relevant documents it lists, said in ``notes``.

    As trec_eval reads them, a line starting with '#' is a comment; a first line naming the
    columns (``qid iter docno rel``) is skipped, and a judgment given twice with two grades is
    refused (``goldmine.readers.judge``)."""
    qrels: dict[str, dict[str, int]] = {}
    lines = read_lines(path)
    rows = [p for line in lines if (p := line.split()) and not p[0].startswith("#")]
    smart = smart_relevance(p for i, p in enumerate(rows) if i or not is_qrels_header(p))
    if smart and notes is not None:
        notes.append(SMART_RELEVANCE)
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith("#") or (not qrels and is_qrels_header(parts)):
            continue
        if smart:  # query, document, 0, 0: the document is relevant
            parts = [parts[0], "0", parts[1], "1"]
        if len(parts) == 4:
            qid, _, doc, grade = parts
        elif len(parts) == 3:
            qid, doc, grade = parts
        else:
            raise InputError(_columns_problem(parts), path=path, line=n)
        if not levels and grade[0] == "L" and ntcir_level(grade) is not None:  # all named
            raise levels_refused((row.split()[-1] for row in lines if row.strip()), path, n)
        judge(qrels.setdefault(qid, {}), qid, doc, _grade(grade, path, n, levels), path=path,
              line=n, lines=lines)  # fmt: skip
    return qrels


def _columns_problem(parts: list[str]) -> str:
    """What is wrong with a qrels line that has not 3 or 4 columns, and what to do."""
    if looks_like_trec_run(parts):
        return ("this is a TREC run ('qid Q0 docid rank score tag'), not judgments: score it "
                "with goldmine eval run --run FILE")  # fmt: skip
    said = f"expected 4 columns (query id, iteration, doc id, grade), got {len(parts)}"
    return said + (" (a doc id holds no space in TREC qrels)" if len(parts) > 4 else "")


def qrels_topics(
    path: Path, fmt: str, topics: Path | None, notes: list[str], field: str
) -> dict[str, str]:
    """The query texts for TREC or ranx qrels at ``path``, read from ``topics``: qrels carry none,
    so a missing --topics is an InputError saying so."""
    if topics is None:
        what = {"ranx": "ranx qrels", "qrels_jsonl": "JSON lines qrels"}.get(fmt, "TREC qrels")
        folder = (
            ", or import the BEIR folder that holds them (queries.jsonl beside qrels/)"
            if fmt == "qrels_jsonl"
            else ""
        )
        raise InputError(f"{what} carry no query text: pass --topics FILE{folder}", path=path)
    return read_topics(topics, notes, field)


def read_ranx(path: Path) -> dict[str, dict[str, int]]:
    """ranx's and pytrec_eval's qrels, ``{query_id: {doc_id: grade}}`` (gold export --format
    ranx)."""
    try:
        obj = json.loads("\n".join(read_lines(path)))
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", path=path) from None
    if not isinstance(obj, dict) or not all(isinstance(docs, dict) for docs in obj.values()):
        raise InputError("ranx qrels are one JSON object {query_id: {doc_id: grade}}", path=path)
    return {
        str(q): {str(d): _grade(g, path, 1) for d, g in docs.items()} for q, docs in obj.items()
    }


def read_hf(folder: Path) -> list[GoldQuery]:
    """The folder gold export --format hf writes: ``queries.parquet`` (query_id, query,
    no_answer) and ``judgments.parquet`` (query_id, doc_id, grade), whose judgments are read as
    every qrels file's (``readers.judge_frame``: one grade a judgment)."""
    import pyarrow.parquet as pq

    try:
        queries = pq.read_table(folder / "queries.parquet").to_pylist()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read the Parquet files: {exc}", path=folder) from None
    if queries and not {"query_id", "query"} <= queries[0].keys():
        raise InputError("queries.parquet needs the columns query, query_id", path=folder)
    judgments = folder / "judgments.parquet"
    judged: dict[str, dict[str, int]] = {str(q["query_id"]): {} for q in queries}
    judged.update(judge_frame(qrels_frame(judgments)[0], judgments, "row"))
    topics = {str(q["query_id"]): q["query"] for q in queries}
    return _join(judged, topics, judgments)


# Where a BEIR or MTEB folder keeps its queries and a split's qrels: BEIR's zips and MTEB's
# older Hugging Face repos (mteb/scifact) have queries.jsonl and qrels/test.tsv or test.jsonl;
# the Parquet conversions have queries/test-00000-of-00001.parquet (or queries-00000-…) and
# qrels/test-00000-of-00001.parquet.
_BEIR_QUERIES = ("queries.jsonl", "queries.jsonl.gz", "queries/{}-*.parquet",
                 "queries/queries-*.parquet")  # fmt: skip
_BEIR_QRELS = ("{}.tsv", "{}.tsv.gz", "{}.jsonl", "{}.jsonl.gz", "{}.parquet", "{}-*.parquet")


def beir_files(folder: Path, split: str) -> tuple[Path, Path]:
    """A BEIR or MTEB folder's queries file and ``split``'s qrels file, or an InputError saying
    what the folder lacks."""
    queries = next(iter(_globbed(folder, _BEIR_QUERIES, split)), None)
    found = _globbed(folder / "qrels", _BEIR_QRELS, split)  # the TSV first, then conversions
    if queries is None and not found:
        raise InputError(f"holds no judgments gold import reads: it reads {IMPORT_LAYOUTS}",
                         path=folder)  # fmt: skip
    if not found:
        held = sorted(p.name for p in (folder / "qrels").glob("*")) or ["nothing"]
        raise InputError(
            f"a BEIR folder needs qrels/{split}.tsv (or {split}.jsonl, {split}.parquet, "
            f"{split}-*.parquet); qrels/ holds {', '.join(held[:5])}: name the split with --split",
            path=folder,
        )
    if queries is None:
        raise InputError("a BEIR folder needs queries.jsonl", path=folder)
    if len(found) > 1:  # Parquet shards: which rows belong together is not ours to guess
        names = ", ".join(p.name for p in found)
        raise InputError(f"qrels/ holds {len(found)} files for {split} ({names}): keep one",
                         path=folder)  # fmt: skip
    return queries, found[0]


def _globbed(folder: Path, patterns: tuple[str, ...], split: str) -> list[Path]:
    """The files under ``folder`` that the first pattern naming any (``{}`` the split) names: a
    repo serving a split in two layouts (test.tsv and its test.jsonl conversion) gives one."""
    named = (sorted(folder.glob(p.format(glob.escape(split)))) for p in patterns)
    return next((files for paths in named if (files := [f for f in paths if f.is_file()])), [])


def is_tsv(path: Path) -> bool:
    return _suffix(path) == ".tsv"


def read_beir(folder: Path, split: str = "test", notes: list[str] | None = None) -> list[GoldQuery]:
    queries_path, qrels_path = beir_files(folder, split)
    topics = read_topics(queries_path)
    if not is_tsv(qrels_path):
        frame, unit = qrels_frame(qrels_path)
        return _join(judge_frame(frame, qrels_path, unit), topics, qrels_path, notes)
    qrels: dict[str, dict[str, int]] = {}
    lines = read_lines(qrels_path)
    for n, line in enumerate(lines, 1):
        parts = line.split("\t")
        if not line.strip() or (n == 1 and parts[0].strip() in ("query-id", "query_id")):
            continue
        if len(parts) != 3:
            raise InputError("expected query-id, corpus-id, score", path=qrels_path, line=n)
        qid, doc = parts[0].strip(), parts[1].strip()
        judge(qrels.setdefault(qid, {}), qid, doc, _grade(parts[2], qrels_path, n),
              path=qrels_path, line=n, lines=lines)  # fmt: skip
    return _join(qrels, topics, qrels_path, notes)


def _join(
    qrels: dict[str, dict[str, int]],
    topics: dict[str, str],
    path: Path,
    notes: list[str] | None = None,
) -> list[GoldQuery]:
    """The judged queries with their texts. A topic without judgments is left out rather than
    guessed ("no answer" only if the file says so), and ``notes`` counts them: qrels cannot say
    "no answer" without a judged chunk, so a version's such query comes back only from JSONL."""
    check_topics(qrels, topics, path)
    unjudged = len(set(topics) - set(qrels))
    if unjudged and notes is not None:
        has = "topic has" if unjudged == 1 else "topics have"
        notes.append(
            f"{unjudged} {has} no judgment in {path.name}: left out (a query the corpus cannot "
            'answer is kept by gold JSONL, "no_answer": true, as gold export writes it)'
        )
    return [GoldQuery(qid, topics[qid], judged) for qid, judged in qrels.items()]


def check_topics(judged: Iterable[str], topics: dict[str, str], path: Path) -> None:
    """Refuse judged query ids the topics give no text for, saying what to do."""
    missing = sorted(set(judged) - set(topics))
    if missing:
        raise InputError(
            f"{len(missing)} judged queries have no text in the topics (e.g. {missing[:3]})"
            + (
                _zeros_hint(missing, topics)
                or ": pass --topics a file that has them, or leave their judgments out of the file"
            ),
            path=path,
        )


def _zeros_hint(missing: list[str], topics: dict[str, str]) -> str:
    """When the topics and the qrels write the missing ids with and without leading zeros (001
    and 1), say which writes them so: ids are compared as text, as trec_eval compares them, so
    001 and 1 are two queries."""
    unpadded = {t.lstrip("0") or "0": t for t in topics if t.isdigit()}
    pairs = [(unpadded[m.lstrip("0") or "0"], m) for m in missing
             if m.isdigit() and (m.lstrip("0") or "0") in unpadded]  # fmt: skip
    if not pairs:
        return ""
    theirs, ours = pairs[0]
    padded, plain, which = (
        (theirs, ours, "topics") if len(theirs) > len(ours) else (ours, theirs, "qrels")
    )
    return (
        f"; the {which} write {len(pairs)} of them with leading zeros ({padded} for {plain}), "
        "and ids are compared as text: write the ids alike in the qrels and --topics"
    )


def parse_grade_map(text: str | None) -> dict[int | str, int] | None:
    """``"1=2,2=2,3=1,4=1,-1=0"`` -> {1: 2, 2: 2, 3: 1, 4: 1, -1: 0}. A grade may be an NTCIR
    level (``L2=2``: the level's number), or a spreadsheet's word label (``partially
    relevant=1``: its ``sheets.label_key``). Each value, and a number on the left, is a grade
    within GRADE_LIMIT, as a file's grade is: a map cannot make a grade no scale has readable."""
    if not text:
        return None
    mapping: dict[int | str, int] = {}
    for part in text.split(","):
        src, sep, dst = part.partition("=")
        level = ntcir_level(src.strip())
        try:
            value = int(dst)
            key: int | str = level if level is not None else int(src)
        except ValueError:
            key = label_key(src)
            sep = sep if re.search(r"[^\W\d_]", key) and re.fullmatch(r"\s*-?\d+\s*", dst) else ""
        if not sep:
            raise InputError(f"--grade-map is written like 1=2,2=1,3=0 (or, for word labels, "
                             f"not relevant=0,relevant=1); could not read {part!r}")  # fmt: skip
        past = [g for g in (key, value) if isinstance(g, int) and abs(g) > GRADE_LIMIT]
        if past:
            raise InputError(f"--grade-map {part.strip()}: {past[0]} is past any scale (at most "
                             f"{GRADE_LIMIT:,} either way)")  # fmt: skip
        mapping[key] = value
    return mapping


def numbered(grade_map: dict[int | str, int] | None, fmt: str) -> dict[int, int] | None:
    """The map for a file whose grades are numbers: word labels in it are an InputError (only a
    spreadsheet grades in words)."""
    if grade_map is None:
        return None
    words = [k for k in grade_map if isinstance(k, str)]
    if words:
        raise InputError(f"--grade-map names word labels ({', '.join(words[:3])}), but {fmt} "
                         "grades are numbers: map the numbers the file writes")  # fmt: skip
    return {int(k): v for k, v in grade_map.items()}


def sheet_judgments(
    path: Path,
    grade_map: dict[int | str, int] | None,
    topics: Path | None,
    notes: list[str],
    field: str,
) -> tuple[Sheet, dict[int, int] | None]:
    """A spreadsheet's judgments (``sheets.read_sheet``) with every query's text (the sheet's,
    else ``topics``'), and the map still to apply to their grades: none left for words, which
    the sheet read through their labels (the identity over the grades they became, so a grade
    put off the scale is said as a map's is)."""
    sheet = read_sheet(path, read_text(path), grade_map)
    if not sheet.rows:
        said = f": {'; '.join(sheet.notes)}" if sheet.notes else ""
        raise InputError(f"holds no graded judgment{said}", path=path)
    notes += sheet.notes
    missing = [q for q, text in sheet.texts.items() if text is None]
    if missing and topics is None:
        raise InputError(
            f"the sheet names {len(missing)} queries by id alone (e.g. {missing[0]}): pass "
            "--topics FILE with their texts, or give the sheet a query column",
            path=path,
        )
    if missing:
        texts = read_topics(topics, notes, field)
        check_topics(missing, texts, path)
        sheet.texts.update({q: texts[q] for q in missing})
    elif topics is not None:
        notes.append(f"{topics.name} was not read: the sheet gives every query's text")
    if sheet.labelled:
        return sheet, {int(g): int(g) for _, _, g, _ in sheet.rows}
    return sheet, numbered(grade_map, "csv")


def _sheet_entries(sheet: Sheet, path: Path, *, levels: bool) -> list[GoldQuery]:
    """The sheet's judgments by query; NTCIR levels read only with a map, as in qrels."""
    judged: dict[str, dict[str, int]] = {}
    for qid, doc, grade, line in sheet.rows:
        if not levels and ntcir_level(grade) is not None:
            raise levels_refused((row[2] for row in sheet.rows), path, line)
        judged.setdefault(qid, {})[doc] = _grade(grade, path, line, levels=True)
    return [GoldQuery(q, sheet.texts[q], docs) for q, docs in judged.items()]


# --- import ------------------------------------------------------------------------------------


@dataclass
class Imported:
    format: str
    path: str
    version: int | None = None
    content_hash: str | None = None  # a restored version's
    restored: bool = False
    added: int = 0
    already_present: int = 0
    labels: int = 0
    no_answer: int = 0
    missing_chunks: int = 0
    matched: int = 0  # entries that joined an item already there (by query id or text)
    labels_new: int = 0  # labels on chunks the item had none for (a new item's are all new)
    labels_same: int = 0  # as a person had graded them
    labels_different: int = 0  # differing from a person's grade: left, sent to adjudication
    disputed: int = 0  # items sent to adjudication by this import
    notes: list[str] = field(default_factory=list)


def file_format(path: Path, fmt: str = "auto") -> str:
    """The judgments file's format (``--format``, or told by content), once it is a readable
    file or folder."""
    require_file(path, folder_ok=True)
    return detect_format(path) if fmt == "auto" else fmt


def import_path(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    by: str,
    fmt: str = "auto",
    topics: Path | None = None,
    grade_map: dict[int | str, int] | None = None,
    split: str = "test",
    topic_field: str = "title",
    id_prefix: str | None = None,
) -> Imported:
    if fmt not in IMPORT_FORMATS:
        raise InputError(f"--format must be one of {', '.join(IMPORT_FORMATS)}, not {fmt!r}")
    fmt = file_format(path, fmt)
    if fmt == "goldmine":
        if id_prefix:
            raise InputError(
                "--id-prefix is for another team's judgments; a goldmine version file restores "
                "the set as it was published, its own ids",
                path=path,
            )
        return restore_version(con, path)
    notes: list[str] = []
    entries, numbers = _read_entries(path, fmt, topics, grade_map, split, topic_field, notes)
    if not entries:
        raise InputError("holds no judgment: nothing to import", path=path)
    entries = prefix_ids(entries, id_prefix)
    if numbers is not None:
        entries = [_map_grades(e, numbers, path) for e in entries]
        notes += _off_scale(entries)
    else:
        check_scale(entries, path)
    result = add_entries(con, entries, origin=f"import:{path.name}", by=by, fmt=fmt, path=path)
    result.notes[:0] = notes
    return result


def _read_entries(
    path: Path,
    fmt: str,
    topics: Path | None,
    grade_map: dict[int | str, int] | None,
    split: str,
    field: str,
    notes: list[str],
) -> tuple[list[GoldQuery], dict[int, int] | None]:
    """The file's judged queries, and the map still to apply to their grades."""
    if fmt == "csv":
        sheet, numbers = sheet_judgments(path, grade_map, topics, notes, field)
        return _sheet_entries(sheet, path, levels=numbers is not None), numbers
    numbers = numbered(grade_map, fmt)
    if fmt == "beir":
        return read_beir(path, split, notes), numbers
    if fmt == "hf":
        return read_hf(path), numbers
    if fmt in ("jsonl", "llamaindex"):
        return read_minimal_jsonl(path, notes, fmt), numbers
    texts = qrels_topics(path, fmt, topics, notes, field)
    if fmt == "ranx":
        qrels = read_ranx(path)
    elif fmt == "qrels_jsonl":
        qrels = judge_frame(qrels_frame(path)[0], path, "line")
    else:
        qrels = read_qrels(path, numbers is not None, notes)
    return _join(qrels, texts, path, notes), numbers


GRADES = (0, 1, 2)


def check_scale(entries: list[GoldQuery], path: Path) -> None:
    """Refuse grades off goldmine's 0-2 scale, naming them and the ``--grade-map`` that would read
    them (both ways round: which end of a foreign scale is best is the file's to say)."""
    found = sorted({g for e in entries for g in e.judged.values()})
    outside = [g for g in found if g not in GRADES]
    if not outside:
        return
    maps = [_suggest_map(found, best_first=False), _suggest_map(found, best_first=True)]
    ways = (
        f"if higher is better, --grade-map {maps[0]}; "
        f"if 1 is the best (as in Cranfield's codes), --grade-map {maps[1]}"
        if maps[0] != maps[1]
        else f"e.g. --grade-map {maps[0]}"
    )
    raise InputError(
        f"grades outside 0-2 found: {', '.join(map(str, outside))} (the file's grades: "
        f"{', '.join(map(str, found))}); goldmine grades 2 fully answers, 1 useful context, "
        f"0 not relevant. Map every grade with --grade-map: {ways}",
        path=path,
    )


def _suggest_map(found: list[int], *, best_first: bool) -> str:
    """Positive grades split into a better half (2) and the rest (1); zero and below to 0."""
    positive = [g for g in found if g > 0]
    ranked = positive if best_first else positive[::-1]
    answers = set(ranked[: (len(ranked) + 1) // 2])
    parts = [f"{g}={2 if g in answers else 1}" for g in positive]
    parts += [f"{g}=0" for g in sorted((g for g in found if g <= 0), reverse=True)]
    return ",".join(parts)


def _off_scale(entries: list[GoldQuery]) -> list[str]:
    """A note naming the grades a map put off goldmine's 0-2 scale (gains, such as Cranfield's
    codes kept as ir_datasets reads them): eval scores them, people's grades stay 0-2."""
    off = sorted({g for e in entries for g in e.judged.values() if g not in GRADES})
    if not off:
        return []
    return [f"--grade-map puts grades off goldmine's 0-2 scale: {', '.join(map(str, off))}; "
            "kept as gains for eval, while people (gold review, gold label) and gold agreement "
            "grade 0-2"]  # fmt: skip


def _map_grades(entry: GoldQuery, grade_map: dict[int, int], path: Path) -> GoldQuery:
    unmapped = sorted({g for g in entry.judged.values() if g not in grade_map})
    if unmapped:
        raise InputError(f"--grade-map has no entry for grade(s) {unmapped}", path=path)
    return GoldQuery(
        entry.query_id,
        entry.query,
        {c: grade_map[g] for c, g in entry.judged.items()},
        entry.context,
    )


def add_entries(
    con: duckdb.DuckDBPyConnection,
    entries: list[GoldQuery],
    *,
    origin: str,
    by: str,
    fmt: str,
    path: Path,
) -> Imported:
    """Entries as verified items (an empty or all-zero judgment set means "no answer"); an entry
    whose query id or normalized text an item already has joins that item (``_join_matched``)."""
    result = Imported(format=fmt, path=str(path))
    for e in entries:
        if not e.query:
            raise InputError(f"query {e.query_id!r} has no text", path=path)
    entries = _one_per_text(entries, path, result.notes)
    snapshot_id, _ = current_snapshot(con)
    at = now()
    with transaction(con):
        matches = _match(con, entries, path)
        fresh, seen = [], set(matches)
        for e in entries:
            if e.query_id in seen:
                continue
            seen.add(e.query_id)
            fresh.append(e)
        result.matched = len(matches)
        result.already_present = len(entries) - len(fresh)
        job = _Job(con, result, origin, by, path, at)
        _add_new(job, fresh)
        _join_matched(job, [(matches[e.query_id], e) for e in entries if e.query_id in matches])
    result.labels = result.labels_new + result.labels_same + result.labels_different
    if result.missing_chunks:
        where = f"snapshot {snapshot_id}" if snapshot_id else "the store (no corpus ingested)"
        result.notes.append(
            f"{result.missing_chunks} labelled chunk ids are not in {where}:"
            " `gold drift` lists them"
        )
    return result


def _one_per_text(entries: list[GoldQuery], path: Path, notes: list[str]) -> list[GoldQuery]:
    """A file's queries of one normalized text as one (the first's id, every judgment): two
    verified items would share a text. A chunk they grade two ways is an InputError."""
    first: dict[str, GoldQuery] = {}
    merged: list[tuple[str, str]] = []
    for e in entries:
        norm = normalize_query(e.query)
        held = first.get(norm)
        if held is None:
            first[norm] = GoldQuery(e.query_id, e.query, dict(e.judged), e.context)
            continue
        for chunk, grade in e.judged.items():
            if held.judged.get(chunk, grade) != grade:
                raise InputError(
                    f"queries {held.query_id} and {e.query_id} are one query ({held.query!r}) and "
                    f"grade {chunk} {held.judged[chunk]} and {grade}: keep one grade",
                    path=path,
                )
            held.judged[chunk] = grade
        merged.append((held.query_id, e.query_id))
    if merged:
        pairs = ", ".join(f"{a} and {b}" for a, b in merged[:3])
        more = f" (and {len(merged) - 3} more)" if len(merged) > 3 else ""
        notes.append(
            f"queries {pairs}{more} are one query (the same text but for case, punctuation "
            "and spacing): imported as one item, under the first's id, with both's judgments"
        )
    return list(first.values())


def _match(
    con: duckdb.DuckDBPyConnection, entries: list[GoldQuery], path: Path | None = None
) -> dict[str, str]:
    """Entry query id -> the item it joins: the first item (by position) with the same
    normalized text, so a query typed in by hand and the file's are one item; else the item
    with that id, when it has the same text or either has none. An id the set gives another
    text is another team's numbering (its topic 1 is not ours): an InputError naming both texts
    and ``--id-prefix``, never labels on the wrong query."""
    import polars as pl

    if not entries:
        return {}
    frame = pl.DataFrame(
        {
            "query_id": [e.query_id for e in entries],
            "norm_query": [normalize_query(e.query) if e.query else None for e in entries],
            "query": [e.query for e in entries],
        },
        schema={"query_id": pl.Utf8, "norm_query": pl.Utf8, "query": pl.Utf8},
    )
    with registered(con, gold_import_entries=frame):
        rows = con.execute(
            """SELECT e.query_id, t.query_id, i.query_id,
                      coalesce(e.norm_query, '') = '' OR coalesce(i.norm_query, '') = ''
                          OR i.norm_query = e.norm_query,
                      i.query, e.query
               FROM gold_import_entries e
               LEFT JOIN gold_items i ON i.query_id = e.query_id
               LEFT JOIN (SELECT norm_query, arg_min(query_id, position) AS query_id
                          FROM gold_items GROUP BY norm_query) t
                 ON t.norm_query = e.norm_query
               WHERE i.query_id IS NOT NULL OR t.query_id IS NOT NULL"""
        ).fetchall()
    clashes = [(qid, ours, theirs) for qid, by_text, _, same, ours, theirs in rows
               if by_text is None and not same]  # fmt: skip
    if clashes:
        raise _id_clash(clashes, path)
    return {qid: by_text or by_id for qid, by_text, by_id, *_ in rows}


def _id_clash(clashes: list[tuple[str, str, str]], path: Path | None) -> InputError:
    qid, ours, theirs = clashes[0]
    more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", path.name.split(".")[0]).strip("-") if path else ""
    return InputError(
        f"query id {qid} is {ours!r} in the gold set but {theirs!r} in this file{more}: the "
        "ids are another numbering. Give the file's ids a prefix of their own with --id-prefix "
        f"{stem or 'b'}- (its queries join the set's by text still)",
        path=path,
    )


def prefix_ids(entries: list[GoldQuery], prefix: str | None) -> list[GoldQuery]:
    """The entries with ``--id-prefix`` before each query id."""
    if not prefix:
        return entries
    return [GoldQuery(prefix + e.query_id, e.query, e.judged, e.context) for e in entries]


@dataclass
class _Job:
    """One import's store, report, source and author, as its steps share them."""

    con: duckdb.DuckDBPyConnection
    result: Imported
    origin: str  # import:FILE, the source a dispute names
    by: str
    path: Path
    at: datetime


def _add_new(job: _Job, entries: list[GoldQuery]) -> None:
    """Entries no item has, as new verified items with their labels, in bulk."""
    con, result, origin, by, path, at = (
        job.con, job.result, job.origin, job.by, job.path, job.at
    )  # fmt: skip
    reason = f"imported from {path.name}"
    items, rows, added, verified = [], [], [], []
    for e in entries:
        no_answer = not any(g > 0 for g in e.judged.values())
        result.no_answer += no_answer
        items.append(bulk.item_row(
            query_id=e.query_id, query=e.query, norm_query=normalize_query(e.query),
            context=e.context, no_answer=no_answer, origin=origin, reason=reason,
            sources=["import"], source_ids=[e.query_id], verified_by=by,
            verified_at=at.isoformat(),
        ))  # fmt: skip
        rows.extend((e.query_id, c, g) for c, g in e.judged.items())
        added.append(bulk.history_row(
            e.query_id, "add", {"origin": origin, "reason": reason, "status": "verified"},
            at=at, who=by,
        ))  # fmt: skip
        verified.append(bulk.history_row(e.query_id, "verify", {"no_answer": no_answer}, at=at,
                                         who=by))  # fmt: skip
    result.added = len(items)
    result.labels_new += len(rows)
    graded = _grade_history(sorted(rows), path, by, at)
    snapshot_id, _ = current_snapshot(con)
    bulk.insert_verified_items(con, items, at.isoformat())
    result.missing_chunks += bulk.insert_graded(con, rows, snapshot_id=snapshot_id, by=by, at=at)
    bulk.append_history(con, added + graded + verified)


def _grade_history(rows: list[tuple[str, str, int]], path: Path, by: str, at: datetime) -> list:
    return [
        bulk.history_row(q, "grade", {"chunk_id": c, "grade": g, "source": path.name}, at=at,
                         who=by)
        for q, c, g in rows
    ]  # fmt: skip


# A person's grade of a chunk: their label, or, while it waits for adjudication, the grade its
# candidate carries (``items.reopen``), so a file imported again finds the dispute, not a gap.
_HELD = """(SELECT query_id, chunk_id, who,
                  CASE WHEN kind = 'label' THEN grade ELSE suggested_grade END AS held
           FROM gold_labels WHERE kind = 'label' OR source = 'dispute')"""
# Each matched judgment against the item's: 'same' as a person's grade (a "no answer" item
# counts its unlabelled chunks 0), 'different' from it, or 'new' (no grade on that chunk yet; a
# draft there is replaced). A rejected item is left as a person rejected it.
_CLASSIFY_SQL = f"""
    SELECT n.query_id, n.chunk_id, n.grade, l.held,
           coalesce(l.who, i.verified_by, 'unknown') AS who,
           CASE WHEN l.held = n.grade OR (l.held IS NULL AND i.no_answer AND n.grade = 0)
                     THEN 'same'
                WHEN l.held IS NOT NULL OR i.no_answer THEN 'different'
                ELSE 'new' END AS kind
    FROM gold_import_labels n JOIN gold_items i USING (query_id)
    LEFT JOIN {_HELD} l USING (query_id, chunk_id)
    WHERE i.status != 'rejected'
    ORDER BY n.query_id, n.chunk_id
"""


def _join_matched(job: _Job, matched: list[tuple[str, GoldQuery]]) -> None:
    """Judgments for items already there: new labels written (and the item settled), a grade
    that differs from a person's sent to adjudication with ``origin`` as its source."""
    import polars as pl

    con, result, origin, by, at = job.con, job.result, job.origin, job.by, job.at

    if not matched:
        return
    rows = [(qid, c, g) for qid, e in matched for c, g in e.judged.items()]
    frame = pl.DataFrame(
        rows, schema={"query_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int64}, orient="row"
    )
    with registered(con, gold_import_labels=frame):
        judged = con.execute(_CLASSIFY_SQL).fetchall()
    rejected = con.execute(
        "SELECT count(*) FROM gold_items WHERE status = 'rejected' AND list_contains(?, query_id)",
        [sorted({qid for qid, _ in matched})],
    ).fetchall()[0][0]
    if rejected:
        result.notes.append(
            f"{rejected} of the file's queries match items a person rejected: their judgments "
            "are left out (`goldmine gold list --status rejected`)"
        )
    new = [(q, c, g) for q, c, g, _, _, kind in judged if kind == "new"]
    result.labels_new += len(new)
    result.labels_same += sum(1 for *_, kind in judged if kind == "same")
    different = [(q, c, g, held, who) for q, c, g, held, who, kind in judged if kind == "different"]
    result.labels_different += len(different)
    snapshot_id, _ = current_snapshot(con)
    result.missing_chunks += bulk.insert_graded(con, new, snapshot_id=snapshot_id, by=by, at=at)
    bulk.append_history(con, _grade_history(new, job.path, by, at))
    for qid in sorted({q for q, _, _ in new}):
        settle(con, qid, by, at=at)
    _no_answers(job, matched)
    disputes: dict[str, dict[str, dict[str, int]]] = {}
    for q, c, g, held, who in different:
        sides = disputes.setdefault(q, {})
        sides.setdefault(who, {})[c] = 0 if held is None else held
        sides.setdefault(origin, {})[c] = g
    for qid, sides in disputes.items():
        why = f"{origin} differs from a person's grade"
        result.disputed += dispute(con, qid, sides, by, why, source=origin)
    if result.disputed:
        waits = "query waits" if result.disputed == 1 else "queries wait"
        result.notes.append(
            f"{result.disputed} {waits} for adjudication: the file's grade differs from a "
            "person's, which stays until someone decides (`goldmine gold review --adjudicate`)"
        )


def _no_answers(job: _Job, matched: list[tuple[str, GoldQuery]]) -> None:
    """A file's "no answer" for a matched item: an open item takes it; an item a person found
    answers for goes to adjudication; one already "no answer" stays as it is."""
    con, result, origin, by, at = job.con, job.result, job.origin, job.by, job.at
    said = sorted({qid for qid, e in matched if not any(g > 0 for g in e.judged.values())})
    for qid in said:
        item = get_item(con, qid)
        if item["status"] == "rejected" or item["no_answer"]:
            continue
        answers = con.execute(
            f"SELECT chunk_id, held, coalesce(who, 'unknown') FROM {_HELD}"
            " WHERE query_id = ? AND held > 0 ORDER BY chunk_id",
            [qid],
        ).fetchall()
        if not answers:
            set_no_answer(con, qid, by, at=at)
            result.no_answer += 1
            continue
        sides: dict[str, dict[str, int]] = {origin: {NO_ANSWER: 1}}
        for chunk_id, grade, who in answers:
            sides.setdefault(who, {})[chunk_id] = grade
        why = f"{origin} says no answer where a person graded answers"
        result.disputed += dispute(con, qid, sides, by, why, source=origin)


def restore_version(con: duckdb.DuckDBPyConnection, path: Path) -> Imported:
    """Restore a goldmine version file as published: same number, message, hash and items."""
    rows = json_lines(path)
    if not rows or not _is_header(rows[0][1]):
        raise InputError("a goldmine version file starts with a header line", path=path)
    header = rows[0][1]
    if header.get("format_version", 0) > FORMAT_VERSION:
        raise InputError(
            f"format_version {header['format_version']} is newer than this goldmine reads"
            f" ({FORMAT_VERSION}); upgrade goldmine",
            path=path,
        )
    for key in ("version", "message", "content_hash", "published_at"):
        if key not in header:
            raise InputError(f"the header has no {key!r}", path=path, line=1)
    items = sorted((obj for _, obj in rows[1:]), key=lambda o: str(o.get("query_id")))
    lines = [dump_line(obj) for obj in items]
    digest = content_hash(lines)
    if digest != header["content_hash"]:
        raise InputError(
            f"the items do not match the header's content hash (file has {digest[:12]}…, header "
            f"says {header['content_hash'][:12]}…): was the file edited after export?",
            path=path,
        )
    version = int(header["version"])
    result = Imported(format="goldmine", path=str(path), version=version, content_hash=digest)
    with transaction(con):
        existing = con.execute(
            "SELECT content_hash, message FROM gold_versions WHERE version = ?", [version]
        ).fetchall()
        if existing:
            if existing[0][0] == digest and existing[0][1] == header["message"]:
                result.notes.append(f"v{version} is already in the store with the same content")
                return result
            raise InputError(
                f"a different v{version} is already published in this store (hash "
                f"{existing[0][0][:12]}…, the file has {digest[:12]}…); published versions never "
                "change: import into another store",
                path=path,
            )
        counts = header.get("counts", {})
        snapshot = header.get("snapshot") or {}
        con.execute(
            "INSERT INTO gold_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                version,
                header["message"],
                digest,
                header["published_at"],
                header.get("published_by"),
                header["format_version"],
                len(items),
                counts.get("answerable", sum(1 for i in items if i.get("relevant"))),
                counts.get("no_answer", sum(1 for i in items if not i.get("relevant"))),
                counts.get("labels", sum(len(judged_of(i)) for i in items)),
                snapshot.get("snapshot_id"),
                snapshot.get("content_hash"),
            ],
        )
        insert_version_items(con, version, [i["query_id"] for i in items], lines)
        result.added = _restore_items(con, items)
        result.restored = True
        result.labels = sum(len(judged_of(i)) for i in items)
        result.no_answer = sum(1 for i in items if not i.get("relevant"))
    return result


def _restore_items(con: duckdb.DuckDBPyConnection, items: list[dict]) -> int:
    """Put frozen items back into the working set, in bulk, except those the store has."""
    present = {r[0] for r in con.execute("SELECT query_id FROM gold_items").fetchall()}
    new = [i for i in items if i["query_id"] not in present]
    if not new:
        return 0
    at = now().isoformat()
    rows, labels, history = [], [], []
    for item in new:
        qid, prov = item["query_id"], item.get("provenance") or {}
        rows.append(bulk.item_row(
            query_id=qid, query=item["query"],
            norm_query=item.get("norm_query") or normalize_query(item["query"]),
            context=item.get("context"), cluster_id=prov.get("cluster_id"),
            no_answer=bool(item.get("no_answer")), tags=item.get("tags") or [],
            origin=prov.get("origin") or "import", reason=prov.get("reason"),
            sources=prov.get("sources") or [], source_ids=prov.get("source_ids") or [],
            frequency=prov.get("frequency"), first_seen=prov.get("first_seen"),
            last_seen=prov.get("last_seen"), notes=item.get("notes") or [],
            verified_by=item.get("verified_by"), verified_at=item.get("verified_at"),
        ))  # fmt: skip
        hashes, labelled = item.get("label_text_hashes") or {}, item.get("labelled") or {}
        for chunk_id, grade in sorted(judged_of(item).items()):
            meta = labelled.get(chunk_id) or {}
            when = meta.get("at") or item.get("verified_at") or at
            labels.append(
                (qid, chunk_id, grade, hashes.get(chunk_id), meta.get("snapshot_id"),
                 meta.get("by"), when, meta.get("source"))
            )  # fmt: skip
        history += [
            bulk.history_row(qid, h["action"], h.get("detail") or {}, at=h["at"], who=h.get("by"))
            for h in item.get("history") or []
        ]
    bulk.insert_verified_items(con, rows, at)
    bulk.insert_labels(con, labels)
    bulk.append_history(con, history)
    return len(new)
