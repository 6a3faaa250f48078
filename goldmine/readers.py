"""Readers for gold sets and runs in the formats users already have, detected from content.

Gold: TREC qrels, BEIR qrels (TSV, or JSON lines and Parquet of ``query-id, corpus-id, score`` as
BEIR's and MTEB's Hugging Face repos serve them), goldmine gold JSONL (including exported
versions, whose first line is a header), and a plain JSON object mapping a query to its relevant
ids (the seed lesson's ``gold`` dict). Runs: TREC run files, JSONL, CSV/Parquet with
``query_id, doc_id`` and ``rank`` or ``score``, and a JSON object mapping a query to its ranked
ids (the seed's ``runs`` dict).

These readers are pure Python on purpose: at the sizes a gold set and most runs have, the start-up
of a columnar library costs more than the parse. Large TREC files go to ``goldmine.frames``, and
qrels given as records (BEIR's JSON lines, Parquet) are checked column-wise in polars
(``qrels_frame``, ``judge_frame``), which a Parquet file is read with anyway. Every parse error
names the file and the line (or a Parquet file's row).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import InputError
from goldmine.files import json_objects, lines_of, open_unpacked, require_file, unpacked
from goldmine.gold import GRADE_LIMIT, Gold, GoldQuery, Run
from goldmine.gold_records import (
    RELEVANT_KEYS,
    RESULT_KEYS,
    RUN_ITEM_ID_KEYS,
    is_json_array,
    is_llamaindex,
    item_grade,
    item_id,
    json_records,
    llamaindex_records,
    query_id,
    query_text,
    relevant_key,
    result_key,
)

if TYPE_CHECKING:
    import polars as pl

GOLD_FORMATS = ("trec", "beir", "jsonl", "json", "parquet")
RUN_FORMATS = ("trec", "jsonl", "csv", "parquet", "json", "msmarco")

# Where a result object (a search service's hit, a vector store's match) keeps its id: its
# chunk_id (a gold set's ids are chunk ids), else id, _id or id_ (a LlamaIndex node's), else
# doc_id, each looked for beside it first and then in its nested document (a LlamaIndex
# NodeWithScore's node). One rule for a search log's results (ingest's
# ``gm_result_id``) and an HTTP retriever's answer (``eval.sources``).
RESULT_ID_KEYS = (("chunk_id",), ("id", "_id", "id_"), ("doc_id", "docid"))
RESULT_NESTED = ("document", "doc", "metadata", "payload", "fields", "_source", "node")
# Where a result object keeps its score: Elasticsearch's _score, Vespa's relevance, Cohere's
# relevance_score, a vector store's similarity.
RESULT_SCORE_KEYS = ("score", "_score", "relevance", "relevance_score", "similarity")
# A Vespa document id, id:namespace:doctype::user-id: the user's id is what a gold set names.
VESPA_ID = re.compile(r"id:[^:]*:[^:]*:[^:]*:(.+)")
# The ids a search engine or vector store gives its own records (an Elasticsearch _id, a Qdrant
# point's UUID), which a chunk id in the record's document comes before.
_ENGINE_ID_KEYS = ("id", "_id")

_ID_KEYS = ("query_id", "qid", "query-id", "id", "_id")
_DOC_KEYS = ("doc_id", "docid", "chunk_id", "corpus-id", "corpus_id", "docno", "id")


def read_bytes(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their sha256; a missing or unreadable file is an InputError."""
    require_file(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise InputError("no such file", path=path) from exc
    except IsADirectoryError as exc:
        raise InputError("is a folder, not a file", path=path) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    return unpacked(data, path), hashlib.sha256(data).hexdigest()


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def decode_text(data: bytes, path: Path) -> str:
    """The file's text as UTF-8 (a BOM dropped), as trec_eval and BEIR read it; UTF-16 (what
    Excel's "Unicode Text" and PowerShell's ``>`` write) is named, so the fix is plain."""
    if data[:2] in _UTF16_BOMS:
        raise InputError("is UTF-16 text (it starts with a UTF-16 byte order mark): save it as "
                         "UTF-8", path=path)  # fmt: skip
    head = data[:1024]
    if head and head.count(0) * 3 >= len(head):  # ASCII in UTF-16: every other byte is NUL
        raise InputError("holds a NUL byte every other byte: UTF-16 text without its byte order "
                         "mark? save it as UTF-8", path=path)  # fmt: skip
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _not_utf8(data, exc.start, path, line) from exc


def _not_utf8(data: bytes, at: int, path: Path, line: int) -> InputError:
    """What a file that is no UTF-8 looks like: binary (control bytes past a few), or text in
    another encoding (a byte of Latin-1's or Windows-1252's accented letters)."""
    head = data[:4096]
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13))
    if controls * 20 > len(head):
        return InputError(
            "is not text (binary bytes in its first 4 KB): a run or a gold file is text "
            "(TREC lines, JSON lines, CSV/TSV) or Parquet",
            path=path,
        )
    return InputError(
        f"byte 0x{data[at]:02x} at line {line} is no UTF-8 (Latin-1 or Windows-1252 text?): "
        "save it as UTF-8",
        path=path,
        line=line,
    )


def _lines(text: str):
    """(line number, stripped line) for non-blank lines; CRLF tolerated."""
    for number, line in enumerate(lines_of(text), start=1):
        stripped = line.strip()
        if stripped:
            yield number, stripped


def _records(text: str):
    """``_lines`` without comment lines: trec_eval skips a line that starts with '#' in qrels
    and runs alike."""
    return ((number, line) for number, line in _lines(text) if not line.startswith("#"))


def first_line(text: str) -> str:
    return next((line for _, line in _records(text)), "")


# What a qrels header row calls the grade column.
_GRADE_NAMES = frozenset({"rel", "relevance", "relevant", "grade", "label", "judgment",
                          "judgement", "rating", "score", "qrel", "y"})  # fmt: skip


def is_qrels_header(fields: list[str]) -> bool:
    """Whether a qrels file's first line names its columns (``qid iter docno rel``, or ``qid
    docno rel`` for three) instead of holding a judgment: its id is no number and its grade
    one of the names a grade column goes by. trec_eval has no header; a file that carries one
    is read after it."""
    return (
        len(fields) in (3, 4)
        and not _parses(fields[0], float)
        and fields[-1].lower() in _GRADE_NAMES
    )


SMART_RELEVANCE = (
    "read as a SMART collection's relevance file (query, document, 0, 0: CISI.REL, CACM's "
    "qrels.text): each listed document is relevant, grade 1"
)


def smart_relevance(rows: Iterable[list[str]]) -> bool:
    """Whether four-column judgments are a SMART collection's relevance file (``qid docid 0
    0.000000``, as CISI.REL and CACM's qrels.text list each query's relevant documents) rather
    than TREC qrels: the third column, TREC's doc id, is ``0`` on every line and so is the
    grade, while the second varies. Read as TREC qrels, every query would be a no-answer judged
    on a document named ``0``."""
    seconds = set()
    for fields in rows:
        if len(fields) != 4 or fields[2] != "0" or not _parses(fields[3], float):
            return False
        if float(fields[3]) != 0:
            return False
        seconds.add(fields[1])
    return len(seconds) > 1


