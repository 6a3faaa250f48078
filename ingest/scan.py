"""One pass over a file's bytes that finds what DuckDB's line reader would lose without a word.

DuckDB's CSV reader (which reads JSONL here as lines of text) drops a line longer than its
buffer with no error, splits a line holding NUL bytes (its delimiter) into columns, and reads a
truncated zstd stream to where it stops, as if the file ended there. So every line-based file is
scanned once, in the thread that hashes it, while DuckDB stages it: the scan hashes the bytes as
stored, decompresses them (a stream that ends early is an error naming the offset and the last
whole line), and notes each line that is too long or holds NUL bytes. A file with such lines is
staged again from a copy in which they are blank (blank lines are not records, so every other
line keeps its number) and each one becomes a reject with its line and reason: rows in = stored
+ rejected + present holds whatever the file holds.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from goldmine.errors import InputError
from goldmine.text import sha256_file

# The longest line DuckDB's reader is given room for (``max_line_size`` in ingest.files).
MAX_LINE = 16_777_216
LIMIT_SOURCE = "goldmine's line reader"
_CHUNK = 1 << 22


@dataclass(frozen=True)
class BadLine:
    line: int
    size: int
    reason: str


@dataclass
class FileScan:
    sha256: str
    lines: int = 0
    bad: list[BadLine] = field(default_factory=list)
    # Line ends DuckDB's reader stops the whole file at: CRLF and LF mixed, or a CR inside a
    # line. The copy read instead ends every line with LF and makes such a CR a space.
    odd_line_ends: bool = False

    @property
    def needs_copy(self) -> bool:
        return bool(self.bad) or self.odd_line_ends


def too_long(size: int) -> str:
    return f"line too long ({size:,} bytes; the limit is {MAX_LINE:,}, set by {LIMIT_SOURCE})"


BINARY = "binary data (NUL bytes in the line)"


def scan_file(path: Path, compression: str, lines: bool) -> FileScan:
    """Hash ``path`` as stored; for a line-based file (``lines``) also decompress it and find
    its bad lines. Raises InputError for a compressed stream that ends early or is damaged."""
    if not lines:
        return FileScan(sha256_file(path))
    digest = hashlib.sha256()
    raw = _raw_chunks(path, digest)
    finder = _LineFinder()
    for chunk in _decompressed(raw, compression, path, finder):
        if finder.line == 0 and chunk[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise InputError(
                "UTF-16 text: goldmine reads UTF-8 (convert it: iconv -f UTF-16 -t UTF-8)",
                path=path,
            )
        finder.feed(chunk)
    finder.finish()
    binary = sum(b.reason == BINARY for b in finder.bad)
    if binary > 1 and binary * 2 > finder.line:
        raise InputError(
            f"binary data, not text: {binary:,} of {finder.line:,} lines hold NUL bytes "
            "(is it the right file?)",
            path=path,
        )
    mixed = 0 < finder.crlf < finder.line - finder.unterminated
    return FileScan(digest.hexdigest(), finder.line, finder.bad, mixed or finder.lone_cr)


def _raw_chunks(path: Path, digest) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
            yield block


def _decompressed(
    raw: Iterator[bytes], compression: str, path: Path, finder: _LineFinder
) -> Iterator[bytes]:
    if compression == "none":
        yield from raw
        return
    if compression == "gzip":
        # wbits 31: a gzip header; a file may hold several members (``cat a.gz b.gz``).
        yield from _inflate(raw, "gzip", lambda: zlib.decompressobj(wbits=31), zlib.error,
                            path, finder)  # fmt: skip
        return
    import zstandard

    maker = zstandard.ZstdDecompressor()  # a file may hold several frames
    yield from _inflate(raw, "zstd", maker.decompressobj, zstandard.ZstdError, path, finder)


# Compressed input is fed in pieces, so that what one piece inflates to stays small: deflate
# inflates at most 1,032 times (16 KiB -> 16.5 MB); zstd has no such bound (a run-length block of
# 128 KiB is 4 bytes), so its pieces are 1 KiB (-> 32 MB at worst).
_PIECE = {"gzip": 1 << 14, "zstd": 1 << 10}


def _inflate(raw, kind: str, make, damaged: type[Exception], path: Path, finder) -> Iterator[bytes]:
    """Decompress stream after stream (members, frames); an error names where it ended."""
    inflater, ended, read = make(), True, 0
    for block in raw:
        for at in range(0, len(block), _PIECE[kind]):
            data = block[at : at + _PIECE[kind]]
            read += len(data)
            while data:
                try:
                    out = inflater.decompress(data)
                except damaged as exc:
                    raise _ended_early(path, kind, read, finder, f"is damaged ({exc})") from exc
                ended = inflater.eof
                if out:
                    yield out
                data = inflater.unused_data if inflater.eof else b""
                if inflater.eof:
                    inflater, ended = make(), True
                    if not data.strip(b"\0"):  # padding after the last stream
                        data = b""
    if not ended:
        raise _ended_early(path, kind, read, finder, "ends early")


def _ended_early(path: Path, kind: str, read: int, finder: _LineFinder, why: str) -> InputError:
    return InputError(
        f"the {kind} stream {why} at byte {read:,} of {path.stat().st_size:,} "
        f"(after line {finder.line:,}): the file is truncated or damaged; nothing from it was "
        "stored",
        path=path,
    )


class _LineFinder:
    """Counts lines and notes the long ones and those holding NUL bytes, chunk by chunk, with
    C-speed searches: ``rfind`` over a limit's width proves every line ending in it short."""

    def __init__(self) -> None:
        self.line = 0  # whole lines seen
        self.bad: list[BadLine] = []
        self._size = 0  # bytes of the current, unfinished line seen so far
        self._nul = False  # the current line holds a NUL byte
        self._long = False  # the current line is past the limit
        self.crlf = 0  # lines ending in CRLF
        self.lone_cr = False  # a CR inside a line that ends in LF
        self.unterminated = 0  # 1 if the last line has no LF
        self._last = b""  # the previous chunk's last byte (a CRLF may span two chunks)
        self._tail_cr = False  # the unfinished line holds a CR that is no CRLF's

    def feed(self, chunk: bytes) -> None:
        pos, end = 0, len(chunk)
        if not chunk:
            return
        if self._last == b"\r":  # a CR that ended the last chunk: a CRLF's, or inside a line
            self.crlf += chunk[:1] == b"\n"
            self._tail_cr = self._tail_cr or chunk[:1] != b"\n"
        self._last = chunk[-1:]
        # Most chunks hold no CR and no NUL: one search each settles it for the whole chunk.
        cr, nul = b"\r" in chunk, b"\0" in chunk
        while pos < end:
            if self._long:
                pos = self._end_long(chunk, pos)
                continue
            window = min(end, pos + MAX_LINE - self._size + 1)
            nl = chunk.rfind(b"\n", pos, window)
            if nl >= 0:  # every line ending in [pos, nl] is within the limit
                if self._tail_cr:  # the line carried over from the last chunk ends here
                    self.lone_cr, self._tail_cr = True, False
                if cr:
                    self._line_ends(chunk, pos, nl)
                if self._nul or (nul and chunk.find(b"\0", pos, nl) >= 0):
                    self._nul_lines(chunk, pos, nl)
                else:
                    self.line += chunk.count(b"\n", pos, nl + 1)
                self._size, self._nul = 0, False
                pos = nl + 1
            elif window == end and self._size + end - pos <= MAX_LINE:
                self._nul = self._nul or (nul and chunk.find(b"\0", pos, end) >= 0)
                # A CR before the chunk's last byte cannot be a CRLF's (there is no LF after it).
                if cr and chunk.find(b"\r", pos, end - 1) >= 0:
                    self._tail_cr = True
                self._size += end - pos  # the line goes on in the next chunk
                pos = end
            else:
                self._long = True
                self._size += window - pos
                pos = window

    def _line_ends(self, chunk: bytes, pos: int, nl: int) -> None:
        crlf = chunk.count(b"\r\n", pos, nl + 1)
        self.crlf += crlf
        if not self.lone_cr and chunk.count(b"\r", pos, nl + 1) != crlf:
            self.lone_cr = True

    def _end_long(self, chunk: bytes, pos: int) -> int:
        nl = chunk.find(b"\n", pos)
        if nl < 0:
            self._size += len(chunk) - pos
            return len(chunk)
        self._size += nl - pos
        self._close_bad(too_long(self._size))
        return nl + 1

    def _close_bad(self, reason: str) -> None:
        self.line += 1
        self.bad.append(BadLine(self.line, self._size, reason))
        self._size, self._nul, self._long = 0, False, False

    def _nul_lines(self, chunk: bytes, pos: int, nl: int) -> None:
        for piece in chunk[pos:nl].split(b"\n"):
            self._size += len(piece)
            if self._nul or b"\0" in piece:
                self._close_bad(BINARY)
            else:
                self.line += 1
            self._size, self._nul = 0, False

    def finish(self) -> None:
        """A last line with no newline. A CR in it is odd only in a file of LF lines (a file
        with CRs and no LF at all is one of old Mac line ends, which DuckDB's reader reads)."""
        if self._size and self.line and (self._tail_cr or self._last == b"\r"):
            self.lone_cr = True
        if self._long:
            self._close_bad(too_long(self._size))
        elif self._nul:
            self._close_bad(BINARY)
        elif self._size:
            self.line += 1
        self.unterminated = int(self._size > 0 or self._long or self._nul)


