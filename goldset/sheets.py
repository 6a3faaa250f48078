"""Judgments as a team keeps them in a spreadsheet: the CSV (or TSV, or Excel's semicolon CSV)
that Google Sheets, Excel or pandas writes, a header row naming the query, the document and its
grade, one judgment a row.

Teams that label by hand often grade in words ("Highly relevant", "Partially relevant"), and
which word is worth what is the sheet's to say: ``--grade-map "not relevant=0,partially
relevant=1,highly relevant=2"`` reads them, and without one the import stops naming the words it
found and the map their words suggest. A sheet is written by people, so it is read as they write
one: a merged query cell exports its text into its first row only (the rows below take it), a row
nobody graded yet is left out and counted, and a query's text may hold commas and line breaks in
quotes (read as one line of text)."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from goldmine.errors import InputError
from goldmine.goldset.items import query_id_for
from goldmine.readers import judged_twice, ntcir_level
from goldmine.text import normalize_query

# fmt: off
# The names a column goes by, after ``_column_key`` (lower case, spaces and hyphens as "_").
QUERY_ID_COLUMNS = ("query_id", "qid", "queryid", "topic_id", "topic", "topicid", "question_id")
QUERY_COLUMNS = ("query", "query_text", "querytext", "question", "search_query", "search_term",
                 "search_terms", "user_query", "keyword", "search")
DOC_COLUMNS = ("doc_id", "docid", "docno", "document_id", "documentid", "doc", "document",
               "chunk_id", "chunkid", "passage_id", "pid", "corpus_id", "result_id", "article_id",
               "url")
GRADE_COLUMNS = ("grade", "relevance", "label", "judgment", "judgement", "rating", "rel",
                 "relevance_label", "relevance_grade", "relevance_score", "score", "qrel")

WANTED = "the query (query or query_id), the document (doc_id) and its grade (grade or label)"

# Words that say how a label grades, checked in this order ("not relevant" is 0 before
# "relevant" is an answer): only a suggestion the error prints, never applied.
_NONE_WORDS = frozenset({"not", "non", "no", "none", "irrelevant", "nonrelevant", "unrelated",
                         "bad", "wrong", "off", "false", "incorrect", "useless", "junk"})
_SOME_WORDS = frozenset({"partial", "partially", "partly", "somewhat", "marginal", "marginally",
                         "related", "fair", "maybe", "some", "slightly", "ok", "okay", "topical",
                         "useful"})
_BEST_WORDS = frozenset({"high", "highly", "very", "perfect", "perfectly", "exact", "exactly",
                         "fully", "excellent", "great", "vital", "key", "definitely", "relevant",
                         "yes", "good", "true", "correct", "answer", "answers", "answered"})
# fmt: on


def label_key(text: str) -> str:
    """How a label is compared: case, and the spacing within it, do not matter."""
    return " ".join(text.casefold().split())


def _column_key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().strip('"').lower())


def delimiter_of(first_line: str) -> str:
    """The cell separator a spreadsheet wrote: a tab, Excel's ';' in locales whose decimal mark
    is a comma, or a comma."""
    if "\t" in first_line:
        return "\t"
    return ";" if first_line.count(";") > first_line.count(",") else ","


def names_query_text(first_line: str) -> bool:
    """Whether a header line names a query text column (a TSV of judgments with the query in it,
    which TREC qrels never have)."""
    names = {_column_key(c) for c in first_line.split(delimiter_of(first_line))}
    return not names.isdisjoint(QUERY_COLUMNS)


@dataclass
class Sheet:
    """The sheet's judgments: (query id, document, grade as a whole number's text, line)."""

    rows: list[tuple[str, str, str, int]] = field(default_factory=list)
    texts: dict[str, str | None] = field(default_factory=dict)  # None: the ids need --topics
    labelled: bool = False  # grades were words, read through the map (on the scale now)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Columns:
    doc: int
    grade: int
    qid: int | None
    text: int | None
    names: list[str]


def read_sheet(path: Path, text: str, grade_map: dict | None) -> Sheet:
    """The judgments in a spreadsheet's CSV ``text`` (decoded), their word grades read through
    ``grade_map``'s label entries."""
    first = next((line for line in io.StringIO(text) if line.strip()), "")
    delimiter = delimiter_of(first)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next((row for row in reader if any(c.strip() for c in row)), None)
    if header is None:
        raise InputError("holds no judgment: nothing to import", path=path)
    cols = _columns(header, path, reader.line_num, delimiter)
    sheet = Sheet()
    cells = _cells(reader, cols, path, sheet)
    if cols.qid is None and cells and all(c[2].isdigit() for c in cells):
        # a qrels header in words ("query docid relevance") over ids: --topics gives the texts
        cells = [(line, query, "", grade, doc) for line, _, query, grade, doc in cells]
    labels = {k: v for k, v in (grade_map or {}).items() if isinstance(k, str)}
    grades = [g for _, _, _, g, _ in cells]
    if any(_is_label(g) for g in grades):
        sheet.labelled = True
        mapped = _read_labels(cells, grade_map or {}, path)
    else:
        if labels:
            raise InputError(
                f"the sheet's grades are numbers ({', '.join(sorted(set(grades))[:5])}); "
                f"--grade-map names labels ({', '.join(labels)}): map the numbers", path=path
            )  # fmt: skip
        mapped = [_whole_text(g) for g in grades]
    _fill(sheet, cells, mapped, path)
    return sheet


