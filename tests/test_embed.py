"""goldmine.embed: the bundled model offline, the cache by (model, text hash), lazy torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from goldmine import embed
from goldmine.errors import InputError
from goldmine.store import open_store


def _cached_rows(con) -> int:
    return con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]


def test_model_key_maps_the_bundled_model_aliases():
    assert embed.model_key(None) == embed.DEFAULT_MODEL
    assert embed.model_key("sentence-transformers/all-MiniLM-L6-v2") == embed.DEFAULT_MODEL
    assert embed.model_key("/models/other") == "/models/other"


def test_thread_count_env_over_config_over_default(tmp_path, monkeypatch):
    from goldmine.config import _load

    monkeypatch.delenv(embed.THREADS_ENV, raising=False)
    assert embed.torch_threads() == 1
    (tmp_path / "goldmine.toml").write_text("[models]\nthreads = 2\n")
    _load.cache_clear()
    assert embed.torch_threads() == 2
    monkeypatch.setenv(embed.THREADS_ENV, "3")
    assert embed.torch_threads() == 3
    monkeypatch.setenv(embed.THREADS_ENV, "many")
    with pytest.raises(InputError, match="GOLDMINE_TORCH_THREADS"):
        embed.torch_threads()


@pytest.mark.slow
def test_embed_texts_caches_by_text_hash(db_path, monkeypatch):
    monkeypatch.delenv(embed.THREADS_ENV, raising=False)
    texts = ["how do I reset my password", "reset password", "how do I reset my password", ""]
    with open_store(db_path) as con:
        first = embed.embed_texts(con, texts, show_progress=False)
        assert first.shape == (4, 384)
        assert first.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
        np.testing.assert_array_equal(first[0], first[2])
        # The duplicate text is encoded and stored once.
        assert _cached_rows(con) == 3

    import torch

    assert torch.get_num_threads() == 1

    encoded: list[int] = []
    real_encode = embed._encode

    def counting_encode(texts, name, batch_size, show_progress, *args, **kwargs):
        encoded.append(len(texts))
        return real_encode(texts, name, batch_size, show_progress, *args, **kwargs)

    monkeypatch.setattr(embed, "_encode", counting_encode)
    with open_store(db_path) as con:
        again = embed.embed_texts(con, list(reversed(texts)), show_progress=False)
        assert encoded == []  # all four from the cache: the model is not called at all
        np.testing.assert_array_equal(again, first[::-1])

        mixed = embed.embed_texts(con, ["reset password", "billing address"], show_progress=False)
        assert encoded == [1]
        assert _cached_rows(con) == 4
        np.testing.assert_array_equal(mixed[0], first[1])
        # The cached vector is the one the model gives without a store.
        alone = embed.embed_uncached(["billing address"])[0]
        np.testing.assert_allclose(mixed[1], alone, atol=1e-6)


@pytest.mark.slow
def test_similar_texts_are_closer_than_unrelated_ones():
    vectors = embed.embed_uncached(
        ["how can I change my password", "password reset", "opening hours of the Paris store"]
    )
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_new_vectors_are_added_once_and_skipped_on_a_read_only_store(db_path):
    import duckdb

    with open_store(db_path) as con:
        embed._store(con, "m", ["h1", "h2"], np.ones((2, 4), dtype=np.float32))
        embed._store(con, "m", ["h2", "h3"], np.ones((2, 4), dtype=np.float32))
        embed._store(con, "other", ["h1"], np.ones((1, 4), dtype=np.float32))
        rows = con.execute("SELECT model, text_hash FROM embeddings ORDER BY 1, 2").fetchall()
    assert rows == [("m", "h1"), ("m", "h2"), ("m", "h3"), ("other", "h1")]
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        embed._store(con, "m", ["h4"], np.ones((1, 4), dtype=np.float32))  # no error
        assert _cached_rows(con) == 4
    finally:
        con.close()


def test_a_fully_cached_call_does_not_import_torch(db_path):
    with open_store(db_path) as con:
        embed._store(con, embed.DEFAULT_MODEL, [embed.sha256_text("hi")], np.ones((1, 384), "f4"))
    code = (
        "import sys; from goldmine import embed; from goldmine.store import open_store\n"
        f"with open_store({str(db_path)!r}) as con:\n"
        "    v = embed.embed_texts(con, ['hi', 'hi'], show_progress=False)\n"
        "print(v.shape, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(2, 384) False"


def test_empty_input_gives_an_empty_matrix(db_path):
    with open_store(db_path) as con:
        assert embed.embed_texts(con, [], show_progress=False).shape[0] == 0


def test_backend_from_argument_env_config_and_default(tmp_path, monkeypatch):
    from goldmine.config import _load

    monkeypatch.delenv(embed.BACKEND_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _load.cache_clear()
    assert embed.embed_backend() == embed.DEFAULT_BACKEND
    (tmp_path / "goldmine.toml").write_text('[embed]\nbackend = "onnx-int8"\n')
    _load.cache_clear()
    assert embed.embed_backend() == "onnx-int8"
    monkeypatch.setenv(embed.BACKEND_ENV, "onnx")
    assert embed.embed_backend() == "onnx"
    assert embed.embed_backend("torch") == "torch"
    with pytest.raises(InputError, match="one of torch, onnx, onnx-int8"):
        embed.embed_backend("tensorrt")


def test_cache_keys_name_the_backend():
    assert embed.cache_key(None, "torch") == embed.DEFAULT_MODEL  # as cached before backends
    assert embed.cache_key(None, "onnx") == f"{embed.DEFAULT_MODEL}@onnx"
    assert embed.cache_key("/m/x", "onnx-int8") == "/m/x@onnx-int8"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_onnx_vectors_match_torch_on_real_text(backend, shared_dataset, tmp_path, monkeypatch):
    """Exported locally from the bundled weights (into a fresh cache folder), never fetched:
    mean cosine to the float32 torch vectors >= 0.99 on 400 real banking77 queries."""
    import polars as pl

    monkeypatch.setenv("GOLDMINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(embed.THREADS_ENV, raising=False)
    from goldmine import onnx_embed

    onnx_embed.load_encoder.cache_clear()
    texts = pl.read_csv(shared_dataset("datasets", "banking77", "train.csv"))["text"].to_list()
    texts = texts[::25][:400]
    ref = embed.embed_uncached(texts, backend="torch")
    got = embed.embed_uncached(texts, backend=backend)
    cos = np.einsum("ij,ij->i", ref, got)
    assert cos.mean() >= 0.99, cos.mean()
    assert cos.min() >= 0.95, cos.min()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    files = list((tmp_path / "cache" / "onnx").glob("*/*.onnx"))
    assert {f.name for f in files} >= {"model.onnx"}
    # a second load reuses the export; float32 gives the same vectors whatever the batch, int8
    # quantizes activations per batch, so a text's vector moves a little with its batch-mates
    onnx_embed.load_encoder.cache_clear()
    again = embed.embed_uncached(texts[:10], backend=backend)
    if backend == "onnx":
        np.testing.assert_allclose(again, got[:10], atol=1e-5)
    else:
        assert np.einsum("ij,ij->i", again, got[:10]).min() >= 0.98
        np.testing.assert_array_equal(again, embed.embed_uncached(texts[:10], backend=backend))


@pytest.mark.slow
def test_onnx_backend_imports_no_torch_even_to_export(tmp_path, shared_dataset):
    """Encoding with ONNX Runtime needs neither torch nor sentence-transformers in the process,
    even on first use: the one-time export (which needs torch) runs in a process of its own, so
    its 400 MB do not stay under the vectors. The store caches the vectors under their own key."""
    env = {**__import__("os").environ, "GOLDMINE_CACHE_DIR": str(tmp_path / "cache")}
    code = f"""
