"""Reading the small text files users hand over (gold sets, runs, grades), with errors that name
the file and the line: one definition of "a JSON object a line" for every stage."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from goldmine.errors import InputError


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
    return "no such file or folder"
