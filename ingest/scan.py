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

import codecs
import contextlib
import gzip
import hashlib
import os
import tempfile
import zipfile
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
    # The file ends in a DOS Ctrl-Z (0x1A, after the last line or glued to it): the copy read
    # instead leaves it out; it is no line. (NUL bytes after the last line, as a file cut short
    # by a crash or preallocated ends, are a bad line: ``padding``.)
    tail: bool = False

    @property
    def needs_copy(self) -> bool:
        return bool(self.bad) or self.odd_line_ends or self.tail


def too_long(size: int) -> str:
    return f"line too long ({size:,} bytes; the limit is {MAX_LINE:,}, set by {LIMIT_SOURCE})"


BINARY = "binary data (NUL bytes in the line)"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # little- and big-endian byte-order marks


def not_in(encoding: str, at: int, byte: int, path: Path) -> InputError:
    """The error for a byte that is no character of the file's ``encoding``."""
    return InputError(
        f"not {encoding} text: byte {at:,} (0x{byte:02X}) is not a character of it; name the "
        "file's encoding with --encoding",
        path=path,
    )


def padding(size: int) -> str:
    return f"NUL padding at the end of the file ({size:,} bytes): the file may have been cut short"


def scan_file(path: Path, compression: str, lines: bool, encoding: str = "utf-8") -> FileScan:
    """Hash ``path`` as stored; for a line-based file (``lines``) also decompress it, read it
    as UTF-8 (from ``encoding``) and find its bad lines. Raises InputError for a compressed
    stream that ends early or is damaged, or text that is not in ``encoding``."""
    if not lines:
        return FileScan(sha256_file(path))
    digest = hashlib.sha256()
    raw = _raw_chunks(path, digest)
    finder = _LineFinder()
    for chunk in _transcoded(_decompressed(raw, compression, path, finder), encoding, path):
        if finder.line == 0 and encoding == "utf-8" and chunk[:2] in UTF16_BOMS:
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
    odd = mixed or finder.lone_cr
    return FileScan(digest.hexdigest(), finder.line, finder.bad, odd, finder.tail)


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
    if compression == "zip":  # the archive is hashed as stored, then its one file read
        for _ in raw:
            pass
        with open_compressed(path, "zip") as member:
            while block := member.read(_CHUNK):
                yield block
        return
    if compression == "gzip":
        # wbits 31: a gzip header; a file may hold several members (``cat a.gz b.gz``).
        yield from _inflate(raw, "gzip", lambda: zlib.decompressobj(wbits=31), zlib.error,
                            path, finder)  # fmt: skip
        return
    if compression in _BOUNDED:
        yield from _inflate_bounded(raw, compression, path, finder)
        return
    import zstandard

    maker = zstandard.ZstdDecompressor()  # a file may hold several frames
    yield from _inflate(raw, "zstd", maker.decompressobj, zstandard.ZstdError, path, finder)


def _bz2() -> tuple:
    import bz2

    return bz2.BZ2Decompressor, OSError


def _xz() -> tuple:
    import lzma

    return lzma.LZMADecompressor, lzma.LZMAError


_BOUNDED = {"bzip2": _bz2, "xz": _xz}  # each call's output bounded: no useful ratio bound
_OUT = 1 << 24  # bytes a bounded decompressor gives per call


def _inflate_bounded(raw, kind: str, path: Path, finder) -> Iterator[bytes]:
    """bzip2 or xz, stream after stream (pbzip2 and xz write several), 16 MB at a time: a bzip2
    block of one byte repeated inflates ~46 MB from ~40 bytes, so neither has a piece size
    that bounds what a piece gives, as _inflate's do; an error names where it ended."""
    make, damaged = _BOUNDED[kind]()
    inflater, ended, read = make(), True, 0
    for block in raw:
        read += len(block)
        data = block
        while True:
            try:
                out = inflater.decompress(data, max_length=_OUT)
            except damaged as exc:
                raise _ended_early(path, kind, read, finder, f"is damaged ({exc})") from exc
            if out:
                yield out
            ended, data = inflater.eof, b""
            if inflater.eof:
                data = inflater.unused_data
                inflater = make()
                if not data.strip(b"\0"):  # padding after the last stream
                    break
            elif inflater.needs_input:
                break
    if not ended:
        raise _ended_early(path, kind, read, finder, "ends early")