import sys
from goldmine.store import open_store
from goldmine import embed
with open_store({str(tmp_path / "x.duckdb")!r}) as con:
    v = embed.embed_texts(con, ["reset my card pin"], backend="onnx", show_progress=False)
    models = con.execute("SELECT DISTINCT model FROM embeddings").fetchall()
print(models, v.shape, sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[('all-MiniLM-L6-v2@onnx',)] (1, 384) []", out.stderr
    assert "exporting" in out.stderr and (tmp_path / "cache" / "onnx").is_dir()


@pytest.mark.slow  # loads the real model and encodes twice
def test_closed_embedding_in_chunks_fills_every_row_in_place(db_path):
    """embed_closed writes each chunk's vectors straight into the output (no second copy): rows
    of a repeated text, cached rows and rows encoded in different chunks all land in order."""
    texts = ["card declined", "reset password", "card declined", "top up", "pin", "top up"]
    with open_store(db_path) as con:
        embed.embed_texts(con, ["pin"], show_progress=False)  # one cached already
    got = embed.embed_closed(db_path, texts, chunk=2)
    assert (got.n_encoded, got.n_cached) == (3, 1)
    alone = embed.embed_uncached(texts)
    np.testing.assert_allclose(got.vectors, alone, atol=1e-6)
    np.testing.assert_array_equal(got.vectors[0], got.vectors[2])
    np.testing.assert_array_equal(got.vectors[3], got.vectors[5])


def test_a_cache_of_two_vector_sizes_is_a_clear_error(db_path):
    """Vectors of different sizes cached for one model: the InputError saying so reaches the
    user (not DuckDB's complaint about the half-read cache), and the store stays usable."""
    from goldmine.errors import InputError
    from goldmine.text import sha256_text

    texts = [f"query {i}" for i in range(10)]
    key = embed.cache_key(None, embed.embed_backend(None))
    with open_store(db_path) as con:
        for i, text in enumerate(texts):
            dim = 3 if i % 2 else 4
            embed._store(con, key, [sha256_text(text)], np.ones((1, dim), dtype=np.float32))
        with pytest.raises(InputError, match="vectors of sizes"):
            embed.embed_texts(con, texts, show_progress=False)
        assert _cached_rows(con) == 10


def _resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads Linux's /proc")
def test_a_big_row_buffer_lives_in_a_file_and_pages_out_without_loss(tmp_path, monkeypatch):
    """Past SPILL_BYTES the vectors are a file mapping in the given folder: page_out drops their
    pages from this process's resident memory and the rows read back the same afterwards."""
    monkeypatch.setattr(embed, "SPILL_BYTES", 1 << 20)
    assert not embed.page_out(embed.row_buffer(100, 384, tmp_path))  # small: ordinary memory
    assert not embed.page_out(embed.row_buffer(100_000, 384, None))  # no folder: the same
    x = embed.row_buffer(100_000, 384, tmp_path)  # 147 MB
    rng = np.random.default_rng(0)
    x[:] = rng.standard_normal(x.shape, dtype=np.float32)
    want = x[::997].copy()
    before = _resident_mb()
    assert embed.page_out(x[:50_000]) and embed.page_out(x)  # a view finds its mapping too
    assert _resident_mb() < before - 100
    np.testing.assert_array_equal(x[::997], want)
    assert not list(tmp_path.iterdir())  # the file is unlinked: nothing left behind
    # a mapping row_buffer did not make (a copy-on-write one would lose its writes) stays
    private = np.memmap(tmp_path / "private.f32", np.float32, "w+", shape=(1000, 384))
    assert not embed.page_out(private)


@pytest.mark.slow  # loads the real model
def test_closed_embedding_hands_over_finished_rows_in_order(db_path):
    """``ready`` is given every row once, in row order, as soon as every row before it is
    final: cached rows, encoded ones and a repeated text's (its first row's vector), so a
    consumer (the index built beside the embedding) sees exactly the vectors returned."""
    texts = ["pin", "card declined", "pin", "reset password", "top up", "card declined", "fx"]
    with open_store(db_path) as con:
        embed.embed_texts(con, ["pin", "top up"], show_progress=False)
    blocks: list[np.ndarray] = []
    got = embed.embed_closed(db_path, texts, chunk=2, ready=lambda v: blocks.append(v.copy()))
    assert (got.n_encoded, got.n_cached) == (3, 3)
    assert len(blocks) > 1 and all(len(b) for b in blocks)
    np.testing.assert_array_equal(np.concatenate(blocks), got.vectors)
