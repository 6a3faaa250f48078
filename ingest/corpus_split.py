"""SMART and TREC SGML files cut into records by a few vector passes over their bytes (numpy),
for ``corpus_formats.read_split``: where each line, record and SMART field starts, the flags
that send a record down the slower SQL (a line that may be blank, a CR), and the records as
Arrow tables of slices of the bytes, never copied. Apart from ``corpus_formats`` so that telling
a file's format (``corpus_formats.sniff``) imports neither numpy nor pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_BATCH = 20_000  # records per Arrow batch: DuckDB scans the batches in parallel
_LF, _CR = 10, 13
_TRIMMED = np.array([_LF, _CR, 32], np.uint8)  # what trim(x, LF || CR || ' ') drops
_TRIM_STEPS = 16  # bytes trimmed at an end at most; a longer run takes the list path


class NeedsLines(Exception):
    """The file holds what only the line reader reads exactly (invalid UTF-8, NUL bytes, a CR
    that ends no line, a TREC <DOC> after other text on its line)."""


@dataclass
class Block:
    """The records of a block of the file: ``end`` bytes of it, the lines before the first
    record (``prefix`` bytes), the record-opening lines ``recs`` and SMART's marker lines."""

    split: Split
    end: int
    prefix: int
    recs: np.ndarray
    marks: np.ndarray


def cut(data: bytes, fmt: str, line: int, final: bool) -> Block | None:
    """The records of ``data`` (its first line numbered ``line``): all of them if ``final``,
    else those before the last record's start; None if no record ends in it."""
    n = len(data)
    ext = np.empty(n + 5, np.uint8)  # the bytes, then line ends to look past the last one
    ext[:n] = np.frombuffer(data, np.uint8)
    ext[n:] = _LF
    starts = np.concatenate(([0], np.flatnonzero(ext[:n] == _LF) + 1))
    starts = starts[starts < n]
    opens, groups = _opens(ext, starts, fmt)
    end = n
    if not final:  # cut before the last record whose opening line is known whole
        cuts = np.flatnonzero(opens & (starts > 0) & (starts + 5 <= n))
        if not len(cuts):
            return None
        end = int(starts[cuts[-1]])
        starts, opens, groups = starts[: cuts[-1]], opens[: cuts[-1]], groups[: cuts[-1]]
    _check_bytes(ext, end, fmt)
    split = Split(ext, starts, end, pa.py_buffer(memoryview(data)[:end]), line)
    recs = np.flatnonzero(opens)
    first = int(recs[0]) if len(recs) else len(starts)
    prefix = int(starts[first]) if len(recs) else end
    return Block(split, end, prefix, recs, np.flatnonzero(groups[first:]) + first)


def batched(table: pa.Table) -> pa.Table:
    """``table`` in batches of _BATCH rows (no copy), which DuckDB scans in parallel."""
    return pa.Table.from_batches(table.to_batches(max_chunksize=_BATCH))


def _opens(ext: np.ndarray, starts: np.ndarray, fmt: str) -> np.ndarray:
    """Which lines (by their first byte in ``ext``) open a record, and for SMART which are
    field markers: ``(opens, markers)``."""
    after = np.isin(ext[starts + 2], (32, 9, _LF, _CR))  # the marker's end: space, tab, line end
    if fmt == "smart":
        markers = (ext[starts] == ord(".")) & (ext[starts + 1] >= 65) & (ext[starts + 1] <= 90)
        markers &= after
        return markers & (ext[starts + 1] == ord("I")), markers
    opens = ext[starts] == ord("<")
    for k, char in enumerate(b"doc", start=1):
        opens &= (ext[starts + k] | 32) == char
    opens &= ext[starts + 4] == ord(">")
    return opens, opens