def _is_run_header(fields: list[str]) -> bool:
    """A TREC run's header row (``qid Q0 docno rank score tag``): its rank and score are words."""
    return len(fields) >= 6 and fields[3].isalpha() and fields[4].isalpha()


def _data_fields(text: str, header: Callable[[list[str]], bool]) -> list[str]:
    """The fields of a TREC file's first record, after a header row if it has one."""
    records = (line.split() for _, line in _records(text))
    first = next(records, [])
    return next(records, []) if header(first) else first


def _parses(token: str, kind: type = int) -> bool:
    """Whether ``kind(token)`` succeeds: an int, or any number with ``float``."""
    try:
        kind(token)
    except ValueError:
        return False
    return True


def _looks_like_json_object(text: str) -> bool:
    return text.lstrip().startswith("{")


def _json_kind(text: str, markers: frozenset[str]) -> str:
    """'jsonl' (one object a line) or 'json' (one document, e.g. a dict of query -> ids)."""
    first = first_line(text)
    try:
        obj = json.loads(first)
    except ValueError:
        return "json"  # the first line alone is not a document: pretty-printed JSON
    if isinstance(obj, dict) and (markers & obj.keys() or "format_version" in obj):
        return "jsonl"
    return "json" if first == text.strip() else "jsonl"


_GOLD_MARKERS = frozenset({"query_id", "qid", "query", "question", "no_answer", *RELEVANT_KEYS})
_RUN_MARKERS = frozenset({"query_id", "qid", "query", "question", *RESULT_KEYS})


# ----------------------------------------------------------------------------- gold


# What eval run reads as judgments, for the errors that say so.
GOLD_LAYOUTS = ("TREC qrels 'qid 0 docid grade', BEIR qrels (TSV, JSON lines or Parquet), "
                "goldmine gold JSONL or a JSON object of query -> ids")  # fmt: skip


def detect_gold_format(text: str) -> str:
    first = first_line(text)
    if not first:
        raise InputError("holds no judgment (it is empty, or only # comment lines)")
    foreign = foreign_judgments(text)
    if foreign:
        raise InputError(f"{foreign}: eval run reads {GOLD_LAYOUTS}")
    if is_json_array(text):
        return "json"  # an array of gold records (DPR's retriever files)
    if _looks_like_json_object(text):
        first = _first_object(text)
        if is_qrels_record(first):
            return "jsonl"
        if is_llamaindex(first):
            return "json"
        return _json_kind(text, _GOLD_MARKERS)
    fields = _data_fields(text, is_qrels_header)
    if not fields:
        raise InputError("holds no judgment (a header row and nothing after it)")
    if len(fields) in (3, 4) and ntcir_level(fields[-1]) is not None:
        raise InputError(
            f"grades written as NTCIR levels ({fields[-1]}): eval run reads numbers; import the "
            "file with goldmine gold import --grade-map L0=0,L1=1,L2=2,L3=2 (as the levels "
            "read on your scale), publish, and score --gold latest"
        )
    if len(fields) == 4 and _parses(fields[3], float):
        return "trec"
    if "\t" in first and any(k in first.lower() for k in ("query-id", "query_id", "qid")):
        return "beir"
    if len(fields) == 3 and _parses(fields[2], float):
        return "beir"  # qid docid grade: a BEIR qrels file without its header, or cranqrel
    if looks_like_trec_run(_data_fields(text, _is_run_header)):
        raise InputError(
            "this is a TREC run ('qid Q0 docid rank score tag'), not judgments: pass it as --run "
            "and the qrels as --gold"
        )
    raise InputError(f"cannot tell the gold format (expected {GOLD_LAYOUTS}); pass --gold-format")


# NTCIR's qrels grade by relevance level, L0 (not relevant) up, L-1 where a page was not judged.
NTCIR_LEVEL = re.compile(r"L(-?\d+)")


def ntcir_level(token: str) -> int | None:
    """The level an NTCIR grade (``L2``) names, or None for any other token."""
    token = token.strip()
    found = NTCIR_LEVEL.fullmatch(token) if token.startswith("L") else None
    return int(found.group(1)) if found else None


def foreign_judgments(text: str) -> str | None:
    """What a file is when it holds judgments in a layout no reader here takes (a spreadsheet's
    CSV, a Label Studio export, another JSON array), said so rather than misread; else None."""
    head = text[: 1 << 16]  # the first line is all the CSV test reads
    if head.lstrip().startswith("["):
        try:
            obj = json.loads(text)
        except ValueError:
            return None  # the readers say where the JSON breaks
        tasks = isinstance(obj, list) and obj and isinstance(obj[0], dict)
        if tasks and ("annotations" in obj[0] or "predictions" in obj[0]):
            return "is a Label Studio export (tasks with annotations), which goldmine does not read"
        if tasks and relevant_key(obj[0]) is not None:
            return None  # gold lines in one array (DPR's retriever files)
        return "is a JSON array, which is no judgments layout goldmine reads"
    first = first_line(head)
    other = _not_judgments(head, first)
    if other:
        return other
    if first.startswith("{") or "\t" in first:
        return None
    if is_delimited(first):
        return (
            "looks comma-separated (a spreadsheet's CSV): gold import reads one whose header "
            "names the query, the document and its grade, then eval scores the set"
        )
    return None


def is_delimited(first: str, cut: str = ",") -> bool:
    """Whether a file's first line is cut by ``cut`` into a spreadsheet's cells ("text,category"
    too, banking77's header) rather than by spaces into qrels' columns, whose doc id may hold a
    comma."""
    words = first.split()
    return (first.count(cut) >= 2 and not _parses(words[-1], float)) or (
        cut in first and len(words) < 3
    )


_SMART_FIELD = re.compile(r"^\.I\s+\d+\s*$")


def _not_judgments(head: str, first: str) -> str | None:
    """A collection's documents or its topics, given where judgments go: what it is and where
    it goes. They were read as TREC qrels, then "expected 4 columns"."""
    if first.startswith(("{", "[")):  # JSON: its texts may hold anything
        return None
    if _SMART_FIELD.match(first):
        return ("is a SMART collection's documents or queries (.I/.W fields), not judgments: "
                "documents go to goldmine ingest corpus, queries to gold import's --topics; the "
                "judgments are the relevance file (Cranfield's cranqrel)")  # fmt: skip
    lowered = head[:4096].lower()
    if "<doc>" in lowered and "<docno>" in lowered:
        return "is a TREC document collection, not judgments: goldmine ingest corpus reads it"
    if "<top>" in lowered or "<topic " in lowered or "<topics" in lowered:
        return "is a topics file, not judgments: gold import takes it as --topics, beside the qrels"
    fields = first.split("\t")
    words = fields[-1].split()
    # an id, then words that end in no grade (qrels with a tab between "1 0" and "d1 2" are not)
    if (len(fields) == 2 and len(fields[0].split()) == 1 and len(words) >= 2
            and not _parses(words[-1], float)):  # fmt: skip
        return ("looks like topics (id<TAB>text), not judgments: gold import takes it as "
                "--topics, beside the qrels")  # fmt: skip
    return None