_SEPARATED = {
    ",": "comma-separated (a spreadsheet's CSV)",
    ";": "semicolon-separated (a spreadsheet's CSV)",
    "\t": "tab-separated (a spreadsheet's TSV)",
}


def _columns(header: list[str], path: Path, line: int, delimiter: str) -> _Columns:
    keys = [_column_key(c) for c in header]

    def pick(names: tuple[str, ...]) -> int | None:
        return next((keys.index(n) for n in names if n in keys), None)

    text = pick(QUERY_COLUMNS)
    # beside a query's text, a topic column is what the query is about, not its id
    ids = QUERY_ID_COLUMNS if text is None else tuple(c for c in QUERY_ID_COLUMNS
                                                      if not c.startswith("topic"))  # fmt: skip
    cols = _Columns(pick(DOC_COLUMNS), pick(GRADE_COLUMNS), pick(ids), text,
                    [c.strip() for c in header])  # fmt: skip
    query = cols.qid if cols.qid is not None else cols.text
    wanted = (("query", query), ("document", cols.doc), ("grade", cols.grade))
    missing = [what for what, at in wanted if at is None]
    if missing:
        found = ", ".join(c for c in cols.names if c) or "nothing"
        said = (f"is {_SEPARATED[delimiter]} but its header" if len(header) > 1
                else "is no spreadsheet's CSV: its first row")  # fmt: skip
        what = " or ".join(", ".join(missing).rsplit(", ", 1))
        raise InputError(
            f"{said} names no {what} column (found: {found}): gold import reads a sheet whose "
            f"first row names {WANTED}",
            path=path,
            line=line,
        )
    return cols  # type: ignore[return-value]


def _cells(reader, cols: _Columns, path: Path, sheet: Sheet) -> list[tuple]:
    """(line, query id, query text, grade, document) of each graded row, a merged query cell's
    blank rows taking the row above's query; rows with no grade or document are counted."""
    out: list[tuple] = []
    last = ("", "")
    ungraded = undocumented = filled = orphans = 0
    start = reader.line_num + 1
    for row in reader:
        line, start = start, reader.line_num + 1
        if not any(c.strip() for c in row):
            continue
        qid = _cell(row, cols.qid)
        query = " ".join(_cell(row, cols.text).split())
        above = not qid and not query
        if above:
            qid, query = last
        last = (qid, query)
        doc, grade = _cell(row, cols.doc), _cell(row, cols.grade)
        if not grade:
            ungraded += 1
        elif not doc:
            undocumented += 1
        elif not qid and not query:
            orphans += 1
        else:
            filled += above
            out.append((line, qid, query, grade, doc))
    _count(sheet, ungraded, "no grade (not judged yet): left out")
    _count(sheet, undocumented, "a grade but no document: left out")
    _count(sheet, orphans, "a grade but no query above them: left out")
    _count(sheet, filled, "no query: read as the query above, as a merged cell exports")
    return out