def blanked_copy(path: Path, compression: str, scan: FileScan, folder: Path) -> Path:
    """A plain copy of the file with its bad lines left empty (their newline kept), in
    ``folder``, for DuckDB to read instead: every other line keeps its number. With odd line
    ends, every line ends in LF and a CR inside one becomes a space (JSON white space)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="gm-lines-", suffix=path.suffix, dir=folder)
    lines = {b.line for b in scan.bad}
    try:
        with os.fdopen(fd, "wb") as out, open_compressed(path, compression) as src:
            for number, line in enumerate(_lines(src), start=1):
                if number in lines:
                    line = b"\n"
                elif scan.odd_line_ends:
                    line = line.rstrip(b"\n").removesuffix(b"\r").replace(b"\r", b" ") + b"\n"
                out.write(line)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _lines(src) -> Iterator[bytes]:
    """A binary stream's lines with their newline, a long one read in pieces (never whole)."""
    pending = b""
    while block := src.read(_CHUNK):
        pending += block
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line + b"\n"
        if len(pending) > MAX_LINE:  # part of a long line: only its end matters
            pending = pending[-1:]
    if pending:
        yield pending


def open_compressed(path: Path, compression: str):
    """The file's decompressed bytes as a binary stream."""
    if compression == "gzip":
        return gzip.open(path, "rb")
    if compression == "zstd":
        import zstandard

        return zstandard.open(path, "rb")
    return open(path, "rb")
