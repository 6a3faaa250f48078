"""The generation half, tested apart from retrieval.

``export_generation`` writes each answerable gold query with its gold chunks' text (and, given a
run, the chunks the retriever returned) so the user's own generation step can answer every query
twice: once with the gold passages, once as in production. ``diagnose`` reads the two grades back
and splits the queries the way the lesson does:

- right with the gold passages, wrong in production: **retrieval** lost the answer;
- wrong even with the gold passages: **the prompt** (or the model) — better retrieval will not fix
  it. Split by production: wrong in both, or right in production all the same;
- right in both.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError, NotFoundError
from goldmine.eval.scoring import match_run_to_gold
from goldmine.files import lines_of, require_file
from goldmine.gold_records import json_records
from goldmine.readers import id_text

if TYPE_CHECKING:
    import duckdb

    from goldmine.gold import Gold, Run

FORMAT_VERSION = 1

# --- diagnose -----------------------------------------------------------------------------------

CATEGORIES = {
    "right_in_both": "right in both",
    "retrieval": "retrieval: right with the gold passages, wrong in production",
    "prompt": "prompt: wrong even with the gold passages, right in production",
    "wrong_in_both": "prompt first: wrong in both (wrong even with the gold passages)",
}
_TRUE = {"true", "t", "yes", "y", "pass", "passed", "right", "correct"}
_FALSE = {"false", "f", "no", "n", "fail", "failed", "wrong", "incorrect"}
COLUMNS = ("query_id", "with_gold", "production")


@dataclass
class Diagnosis:
    cells: dict[str, list[str]]
    source: str
    pass_at: float | None = None
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return sum(len(ids) for ids in self.cells.values())

    def count(self, category: str) -> int:
        return len(self.cells[category])

    @property
    def wrong_with_gold(self) -> int:
        return self.count("prompt") + self.count("wrong_in_both")

    def to_json(self) -> dict[str, Any]:
        n = self.n
        return {
            "source": self.source,
            "n_queries": n,
            "pass_at": self.pass_at,
            "counts": {c: len(ids) for c, ids in self.cells.items()},
            "shares": {c: (len(ids) / n if n else 0.0) for c, ids in self.cells.items()},
            "wrong_with_gold": self.wrong_with_gold,
            "queries": self.cells,
            "reading": reading(self),
        }


def _verdict(value: object, pass_at: float | None, column: str, path: Path, line: int) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        if not text:
            raise InputError(f"{column} is empty", path=path, line=line)
        try:
            value = float(text)
        except ValueError:
            raise InputError(
                f"{column} {value!r} is neither a boolean (true/false, 1/0, pass/fail) nor a grade",
                path=path,
                line=line,
            ) from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(
            f"{column} must be a boolean or a grade, got {value!r}", path=path, line=line
        )
    if pass_at is not None:
        return value >= pass_at
    if value in (0, 1):
        return bool(value)
    raise InputError(
        f"{column} is the grade {value:g}: give --pass-at GRADE to say which grades count as right",
        path=path,
        line=line,
    )


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The grades file's rows: JSON lines or one JSON array of objects (pandas' to_json with
    orient="records"), Parquet, or CSV/TSV whose separator (comma, tab, Excel's semicolon) its
    header tells, whatever the file's suffix."""
    require_file(path)
    if path.read_bytes()[:4] == b"PAR1":
        return _parquet_records(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json") or text.lstrip()[:1] in ("{", "["):
        return json_records(text, path)
    header = next(iter(lines_of(text)), "")
    delimiter = max(",\t;", key=header.count)
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    return [(number, row) for number, row in enumerate(reader, start=2)]


def _parquet_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    import polars as pl

    try:
        rows = pl.read_parquet(path).to_dicts()
    except Exception as exc:  # polars raises several types for a damaged file
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    return list(enumerate(rows, start=1))


def read_grades(path: Path, pass_at: float | None = None) -> dict[str, tuple[bool, bool]]:
    """query id -> (right with the gold passages, right in production)."""
    grades: dict[str, tuple[bool, bool]] = {}
    for number, record in _records(path):
        absent = [c for c in COLUMNS if c not in record or record[c] is None]
        if absent:
            raise InputError(
                f"missing {', '.join(absent)}; the grades file needs the columns "
                f"{', '.join(COLUMNS)} (found {', '.join(map(str, record)) or 'none'})",
                path=path,
                line=number,
            )
        qid = id_text(record["query_id"]).strip()  # 2.0 from a float column is query 2
        if qid in grades:
            raise InputError(f"query {qid!r} is graded twice", path=path, line=number)
        grades[qid] = (
            _verdict(record["with_gold"], pass_at, "with_gold", path, number),
            _verdict(record["production"], pass_at, "production", path, number),
        )
    if not grades:
        raise InputError("no grades in the file", path=path)
    return grades


def diagnose(grades: dict[str, tuple[bool, bool]], source: str = "") -> Diagnosis:
    cells: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for qid, (with_gold, production) in grades.items():
        if with_gold:
            cells["right_in_both" if production else "retrieval"].append(qid)
        else:
            cells["prompt" if production else "wrong_in_both"].append(qid)
    return Diagnosis(cells, source)


def reading(d: Diagnosis) -> str:
    """The one-line lesson: which half to work on first."""
    retrieval, prompt = d.count("retrieval"), d.wrong_with_gold
    if retrieval == 0 and prompt == 0:
        return "every query is right in both: neither half shows a problem on this set"
    if prompt == retrieval:
        return (
            f"retrieval and the prompt lose as many queries ({prompt} each): work on both; "
            "the prompt's are the cheaper to find (they fail with the answer in hand)"
        )
    if prompt > retrieval:
        return (
            f"fix the prompt first: {prompt} queries are wrong even with the gold passages "
            f"(better retrieval cannot fix them), against {retrieval} lost by retrieval"
        )
    return (
        f"fix retrieval first: {retrieval} queries are right with the gold passages but wrong "
        f"in production, against {prompt} wrong even with the gold passages"
    )


def print_diagnosis(d: Diagnosis) -> None:
    n = d.n
    print(f"{n} graded queries ({d.source})" if d.source else f"{n} graded queries")
    print()
    print(f"{'':<22}{'production right':>18}{'production wrong':>18}")
    print(
        f"{'with gold: right':<22}{d.count('right_in_both'):>18}{d.count('retrieval'):>18}"
        "   <- wrong in production only: retrieval"
    )
    print(
        f"{'with gold: wrong':<22}{d.count('prompt'):>18}{d.count('wrong_in_both'):>18}"
        "   <- wrong even with gold: the prompt"
    )
    print()
    width = max(len(label) for label in CATEGORIES.values())
    for category, label in CATEGORIES.items():
        count = d.count(category)
        share = count / n if n else 0.0
        print(f"{label:<{width}}  {count:>5}  {share:>4.0%}")
    print()
    print(reading(d))
    for category in ("retrieval", "prompt", "wrong_in_both"):
        ids = d.cells[category]
        if ids:
            shown = ", ".join(ids[:10]) + (f" … (+{len(ids) - 10})" if len(ids) > 10 else "")
            print(f"  {category}: {shown}")


# --- export -------------------------------------------------------------------------------------


@dataclass
class ExportStats:
    out: Path
    n_queries: int
    n_gold_chunks: int
    n_missing_chunks: int
    n_with_run: int
    snapshot_id: int
    k: int | None
    gold_source: str = ""
    gold_hash: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def chunk_texts(
    con: duckdb.DuckDBPyConnection, snapshot_id: int, chunk_ids: list[str]
) -> dict[str, tuple[str | None, str]]:
    """chunk id -> (title, text) in one snapshot, for the ids asked for."""
    rows = con.execute(
        "SELECT chunk_id, title, text FROM chunks WHERE snapshot_id = ? "
        "AND chunk_id IN (SELECT unnest(?::VARCHAR[]))",
        [snapshot_id, chunk_ids],
    ).fetchall()
    return {cid: (title, text) for cid, title, text in rows}


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    snapshot = con.execute("SELECT max(snapshot_id) FROM corpus_snapshots").fetchall()[0][0]
    if snapshot is None:
        raise NotFoundError(
            "no corpus in the store: import the chunks first (goldmine ingest corpus FILE)"
        )
    return int(snapshot)


def export_generation(
    con: duckdb.DuckDBPyConnection,
    gold: Gold,
    out: Path,
    *,
    run: Run | None = None,
    k: int = 5,
    rel_level: int = 1,
) -> ExportStats:
    """Write one JSON line per answerable gold query: its gold chunks, and the run's top k."""

    snapshot = current_snapshot(con)
    answerable = [q for q in gold.queries.values() if q.answerable(rel_level)]
    if not answerable:
        raise InputError(f"{gold.source}: no answerable query (none has a relevant chunk)")
    ranked: dict[str, list[str]] = {}
    if run is not None:
        matched, _ = match_run_to_gold(gold, run)
        ranked = {qid: run.results[key][:k] for qid, key in matched.items()}
    wanted = {c for q in answerable for c in q.relevant(rel_level)}
    wanted.update(c for ids in ranked.values() for c in ids)
    texts = chunk_texts(con, snapshot, sorted(wanted))
    missing: set[str] = set()

    def chunk(cid: str) -> dict[str, Any]:
        title, text = texts.get(cid, (None, None))
        if cid not in texts:
            missing.add(cid)
        return {"chunk_id": cid, "title": title, "text": text}

    lines = []
    n_gold = 0
    for q in answerable:
        relevant = q.relevant(rel_level)
        gold_chunks = [
            {**chunk(cid), "grade": grade}
            for cid, grade in sorted(relevant.items(), key=lambda item: (-item[1], item[0]))
        ]
        n_gold += len(gold_chunks)
        record: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "query_id": q.query_id,
            "query": q.query,
            "context": q.context,
            "gold": gold_chunks,
        }
        if run is not None:
            record["retrieved"] = [
                {"rank": rank, **chunk(cid), "relevant": cid in relevant}
                for rank, cid in enumerate(ranked.get(q.query_id, []), start=1)
            ]
        lines.append(json.dumps(record, ensure_ascii=False))
    _write_atomic(out, "\n".join(lines) + "\n")
    return ExportStats(
        out=out,
        n_queries=len(answerable),
        n_gold_chunks=n_gold,
        n_missing_chunks=len(missing),
        n_with_run=sum(1 for q in answerable if q.query_id in ranked),
        snapshot_id=snapshot,
        k=k if run is not None else None,
        gold_source=gold.source,
        gold_hash=gold.hash,
    )


def _write_atomic(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