def _check_bytes(ext: np.ndarray, end: int, fmt: str) -> None:
    """Raise NeedsLines for what the split would read unlike the line reader."""
    body = ext[:end]
    if (body == 0).any():
        raise NeedsLines
    crs = np.flatnonzero(body == _CR)
    if len(crs) and (ext[crs + 1] != _LF).any():
        raise NeedsLines
    if fmt == "trec":  # a <DOC> after spaces opens a record for the line reader; not here
        lt = np.flatnonzero(body == ord("<"))
        doc = (ext[lt + 4] == ord(">")) & ((ext[lt + 1] | 32) == ord("d"))
        doc &= ((ext[lt + 2] | 32) == ord("o")) & ((ext[lt + 3] | 32) == ord("c"))
        inside = lt[doc & (lt > 0)]
        if np.isin(ext[inside - 1], (9, 12, 32)).any():
            raise NeedsLines


class Split:
    """A block's bytes (``ext``, padded), its line starts and its records as Arrow tables of
    slices of ``buffer`` (no copy), the first line numbered ``line``."""

    def __init__(self, ext: np.ndarray, starts: np.ndarray, end: int, buffer, line: int):
        self.ext, self.starts, self.end, self.buffer, self.line = ext, starts, end, buffer, line
        self.crs = np.flatnonzero(ext[:end] == _CR)
        # A line may be blank (files.NOT_BLANK decides) only if its first and last bytes
        # before the line end are not visible ASCII; the records holding one take the path
        # that tests each line.
        last = np.append(starts[1:] - 1, end - (ext[end - 1] == _LF)) - 1
        last -= (ext[last] == _CR) & (last >= starts)  # ext[-1] is padding: a line end
        self.maybe_blank = np.flatnonzero(~_visible(ext[starts]) & ~_visible(ext[last]))

    def prefix(self, size: int) -> pa.Table:
        return _table({"line": np.array([self.line]), "v": self._slices(np.array([0, size]))})

    def _slices(self, offsets: np.ndarray) -> pa.Array:
        """The strings between consecutive byte ``offsets``; raises NeedsLines if one is
        not UTF-8."""
        n = len(offsets) - 1
        array = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int64)),
                                                 self.buffer)  # fmt: skip
        try:
            array.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise NeedsLines from exc
        return array

    def _any(self, where: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        """Whether each range between consecutive ``bounds`` holds one of ``where`` (sorted)."""
        return np.diff(np.searchsorted(where, bounds)) > 0

    def records(self, recs: np.ndarray) -> pa.Table:
        """TREC: one row per record (lines ``recs`` on): its line, bytes and flags."""
        at = np.append(self.starts[recs], self.end)
        a, b = at[:-1], at[1:] - (self.ext[at[1:] - 1] == _LF)  # to its last line's end
        b -= self.ext[b - 1] == _CR
        return _table({
            "line": recs + self.line, "v": self.views(a, b),
            "b": self._any(self.maybe_blank, np.append(recs, len(self.starts))),
            "c": self._any(self.crs, at),
        })  # fmt: skip

    def views(self, a: np.ndarray, b: np.ndarray) -> pa.Array:
        """The strings of bytes ``a[i]:b[i]`` as an Arrow string view array over the block's
        buffer (no copy; a string of up to 12 bytes is held in its view, as Arrow wants);
        raises NeedsLines if one is not UTF-8."""
        lengths = (b - a).astype(np.int32)
        views = np.zeros((len(a), 16), np.uint8)
        words = views.view(np.int32)
        words[:, 0] = lengths
        short = lengths <= 12
        for k in range(12):  # bytes held in the view: all of a short string, 4 of a long one
            held = np.flatnonzero((lengths > k) & (short | (k < 4)))
            views[held, 4 + k] = self.ext[a[held] + k]
        words[~short, 3] = a[~short]  # buffer 0, at this offset
        array = pa.Array.from_buffers(
            pa.string_view(), len(a), [None, pa.py_buffer(views), self.buffer]
        )
        try:
            array.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise NeedsLines from exc
        return array

    def trimmed(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``a:b`` without the LF, CR and space bytes at either end (SQL's trim would read the
        whole string), and whether each is done (a run longer than _TRIM_STEPS is not)."""
        ext = self.ext
        for _ in range(_TRIM_STEPS):
            step = (a < b) & np.isin(ext[a], _TRIMMED)
            if not step.any():
                break
            a = a + step
        for _ in range(_TRIM_STEPS):
            step = (b > a) & np.isin(ext[b - 1], _TRIMMED)
            if not step.any():
                break
            b = b - step
        done = ~((a < b) & (np.isin(ext[a], _TRIMMED) | np.isin(ext[b - 1], _TRIMMED)))
        return a, b, done

    def smart(self, recs: np.ndarray, marks: np.ndarray) -> tuple[pa.Table, pa.Table]:
        """SMART: the records whose fields are one each of the known letters and whose lines
        are all fields' (no line starts with a dot but a marker, none may be blank), as
        ``line, c`` (a CR in it) and each known field's text, trimmed (empty if none); and the
        other records as ``line, f``, the list of their fields (``_SMART_SPLIT``)."""
        ext, starts, n = self.ext, self.starts, len(recs)
        at = np.append(starts[marks], self.end)
        letters = ext[at[:-1] + 1]
        opens = np.isin(marks, recs)
        rec = np.cumsum(opens) - 1
        line_bounds = np.append(recs, len(starts))
        dots = np.flatnonzero(ext[starts] == ord("."))
        simple = ~self._any(self.maybe_blank, line_bounds)
        simple &= ~self._any(np.setdiff1d(dots, marks, assume_unique=True), line_bounds)
        known = np.isin(letters, np.frombuffer(b"ITWAB", np.uint8))
        simple &= np.bincount(rec[~known], minlength=n) == 0
        a, b, done = self.trimmed(at[:-1] + 2, at[1:])  # each field's value, past ".X"
        simple &= np.bincount(rec[~done], minlength=n) == 0
        rec_at = np.append(starts[recs], self.end)
        places = {}
        for letter in "ITWAB":
            of = letters == ord(letter)
            simple &= np.bincount(rec[of], minlength=n) <= 1
            first, last = np.zeros(n, np.int64), np.zeros(n, np.int64)
            first[rec[of]], last[rec[of]] = a[of], b[of]
            places[letter] = (first, last)
        flat = {"line": recs[simple] + self.line, "c": self._any(self.crs, rec_at)[simple]}
        flat.update({k: self.views(a[simple], b[simple]) for k, (a, b) in places.items()})
        other = ~simple[rec]
        fields = pa.StructArray.from_arrays(
            [_arrow(letters[other]), self.views(at[:-1][other], at[1:][other]),
             _arrow(self._any(self.maybe_blank, np.append(marks, len(starts)))[other]),
             _arrow(self._any(self.crs, at)[other])],
            names=["t", "v", "b", "c"],
        )  # fmt: skip
        bounds = np.append(0, np.cumsum(np.bincount(rec[other], minlength=n)[~simple]))
        lists = pa.LargeListArray.from_arrays(_arrow(bounds.astype(np.int64)), fields)
        return _table(flat), _table({"line": recs[~simple] + self.line, "f": lists})


def _visible(chars: np.ndarray) -> np.ndarray:
    return (chars >= 33) & (chars <= 126)


def _arrow(values: np.ndarray) -> pa.Array:
    """A numpy array as Arrow from its buffer: ``pa.array`` of a numpy array imports pandas
    (0.4 s, the whole read of a small collection such as Cranfield)."""
    values = np.ascontiguousarray(values)
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _table(columns: dict) -> pa.Table:
    """An Arrow table of numpy arrays and Arrow arrays, by name."""
    arrays = [c if isinstance(c, pa.Array) else _arrow(c) for c in columns.values()]
    return pa.Table.from_arrays(arrays, names=list(columns))
