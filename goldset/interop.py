"""Gold versions out as the files other eval tools load: ranx, ir_measures, Hugging Face.

Each export is tested by loading it with that package (``tests/test_api.py``):

- ``ranx``: ``v0003.qrels.json``, ``{query_id: {doc_id: grade}}``, which ``ranx.Qrels.from_file``
  reads by its ``.json`` suffix;
- ``ir_measures``: ``v0003.qrels.tsv``, TREC qrels with tabs (``query_id 0 doc_id relevance``),
  which ``ir_measures.read_trec_qrels`` turns into its ``Qrel`` namedtuples;
- ``hf``: a folder ``v0003-hf/`` with ``queries.parquet``, ``judgments.parquet`` and a dataset
  card (``README.md``) whose YAML front matter declares the two configs, so
  ``datasets.load_dataset(folder, "judgments")`` loads it offline; the card carries the version's
  content hash, and so does each Parquet file's metadata.

The grades are the version's: judged-not-relevant chunks at 0, as
``goldmine.versions.judged_of`` gives.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import InputError
from goldmine.versions import judged_of, resolve_version, version_header, version_lines

if TYPE_CHECKING:
    import duckdb

INTEROP_FORMATS = ("ranx", "ir_measures", "hf")


@dataclass(frozen=True)
class _Unwritable:
    """Ids a line-based format's readers would read as something else: ``pattern`` finds them
    (in query ids only when ``query_only``: the one field at a line's start)."""

    pattern: re.Pattern
    what: str
    why: str
    query_only: bool = False


_HASH = _Unwritable(
    re.compile(r"^#"),
    "a query id starting with #",
    "trec_eval and gold import read a line starting with # as a comment",
    query_only=True,
)
# What each line-based format's readers split a line on, or read as no judgment: an id holding
# it cannot be written.
_UNWRITABLE = {
    "trec": (
        _Unwritable(
            re.compile(r"[\s\x00]"),
            "an id with whitespace or a NUL",
            "trec_eval splits lines on whitespace and, in C, ends an id at a NUL",
        ),
        _HASH,
    ),
    "ir_measures": (
        _Unwritable(re.compile(r"\s"), "an id with whitespace", "ir_measures splits lines on it"),
        _HASH,
    ),
    "beir": (
        _Unwritable(
            re.compile(r"[\t\r\n]"), "an id with a tab or line break", "BEIR splits lines on tabs"
        ),
        _Unwritable(
            re.compile(r'^"'),
            "an id starting with a double quote",
            "BEIR reads its TSV with csv quoting: the quote opens a field that runs over the "
            "tabs and lines after it",
        ),
    ),
}


def check_ids(qrels: list[tuple[str, str, int]], fmt: str) -> None:
    """Refuse, before anything is written, an id that ``fmt``'s lines cannot hold: written, it
    would be read back as other ids and grades, or as no line at all."""
    for rule in _UNWRITABLE[fmt]:
        for query_id, chunk_id, _ in qrels:
            if rule.pattern.search(query_id) or (
                not rule.query_only and rule.pattern.search(chunk_id)
            ):
                raise InputError(
                    f"query {query_id!r}, chunk {chunk_id!r}: {rule.what} cannot be written as "
                    f"{fmt} qrels ({rule.why}); export --format hf or jsonl instead"
                )


def export_interop(
    con: duckdb.DuckDBPyConnection, spec: str, out_dir: Path, fmt: str
) -> list[Path]:
    """Write version ``spec`` under ``out_dir`` in ``fmt`` (one of INTEROP_FORMATS)."""
    version = resolve_version(con, spec)
    items = [json.loads(line) for line in version_lines(con, version)]
    header = version_header(con, version)
    stem = out_dir / f"v{version:04d}"
    out_dir.mkdir(parents=True, exist_ok=True)
    if fmt == "ranx":
        return [_ranx(items, stem.with_name(f"{stem.name}.qrels.json"))]
    if fmt == "ir_measures":
        return [_trec_tsv(items, stem.with_name(f"{stem.name}.qrels.tsv"))]
    if fmt == "hf":
        return _hf(items, header, stem.with_name(f"{stem.name}-hf"))
    raise InputError(f"--format must be one of {', '.join(INTEROP_FORMATS)}, not {fmt!r}")


def _ranx(items: list[dict], path: Path) -> Path:
    # A query with no judged chunk would be an empty dict, which ranx refuses: left out, as a
    # qrels file leaves it out.
    qrels = {i["query_id"]: dict(sorted(judged_of(i).items())) for i in items if judged_of(i)}
    path.write_text(json.dumps(qrels, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _trec_tsv(items: list[dict], path: Path) -> Path:
    qrels = [(i["query_id"], c, g) for i in items for c, g in sorted(judged_of(i).items())]
    check_ids(qrels, "ir_measures")
    path.write_text("".join(f"{q}\t0\t{c}\t{g}\n" for q, c, g in qrels), encoding="utf-8")
    return path


def _hf(items: list[dict], header: dict, folder: Path) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    meta = {b"goldmine": json.dumps({"version": header["version"],
                                     "content_hash": header["content_hash"]}).encode()}  # fmt: skip
    queries = pa.table(
        {
            "query_id": pa.array([i["query_id"] for i in items], pa.string()),
            "query": pa.array([i["query"] for i in items], pa.string()),
            "no_answer": pa.array([bool(i.get("no_answer")) for i in items], pa.bool_()),
            "tags": pa.array([list(i.get("tags") or []) for i in items], pa.list_(pa.string())),
        }
    ).replace_schema_metadata(meta)
    triples = [(i["query_id"], c, g) for i in items for c, g in sorted(judged_of(i).items())]
    judgments = pa.table(
        {
            "query_id": pa.array([t[0] for t in triples], pa.string()),
            "doc_id": pa.array([t[1] for t in triples], pa.string()),
            "grade": pa.array([t[2] for t in triples], pa.int32()),
        }
    ).replace_schema_metadata(meta)
    paths = [folder / "queries.parquet", folder / "judgments.parquet"]
    pq.write_table(queries, paths[0])
    pq.write_table(judgments, paths[1])
    card = folder / "README.md"
    card.write_text(dataset_card(header, len(items), len(triples)), encoding="utf-8")
    return [*paths, card]


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar of printable ASCII. JSON's escapes are YAML's but
    for one: JSON writes a character past U+FFFF as a surrogate pair (an emoji as
    ``\\ud83d\\ude80``), which YAML reads as two lone surrogates; YAML's ``\\U`` takes it
    whole."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def dataset_card(header: dict, n_queries: int, n_judgments: int) -> str:
    """The dataset card: YAML front matter the ``datasets`` package reads (the two configs), the
    version and its hash, and a few lines for a person."""
    v, digest = header["version"], header["content_hash"]
    message = yaml_string(header.get("message") or "")
    return f"""---
configs:
- config_name: judgments
  data_files: judgments.parquet
  default: true
- config_name: queries
  data_files: queries.parquet
goldmine:
  version: {v}
  content_hash: {digest}
  message: {message}
---
# goldmine gold set v{v}

A retrieval gold set published with goldmine: {n_queries} queries and {n_judgments} graded
judgments (2 fully answers, 1 useful context, 0 judged not relevant).

- `judgments` (default): `query_id`, `doc_id`, `grade`
- `queries`: `query_id`, `query`, `no_answer` (nothing in the corpus answers it), `tags`

Content hash of version {v}: `{digest}` (`goldmine gold verify` recomputes it).

```python
import datasets
judgments = datasets.load_dataset("parquet", data_files="path/to/this/folder/judgments.parquet",
                                  split="train")
```

`datasets.load_dataset("path/to/this/folder", "judgments")` reads it too, but `datasets` caches a
local folder by its name and config alone: another gold set's `v{v:04d}-hf` loaded before on this
machine comes back in its place (give it a `cache_dir` of its own).
"""
