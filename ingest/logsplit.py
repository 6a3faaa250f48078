"""A Session Track XML file cut into blocks by numpy passes over its bytes, for
``logformats._read_session_xml_whole``: a block starts at each tag that opens a session, a
search, a result or a click, so every tag in it is placed as its opener is. Cutting the file
in SQL (a pattern inserting a marker before each opener, a split of the whole text, running
maxima over the pieces) was a single-threaded third of the reader; here it is a few passes over
the bytes, and DuckDB gets the blocks as Arrow slices of them (no copy). The openers'
attributes (num, rank, starttime, userid) are read here too, where this reading is sure to give what
``logformats._attr``'s pattern gives (a pattern per attribute per block was a fifth of the
reader); an opener it is not sure of is marked odd and SQL reads it with the pattern. Apart
from ``logformats`` so that telling a file's layout imports neither numpy nor pyarrow.
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
_WORD = np.zeros(256, bool)  # RE2's \w: an attribute's name starts after a byte that is none
_WORD[list(b"0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")] = True
_BLANK = np.zeros(256, bool)  # the pattern's [\t\f ] around '='
_BLANK[list(b"\t\f ")] = True
# The attributes read from an opener, and the openers (by number in OPENERS) that carry each.
ATTRIBUTES = {"num": (1, 2, 3), "rank": (4,), "starttime": (2, 3, 5), "userid": (1,)}
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
    or current query), result and click opened at or before it (NULL before the first); the
    opener's ``odd``, ``num``, ``rank`` and ``starttime`` (``_attributes``). None for a file
    the line reader must read: invalid UTF-8, or a chr(1) (as the SQL cut did)."""
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
    special = np.flatnonzero(_special(ext[:size]))
    byte = ext[special]
    starts, kinds = _openers(ext, special[byte == ord("<")])
    table = _table(ext, size, data, starts, kinds, special[byte == ord("\n")])
    for name, values in _attributes(ext, size, special, byte, starts, kinds).items():
        table = table.append_column(name, values)
    return pa.Table.from_batches(table.to_batches(max_chunksize=20_000))


def _special(data: np.ndarray) -> np.ndarray:
    """Where ``data`` holds a byte the other passes look at: where tags open and close, line
    ends, and what attributes are made of ('<', '>', CR, LF, '=', '"'). Comparisons ('<', '='
    and '>' are 60 to 62): a table lookup of each byte took four times as long."""
    found = (data ^ 60) < 3
    for byte in b'"\n\r':
        found |= data == byte
    return found


