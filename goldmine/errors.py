"""The project's own exceptions, each with the exit code the CLI maps it to.

Library code raises these with a message a user can act on; the CLI prints the message on one line
and exits with the code, never a traceback (unless ``--debug``).
"""

from __future__ import annotations

import re
from pathlib import Path

EXIT_FAILURE = 1
EXIT_INPUT = 2
EXIT_BUSY = 3
EXIT_EMPTY = 4  # an import stored nothing: every row was rejected (--allow-empty: 0)
EXIT_CONFLICT = 5  # a write on a stale read of a gold item: someone changed it since
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell counts a command SIGINT ended


# What DuckDB quotes of the data it failed on: the start of a JSON text ('Input: "{\"tickets\":
# …" when casting from …'), a value it could not convert. A file's text (an address, a key) is
# never part of an error: the byte offset and the file's name say where to look.
_QUOTED_INPUT = re.compile(r'\s*\bInput: ".*"(?: when casting from [\w ]+)?')
_QUOTED_VALUE = re.compile(r"(Could not convert string) '.*?'( to )")


def error_line(exc: BaseException) -> str:
    """An exception's first line, as a one-line error quotes it (its class's name if it says
    nothing): DuckDB's messages run on over several lines. The data DuckDB quotes is left out."""
    said = str(exc).strip()
    if not said:
        return type(exc).__name__
    line = _QUOTED_INPUT.sub("", said.splitlines()[0])
    return _QUOTED_VALUE.sub(r"\1 a value\2", line)


class GoldmineError(Exception):
    """Base class: a failure with a user-facing message and an exit code."""

    exit_code = EXIT_FAILURE
    label = "error"  # the CLI prints "<label>: <message>"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(GoldmineError):
    """Bad input: a malformed file, a bad option value, an unknown metric name."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class StoreError(GoldmineError):
    """The DuckDB file cannot be used: written by a newer goldmine, or damaged."""


class StoreBusyError(StoreError):
    """Another process holds the DuckDB file (DuckDB allows one writer process)."""

    exit_code = EXIT_BUSY


class NotFoundError(GoldmineError):
    """Something asked for by name or id does not exist in the store."""

    exit_code = EXIT_INPUT


class Interrupted(GoldmineError):
    """Ctrl-C: the step under way stopped, and being one transaction, stored nothing."""

    exit_code = EXIT_INTERRUPTED
    label = "interrupted"

    def __init__(
        self,
        message: str = "stopped (Ctrl-C); the unfinished step stored nothing: run the command "
        "again to go on",
    ) -> None:
        super().__init__(message)