def _first_object(text: str) -> dict:
    try:
        obj = json.loads(first_line(text))
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def looks_like_trec_run(fields: list[str]) -> bool:
    """Whether a line's fields are a TREC run's: six or more, with a score, and a rank that is a
    number or follows Q0 (trec_eval never reads the rank: '1.0' or '-' there is no error)."""
    ranked = _parses(fields[3], float) or fields[1] in ("Q0", "0") if len(fields) >= 6 else False
    return ranked and _parses(fields[4], float)


def run_format_of(path: Path) -> str:
    """A run file's format, detected from its head (a large file is not read whole for it)."""
    data, _ = read_bytes(path) if path.stat().st_size < 1 << 16 else (b"", "")
    if not data:
        with open_unpacked(path) as handle:
            data = handle.read(1 << 16)
    text = None if data[:4] == b"PAR1" else data.decode("utf-8", errors="replace")
    try:
        return detect_run_format(data, text)
    except InputError as exc:
        raise InputError(exc.message, path=path) from None


def read_gold(path: str | Path, fmt: str | None = None) -> Gold:
    """Read a gold set from a file, detecting its format unless ``fmt`` is given."""
    path = Path(path)
    if path.is_dir() and (path / "qrels").is_dir():
        found = sorted((path / "qrels").iterdir())
        example = found[0] if found else path / "qrels" / "test.tsv"
        raise InputError(f"is a BEIR folder: pass its qrels file, e.g. --gold {example}", path=path)
    if fmt in (None, "trec") and _is_large(path):
        from goldmine.frames import read_trec_qrels

        gold = read_trec_qrels(path)
        if gold is not None:
            return gold
    data, digest = read_bytes(path)
    if data[:4] == b"PAR1" and fmt in (None, "parquet"):
        return _gold_records(*qrels_frame(path), path, digest, fmt="parquet")
    text = decode_text(data, path)
    if fmt is None:
        try:
            fmt = detect_gold_format(text)
        except InputError as exc:
            raise InputError(exc.message, path=path) from None
    readers = {
        "trec": _gold_trec,
        "beir": _gold_beir,
        "jsonl": _gold_jsonl,
        "json": _gold_json,
        "parquet": _not_parquet,
    }
    if fmt not in readers:
        raise InputError(f"unknown gold format {fmt!r}; expected one of {', '.join(GOLD_FORMATS)}")
    gold = readers[fmt](text, path)
    gold.hash = digest if gold.hash == "" else gold.hash
    gold.source = str(path)
    if not gold.queries:
        raise InputError("the gold set is empty", path=path)
    return gold


LARGE_FILE_BYTES = 8 * 1024 * 1024  # above this, a columnar reader beats a Python loop


def _is_large(path: Path) -> bool:
    try:
        return path.stat().st_size >= LARGE_FILE_BYTES
    except OSError:
        return False  # read_bytes will say what is wrong with it


def read_grade(value: object, path: Path, line: int) -> int:
    """A grade as every reader takes it: a whole number (``_whole``) within ``GRADE_LIMIT``."""
    number = _whole(value)
    if number is None:
        raise InputError(f"grade must be an integer, got {value!r}", path=path, line=line)
    return _in_range(number, path, line)