def _cell(row: list[str], at: int | None) -> str:
    return row[at].strip() if at is not None and at < len(row) else ""


def _count(sheet: Sheet, n: int, what: str) -> None:
    if n:
        sheet.notes.append(f"{n} {'row has' if n == 1 else 'rows have'} {what}")


def _is_label(grade: str) -> bool:
    try:
        float(grade)
    except ValueError:
        return ntcir_level(grade) is None
    return False


def _whole_text(grade: str) -> str:
    """``2.0`` as ``2``, so a judgment written twice as 2 and 2.0 is one; anything else as
    written, for the grade reader to judge."""
    try:
        number = float(grade)
    except ValueError:
        return grade
    return str(int(number)) if number.is_integer() else grade


def _read_labels(cells: list[tuple], grade_map: dict, path: Path) -> list[str]:
    """Every grade through the map: a word by its label entry, a number by its own."""
    found: dict[str, str] = {}  # label key -> the label as first written
    for _, _, _, grade, _ in cells:
        found.setdefault(label_key(grade), grade)
    if not any(isinstance(k, str) for k in grade_map):
        words = ", ".join(f"'{g}'" for g in list(found.values())[:10])
        raise InputError(
            f"the sheet grades in words ({words}): say how each reads on goldmine's 0-2 scale "
            f"(2 fully answers, 1 useful context, 0 not relevant) with --grade-map, e.g. "
            f'--grade-map "{suggest_label_map(list(found))}"',
            path=path,
        )
    out = []
    for line, _, _, grade, _ in cells:
        key = label_key(grade)
        value = grade_map.get(key)
        if value is None and not _is_label(grade):
            value = grade_map.get(int(float(grade)))
        if value is None:
            raise InputError(f"--grade-map has no entry for the label '{grade}'", path=path,
                             line=line)  # fmt: skip
        out.append(str(value))
    return out


def suggest_label_map(labels: list[str]) -> str:
    """A map for the sheet's labels (label keys) by their words, worst first: a word of none (not,
    irrelevant) 0, of some (partially, somewhat) 1, of the best (highly, relevant) 2 (1 when no
    label is "some": a relevant/not relevant sheet is binary, as TREC's 1). A label of no known
    word is left as LABEL=? for the user to say."""

    def grade(label: str) -> int | None:
        words = set(re.findall(r"\w+", label))
        for value, vocabulary in ((0, _NONE_WORDS), (1, _SOME_WORDS), (2, _BEST_WORDS)):
            if words & vocabulary:
                return value
        return None

    graded = {label: grade(label) for label in labels}
    if 1 not in graded.values():
        graded = {label: 1 if g == 2 else g for label, g in graded.items()}
    order = sorted(labels, key=lambda label: (graded[label] is None, graded[label] or 0))
    return ",".join(f"{label}={'?' if graded[label] is None else graded[label]}" for label in order)


def _fill(sheet: Sheet, cells: list[tuple], grades: list[str], path: Path) -> None:
    """The sheet's rows and texts: a query's id is the file's, or made from its text; one id of
    two texts, or a document graded twice two ways, is an InputError."""
    seen: dict[tuple[str, str], tuple[str, str, int]] = {}
    where: dict[str, int] = {}
    for (line, qid, query, raw, doc), grade in zip(cells, grades, strict=True):
        made = not qid  # an id made from the text: its spellings are one query
        if made:
            qid = query_id_for(normalize_query(query))
        held = sheet.texts.get(qid)
        if query and held and held != query and not made:
            raise InputError(
                f"query {qid} has two texts: {held!r} (line {where[qid]}) and {query!r}",
                path=path, line=line,
            )  # fmt: skip
        if query and not held:
            sheet.texts[qid], where[qid] = query, line
        else:
            sheet.texts.setdefault(qid, None)
        held_grade, held_raw, first = seen.setdefault((qid, doc), (grade, raw, line))
        if held_grade != grade:
            raise judged_twice(qid, doc, (held_raw, raw), first, path=path, line=line)
        sheet.rows.append((qid, doc, grade, line))
