"""A Session Track XML file cut into blocks by numpy passes over its bytes, for
``logformats._read_session_xml_whole``: a block starts at each tag that opens a session, a
search, a result or a click, so every tag in it is placed as its opener is. Cutting the file
in SQL (a pattern inserting a marker before each opener, a split of the whole text, running
maxima over the pieces) was a single-threaded third of the reader; here it is a few passes over
the bytes, and DuckDB gets the blocks as Arrow slices of them (no copy). Apart from
``logformats`` so that telling a file's layout imports neither numpy nor pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

# The tags that open a block, as the SQL reader's pattern named them: the name, then a space,
# a tab, a line end or '>' (``<results>``, ``<clicked>`` and ``<sessiontrack2012>`` open none).
OPENERS = ("session", "interaction", "currentquery", "result", "click")
_NAME_ENDS = np.zeros(256, bool)
_NAME_ENDS[list(b" \t\r\n>")] = True
_PAD = 16  # bytes after the file's end: a name is looked at past it


def _strings(texts: tuple[str, ...]) -> pa.Array:
    """An Arrow string array from its buffers (``pa.array`` of a list imports pandas)."""
    data = "".join(texts).encode()
    offsets = np.cumsum([0, *(len(t.encode()) for t in texts)]).astype(np.int32)
    return pa.StringArray.from_buffers(len(texts), pa.py_buffer(offsets), pa.py_buffer(data))


_NAMES = _strings(("", *OPENERS))  # a block's kind by its number: 0 for the first block


def blocks(path: Path) -> pa.Table | None:
    """The file's blocks in file order: ``idx`` (1 for the text before the first opener),
    ``block`` (its text), ``kind`` (its opener's name, '' for the first), ``line`` (where it
    starts), and ``s``, ``e``, ``r``, ``k``: the idx of the last session, search (interaction
    or current query), result and click opened at or before it (NULL before the first). None
    for a file the line reader must read: invalid UTF-8, or a chr(1) (as the SQL cut did)."""
    size = path.stat().st_size
    ext = np.zeros(size + _PAD, np.uint8)
    with path.open("rb") as handle:
        got = handle.readinto(memoryview(ext)[:size])
    if got != size or (ext[:size] == 1).any():
        return None
    data = pa.py_buffer(ext[:size])
    try:
        pa.StringArray.from_buffers(1, pa.py_buffer(np.array([0, size], np.int32)), data).validate(
            full=True
        )
    except pa.ArrowInvalid:
        return None
    starts, kinds = _openers(ext, size)
    return _table(ext, size, data, starts, kinds)


def _openers(ext: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each opener's '<' is, in file order, and which of OPENERS it is (1 up)."""
    at = np.flatnonzero(ext[:size] == ord("<"))
    found, kinds = [], []
    for kind, name in enumerate(OPENERS, 1):
        cand = at
        for i, byte in enumerate(name.encode()):
            cand = cand[ext[cand + 1 + i] == byte]
        cand = cand[_NAME_ENDS[ext[cand + 1 + len(name)]]]
        found.append(cand)
        kinds.append(np.full(len(cand), kind, np.int8))
    starts = np.concatenate(found)
    order = np.argsort(starts, kind="stable")
    return starts[order], np.concatenate(kinds)[order]


def _table(
    ext: np.ndarray, size: int, data: pa.Buffer, starts: np.ndarray, kinds: np.ndarray
) -> pa.Table:
    n = len(starts) + 1
    offsets = np.concatenate(([0], starts, [size])).astype(np.int64)
    kind = np.concatenate(([0], kinds))
    newlines = np.flatnonzero(ext[:size] == 10)
    idx = np.arange(1, n + 1, dtype=np.int64)
    columns = {
        "idx": _arrow(idx),
        "block": pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), data),
        "kind": pa.DictionaryArray.from_arrays(_arrow(kind.astype(np.int32)), _NAMES).cast(
            pa.string()
        ),
        "line": _arrow(1 + np.searchsorted(newlines, offsets[:-1]).astype(np.int64)),
    }
    search = (kind == 2) | (kind == 3)  # an interaction or the current query
    for name, opens in (("s", kind == 1), ("e", search), ("r", kind == 4), ("k", kind == 5)):
        last = np.maximum.accumulate(np.where(opens, idx, 0))
        columns[name] = _arrow(last, valid=last > 0)
    table = pa.Table.from_arrays(list(columns.values()), names=list(columns))
    return pa.Table.from_batches(table.to_batches(max_chunksize=20_000))


def _arrow(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array as Arrow from its buffer (``pa.array`` of a numpy array imports pandas),
    NULL where ``valid`` is false."""
    values = np.ascontiguousarray(values)
    bits = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [bits, pa.py_buffer(values)])
