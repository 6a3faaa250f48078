"""Readers for the real data sets in ../shared/datasets, for tests and benchmarks.

Plain functions over a folder path; nothing here is copied into the project. Callers find the
folder with the ``shared_dataset`` fixture (tests) or :func:`shared_path` (benchmarks), which both
honour ``GOLDMINE_SHARED``.

Cranfield 1400 (SMART format), and its traps:

- CRLF line endings; the last qrels line has no newline.
- ``cran.qry``'s ``.I`` numbers are NOT the query ids the judgments use: they run 001..365 with
  gaps, while ``cranqrel`` numbers queries by their position in the file, 1..225. We key queries
  by position; :func:`cranfield_query_numbers` keeps the original ``.I``. (ir_datasets keys them
  by ``.I`` with the zeros stripped, which does not line up with this cranqrel after query 2.)
- ``cranqrel`` rows are ``query doc code``, codes 1..4 and -1 (one -1 row per query, 225 in all).

Which code is the best answer is contested, so the gain mapping is a parameter:

- ``"ir_datasets"`` (the default): gain = the code, 4 the highest. This is what ir_datasets does:
  its ``CranfieldQrels`` yields ``int(code)`` unchanged and its ``QREL_DEFS`` call 4 "a complete
  answer" (allenai/ir_datasets, ``ir_datasets/datasets/cranfield.py``). FACTS.md's reference figures
  use it: our BM25 run gives nDCG@10 0.341 with it, as FACTS.md lists, and 0.373 with the other.
- ``"cleverdon"``: gain = 5 - code (1 -> 4, 2 -> 3, 3 -> 2, 4 -> 1), following the collection's own
  readme (``cranqrel.readme``), where Cleverdon's code 1 is "a complete answer" and 4 "of minimum
  interest".

Either way -1 rows are dropped: they carry no gain and are not relevant, so no metric changes. The
mapping only moves nDCG; MAP, recall and MRR count every code 1..4 as relevant.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD_FILES = ("cran.all.1400", "cran.qry", "cranqrel")

_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")
_SPACE = re.compile(r"\s+")

# FACTS.md, "Retrieval reference (Cranfield, 225 queries)": nDCG@10, MAP@100, recall@100.
REFERENCE = {
    "bm25": (0.341, 0.304, 0.738),
    "dense": (0.354, 0.321, 0.772),
    "hybrid": (0.386, 0.350, 0.784),
}


class Chunk(NamedTuple):
    id: str
    title: str
    text: str


class Cranfield(NamedTuple):
    chunks: list[Chunk]  # 1,400, ids "1".."1400"
    queries: dict[str, str]  # position "1".."225" -> text
    qrels: dict[str, dict[str, int]]  # position -> {doc id: gain 1..4}


def shared_path(*parts: str) -> Path | None:
    """``../shared/<parts>`` (or under ``GOLDMINE_SHARED``), or None when it is absent."""
    base = Path(os.environ.get("GOLDMINE_SHARED", ROOT.parent / "shared"))
    path = base.joinpath(*parts)
    return path if path.exists() else None


def _records(path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """SMART records: (``.I`` value, {field letter: text with whitespace collapsed})."""
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: str | None = None

    def done() -> tuple[str, dict[str, str]]:
        return record_id, {k: _SPACE.sub(" ", " ".join(v)).strip() for k, v in fields.items()}

    # newline=None folds CRLF; the files are ASCII.
    with path.open(encoding="utf-8", newline=None) as handle:
        for n, line in enumerate(handle, 1):
            match = _FIELD.match(line.rstrip("\n"))
            if match and match.group(1) == "I":
                if record_id is not None:
                    yield done()
                record_id, fields, current = (match.group(2) or "").strip(), {}, None
            elif match:
                current = match.group(1)
                fields[current] = [match.group(2) or ""]
            elif current is not None:
                fields[current].append(line)
            elif line.strip():
                raise ValueError(f"{path}:{n}: text before any .I/.W field")
    if record_id is not None:
        yield done()


def cranfield_chunks(folder: Path) -> list[Chunk]:
    """The 1,400 abstracts: id = ``.I``, title = ``.T``, text = ``.W`` (a few are empty)."""
    return [
        Chunk(doc_id, fields.get("T", ""), fields.get("W", ""))
        for doc_id, fields in _records(Path(folder) / "cran.all.1400")
    ]


def cranfield_query_numbers(folder: Path) -> dict[str, str]:
    """Position id ("1".."225", what cranqrel uses) -> the ``.I`` number printed in cran.qry."""
    return {
        str(pos): number
        for pos, (number, _) in enumerate(_records(Path(folder) / "cran.qry"), start=1)
    }


def cranfield_queries(folder: Path) -> dict[str, str]:
    """Position id ("1".."225") -> query text."""
    return {
        str(pos): fields.get("W", "")
        for pos, (_, fields) in enumerate(_records(Path(folder) / "cran.qry"), start=1)
    }


def cranfield_raw_qrels(folder: Path) -> list[tuple[str, str, int]]:
    """(query position, doc id, Cleverdon code) as written, -1 rows included."""
    rows = []
    path = Path(folder) / "cranqrel"
    with path.open(encoding="utf-8", newline=None) as handle:
        for n, line in enumerate(handle, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected 'query doc code', got {line.strip()!r}")
            rows.append((parts[0], parts[1], int(parts[2])))
    return rows


GAIN_MAPPINGS = ("ir_datasets", "cleverdon")


def cranfield_gain(code: int, mapping: str = "ir_datasets") -> int | None:
    """The gain of a judgment code (see the module docstring); None for -1 (dropped)."""
    if mapping not in GAIN_MAPPINGS:
        raise ValueError(f"unknown gain mapping {mapping!r}; choose one of {GAIN_MAPPINGS}")
    if not 1 <= code <= 4:
        return None
    return code if mapping == "ir_datasets" else 5 - code


def cranfield_qrels(folder: Path, mapping: str = "ir_datasets") -> dict[str, dict[str, int]]:
    """Query position -> {doc id: gain 1..4}; -1 rows dropped (see the module docstring)."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, doc, code in cranfield_raw_qrels(folder):
        gain = cranfield_gain(code, mapping)
        if gain is not None:
            qrels.setdefault(qid, {})[doc] = gain
    return qrels