def _whole(value: object) -> int | None:
    """``value`` as a whole number (an int, an integral float, '3' read exactly, or '2.0' as a
    frame's float column writes a grade); None for anything else, a bool included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _parses(text):
            return int(text)  # exact: a float would round a long one
        value = float(text) if _parses(text, float) else None
    return int(value) if isinstance(value, float) and value.is_integer() else None


def _in_range(grade: int, path: Path, line: int) -> int:
    if abs(grade) > GRADE_LIMIT:
        raise InputError(
            f"grade {grade} is past any scale (at most {GRADE_LIMIT:,} either way)",
            path=path,
            line=line,
        )
    return grade


def judge(
    judged: dict[str, int],
    qid: str,
    doc: str,
    grade: int,
    *,
    path: Path,
    line: int,
    lines: str | list[str],
) -> None:
    """Record ``doc``'s grade for query ``qid``, read at ``line`` of a qrels file whose text or
    lines are ``lines``. The same grade again is one judgment; another grade is an InputError
    naming both lines: trec_eval refuses a repeated judgment, and keeping either grade would
    change the figures without a word. The first line is looked up only then."""
    held = judged.get(doc)
    if held is not None and held != grade:
        rows = lines_of(lines) if isinstance(lines, str) else lines
        first = next(
            (str(n) for n, row in enumerate(rows, 1)
             if (f := row.split()) and len(f) >= 3 and f[0] == qid and f[-2] == doc),
            "an earlier line",
        )  # fmt: skip
        raise judged_twice(qid, doc, (held, grade), first, path=path, line=line)
    judged[doc] = grade


def judged_twice(
    qid: str,
    doc: str,
    grades: tuple[object, object],
    first: object,
    *,
    path: Path,
    line: int,
    unit: str = "line",
) -> InputError:
    """The error for a judgment given twice with two grades, at ``first`` and ``line`` (lines
    of a text file, rows of a Parquet one): one wording for every qrels layout."""
    held, grade = grades
    where = f"{unit}s {first} and {line}" if str(first) != str(line) else f"{unit} {line}"
    return InputError(
        f"{doc} is judged twice for query {qid} with different grades ({where}: {held}, "
        f"then {grade}); keep the {unit} that holds",
        path=path,
        line=line,
    )


# The columns (or JSON keys) of a qrels file of records, one judgment each: BEIR's and MTEB's
# JSON lines and Parquet (query-id, corpus-id, score), and gold export --format hf's
# judgments.parquet (query_id, doc_id, grade).
QRELS_QUERY_KEYS = ("query-id", "query_id", "qid")
QRELS_DOC_KEYS = ("corpus-id", "corpus_id", "doc_id", "docid", "docno", "chunk_id")
QRELS_GRADE_KEYS = ("score", "grade", "relevance", "rel", "label")
_QRELS_KEYS = (QRELS_QUERY_KEYS, QRELS_DOC_KEYS, QRELS_GRADE_KEYS)


_RELEVANT = frozenset(RELEVANT_KEYS)


def is_qrels_record(obj: dict) -> bool:
    """Whether a JSON object is one judgment (BEIR's ``{"query-id", "corpus-id", "score"}``)
    rather than a gold line listing a query's ``relevant`` chunks."""
    return not (_RELEVANT & obj.keys()) and all(any(k in obj for k in keys) for keys in _QRELS_KEYS)


def qrels_frame(path: Path, text: str | None = None) -> tuple[pl.DataFrame, str]:
    """A JSON lines or Parquet qrels file as a frame of judgments (``place``, ``qid``, ``doc``,
    ``grade`` as text) and what a place is ("line" or "row"). Ids are the text they print as:
    ``"query-id": 1`` is the query "1"; a Parquet id column of floats (``1.0``) is refused, its
    text being lost."""
    import polars as pl

    if text is None:
        data, _ = read_bytes(path)
        if data[:4] == b"PAR1":
            return _parquet_frame(path), "row"
        text = decode_text(data, path)
    rows = []
    for number, obj in json_objects(lines_of(text), path):
        if not is_qrels_record(obj):
            raise InputError(
                f"a qrels line needs {QRELS_QUERY_KEYS[0]}, {QRELS_DOC_KEYS[0]} and "
                f"{QRELS_GRADE_KEYS[0]} (BEIR's keys); found {', '.join(obj) or 'none'}",
                path=path,
                line=number,
            )
        qid, doc, grade = (next(obj[k] for k in names if k in obj) for names in _QRELS_KEYS)
        written = grade if isinstance(grade, str) else json.dumps(grade)  # 2, 2.0, true, null
        rows.append((number, record_id(qid, path, number), record_id(doc, path, number), written))
    schema = {"place": pl.Int64, "qid": pl.String, "doc": pl.String, "grade": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row"), "line"


def _parquet_frame(path: Path) -> pl.DataFrame:
    import polars as pl

    try:
        columns = pl.read_parquet_schema(path)
    except Exception as exc:  # polars raises several types for a damaged file
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    names = [_pick(list(columns), keys) for keys in _QRELS_KEYS]
    if None in names:
        raise InputError(
            f"a Parquet qrels file needs {QRELS_QUERY_KEYS[0]} (or query_id), "
            f"{QRELS_DOC_KEYS[0]} (or doc_id) and {QRELS_GRADE_KEYS[0]} (or grade) columns; "
            f"found {', '.join(columns)}",
            path=path,
        )
    for name in names:
        _readable_column(name, columns[name], grade=name == names[2], path=path)
    frame = pl.read_parquet(path, columns=names).with_row_index("place", offset=1)
    frame = frame.select(
        pl.col("place").cast(pl.Int64),
        *(pl.col(n).cast(pl.String).str.strip_chars().alias(a)
          for n, a in zip(names, ("qid", "doc", "grade"), strict=True)),
    )  # fmt: skip
    missing = frame.filter(pl.col("qid").fill_null("").eq("") | pl.col("doc").fill_null("").eq(""))
    if missing.height:
        raise InputError("a query id or doc id is empty", path=path, line=missing["place"][0])
    return frame


def _readable_column(name: str, dtype: pl.DataType, *, grade: bool, path: Path) -> None:
    """An id column holds text or whole numbers (a float's 1.0 has lost the id's text); a grade
    column numbers or text, checked as grades after."""
    import polars as pl

    text = dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)
    fits = text or dtype.is_integer() or (grade and (dtype.is_numeric() or dtype == pl.Boolean))
    if not fits:
        what = "grades" if grade else "ids, text or whole numbers (1.0 is not the id 1)"
        raise InputError(f"the {name} column holds {dtype}, not {what}", path=path)


def judge_frame(frame: pl.DataFrame, path: Path, unit: str) -> dict[str, dict[str, int]]:
    """Judgments by query from a ``qrels_frame`` (its ids checked there), checked column-wise
    as every reader checks them: grades whole numbers within GRADE_LIMIT (``read_grade`` words
    the error), and a judgment given twice with two grades refused naming both places."""
    import polars as pl

    number = pl.col("grade").str.strip_chars().cast(pl.Float64, strict=False)
    bad = frame.filter(no_grade(number)).head(1)
    if bad.height:
        place, value = bad["place"][0], bad["grade"][0]
        read_grade(value, path, place)  # raises with the readers' words
        raise InputError(f"grade {value!r} is not a whole number in range", path=path, line=place)
    graded = frame.with_columns(grade=number.cast(pl.Int64))
    refuse_twice(graded, path, unit)
    key = ["qid", "doc"]
    grouped = (
        graded.unique(subset=key, keep="first", maintain_order=True)
        .group_by("qid", maintain_order=True)
        .agg("doc", "grade")
    )
    return {q: dict(zip(d, g, strict=True)) for q, d, g in grouped.iter_rows()}


def no_grade(number: pl.Expr) -> pl.Expr:
    """``read_grade``'s rule column-wise, over a grade cast to float: none, not whole, or past
    GRADE_LIMIT (inf and nan included), so no grade."""
    return number.is_null() | (number != number.floor()) | (number.abs() > GRADE_LIMIT)


def refuse_twice(
    frame: pl.DataFrame, path: Path, unit: str, names: tuple[str, ...] = ("qid", "doc")
) -> None:
    """``judge`` over a frame of judgments in file order (the query and doc columns ``names``,
    ``grade``, ``place``): a judgment given again with another grade is refused naming both
    places; the same grade again is one judgment."""
    import polars as pl

    key = list(names)
    clash = frame.filter(pl.col(key[1]).is_not_null()).with_columns(
        held=pl.col("grade").first().over(key), first=pl.col("place").first().over(key)
    ).filter(pl.col("grade") != pl.col("held")).head(1)  # fmt: skip
    if clash.height:
        row = clash.row(0, named=True)
        raise judged_twice(row[key[0]], row[key[1]], (row["held"], row["grade"]), row["first"],
                           path=path, line=row["place"], unit=unit)  # fmt: skip


def record_id(value: object, path: Path, place: int) -> str:
    """An id as the text it prints as (a JSON number 1 is "1"); none or empty is an error."""
    if value is None or isinstance(value, bool | dict | list) or str(value).strip() == "":
        raise InputError(f"a query id or doc id is {value!r}, not an id", path=path, line=place)
    return str(value).strip()


def _gold_trec(text: str, path: Path) -> Gold:
    queries: dict[str, GoldQuery] = {}
    smart = smart_relevance(
        fields
        for _, line in _records(text)
        if (fields := line.split()) and not is_qrels_header(fields)
    )
    for number, line in _records(text):
        fields = line.split()
        if not queries and is_qrels_header(fields):
            continue
        if smart:  # query, document, 0, 0: the document is relevant
            fields = [fields[0], "0", fields[1], "1"]
        if len(fields) != 4:
            raise InputError(
                f"expected 4 fields 'qid iteration docid grade', got {len(fields)}"
                + (" (a doc id holds no space in TREC qrels)" if len(fields) > 4 else ""),
                path=path,
                line=number,
            )
        qid, _, doc, grade = fields
        query = queries.get(qid)
        if query is None:
            query = queries[qid] = GoldQuery(qid, None)
        try:
            value = _in_range(int(grade), path, number)
        except ValueError:
            value = read_grade(grade, path, number)
        judge(query.judged, qid, doc, value, path=path, line=number, lines=text)
    return Gold(queries, str(path), "", "trec")


def _gold_beir(text: str, path: Path) -> Gold:
    queries: dict[str, GoldQuery] = {}
    for number, line in _records(text):
        fields = line.split("\t") if "\t" in line else line.split()
        if not queries and (
            fields[0].strip().lower() in ("query-id", "query_id", "qid") or is_qrels_header(fields)
        ):
            continue  # the header
        if len(fields) != 3:
            raise InputError(
                f"expected 3 tab-separated fields 'query-id corpus-id score', got {len(fields)}",
                path=path,
                line=number,
            )
        qid, doc, grade = (f.strip() for f in fields)
        query = queries.setdefault(qid, GoldQuery(qid, None))
        grade_ = read_grade(grade, path, number)
        judge(query.judged, qid, doc, grade_, path=path, line=number, lines=text)
    return Gold(queries, str(path), "", "beir")


def read_relevant(value: object, path: Path, line: int) -> dict[str, int]:
    """A list of ids (grade 1 each), an object id -> grade, or a list of {id, grade} objects."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(doc): read_grade(grade, path, line) for doc, grade in value.items()}
    if isinstance(value, list):
        judged: dict[str, int] = {}
        for item in value:  # a whole float id (7.0, from a frame) is its integer, as in a run
            if isinstance(item, str | int) and not isinstance(item, bool) or _whole_float(item):
                judged.setdefault(id_text(item), 1)
            elif isinstance(item, dict) and item_id(item) is not None:
                doc = id_text(item_id(item))
                grade = read_grade(item_grade(item), path, line)
                if judged.get(doc, grade) != grade:
                    raise InputError(
                        f"{doc} is listed twice with different grades ({judged[doc]}, then "
                        f"{grade}); keep the one that holds",
                        path=path,
                        line=line,
                    )
                judged[doc] = grade
            else:
                raise InputError(
                    f"relevant entries must be ids or {{id, grade}} objects, got {item!r}",
                    path=path,
                    line=line,
                )
        return judged
    raise InputError(
        f"'relevant' must be a list of ids or an object id -> grade, got {type(value).__name__}",
        path=path,
        line=line,
    )


def _gold_records(
    frame: pl.DataFrame, unit: str, path: Path, digest: str = "", fmt: str = "beir"
) -> Gold:
    """Qrels given as records, one judgment each (BEIR's JSON lines, Parquet)."""
    judged = judge_frame(frame, path, unit)
    if not judged:
        raise InputError("the gold set is empty", path=path)
    queries = {qid: GoldQuery(qid, None, docs) for qid, docs in judged.items()}
    return Gold(queries, str(path), digest, fmt)


def _not_parquet(text: str, path: Path) -> Gold:
    raise InputError("--gold-format parquet: this is no Parquet file", path=path)


def _gold_jsonl(text: str, path: Path) -> Gold:
    if is_qrels_record(_first_object(text)):  # BEIR's qrels as JSON lines: a judgment a line
        return _gold_records(*qrels_frame(path, text), path)
    return _gold_lines(json_records(text, path), path)


def _gold_lines(records: list[tuple[int, dict]], path: Path, fmt: str = "jsonl") -> Gold:
    """Gold lines (``gold_records``' keys), numbered by their place in the file."""
    queries: dict[str, GoldQuery] = {}
    version = None
    content_hash = ""
    by_text = False
    for number, obj in records:
        if "format_version" in obj and "query_id" not in obj:
            version = obj.get("version")
            content_hash = str(obj.get("content_hash") or obj.get("hash") or "")
            continue
        qid, text_ = query_id(obj), query_text(obj)
        if qid is None and text_ is None:
            raise InputError("a gold line needs 'query_id' or 'query'", path=path, line=number)
        judged = _judged_line(obj, path, number)
        if qid is None:
            by_text = True
        key = id_text(qid) if qid is not None else str(text_)
        if key in queries:
            raise InputError(f"query {key!r} appears twice", path=path, line=number)
        queries[key] = GoldQuery(
            key,
            None if text_ is None else str(text_),
            judged,
            obj.get("context") if isinstance(obj.get("context"), str) else None,
        )
    gold = Gold(queries, str(path), content_hash, fmt, keyed_by_text=by_text)
    if version is not None:
        gold.version = int(version)
    return gold


def _judged_line(obj: dict, path: Path, line: int) -> dict[str, int]:
    """A gold line's judgments, in the spellings gold import takes: ``relevant`` (or another
    of ``gold_records.RELEVANT_KEYS``), or ``"no_answer": true`` for a query the corpus cannot
    answer."""
    key = relevant_key(obj)
    no_answer = obj.get("no_answer") is True
    if key is None and not no_answer:
        raise InputError(
            "a gold line needs 'relevant' (a list of ids, an object id -> grade, "
            "or [] for 'no answer') or \"no_answer\": true",
            path=path,
            line=line,
        )
    judged = read_relevant(obj[key], path, line) if key else {}
    if no_answer and any(g > 0 for g in judged.values()):
        raise InputError(
            "says no_answer but lists relevant chunks: one or the other", path=path, line=line
        )
    return judged


def _load_json(text: str, path: Path) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None


def _gold_json(text: str, path: Path) -> Gold:
    if is_json_array(text):  # DPR's files: an array of gold lines
        return _gold_lines(json_records(text, path), path, "json")
    obj = _load_json(text, path)
    if is_llamaindex(obj):
        return _gold_lines(llamaindex_records(obj, path)[0], path, "json")
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object mapping each query to its relevant ids", path=path)
    if obj and all(isinstance(judged, dict) for judged in obj.values()):
        # ranx's and pytrec_eval's qrels, {query_id: {doc_id: grade}} (gold export --format
        # ranx): keyed by id, with no text a retriever could be asked.
        queries = {
            str(qid): GoldQuery(str(qid), None, read_relevant(judged, path, 1))
            for qid, judged in obj.items()
        }
        return Gold(queries, str(path), "", "json")
    queries = {
        str(query): GoldQuery(str(query), str(query), read_relevant(ids, path, 1))
        for query, ids in obj.items()
    }
    return Gold(queries, str(path), "", "json", keyed_by_text=True)


# ----------------------------------------------------------------------------- runs


def detect_run_format(data: bytes, text: str | None) -> str:
    if data[:4] == b"PAR1":
        return "parquet"
    assert text is not None
    if not text.strip():
        raise InputError("the run file is empty: it ranks nothing for any query")
    if not first_line(text):  # "cannot tell the run format … pass --run-format" said nothing
        raise InputError("the run file holds only # comment lines: it ranks nothing")
    if is_json_array(text):
        return "jsonl"  # one array of run lines (DPR's retriever output)
    if _looks_like_json_object(text):
        return _json_kind(text, _RUN_MARKERS)
    first = first_line(text)
    fields = _data_fields(text, _is_run_header)
    if looks_like_trec_run(fields):
        return "trec"
    if _looks_like_msmarco_run(first):
        return "msmarco"
    qrels = _data_fields(text, is_qrels_header)
    if len(qrels) == 4 and qrels[1] in ("0", "Q0") and _parses(qrels[3], float):
        raise _qrels_as_run()
    if "," in first or "\t" in first or ";" in first:
        return "csv"
    if len(fields) == 5 and _parses(fields[3]) and _parses(fields[4], float):
        raise InputError(
            "a TREC run line has 6 fields 'qid Q0 docid rank score tag'; this one has 5 fields: "
            "is the run tag missing? add one (any word) at the end of each line"
        )
    if len(qrels) == 4 and _parses(qrels[3], float):
        raise _qrels_as_run()
    raise InputError(
        "cannot tell the run format (expected a TREC run 'qid Q0 docid rank score tag', JSONL, "
        "CSV/Parquet with query_id, doc_id and rank or score, or a JSON object of query -> ids); "
        "pass --run-format"
    )


def _qrels_as_run() -> InputError:
    return InputError(
        "this is TREC qrels ('qid 0 docid grade'), judgments rather than a ranking: pass it "
        "as --gold and the run as --run (in Python: evaluate(gold, run), gold first)"
    )


def read_run(path: str | Path, fmt: str | None = None) -> Run:
    """Read a run file into ranked ids per query, ordered as trec_eval would order them."""
    path = Path(path)
    data, digest = read_bytes(path)
    text = None if data[:4] == b"PAR1" else decode_text(data, path)
    if fmt is None:
        try:
            fmt = detect_run_format(data, text)
        except InputError as exc:
            raise InputError(exc.message, path=path) from None
    if fmt == "parquet":
        run = _run_parquet(path)
    else:
        if text is None:
            raise InputError(f"a Parquet file cannot be read as {fmt}", path=path)
        if not text.strip():
            raise InputError("the run file is empty: it ranks nothing for any query", path=path)
        readers = {"trec": _run_trec, "jsonl": _run_jsonl, "csv": _run_csv, "json": _run_json,
                   "msmarco": _run_msmarco}  # fmt: skip
        if fmt not in readers:
            raise InputError(
                f"unknown run format {fmt!r}; expected one of {', '.join(RUN_FORMATS)}"
            )
        run = readers[fmt](text, path)
    run.hash = digest
    run.source = str(path)
    return run


def order_trec(docs: list[str], scores: list[float]) -> tuple[list[str], list[float]]:
    """trec_eval's order: score descending, ties by doc id descending.

    trec_eval compares ids with strcmp (bytes); Python's str order is code-point order, which for
    UTF-8 is the same order, so no encoding is needed.
    """
    pairs = sorted(zip(scores, docs, strict=True), reverse=True)
    return [d for _, d in pairs], [s for s, _ in pairs]


def dedupe(run: Run) -> Run:
    """Keep each id once per query, at its first position; count what was dropped."""
    dropped = 0
    for key, docs in run.results.items():
        if len(set(docs)) == len(docs):
            continue
        seen: set[str] = set()
        keep = [i for i, d in enumerate(docs) if not (d in seen or seen.add(d))]
        dropped += len(docs) - len(keep)
        run.results[key] = [docs[i] for i in keep]
        if run.scores is not None and key in run.scores:
            run.scores[key] = [run.scores[key][i] for i in keep]
    run.n_duplicates += dropped
    return run


def _score(token: object, path: Path, line: int) -> float:
    try:
        value = float(token)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"score must be a number, got {token!r}", path=path, line=line) from None
    if math.isnan(value):
        raise InputError("score is NaN", path=path, line=line)
    return value


def _finish_scored(
    docs: dict[str, list[str]], scores: dict[str, list[float]], fmt: str, path: Path
) -> Run:
    for key in docs:
        docs[key], scores[key] = order_trec(docs[key], scores[key])
    return dedupe(Run(docs, str(path), None, fmt, scores=scores))


def _run_trec(text: str, path: Path) -> Run:
    docs: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    for number, line in _records(text):
        fields = line.split()
        if not docs and _is_run_header(fields):
            continue
        if len(fields) < 6:
            raise InputError(
                f"expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}",
                path=path,
                line=number,
            )
        qid, doc, score = fields[0], fields[2], _score(fields[4], path, number)
        docs.setdefault(qid, []).append(doc)
        scores.setdefault(qid, []).append(score)
    return _finish_scored(docs, scores, "trec", path)


def _looks_like_msmarco_run(first: str) -> bool:
    """MS MARCO's run layout, ``qid<TAB>docid<TAB>rank`` with no header (the leaderboard's
    script reads it, Pyserini writes it with ``--output-format msmarco``), or with the score
    after the rank, as other tools write it."""
    fields = first.strip().split("\t")
    four = len(fields) == 4 and _parses(fields[3].strip(), float)
    return (
        (len(fields) == 3 or (four and fields[1].strip() not in ("0", "Q0")))  # qrels: qid 0 …
        and all(fields)
        and _parses(fields[2].strip())
    )


def _run_msmarco(text: str, path: Path) -> Run:
    rows = []
    for number, line in _records(text):
        fields = line.strip().split("\t")
        if len(fields) not in (3, 4):
            said = f"this one has {len(fields)} fields"
            raise InputError(f"an MS MARCO run line is 'qid<TAB>docid<TAB>rank[<TAB>score]'; "
                             f"{said}", path=path, line=number)  # fmt: skip
        rows.append({"qid": fields[0].strip(), "docid": fields[1].strip(), "rank": fields[2]})
    _check_ranks(rows, path)
    return _rows_to_run(rows, "qid", "docid", "rank", None, "msmarco", False, path, first_line=1)


def _check_ranks(rows: list[dict], path: Path) -> None:
    """A query's ranks start at 1 (or 0): a third column of scores (``q1 d1 87``) read as ranks
    put the run in reverse, without a word."""
    lowest: dict[str, float] = {}
    for row in rows:
        rank = float(row["rank"]) if _parses(row["rank"].strip(), float) else 0.0
        lowest[row["qid"]] = min(rank, lowest.get(row["qid"], rank))
    off = next(((q, r) for q, r in lowest.items() if r > 1), None)
    if off is not None:
        raise InputError(
            f"query {off[0]}'s ranks start at {off[1]:g}, not 1: an MS MARCO run's third column "
            "is the rank; if it holds scores, write the run as TREC ('qid Q0 docid rank score "
            "tag') or as a CSV with a header naming a score column",
            path=path,
        )


def _whole_float(value: object) -> bool:
    return isinstance(value, float) and value.is_integer()


def _result_items(value: object, path: Path, line: int) -> tuple[list[str], list[float] | None]:
    """A list of ids, or of {id, score} objects, or of [id, score] pairs."""
    if not isinstance(value, list):
        raise InputError(
            f"results must be a list of ids or of {{id, score}} objects, got "
            f"{type(value).__name__}",
            path=path,
            line=line,
        )
    ids: list[str] = []
    scores: list[float] = []
    for item in value:
        if isinstance(item, str | int) and not isinstance(item, bool) or _whole_float(item):
            ids.append(id_text(item))
        elif isinstance(item, dict) and (found := run_result_id(item)) is not None:
            ids.append(id_text(found))
            # a null score is none (Elasticsearch's _score when the query sorts by a field)
            score_key = next((k for k in RESULT_SCORE_KEYS if item.get(k) is not None), None)
            if score_key is not None:
                scores.append(_score(item[score_key], path, line))
        elif isinstance(item, list | tuple) and len(item) == 2:
            ids.append(id_text(item[0]))
            scores.append(_score(item[1], path, line))
        else:
            raise InputError(
                f"a result must be an id or an {{id, score}} object, got {item!r}",
                path=path,
                line=line,
            )
    if scores and len(scores) != len(ids):
        raise InputError("some results have a score and some do not", path=path, line=line)
    return ids, (scores or None)


def id_text(value: object) -> str:
    """An id as text: a whole float is its integer (1.0 is 1), as a frame's integer column
    comes as float64 once it has a gap (pandas) and is written so to Parquet and JSON."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def run_result_id(item: dict) -> object | None:
    """A run file's result object's id: its own id key, in the order run files have always
    been read (``id``, ``doc_id``, then ``chunk_id``…), except that a chunk id in its document
    (Qdrant's ``payload``, Elasticsearch's ``_source``, LangChain's ``metadata``) comes before
    the engine's own ``id``/``_id`` beside it, as ``--http`` reads an answer; an object with no
    id key of its own takes its document's."""
    key = next((k for k in RUN_ITEM_ID_KEYS if item.get(k) is not None), None)
    if key is not None and key not in _ENGINE_ID_KEYS:
        return item[key]
    nested = [v for k in RESULT_NESTED if isinstance(v := item.get(k), dict)]
    for keys in RESULT_ID_KEYS if key is None else (("chunk_id",),):
        found = next((n[k] for n in nested for k in keys if n.get(k) is not None), None)
        if found is not None:
            return found
    return None if key is None else user_id(item[key])


def user_id(found: object) -> object:
    """An engine's id as the user gave it: a Vespa document id ``id:ns:type::c1`` is c1."""
    vespa = VESPA_ID.fullmatch(found) if isinstance(found, str) else None
    return vespa.group(1) if vespa else found


def _hits_list(value: object) -> object:
    """A line's results as a search service holds them: Elasticsearch's and OpenSearch's
    ``hits`` object keeps its list under ``hits`` (``hits.hits``), Vespa's ``root`` under
    ``children``."""
    if isinstance(value, dict):
        listed = next((value[k] for k in ("hits", "children") if isinstance(value.get(k), list)),
                      None)  # fmt: skip
        return value if listed is None else listed
    return value


def _line_results(obj: dict, key: str) -> object:
    """The ranked list a run line holds under ``key``: Chroma's ``ids`` hold one list per
    query text asked, a line's one query's in the first."""
    value = _hits_list(obj[key])
    if key == "ids" and isinstance(value, list) and len(value) == 1:
        return value[0] if isinstance(value[0], list) else value
    return value


def _run_jsonl(text: str, path: Path) -> Run:
    records = json_records(text, path)
    if records and _is_table_row(records[0][1]):
        return _run_rows(records, path)
    _refuse_gold_lines(records, path)
    results: dict[str, list[str]] = {}
    all_scores: dict[str, list[float]] = {}
    keyed_by = None
    texts: dict[str, str] = {}
    for number, obj in records:
        # a run line's id is its query_id or qid: an "id" beside the query is often the line's
        qid = next((obj[k] for k in ("query_id", "qid") if k in obj), None)
        query = query_text(obj)
        if qid is None and query is None:
            _refuse_search_response(obj, path)
            raise InputError("a run line needs 'query_id' or 'query'", path=path, line=number)
        key_kind = "id" if qid is not None else "text"
        if keyed_by not in (None, key_kind):
            raise InputError(
                "mix of lines with 'query_id' and lines with only 'query'", path=path, line=number
            )
        keyed_by = key_kind
        key = id_text(qid) if qid is not None else str(query)
        if query is not None:
            texts[key] = str(query)
        key_ = result_key(obj)
        if key_ is None:
            raise InputError(
                f"a run line lists its ranked ids under 'results' (or {', '.join(RESULT_KEYS[1:])})"
                f", or is a table's row with a doc id and a rank or score; it has "
                f"{', '.join(map(str, obj)) or 'nothing'}",
                path=path,
                line=number,
            )
        ids, scores = _result_items(_line_results(obj, key_), path, number)
        if key in results:
            raise InputError(f"query {key!r} appears twice", path=path, line=number)
        results[key] = ids
        if scores is not None:
            all_scores[key] = scores
    run = Run(results, str(path), None, "jsonl", keyed_by=keyed_by or "id", texts=texts)
    run.scores = all_scores or None
    return dedupe(run)


def _refuse_gold_lines(records: list[tuple[int, dict]], path: Path) -> None:
    """goldmine's gold JSONL given as the run (an exported version opens with its
    format_version header; its lines list relevant ids and no ranking): the flags swapped."""
    first = records[0][1] if records else {}
    line = next((obj for _, obj in records[:2] if result_key(obj) is None), None)
    if line is not None and ("format_version" in first or relevant_key(line) is not None):
        raise InputError(
            "this is a gold set (goldmine gold JSONL: each query's relevant ids), judgments "
            "rather than a ranking: pass it as --gold and the run as --run",
            path=path,
        )


def _is_search_response(obj: object) -> bool:
    """An Elasticsearch/OpenSearch ``_search`` response (its hits at ``hits.hits``), or an
    ``_msearch``'s (a list of them under ``responses``)."""
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("responses"), list):
        return any(map(_is_search_response, obj["responses"]))
    hits = obj.get("hits")
    return isinstance(hits, dict) and isinstance(hits.get("hits"), list)


def _refuse_search_response(obj: object, path: Path) -> None:
    """A search response saved as the run names no query: which gold query its hits answer is
    nowhere in it (an _msearch's order is its request's), so it is refused saying what to give."""
    if _is_search_response(obj):
        raise InputError(
            "is an Elasticsearch/OpenSearch _search response (or _msearch's): it names no query, "
            'so no gold query can be matched to its hits; keep one line a query, {"query_id": '
            '"q1", "hits": <its hits>}, or let eval run ask the index with --http URL',
            path=path,
        )


def _run_json(text: str, path: Path) -> Run:
    obj = _load_json(text, path)
    _refuse_search_response(obj, path)
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object mapping each query to its ranked ids", path=path)
    results: dict[str, list[str]] = {}
    all_scores: dict[str, list[float]] = {}
    for query, value in obj.items():
        listed = _listed(value)
        if listed is not None:  # Pyserini's DPR retrieval run: {qid: {question, contexts}}
            ids, scores = _result_items(listed, path, 1)
        elif isinstance(value, dict):  # ranx's and pytrec_eval's {doc_id: score}: trec_eval's order
            ids, scores = order_trec(
                list(map(str, value)), [_score(v, path, 1) for v in value.values()]
            )
        elif not isinstance(value, list):
            raise InputError(
                "a JSON run maps each query to its ranked ids (a list, as 'results' holds them) "
                f"or to {{doc_id: score}}; {str(query)!r} maps to {_json_name(value)}",
                path=path,
            )
        else:
            ids, scores = _result_items(value, path, 1)
        results[str(query)] = ids
        if scores is not None:
            all_scores[str(query)] = scores
    return dedupe(Run(results, str(path), None, "json", keyed_by="text", scores=all_scores or None))


def _listed(value: object) -> object | None:
    """The ranked list a JSON run's per-query object holds under a run line's key, or under
    ``contexts`` (Pyserini's DPR retrieval run), else None (a ``{doc_id: score}`` holds none)."""
    if not isinstance(value, dict):
        return None
    for key in (*RESULT_KEYS, "contexts"):
        found = _hits_list(value.get(key))
        if isinstance(found, list):
            return found
    return None


def _is_table_row(obj: dict) -> bool:
    """Whether a JSON line is a run table's row (a frame written a row a line by polars'
    write_ndjson or pandas' to_json): a doc id and a rank or score beside the query, no list."""
    return result_key(obj) is None and all(
        _pick(list(obj), names) is not None for names in (_DOC_COLUMNS, ("rank", "score"))
    )


def _run_rows(records: list[tuple[int, dict]], path: Path) -> Run:
    """A run table written a row a line, read as the same table in CSV is."""
    qcol, by_text, dcol, rcol, scol = _table_columns(list(records[0][1]), path)
    rows = [obj for _, obj in records]
    return _rows_to_run(rows, qcol, dcol, rcol, scol, "jsonl", by_text, path, first_line=1)


def _json_name(value: object) -> str:
    """A JSON value named as JSON names it: a string, a number, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else "a number"


def _pick(columns: list[str], candidates: tuple[str, ...]) -> str | None:
    lowered = {c.strip().lower(): c for c in columns}
    return next((lowered[c] for c in candidates if c in lowered), None)


# A run table's doc column. docno before docid: PyTerrier's result frame holds both, its docid
# being Terrier's internal number and its docno the collection's id (the one qrels name).
_DOC_COLUMNS = ("doc_id", "docno", "docid", "chunk_id", "corpus-id", "corpus_id", "pid",
                "passage_id", "document_id")  # fmt: skip


def _table_columns(columns: list[str], path: Path) -> tuple[str, bool, str, str | None, str | None]:
    qcol = _pick(columns, ("query_id", "qid", "query-id", "queryid", "q_id"))  # q_id: ranx
    text = _pick(columns, ("query", "query_text"))
    if qcol is None and text is None:  # beside a query's text, a topic is what it is about
        qcol = _pick(columns, ("topic", "topic_id"))
    keyed_by_text = qcol is None
    if qcol is None:
        qcol = text
    dcol = _pick(columns, _DOC_COLUMNS)
    rcol = _pick(columns, ("rank",))
    scol = _pick(columns, ("score",))
    if qcol is None or dcol is None or (rcol is None and scol is None):
        raise InputError(
            f"a tabular run needs query_id (or query), doc_id and rank or score columns; "
            f"found {', '.join(columns)}",
            path=path,
        )
    return qcol, keyed_by_text, dcol, rcol, scol


def _rows_to_run(
    rows,
    qcol: str,
    dcol: str,
    rcol: str | None,
    scol: str | None,
    fmt: str,
    keyed_by_text: bool,
    path: Path,
    first_line: int,
) -> Run:
    docs: dict[str, list[str]] = {}
    keys: dict[str, list[float]] = {}
    for number, row in enumerate(rows, start=first_line):
        qid, doc = (
            id_text(v).strip() if v is not None else v for v in (row.get(qcol), row.get(dcol))
        )
        if qid in (None, "") or doc in (None, ""):
            raise InputError("empty query id or doc id", path=path, line=number)
        if rcol is not None:
            try:
                key = float(row[rcol])
            except (TypeError, ValueError):
                raise InputError(
                    f"rank must be a number, got {row[rcol]!r}", path=path, line=number
                ) from None
            key = -key  # rank ascending == key descending
        else:
            key = _score(row[scol], path, number)
        docs.setdefault(str(qid), []).append(str(doc))
        keys.setdefault(str(qid), []).append(key)
    if _beir_qrels(dcol, rcol, keys):
        raise InputError(_qrels_as_run().message, path=path)
    if rcol is not None:
        # Rank given: stable order by rank; the score column (if any) is only carried along.
        for q in docs:
            order = sorted(range(len(docs[q])), key=lambda i, q=q: -keys[q][i])
            docs[q] = [docs[q][i] for i in order]
        run = dedupe(Run(docs, str(path), None, fmt))
    else:
        run = _finish_scored(docs, keys, fmt, path)
    run.keyed_by = "text" if keyed_by_text else "id"
    return run


def _beir_qrels(dcol: str, rcol: str | None, scores: dict[str, list[float]]) -> bool:
    """Whether a table is BEIR's qrels (query-id, corpus-id, score): a corpus-id column, no
    rank, and every score a whole number, a grade; read as a run, the grades ranked the judged
    docs and scored them near 1."""
    if rcol is not None or dcol.strip().lower() not in ("corpus-id", "corpus_id"):
        return False
    return all(float(s).is_integer() for column in scores.values() for s in column)


def _run_csv(text: str, path: Path) -> Run:
    sample = text[:4096]
    header = first_line(text)
    delimiter = (
        "\t"
        if sample.count("\t") > sample.count(",")
        else ";"
        if header.count(";") > header.count(",")
        else ","
    )
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    if not reader.fieldnames:
        raise InputError("empty CSV file", path=path)
    qcol, by_text, dcol, rcol, scol = _table_columns(list(reader.fieldnames), path)
    rows: Iterable[dict] = reader
    if delimiter == ";" and scol is not None:  # Excel's semicolons write a decimal comma
        rows = ({**r, scol: (r[scol] or "").replace(",", ".")} for r in reader)
    return _rows_to_run(rows, qcol, dcol, rcol, scol, "csv", by_text, path, first_line=2)


def _run_parquet(path: Path) -> Run:
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    qcol, by_text, dcol, rcol, scol = _table_columns(table.column_names, path)
    wanted = [c for c in (qcol, dcol, rcol, scol) if c is not None]
    rows = table.select(wanted).to_pylist()
    return _rows_to_run(rows, qcol, dcol, rcol, scol, "parquet", by_text, path, first_line=1)
