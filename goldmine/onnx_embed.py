"""The ONNX Runtime embedding backends: ``onnx`` (float32) and ``onnx-int8`` (dynamic quantization).

sentence-transformers' own ``backend="onnx"`` needs Optimum's ONNX exporter, whose release for
transformers 5 is not out (``optimum-onnx`` 0.1.0 pins transformers < 4.58, and installing it
would downgrade the transformers that sentence-transformers 6 runs on). So goldmine exports the
model itself, once, from the local weights: ``torch.onnx.export`` of the transformer with the
model's own pooling (mean over the attention mask) and L2 normalization inside the graph, so the
ONNX file gives the sentence vector directly. The int8 variant is
``onnxruntime.quantization.quantize_dynamic`` of that file (weights int8, activations quantized on
the fly), per output channel: per-tensor scales lost too much (mean cosine 0.969 to the float32
vectors on banking77, per-channel 0.9935). Both are cached on disk (``cache_dir()``) under a key
of the model folder's weights (name, size, modification time), so a changed model is exported
again; nothing is ever fetched.

At run time this path imports neither torch nor sentence-transformers: ONNX Runtime runs the graph
and the model's own ``tokenizer.json`` (Hugging Face ``tokenizers``) tokenizes. The thread count
is the one torch would use (``goldmine.embed.torch_threads``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from goldmine.errors import InputError

BACKENDS = ("torch", "onnx", "onnx-int8")
CACHE_ENV = "GOLDMINE_CACHE_DIR"
_EXPORT_VERSION = 1  # bump when the exported graph changes


def cache_dir() -> Path:
    """GOLDMINE_CACHE_DIR > $XDG_CACHE_HOME/goldmine > ~/.cache/goldmine."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "goldmine"


def _weights(folder: Path) -> list[Path]:
    found = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("pytorch_model*.bin"))
    if not found:
        raise InputError(f"no model weights (*.safetensors) in {folder}: cannot export to ONNX")
    return found


def _pooling(folder: Path) -> dict:
    path = folder / "1_Pooling" / "config.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    if not config.get("pooling_mode_mean_tokens", False) or any(
        config.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
    ):
        raise InputError(
            f"the ONNX backends support mean-pooled sentence-transformers models; {folder} is "
            "not one: use --backend torch"
        )
    return config


def _max_length(folder: Path) -> int:
    path = folder / "sentence_bert_config.json"
    if path.is_file():
        return int(json.loads(path.read_text()).get("max_seq_length", 256))
    return 256


def export_dir(folder: Path) -> Path:
    """Where the exports of the model in ``folder`` live: keyed by its weights' names, sizes and
    modification times (and the export's version)."""
    h = hashlib.sha256(f"v{_EXPORT_VERSION}|{folder.resolve()}".encode())
    for w in _weights(folder):
        st = w.stat()
        h.update(f"|{w.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return cache_dir() / "onnx" / f"{folder.name}-{h.hexdigest()[:16]}"


@contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """A temp path to write ``target`` to, renamed over it when the block ends well: two first
    runs at once each write their own, and an interrupted export leaves no 90 MB file behind."""
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    try:
        yield tmp
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def _export_float(folder: Path, target: Path) -> None:
    """torch.onnx.export of transformer + mean pooling + normalize (needs torch, once)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder), local_files_only=True)
    model.eval()

    class Sentence(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )[0]
            mask = attention_mask.unsqueeze(-1).to(out.dtype)
            pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    with _replacing(target) as tmp:
        _export_graph(torch, Sentence(model), tmp)


def _export_graph(torch: Any, module: Any, tmp: Path) -> None:
    dummy = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            module,
            (dummy, dummy, torch.zeros_like(dummy)),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "token_type_ids": {0: "batch", 1: "seq"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )


def _export_int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # per-channel int8 weights: mean cosine to the float32 vectors 0.9935 on banking77 (0.969
    # per-tensor, below the 0.99 the backend must hold)
    with _replacing(target) as tmp:
        quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8, per_channel=True)


def _export(folder: Path, fp32: Path, int8: Path | None) -> None:
    if not fp32.is_file():
        _export_float(folder, fp32)
    if int8 is not None and not int8.is_file():
        _export_int8(fp32, int8)


def onnx_file(folder: Path, backend: str) -> Path:
    """The ONNX file for ``backend`` ('onnx' or 'onnx-int8'), exported on first use.

    The export runs in a child process: it loads torch and the transformer, which would stay in
    this process's memory (400 MB) under the vectors and the index that come after."""
    _pooling(folder)
    out = export_dir(folder)
    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / "model.onnx"
    int8 = out / "model_qint8.onnx" if backend != "onnx" else None
    if not fp32.is_file() or (int8 is not None and not int8.is_file()):
        import subprocess
        import sys

        from goldmine.output import info

        info(f"exporting {folder.name} to ONNX once (cached in {out})")
        # a plain child, not multiprocessing's spawn, which re-imports the caller's main module
        args = [str(folder), str(fp32), str(int8 or "")]
        done = subprocess.run(
            [sys.executable, "-m", "goldmine.onnx_embed", *args], capture_output=True, text=True
        )
        if done.returncode:
            said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise InputError(f"exporting {folder.name} to ONNX failed: {said}")
    return int8 or fp32


class OnnxEncoder:
    """Tokenizer + ONNX Runtime session giving L2-normalized sentence vectors."""

    def __init__(self, folder: Path, backend: str, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.backend = backend
        self.threads = threads
        path = onnx_file(folder, backend)
        tok_path = folder / "tokenizer.json"
        if not tok_path.is_file():
            raise InputError(f"no tokenizer.json in {folder}: the ONNX backends need one")
        self.tokenizer = Tokenizer.from_file(str(tok_path))
        self.tokenizer.enable_truncation(_max_length(folder))
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.dim = int(self.session.get_outputs()[0].shape[1] or 0) or self._probe_dim()

    def _probe_dim(self) -> int:
        return int(self.encode(["a"]).shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One batch: padded to its longest text (callers sort by length first)."""
        encodings = self.tokenizer.encode_batch(list(texts))
        width = max((len(e.ids) for e in encodings), default=1)
        n = len(encodings)
        ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for i, e in enumerate(encodings):
            m = len(e.ids)
            ids[i, :m] = e.ids
            mask[i, :m] = 1
            types[i, :m] = e.type_ids
        (out,) = self.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )
        return np.asarray(out, dtype=np.float32)


@lru_cache(maxsize=4)
def load_encoder(folder: str, backend: str, threads: int) -> Any:
    return OnnxEncoder(Path(folder), backend, threads)


if __name__ == "__main__":  # onnx_file's child: FOLDER FP32 [INT8]
    import sys

    _export(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if sys.argv[3] else None)