# Compressed input is fed in pieces, so that what one piece inflates to stays small: deflate
# inflates at most 1,032 times (16 KiB -> 16.5 MB); zstd has no such bound (a run-length block of
# 128 KiB is 4 bytes), so its pieces are 1 KiB (-> 32 MB at worst).
_PIECE = {"gzip": 1 << 14, "zstd": 1 << 10}


def _transcoded(chunks: Iterator[bytes], encoding: str, path: Path) -> Iterator[bytes]:
    """The text of ``chunks`` in ``encoding`` as UTF-8 (UTF-16's byte-order mark dropped)."""
    if encoding == "utf-8":
        yield from chunks
        return
    decoder, read = codecs.getincrementaldecoder(encoding)(), 0
    try:
        for chunk in chunks:
            yield decoder.decode(chunk).encode("utf-8")
            read += len(chunk)
        yield decoder.decode(b"", final=True).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_in(encoding, read + exc.start, exc.object[exc.start], path) from exc


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
        self._pad = 0  # bytes of padding (NUL, Ctrl-Z) the stream ends in so far
        self._pad_nul = False  # that padding holds a NUL
        self.tail = False  # the stream ends in padding, which is no text (FileScan.tail)

    def feed(self, chunk: bytes) -> None:
        pos, end = 0, len(chunk)
        if not chunk:
            return
        if self._last == b"\r":  # a CR that ended the last chunk: a CRLF's, or inside a line
            self.crlf += chunk[:1] == b"\n"
            self._tail_cr = self._tail_cr or chunk[:1] != b"\n"
        self._last = chunk[-1:]
        self._padding(chunk)
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

    def _padding(self, chunk: bytes) -> None:
        """Follow the run of NUL and Ctrl-Z bytes the stream ends in (usually none)."""
        kept = len(chunk.rstrip(b"\0\x1a"))
        run = chunk[kept:]
        self._pad_nul = (b"\0" in run) or (self._pad_nul and not kept)
        self._pad = self._pad + len(chunk) if not kept else len(run)

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
        with CRs and no LF at all is one of old Mac line ends, which DuckDB's reader reads).
        A last line of padding alone (NUL, Ctrl-Z) is none; Ctrl-Z glued to a line's end is
        left out of it."""
        if self._size and self._pad >= self._size and self._pad_nul and not self._long:
            self._close_bad(padding(self._size))  # a word: the writer may have stopped there
        elif self._size and self._pad >= self._size:
            self._size, self._nul, self.tail = 0, False, True
        elif self._size and self._pad and not self._pad_nul and not self._long:
            self.tail = True
        if self._size and self.line and (self._tail_cr or self._last == b"\r"):
            self.lone_cr = True
        if self._long:
            self._close_bad(too_long(self._size))
        elif self._nul:
            self._close_bad(BINARY)
        elif self._size:
            self.line += 1
        self.unterminated = int(self._size > 0 or self._long or self._nul)


def blanked_copy(
    path: Path, compression: str, scan: FileScan, folder: Path, encoding: str = "utf-8"
) -> Path:
    """A plain UTF-8 copy of the file with its bad lines left empty (their newline kept), in
    ``folder``, for DuckDB to read instead: every other line keeps its number. With odd line
    ends, every line ends in LF and a CR inside one becomes a space (JSON white space); the
    padding a file ends in is left out."""
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "" if compression == "zip" else path.suffix  # a zip's copy is its file, unzipped
    fd, name = tempfile.mkstemp(prefix="gm-lines-", suffix=suffix, dir=folder)
    lines = {b.line for b in scan.bad}
    try:
        with os.fdopen(fd, "wb") as out, open_compressed(path, compression) as src:
            text = _transcoded(iter(lambda: src.read(_CHUNK), b""), encoding, path)
            for number, line in enumerate(_lines(text), start=1):
                if number in lines:
                    line = b"\n"
                elif scan.odd_line_ends:
                    line = line.rstrip(b"\n").removesuffix(b"\r").replace(b"\r", b" ") + b"\n"
                if scan.tail and not line.endswith(b"\n"):  # the last line: padding out
                    line = line.rstrip(b"\0\x1a")
                out.write(line)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _lines(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The lines of a stream's blocks with their newline, a long one read in pieces (never
    whole)."""
    pending = b""
    for block in blocks:
        pending += block
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line + b"\n"
        if len(pending) > MAX_LINE:  # part of a long line: only its end matters
            pending = pending[-1:]
    if pending:
        yield pending