def load_cranfield(folder: Path, mapping: str = "ir_datasets") -> Cranfield:
    return Cranfield(
        cranfield_chunks(folder), cranfield_queries(folder), cranfield_qrels(folder, mapping)
    )


def write_corpus_jsonl(chunks: list[Chunk], path: Path) -> Path:
    """goldmine's corpus JSONL: ``id``, ``doc_id``, ``title``, ``text`` per line (BEIR-compatible
    apart from the id key, which BEIR spells ``_id``)."""
    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        for chunk in chunks:
            row = {"id": chunk.id, "doc_id": chunk.id, "title": chunk.title, "text": chunk.text}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return Path(path)


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: Path) -> Path:
    """TREC qrels, ``qid 0 docid gain``, sorted by query then doc (numerically where numeric)."""

    def key(value: str) -> tuple[int, int | str]:
        return (0, int(value)) if value.isdigit() else (1, value)

    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        for qid in sorted(qrels, key=key):
            for doc in sorted(qrels[qid], key=key):
                out.write(f"{qid} 0 {doc} {qrels[qid][doc]}\n")
    return Path(path)


def write_queries(queries: Mapping[str, str], path: Path) -> Path:
    """``.jsonl``: BEIR's ``{"_id", "text"}`` per line; any other suffix: ``id<TAB>text``."""
    path = Path(path)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for qid, text in queries.items():
            if path.suffix == ".jsonl":
                out.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
            else:
                out.write(f"{qid}\t{text}\n")
    return path


def write_cranfield(folder: Path, out_dir: Path, mapping: str = "ir_datasets") -> dict[str, Path]:
    """Cranfield as files goldmine reads: corpus.jsonl, qrels.trec, queries.jsonl."""
    data = load_cranfield(folder, mapping)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        "corpus": write_corpus_jsonl(data.chunks, out_dir / "corpus.jsonl"),
        "qrels": write_trec_qrels(data.qrels, out_dir / "qrels.trec"),
        "queries": write_queries(data.queries, out_dir / "queries.jsonl"),
    }