def _openers(ext: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each opener's '<' is (``at``: every '<'), in file order, and which of OPENERS it
    is (1 up)."""
    found, kinds = [], []
    first = ext[at + 1]
    for kind, name in enumerate(OPENERS, 1):
        cand = at[first == ord(name[0])]
        for i, byte in enumerate(name.encode()[1:], 1):
            cand = cand[ext[cand + 1 + i] == byte]
        cand = cand[_NAME_ENDS[ext[cand + 1 + len(name)]]]
        found.append(cand)
        kinds.append(np.full(len(cand), kind, np.int8))
    starts = np.concatenate(found)
    order = np.argsort(starts, kind="stable")
    return starts[order], np.concatenate(kinds)[order]


def _table(
    ext: np.ndarray,
    size: int,
    data: pa.Buffer,
    starts: np.ndarray,
    kinds: np.ndarray,
    newlines: np.ndarray,
) -> pa.Table:
    """The blocks cut before ``starts`` (openers of ``kinds``), placed by running maxima."""
    n = len(starts) + 1
    offsets = np.concatenate(([0], starts, [size])).astype(np.int64)
    kind = np.concatenate(([0], kinds))
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
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def _arrow(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array as Arrow from its buffer (``pa.array`` of a numpy array imports pandas),
    NULL where ``valid`` is false."""
    values, n = np.ascontiguousarray(values), len(values)
    bits = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    kind = pa.from_numpy_dtype(values.dtype)
    if values.dtype == bool:  # Arrow's are bits
        values = np.packbits(values, bitorder="little")
    return pa.Array.from_buffers(kind, n, [bits, pa.py_buffer(values)])


def _attributes(
    ext: np.ndarray,
    size: int,
    special: np.ndarray,
    byte: np.ndarray,
    starts: np.ndarray,
    kinds: np.ndarray,
) -> dict[str, pa.Array]:
    """Each block's opener attributes as ``logformats._attr``'s pattern reads them: ``odd``
    where this reading may differ from the pattern's (a blank beside an '='), which SQL then
    reads with the pattern; else the value of ATTRIBUTES' each, NULL where the opener has no
    attributes (no space or tab after its name) or is not of a kind that carries it, '' where
    the pattern finds none.

    The pattern takes, after the name, the first ``name="value"`` whose name starts after a
    byte that is not a word's and whose value holds no '"', '<', '>' or line end; it looks no
    further than the opener's first '<', '>' or line end (``stop``). So every '=' of an opener
    before its stop, followed by '"', with the attribute's name before it, is a candidate, and
    the first is the value."""
    names = np.array([0, *(len(n) for n in OPENERS)])[kinds]
    after = starts + 1 + names  # the byte after the opener's name
    has = (ext[after] == ord(" ")) | (ext[after] == ord("\t"))
    stop = _stops(special, byte, after, size)
    eq = special[byte == ord("=")]
    owner = np.searchsorted(starts, eq, "right") - 1
    keep = owner >= 0
    eq, owner = eq[keep], owner[keep]
    keep = has[owner] & (eq > after[owner]) & (eq < stop[owner])
    eq, owner = eq[keep], owner[keep]
    odd = np.zeros(len(starts), bool)
    odd[owner[_BLANK[ext[eq - 1]] | _BLANK[ext[eq + 1]]]] = True
    quotes = np.append(special[byte == ord('"')], size + _PAD)
    quoted = ext[eq + 1] == ord('"')
    eq, owner = eq[quoted], owner[quoted]
    close = quotes[np.searchsorted(quotes, eq + 2)]
    closed = close < stop[owner]
    eq, owner, close = eq[closed], owner[closed], close[closed]
    out = {"odd": _arrow(np.concatenate(([False], odd)))}
    for name, carried in ATTRIBUTES.items():
        size_n = len(name)
        at = eq - size_n
        named = (at > after[owner]) & ~_WORD[ext[at - 1]]
        for i, char in enumerate(name.encode()):
            named &= ext[at + i] == char
        first, where = np.unique(owner[named], return_index=True)
        a, b = np.zeros(len(starts), np.int64), np.zeros(len(starts), np.int64)
        a[first], b[first] = eq[named][where] + 2, close[named][where]
        valid = has & np.isin(kinds, carried)
        out[name] = _gathered(ext, np.append(0, a), np.append(0, b), np.append(False, valid))
    return out


def _stops(special: np.ndarray, byte: np.ndarray, after: np.ndarray, size: int) -> np.ndarray:
    """The first '<', '>' or line end at or after each of ``after`` (``size`` if none): the
    next special byte, then the one after it for those where it was '=' or '"', and so on (an
    opener holds a few; a mask of the file's millions of special bytes took 0.08 s of 1M
    lines)."""
    stop = np.full(len(after), size, np.int64)
    at = np.searchsorted(special, after)
    todo = np.flatnonzero(at < len(special))
    while len(todo):
        here = at[todo]
        found = (byte[here] != ord("=")) & (byte[here] != ord('"'))
        stop[todo[found]] = special[here[found]]
        todo = todo[~found]
        at[todo] += 1
        todo = todo[at[todo] < len(special)]
    return stop


def _gathered(ext: np.ndarray, a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> pa.Array:
    """The strings of bytes ``ext[a[i]:b[i]]`` copied into one buffer (they are short and
    apart), NULL where not ``valid``."""
    lengths = np.where(valid, b - a, 0)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    index = np.repeat(a - offsets[:-1], lengths) + np.arange(offsets[-1])
    bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.LargeStringArray.from_buffers(
        len(a), pa.py_buffer(offsets), pa.py_buffer(ext[index]), bits
    )
