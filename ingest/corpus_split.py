"""SMART and TREC SGML files cut into records by a few vector passes over their bytes (numpy),
for ``corpus_formats.read_split``: where each line, record, SMART field and TREC tag starts, the
flags that send a record down the slower SQL (a line that may be blank, a CR, a TREC record not
of the usual layout), and the records, or for the usual TREC layout their DOCNO, title and text,
as Arrow tables of slices of the bytes, never copied. Apart from ``corpus_formats`` so that
telling a file's format (``corpus_formats.sniff``) imports neither numpy nor pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa

_BATCH = 20_000  # records per Arrow batch: DuckDB scans the batches in parallel
_LF, _CR = 10, 13
_TRIM_STEPS = 16  # bytes trimmed at an end at most; a longer run takes the list path
_PIECE = 4 << 20  # bytes of a block looked through at a time
_NONE = np.empty(0, np.int64)
_PAD = 16  # line ends after a block's bytes: a tag or a marker is looked at past its end


class NeedsLines(Exception):
    """The file holds what only the line reader reads exactly (invalid UTF-8, NUL bytes, a CR
    that ends no line, a TREC <DOC> after other text on its line)."""


class NeedsObjects(Exception):
    """A SMART file has a field of a letter other than I, T, W, A and B: its records are JSON
    objects, that field's letter a key, rather than a fixed set of text columns."""


@dataclass
class Block:
    """The records of a block of the file: ``end`` bytes of it, the lines before the first
    record (``prefix`` bytes), the record-opening lines ``recs`` and SMART's marker lines."""

    split: Split
    end: int
    prefix: int
    recs: np.ndarray
    marks: np.ndarray
    tags: Tags | None  # TREC: the tags its records' fields are cut at


@dataclass
class Tags:
    """TREC: where each '<' of a block is (``at``), which of ``_TREC_TAGS`` opens there
    (``kinds``, 0 for none), its length in bytes, and whether it opens a record (a <DOC> that
    starts a line)."""

    at: np.ndarray
    kinds: np.ndarray
    sizes: np.ndarray
    opens: np.ndarray
    runs: np.ndarray  # where a tab or two spaces are: a text holding one is cleaned in SQL

    def before(self, end: int) -> Tags:
        k, runs = np.searchsorted(self.at, end), self.runs[: np.searchsorted(self.runs, end)]
        return Tags(self.at[:k], self.kinds[:k], self.sizes[:k], self.opens[:k], runs)


def fill(handle: BinaryIO, carry: bytes, size: int) -> tuple[np.ndarray, int, bool]:
    """A block: ``carry`` and the next ``size`` bytes of ``handle`` read into an array after
    it, with room for ``cut``'s padding (read into, not joined and copied: two copies of 64
    MiB a block; a bytearray would be zeroed first); how many bytes it holds, and whether
    the file ended."""
    ext, n, full = np.empty(len(carry) + size + _PAD, np.uint8), len(carry), len(carry) + size
    ext[:n] = np.frombuffer(carry, np.uint8)
    view = memoryview(ext)
    while n < full and (got := handle.readinto(view[n:full])):
        n += got
    view.release()
    return ext, n, n < full


def cut(ext: np.ndarray, n: int, fmt: str, line: int, final: bool) -> Block | None:
    """The records of the first ``n`` bytes of ``ext`` (from ``fill``; its first line
    numbered ``line``): all of them if ``final``, else those before the last record's start;
    None if no record ends in it."""
    ext[n:] = _LF  # line ends to look past the last one
    low, lt, pairs = _find(ext, n, fmt == "trec")
    kind = ext[low]
    starts = np.concatenate(([0], low[kind == _LF] + 1))
    starts = starts[starts < n]
    tags = _tags(ext, lt, np.union1d(low[kind == 9], pairs)) if fmt == "trec" else None
    opens, groups = _opens(ext, starts, fmt, tags)
    end = n
    if not final:  # cut before the last record whose opening line is known whole
        cuts = np.flatnonzero(opens & (starts > 0) & (starts + 5 <= n))
        if not len(cuts):
            return None
        end = int(starts[cuts[-1]])
        starts, opens, groups = starts[: cuts[-1]], opens[: cuts[-1]], groups[: cuts[-1]]
        tags = tags.before(end) if tags is not None else None
    low, kind = low[: np.searchsorted(low, end)], kind[: np.searchsorted(low, end)]
    crs = _check_bytes(ext, low[kind == _CR], (kind == 0).any(), tags)
    split = Split(ext, starts, end, pa.py_buffer(ext[:end]), line, crs, low)
    recs = np.flatnonzero(opens)
    first = int(recs[0]) if len(recs) else len(starts)
    prefix = int(starts[first]) if len(recs) else end
    return Block(split, end, prefix, recs, np.flatnonzero(groups[first:]) + first, tags)