def stream_errors() -> tuple[type[Exception], ...]:
    """What reading a compressed stream raises when it is cut short or damaged."""
    import lzma

    import zstandard

    return EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError


def read_head(path: Path, compression: str, size: int) -> bytes:
    """Up to ``size`` bytes of the file's content, decompressed: of a stream cut short or damaged,
    what it gave before it broke (telling a layout needs only the start; the read that follows
    names where the stream ends). Empty when the file cannot be opened at all."""
    if compression == "gzip":  # gzip's reader gives nothing of a stream cut inside its buffer
        return _gzip_head(path, size)
    head = b""
    try:
        with open_compressed(path, compression) as handle:
            while len(head) < size and (piece := handle.read(min(1 << 16, size - len(head)))):
                head += piece
    except Exception:  # EOFError, zlib's, lzma's, bz2's and zstd's errors, a misnamed stream
        pass
    return head


def _gzip_head(path: Path, size: int) -> bytes:
    """Up to ``size`` bytes of a gzip file's content, member after member (bgzip and
    concatenated files write many small ones), read from its first MiB; what a member cut short
    gave before it broke."""
    head = b""
    with contextlib.suppress(OSError, zlib.error), open(path, "rb") as raw:
        data = raw.read(1 << 20)
        while data and len(head) < size:
            inflater = zlib.decompressobj(wbits=47)
            head += inflater.decompress(data, size - len(head))
            if not inflater.eof:
                break
            data = inflater.unused_data
    return head


def open_compressed(path: Path, compression: str):
    """The file's decompressed bytes as a binary stream (of a zip archive, its one file)."""
    if compression == "zip":
        with zipfile.ZipFile(path) as archive:  # the member keeps the file open
            return archive.open(zip_member(archive, path))
    if compression == "gzip":
        return gzip.open(path, "rb")
    if compression == "zstd":
        import zstandard

        return zstandard.open(path, "rb")
    if compression == "bzip2":
        import bz2

        return bz2.open(path, "rb")
    if compression == "xz":
        import lzma

        return lzma.open(path, "rb")
    return open(path, "rb")


def zip_member(archive: zipfile.ZipFile, path: Path) -> str:
    """The one file a zip archive holds (as mail and BI tools send an export), or an
    InputError: goldmine reads one file per archive (an Excel workbook is a zip of many)."""
    names = [
        i.filename for i in archive.infolist()
        if not i.is_dir() and not i.filename.startswith("__MACOSX/")
    ]  # fmt: skip
    if "xl/workbook.xml" in names:
        raise InputError(
            "an Excel workbook (.xlsx): goldmine reads CSV; save the sheet as CSV UTF-8", path=path
        )
    if len(names) != 1:
        shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
        raise InputError(
            f"a zip archive of {len(names)} files ({shown}): goldmine reads an archive holding "
            "one file; unzip it and name the files",
            path=path,
        )
    return names[0]
