"""The history CSV kept in the user's repository: one row per eval run.

Columns: the fixed ones below, then one per metric in order of first appearance. A run that brings
a new metric rewrites the file with the wider header (earlier rows get an empty cell), atomically,
so a new column never shifts or corrupts earlier rows.
"""

from __future__ import annotations

import csv
import math
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import InputError
from goldmine.metrics import parse_metrics

if TYPE_CHECKING:
    from goldmine.config import Config
    from goldmine.eval.result import EvalOutcome

FORMAT_VERSION = 1
FIXED_COLUMNS = [
    "time",
    "run_id",
    "label",
    "git_commit",
    "gold_source",
    "gold_version",
    "gold_hash",
    "run_source",
    "run_hash",
    "rel_level",
    "n_queries",
    "n_missing",
    "n_no_answer",
    "format_version",
]


def git_commit(cwd: Path | None = None) -> str | None:
    """HEAD of the working directory's repository, with ``-dirty`` for uncommitted changes."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=40", "--match=NOT-A-TAG"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def read_history(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    try:
        # utf-8-sig: Excel saves the file back with a byte-order mark, which would name the
        # first column "\ufefftime"
        with path.open(newline="", encoding="utf-8-sig") as handle:
            return list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read the history: {exc}", path=path) from exc


def _header(path: Path) -> list[str]:
    if not path.exists() or path.stat().st_size == 0:
        return []
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return next(csv.reader(handle), [])


def check_history(path: Path) -> None:
    """Fail before anything is written if the file is not a goldmine history."""
    header = _header(path)
    if header and header[: len(FIXED_COLUMNS)] != FIXED_COLUMNS:
        raise InputError(
            "exists but is not a goldmine history CSV (its header differs); "
            "pass another --history file",
            path=path,
        )


def append_history(path: Path, row: dict[str, object]) -> None:
    """Append one row; widen the header first if the row brings new metric columns."""
    check_history(path)
    header = _header(path) or list(FIXED_COLUMNS)
    new_columns = [c for c in row if c not in header]
    if new_columns:
        rows = read_history(path)
        header = header + new_columns
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\n")
                writer.writeheader()
                writer.writerows(rows)
                writer.writerow(_cells(row))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    with path.open("a", newline="", encoding="utf-8") as handle:
        if not _ends_a_line(path):  # an editor left the last row without its newline
            handle.write("\n")
        csv.DictWriter(handle, fieldnames=header, lineterminator="\n").writerow(_cells(row))


def _ends_a_line(path: Path) -> bool:
    """Whether the file is empty or its last byte ends a line."""
    with path.open("rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) in (b"\n", b"\r")


def _cells(row: dict[str, object]) -> dict[str, str]:
    return {
        k: "" if v is None else (repr(v) if isinstance(v, float) else str(v))
        for k, v in row.items()
    }


def history_row(outcome: EvalOutcome) -> dict[str, object]:
    """The row ``eval run --history`` appends for a run."""
    result = outcome.result
    row: dict[str, object] = {
        "time": outcome.created_at.isoformat(timespec="seconds"),
        "run_id": outcome.run_id,
        "label": outcome.label,
        "git_commit": outcome.git_commit,
        "gold_source": outcome.gold.source,
        "gold_version": outcome.gold.version,
        "gold_hash": outcome.gold.hash,
        "run_source": outcome.run_source,
        "run_hash": outcome.run_hash,
        "rel_level": result.rel_level,
        "n_queries": result.n_queries,
        "n_missing": len(result.missing),
        "n_no_answer": len(result.no_answer),
        "format_version": FORMAT_VERSION,
    }
    row.update(result.summary)
    return row


# --- reading it back: eval history ------------------------------------------------------------


def history_path(file: Path | None, config: Config) -> Path:
    """``--file``, or ``[eval] history`` of goldmine.toml (relative to that file)."""
    if file is None:
        configured = config.settings.eval.history
        if not configured:
            raise InputError(
                "which history? give --file HISTORY.csv (the file eval run --history appends to) "
                "or set [eval] history in goldmine.toml"
            )
        file = Path(configured).expanduser()  # "~/h.csv" as [store] db reads it
        if not file.is_absolute() and config.path is not None:
            file = config.path.parent / file
    if not file.is_file():
        raise InputError("no such history file", path=file)
    return file


def metric_columns(rows: list[dict[str, str]], wanted: str | None) -> list[str]:
    """Metric columns: beyond the fixed ones, holding a number in some row (or ``--metrics``)."""

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(k for k in row if k and k not in FIXED_COLUMNS))
    names = [c for c in columns if any(metric_value(r.get(c)) is not None for r in rows)]
    if wanted is None:
        return names
    picked = [m.name for m in parse_metrics(wanted)]
    absent = [m for m in picked if m not in names]
    if absent:
        raise InputError(
            f"no {', '.join(absent)} in the history; it has: {', '.join(names) or 'no metrics'}"
        )
    return picked


def history_json(path: Path, rows: list[dict[str, str]], names: list[str]) -> dict:
    """``eval history --json``: each run with its metrics, and where the gold set changed."""

    runs = []
    for label, row in zip(run_labels(rows), rows, strict=True):
        item: dict[str, object] = {k: _typed(k, v) for k, v in row.items() if k not in names}
        item["name"] = label
        item["metrics"] = {m: metric_value(row.get(m)) for m in names}
        runs.append(item)
    return {
        "file": str(path),
        "n_runs": len(rows),
        "metrics": names,
        "runs": runs,
        "gold_changes": [{"row": i + 1, "note": note} for i, note in gold_changes(rows)],
    }


# The history's columns that hold whole numbers: a number in --json, as in eval run --json.
_COUNTS = frozenset({"run_id", "rel_level", "n_queries", "n_missing", "n_no_answer"})


def _typed(column: str, cell: str | None) -> object:
    """A history cell as --json gives it: a count as a number (null when the cell is empty),
    any other cell as written."""
    if column not in _COUNTS:
        return cell
    try:
        return int(cell) if cell not in (None, "") else None
    except ValueError:
        return cell


# --- reading rows back (the report and the plot) ---------------------------------------------


def metric_value(cell: str | None) -> float | None:
    try:
        value = float(cell) if cell not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def run_labels(rows: Sequence[dict[str, str]]) -> list[str]:
    """A label per history row: its label, else its run id, else its row number."""
    return [
        r.get("label") or (f"run {r['run_id']}" if r.get("run_id") else f"row {i}")
        for i, r in enumerate(rows, start=1)
    ]


def gold_changes(rows: Sequence[dict[str, str]]) -> list[tuple[int, str]]:
    """Rows where the gold set differs from the row before (hash), with the new query count."""
    marks = []
    for i in range(1, len(rows)):
        if rows[i].get("gold_hash") != rows[i - 1].get("gold_hash"):
            marks.append((i, f"gold changed ({rows[i].get('n_queries') or '?'} queries)"))
    return marks
