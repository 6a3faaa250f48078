"""Reading the small text files users hand over (gold sets, runs, grades), with errors that name
the file and the line: one definition of "a JSON object a line" for every stage."""

from __future__ import annotations

import errno
import importlib
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from goldmine.errors import InputError

_LINE_END = re.compile(r"\r\n|\r|\n")


def lines_of(text: str) -> list[str]:
    """A file's lines as its formats mean them: ended by LF, CRLF or CR, as Python's universal
    newlines, BEIR's reader and trec_eval take them. ``str.splitlines`` also ends a line at
    U+2028, U+0085, a form feed and more, which JSON strings and TSV fields hold as they are:
    a query or an id holding one read back as a broken line."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def json_objects(lines: Iterable[str], path: str | Path) -> list[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an
    InputError naming the file and the line."""
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", path=path, line=number) from None
        except RecursionError:
            raise InputError(
                "JSON nested too deeply to read (past Python's recursion limit)",
                path=path,
                line=number,
            ) from None
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object", path=path, line=number)
        out.append((number, obj))
    return out


def require_file(path: str | Path, *, folder_ok: bool = False) -> None:
    """An InputError saying what ``path`` is when it is not a file goldmine can read: missing, a
    link that loops or leads nowhere, a named pipe, a socket or a device (reading a pipe with
    no writer would wait forever, and goldmine reads a file more than once)."""
    problem = describe_unreadable(Path(path), folder_ok=folder_ok)
    if problem:
        raise InputError(problem, path=path)


def describe_unreadable(path: Path, *, folder_ok: bool = False) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _missing(path, exc)
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return None if folder_ok else "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return (
            "is a named pipe (FIFO), not a file: goldmine reads an input more than once "
            "(to hash it, then to import it); write what the pipe gives to a file first"
        )
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    return "is a device, not a file"


def _missing(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symbolic link that loops (it leads back to itself)"
    if os.path.islink(path):
        return f"is a symbolic link to {os.readlink(path)}, which does not exist"
    if exc.errno == errno.EACCES:
        return "cannot be read: permission denied"
    if str(path) == "-":  # a shell's stdin, no file of that name here
        return (
            "stdin (-) is not read: goldmine reads an input more than once (to hash it, then "
            "to import it); write it to a file first"
        )
    return "no such file or folder"


# A file's first bytes for each compression a judgments or run file arrives in (ir_datasets
# serves its qrels gzipped); the codecs are the standard library's, imported when one is met.
_COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "lzma"}
_ZSTD = b"\x28\xb5\x2f\xfd"
_LZ4 = b"\x04\x22\x4d\x18"  # an LZ4 frame: ranx's Run.save and Qrels.save to .lz4 write one


def compression(head: bytes) -> str | None:
    """The codec module's name ('gzip', 'bz2', 'lzma') when ``head``, a file's first bytes,
    starts a compressed stream, else None."""
    return next((name for magic, name in _COMPRESSED.items() if head.startswith(magic)), None)


def unpacked(data: bytes, path: str | Path) -> bytes:
    """``data`` decompressed when it is gzip, bz2 or xz; as it is otherwise. A damaged stream
    or zstd (no reader in the standard library) is an InputError saying what to do."""
    if data.startswith(_ZSTD):
        raise InputError("is zstd-compressed: decompress it first (zstd -d FILE)", path=path)
    if data.startswith(_LZ4):  # ranx puts CBOR inside: no text once decompressed either
        raise InputError("is LZ4-compressed, as ranx saves a .lz4 (CBOR inside): save it from "
                         "ranx as .json or .trec, which read as they are", path=path)  # fmt: skip
    if data.startswith(b"PK\x03\x04"):  # read as text, it was "not valid UTF-8"
        raise InputError("is a zip archive: unzip it and pass the file inside", path=path)
    kind = compression(data[:8])
    if kind is None:
        return data
    try:
        return importlib.import_module(kind).decompress(data)
    except (OSError, EOFError, ValueError, importlib.import_module("lzma").LZMAError) as exc:
        raise InputError(f"is a damaged {kind} file: {exc}", path=path) from None


def open_unpacked(path: str | Path) -> BinaryIO:
    """A binary handle on the file's content, decompressed as ``unpacked`` would."""
    with open(path, "rb") as handle:
        kind = compression(handle.read(8))
    if kind is None:
        return open(path, "rb")
    return importlib.import_module(kind).open(path, "rb")