def other_fields(block: Block) -> bool:
    """SMART: whether a record of ``block`` has a field of a letter other than I, T, W, A, B."""
    split = block.split
    return bool((_SMART_SLOTS[split.ext[split.starts[block.marks] + 1]] == 5).any())


def _find(ext: np.ndarray, n: int, trec: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the first ``n`` bytes below 14 are (LF, CR, NUL; tabs come too) and, for TREC,
    the '<' and the first of two spaces: a piece at a time, so that the passes read it from
    the cache (a fifth less than two passes over a block of 64 MiB) and no mask is as large
    as the block."""
    low, lt, pairs = [_NONE], [_NONE], [_NONE]
    for at in range(0, n, _PIECE):
        piece = ext[at : min(at + _PIECE, n) + 1]  # and the next byte (ext is padded)
        low.append(np.flatnonzero(piece[:-1] < 14) + at)
        if trec:
            lt.append(np.flatnonzero(piece[:-1] == ord("<")) + at)
            spaces = piece == 32
            pairs.append(np.flatnonzero(spaces[:-1] & spaces[1:]) + at)
    return np.concatenate(low), np.concatenate(lt), np.concatenate(pairs)


def batched(table: pa.Table) -> pa.Table:
    """``table`` in batches of _BATCH rows (no copy), which DuckDB scans in parallel."""
    return pa.Table.from_batches(table.to_batches(max_chunksize=_BATCH))


def _opens(ext: np.ndarray, starts: np.ndarray, fmt: str, tags: Tags | None) -> np.ndarray:
    """Which lines (by their first byte in ``ext``) open a record, and for SMART which are
    field markers: ``(opens, markers)``. A TREC record opens at a <DOC> that starts a line."""
    if tags is not None:
        opens = np.zeros(len(starts), bool)
        opens[np.searchsorted(starts, tags.at[tags.opens])] = True
        return opens, opens
    dots = np.flatnonzero(ext[starts] == ord("."))  # a marker: '.', a capital, its end
    at = starts[dots]
    letters = ext[at + 1]
    marker = _CAPITAL[letters] & _MARKER_END[ext[at + 2]]
    markers, opens = np.zeros(len(starts), bool), np.zeros(len(starts), bool)
    markers[dots[marker]] = True
    opens[dots[marker & (letters == ord("I"))]] = True
    return opens, markers


def _check_bytes(ext: np.ndarray, crs: np.ndarray, nul: bool, tags: Tags | None) -> np.ndarray:
    """Raise NeedsLines for what the split would read unlike the line reader (a NUL, a CR
    before no LF, ...); else the CRs."""
    if nul or (ext[crs + 1] != _LF).any():
        raise NeedsLines
    if tags is not None:  # a <DOC> after spaces opens a record for the line reader; not here
        inside = tags.at[(tags.kinds == _DOC) & (tags.at > 0)]
        if np.isin(ext[inside - 1], (9, 12, 32)).any():
            raise NeedsLines
    return crs


class Split:
    """A block's bytes (``ext``, padded), its line starts and its records as Arrow tables of
    slices of ``buffer`` (no copy), the first line numbered ``line``; ``low``: where its bytes
    below 14 are (LF, CR, tab, form feed, ...)."""

    def __init__(self, ext: np.ndarray, starts: np.ndarray, end: int, buffer, line: int,
                 crs: np.ndarray, low: np.ndarray = _NONE):  # fmt: skip
        self.ext, self.starts, self.end, self.buffer, self.line = ext, starts, end, buffer, line
        self.crs, self.low = crs, low
        # A line may be blank (files.NOT_BLANK decides) only if its first and last bytes
        # before the line end are not visible ASCII; the records holding one take the path
        # that tests each line.
        lines = np.flatnonzero(~_VISIBLE[ext[starts]])  # the few whose last byte is looked at
        after = np.minimum(lines + 1, len(starts) - 1)
        last_end = end - (ext[end - 1] == _LF)  # the last line's end, before its LF if any
        last = np.where(lines + 1 < len(starts), starts[after] - 1, last_end) - 1
        if len(crs):
            last -= (ext[last] == _CR) & (last >= starts[lines])  # ext[-1] is padding: an LF
        self.maybe_blank = lines[~_VISIBLE[ext[last]]]

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

    def trec(self, recs: np.ndarray, tags: Tags) -> tuple[pa.Table, pa.Table]:
        """TREC: one row per record (lines ``recs`` on). Those of the usual layout (no line
        that may be blank, see ``_trec_fields``) as ``line, c`` (a CR in it), ``m`` (the text
        needs cleaning), ``I`` (DOCNO), ``T`` (the title) and ``X`` (the text), cut from the
        bytes; the others as ``line, v`` (its bytes, to its last line's end), ``b`` (a line
        may be blank) and ``c``, for the patterns that read any layout."""
        at = np.append(self.starts[recs], self.end)
        a, b = at[:-1], at[1:] - (self.ext[at[1:] - 1] == _LF)  # to its last line's end
        b -= self.ext[b - 1] == _CR
        blank = self._any(self.maybe_blank, np.append(recs, len(self.starts)))
        crs = self._any(self.crs, at)
        fields, usual, marked = _trec_fields(self, tags, a, b)
        usual &= ~blank
        self._slices(np.array([0, self.end]))  # the whole block is UTF-8 (else NeedsLines)
        cut = {"line": recs[usual] + self.line, "c": crs[usual], "m": marked[usual]}
        cut.update({k: self.views(x[usual], y[usual], True) for k, (x, y) in fields.items()})
        other = ~usual
        return _table(cut), _table({
            "line": recs[other] + self.line, "v": self.views(a[other], b[other], True),
            "b": blank[other], "c": crs[other],
        })  # fmt: skip

    def views(self, a: np.ndarray, b: np.ndarray, whole: bool = False,
              ascii_ends: bool = False) -> pa.Array:  # fmt: skip
        """The strings of bytes ``a[i]:b[i]`` as an Arrow string view array over the block's
        buffer (no copy; a string of up to 12 bytes is held in its view, as Arrow wants);
        raises NeedsLines if one is not UTF-8. With ``whole`` (the block is UTF-8), only
        their ends are checked: none may cut a character; with ``ascii_ends`` too, each end
        is known to be at an ASCII byte or after one (a SMART marker, a trimmed byte), so
        not even those are (two gathers from the block a string)."""
        lengths = b - a
        words, short = _words(self.ext), np.flatnonzero(lengths <= 12)
        head = words[a]  # the string's first 8 bytes (ext is padded)
        views = np.empty((len(a), 2), np.uint64)  # length and 4 bytes; 8 bytes or buffer 0
        views[:, 0] = lengths.astype(np.uint64) | ((head & _FIRST[np.minimum(lengths, 4)]) << 32)
        if len(short) == len(a):  # each string held in its view (SMART's ids): no subsets
            held = (head >> _U64(32)) | (words[a + 8] << _U64(32))  # bytes 4 to 12
            views[:, 1] = held & _FIRST[np.clip(lengths - 4, 0, 8)]
        else:
            views[:, 1] = a.astype(np.uint64) << _U64(32)  # a long string: buffer 0, offset
            held = (head[short] >> _U64(32)) | (words[a[short] + 8] << _U64(32))
            views[short, 1] = held & _FIRST[np.clip(lengths[short] - 4, 0, 8)]
        array = pa.Array.from_buffers(
            pa.string_view(), len(a), [None, pa.py_buffer(views), self.buffer]
        )
        if whole:
            ext = self.ext
            cuts = not ascii_ends and (((ext[a] & 0xC0) == 0x80) | ((ext[b] & 0xC0) == 0x80)).any()
            if (lengths < 0).any() or cuts:  # an end at a byte after a character's first
                raise NeedsLines
            array.validate()
            return array
        try:
            array.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise NeedsLines from exc
        return array

    def smart(self, recs: np.ndarray, marks: np.ndarray) -> tuple[pa.Table, pa.Table, pa.Table]:
        """SMART: the records whose fields are one each of the known letters and whose lines
        are all fields' (no line starts with a dot but a marker, none may be blank), as
        ``line``, ``r`` (the title holds a byte below 14: its white space may need collapsing)
        and each known field's text, trimmed (empty if none): those with no CR, then those
        with one (CRLF), apart so that only those are searched for CRs in SQL; and the other
        records as ``line, f``, the list of their fields (``_SMART_SPLIT``)."""
        at = np.append(self.starts[marks], self.end)  # each field from its marker on
        opens = np.zeros(len(marks), bool)
        opens[np.searchsorted(marks, recs)] = True  # each record's .I is among the markers
        rec = np.cumsum(opens) - 1  # the record each field is in
        simple, first, last = self._smart_usual(recs, marks, at, rec)
        self._slices(np.array([0, self.end]))  # the whole block is UTF-8 (else NeedsLines)
        crs = self._any(self.crs, np.append(self.starts[recs], self.end))
        runs = np.searchsorted(self.low, first[1]) < np.searchsorted(self.low, last[1])

        def flat(of: np.ndarray) -> pa.Table:
            columns = {"line": recs[of] + self.line, "r": runs[of]}
            columns.update({
                k: self.views(first[slot][of], last[slot][of], True, True)
                for slot, k in enumerate("ITWAB")
            })  # fmt: skip
            return _table(columns)

        rest = self._smart_lists(recs, marks, at, rec, ~simple)
        return flat(simple & ~crs), flat(simple & crs), rest

    def _smart_usual(self, recs: np.ndarray, marks: np.ndarray, at: np.ndarray,
                     rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """Which records ``Split.smart`` cuts (``simple``), and where each one's I, T, W, A
        and B values start and end (rows of ``first``, ``last``; empty for a letter it lacks),
        trimmed in _TRIM_STEPS steps (a value that takes more is not simple)."""
        ext, starts, n = self.ext, self.starts, len(recs)
        line_bounds = np.append(recs, len(starts))
        stray = ext[starts] == ord(".")  # a line starting with a dot that is no marker
        stray[marks] = False
        simple = ~self._any(self.maybe_blank, line_bounds)
        simple &= ~self._any(np.flatnonzero(stray), line_bounds)
        slots = _SMART_SLOTS[ext[at[:-1] + 1]]
        a, b, done = _trim(ext, at[:-1] + 2, at[1:], _LF_CR_SPACE, _LF_CR_SPACE)  # past ".X"
        per = np.bincount(rec * 6 + slots, minlength=6 * n).reshape(n, 6)  # fields per slot
        simple &= (per[:, 5] == 0) & (per[:, :5].max(axis=1) <= 1)
        simple &= np.bincount(rec[~done], minlength=n) == 0
        first, last = np.zeros((6, n), np.int64), np.zeros((6, n), np.int64)
        first[slots, rec], last[slots, rec] = a, b
        return simple, first, last

    def _smart_lists(self, recs: np.ndarray, marks: np.ndarray, at: np.ndarray,
                     rec: np.ndarray, of: np.ndarray) -> pa.Table:  # fmt: skip
        """The records ``of`` as ``line, f``: the list of their fields, each its letter, its
        bytes from its marker on and whether it has a line that may be blank and a CR."""
        other = of[rec]
        fields = pa.StructArray.from_arrays(
            [_arrow(self.ext[at[:-1] + 1][other]),
             self.views(at[:-1][other], at[1:][other], True, True),
             _arrow(self._any(self.maybe_blank, np.append(marks, len(self.starts)))[other]),
             _arrow(self._any(self.crs, at)[other])],
            names=["t", "v", "b", "c"],
        )  # fmt: skip
        bounds = np.append(0, np.cumsum(np.bincount(rec[other], minlength=len(recs))[of]))
        lists = pa.LargeListArray.from_arrays(_arrow(bounds.astype(np.int64)), fields)
        return _table({"line": recs[of] + self.line, "f": lists})


# The TREC tags the reader's patterns cut fields at (``corpus_formats._TREC_FIELDS``) and the
# <DOC> that opens a record, as the bytes after their '<'. The patterns match them in any case;
# none of their letters has a non-ASCII case partner (as K and S have), so comparing the bytes
# with ASCII capitals made small is exact.
_DOC, _DOCNO, _TEXT, _TEXT_END, _DOC_END, _TITLE, _TITLE_END, _LEAD = range(1, 9)
_TREC_TAGS = {
    b"doc>": _DOC, b"docno>": _DOCNO, b"text>": _TEXT, b"/text>": _TEXT_END,
    b"/doc>": _DOC_END, b"head>": _TITLE, b"headline>": _TITLE, b"hl>": _TITLE,
    b"title>": _TITLE, b"ti>": _TITLE, b"/head>": _TITLE_END, b"/headline>": _TITLE_END,
    b"/hl>": _TITLE_END, b"/title>": _TITLE_END, b"/ti>": _TITLE_END,
    # A lead paragraph (WSJ's LP, SJMN's LEADPARA) is a text block of its own, and a trecweb
    # page (GOV2) has its text after its HTTP header: a record with either is read by the
    # patterns.
    b"lp>": _LEAD, b"leadpara>": _LEAD, b"/dochdr>": _LEAD,
}  # fmt: skip
# Each tag by its first 8 bytes after '<', cut after the first '>' among them (sorted).
_KEYS = sorted((int.from_bytes(name[:8], "little"), name) for name in _TREC_TAGS)
_KEY_WORDS = np.array([key for key, _ in _KEYS], np.uint64)
_KEY_KINDS = np.array([_TREC_TAGS[name] for _, name in _KEYS] + [0], np.int8)  # last: none
_KEY_SIZES = np.array([len(name) + 1 for _, name in _KEYS] + [0], np.int64)
_U64 = np.uint64
_BYTES = _U64(0x0101010101010101)  # 1 in each byte of a word
_HIGH = _U64(0x8080808080808080)  # each byte's high bit
_FIRST = np.array([(1 << 8 * k) - 1 for k in range(9)], np.uint64)  # a word's first k bytes


def _bytes(*chars: int) -> np.ndarray:
    """A table of the 256 byte values: True for ``chars``."""
    table = np.zeros(256, bool)
    table[list(chars)] = True
    return table


_SPACE_CR = _bytes(32, _CR)
_LF_CR_SPACE = _bytes(_LF, _CR, 32)
_WHITE = _bytes(9, _LF, 12, _CR, 32)  # RE2's \s
_VISIBLE = _bytes(*range(33, 127))  # visible ASCII
_CAPITAL = _bytes(*range(65, 91))  # a SMART marker's letter ...
_MARKER_END = _bytes(32, 9, _LF, _CR)  # ... and what follows it: a space, a tab, a line end
# SMART: the known field letters' slots (I, T, W, A, B: 0 to 4) by byte; 5 for any other.
_SMART_SLOTS = np.full(256, 5, np.int8)
_SMART_SLOTS[list(b"ITWAB")] = range(5)


def _words(ext: np.ndarray) -> np.ndarray:
    """The 8 bytes from each place of ``ext`` as one little-endian word (a view, no copy)."""
    return np.ndarray((len(ext) - 7,), "<u8", ext, 0, (1,))


def _small(words: np.ndarray) -> np.ndarray:
    """``words`` with the ASCII capitals in each byte made small (eight bytes at once)."""
    low = words & _U64(0x7F7F7F7F7F7F7F7F)
    from_a = low + _U64(0x80 - 65) * _BYTES  # high bit set where the byte is 'A' or above
    past_z = low + _U64(0x80 - 91) * _BYTES  # ... where it is past 'Z'
    capital = from_a & ~past_z & ~words & _HIGH  # ~words: an ASCII byte
    return words | (capital >> _U64(2))


def _tags(ext: np.ndarray, at: np.ndarray, runs: np.ndarray) -> Tags:
    """The tags of ``_TREC_TAGS`` at each '<' of ``ext`` (at ``at``)."""
    words = _small(_words(ext)[at + 1])  # the 8 bytes after each '<'
    ends = words ^ (_U64(ord(">")) * _BYTES)  # zero at a '>'
    ends = (ends - _BYTES) & ~ends & _HIGH  # the lowest set bit: the first '>'
    first = ends & (~ends + _U64(1))
    words &= (first << _U64(1)) - _U64(1)  # the bytes to the first '>' (all, without one)
    place = np.minimum(np.searchsorted(_KEY_WORDS, words), len(_KEYS) - 1)
    place[_KEY_WORDS[place] != words] = len(_KEYS)  # none
    for k, (_, name) in enumerate(_KEYS):
        if len(name) > 8:  # HEADLINE's bytes past 8
            of = np.flatnonzero(place == k)
            for offset, char in enumerate(name[8:], start=9):
                miss = (ext[at[of] + offset] | (32 if chr(char).isalpha() else 0)) != char
                place[of[miss]] = len(_KEYS)
    kinds = _KEY_KINDS[place]
    opens = kinds == _DOC
    opens[opens] = ext[at[opens] - 1] == _LF  # at a line's start (ext[-1] is a line end)
    return Tags(at, kinds, _KEY_SIZES[place], opens, runs)


_FAR = np.iinfo(np.int64).max


def _trec_fields(split: Split, tags: Tags, a: np.ndarray, b: np.ndarray):
    """The DOCNO, title and text of each record ``a[i]:b[i]`` cut from the bytes as the
    reader's patterns cut them, for the usual layout: at most one title tag and one
    ``<TEXT>``, each field's white space trimmed in a few steps. Returns ``({name: (starts,
    ends)}, usual, marked)``; a record not usual is read by the patterns, a text not marked
    needs no cleaning."""
    ext, n = split.ext, len(a)
    rec = np.cumsum(tags.opens) - 1  # the record each tag is in (-1: before the first)
    k = np.searchsorted(rec, 0)
    lt, kinds, sizes, rec = tags.at[k:], tags.kinds[k:], tags.sizes[k:], rec[k:]

    def first(kind: int) -> tuple[np.ndarray, np.ndarray]:
        """Whether each record has tag ``kind``, and where its first one's bytes end."""
        of = np.flatnonzero(kinds == kind)
        of = of[np.diff(rec[of], prepend=-1) != 0]  # the first in its record
        has, at = np.zeros(n, bool), a.copy()
        has[rec[of]], at[rec[of]] = True, lt[of] + sizes[of]
        return has, at

    def next_of(where: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The first of ``where`` (sorted) at or after each ``at``."""
        return np.append(where, _FAR)[np.searchsorted(where, at)]

    usual = np.bincount(rec[kinds == _LEAD], minlength=n) == 0
    fields = {}
    for name, kind, end, strip in (
        ("T", _TITLE, _TITLE_END, _WHITE),
        ("X", _TEXT, _TEXT_END, _LF_CR_SPACE),
    ):  # the block runs to its first closing tag, or </DOC>, or the record's end
        usual &= np.bincount(rec[kinds == kind], minlength=n) <= 1  # the patterns join them
        has, x = first(kind)
        y = np.where(has, np.minimum(next_of(lt[(kinds == end) | (kinds == _DOC_END)], x), b), x)
        x, y, done = _trim(ext, x, y, strip, strip)
        usual &= done
        fields[name] = (x, y)
    # Whether the text holds what its cleaning changes: a '<', a tab or two spaces.
    x, y = fields["X"]
    marked = np.zeros(n, bool)
    for where in (lt, tags.runs):
        marked |= np.searchsorted(where, x) < np.searchsorted(where, y)
    # DOCNO: past the first <DOCNO> and the white space after it, to a '<' or a line end
    has, x = first(_DOCNO)
    x, y, done = _trim(ext, x, np.where(has, b, x), _WHITE, None)
    line_end = np.append(split.starts[1:] - 1, split.end)[
        np.searchsorted(split.starts, x, "right") - 1
    ]
    y = np.minimum(np.minimum(line_end, next_of(lt, x)), y)
    x, y, trimmed = _trim(ext, x, y, None, _SPACE_CR)  # trim's spaces, and a CR before LF
    fields["I"] = (x, y)
    return fields, usual & done & trimmed, marked


def _trim(ext: np.ndarray, a: np.ndarray, b: np.ndarray, left, right):
    """``a:b`` without the bytes ``left`` at its start and ``right`` at its end (tables of
    which bytes, ``_bytes``; None: none) in _TRIM_STEPS steps at most, and whether each is
    done."""
    done = np.ones(len(a), bool)
    for chars, at_start in ((left, True), (right, False)):
        if chars is None:
            continue
        for k in range(_TRIM_STEPS + 1):
            step = (a < b) & chars[ext[a] if at_start else ext[b - 1]]
            if k == _TRIM_STEPS or not step.any():
                done &= ~step
                break
            a, b = (a + step, b) if at_start else (a, b - step)
    return a, b, done


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
