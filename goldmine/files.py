"""Reading the small text files users hand over (gold sets, runs, grades), with errors that name
the file and the line: one definition of "a JSON object a line" for every stage."""

from __future__ import annotations

import json
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
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object", path=path, line=number)
        out.append((number, obj))
    return out
