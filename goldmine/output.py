"""Printing: rich tables for people, JSON for scripts, warnings and progress bars on stderr.

rich is imported lazily so that commands printing JSON pay nothing for it.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from goldmine.text import printable

if TYPE_CHECKING:
    from rich.console import Console


@lru_cache(maxsize=1)
def console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


@lru_cache(maxsize=1)
def err_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "__fspath__"):
        return str(value)
    return str(value)


def takes_any_text(stream: Any) -> bool:
    """Whether ``stream`` encodes every character (a UTF encoding). Under
    ``PYTHONIOENCODING=ascii`` or a Latin-1 locale it does not, and a query in Chinese raised
    UnicodeEncodeError halfway through a listing."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return encoding.lower().replace("_", "-").startswith("utf")


def forgive_stdout() -> None:
    """Let a stdout that cannot encode every character replace what it cannot (``?``) instead
    of raising: a table of queries stays a table. JSON escapes those characters itself
    (``print_json``), so nothing of it is replaced."""
    if not takes_any_text(sys.stdout) and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")


def print_json(data: Any) -> None:
    """One JSON document on stdout; floats stay full precision. On a stdout that cannot encode
    every character, non-ASCII text is written as JSON escapes: the same document to a reader."""
    text = json.dumps(
        data, default=_jsonable, ensure_ascii=not takes_any_text(sys.stdout), indent=2
    )
    sys.stdout.write(text)
    sys.stdout.write("\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    """A warning on stderr. The message is text, never markup: it quotes paths, queries and an
    endpoint's words, and a '[/red]' in one crashed rich's markup parser."""
    from rich.markup import escape

    err_console().print(
        f"[yellow]warning:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True
    )


def info(message: str) -> None:
    """A line for people on stderr, so stdout stays clean for --json. Not wrapped: a log line
    stays one line for grep, whatever the terminal's width."""
    err_console().print(message, markup=False, highlight=False, soft_wrap=True)


# Without a terminal a bar is not drawn; a long step still writes a line this often (a CI log).
LOG_EVERY_S = 10.0


@contextmanager
def progress(description: str, total: int | None = None, percent: bool = False) -> Iterator[Any]:
    """A progress bar with ETA on stderr; yields ``advance(n=1)``, whose ``visible`` says whether
    the bar is drawn (only when stderr is a terminal; otherwise a plain line with the count and
    ETA every LOG_EVERY_S seconds). ``percent`` shows the share done instead of "M/N", for units
    that mean nothing to a reader."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn() if percent else MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console(),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    log = _Log(description, total)
    with bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)
            if bar.disable:
                log.advance(n)

        advance.visible = not bar.disable  # type: ignore[attr-defined]
        yield advance


class _Log:
    """The plain-line stand-in for a bar when stderr is not a terminal."""

    def __init__(self, description: str, total: int | None) -> None:
        self.description, self.total, self.done = description, total, 0
        self.start = self.last = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last < LOG_EVERY_S:
            return
        self.last = now
        if not self.total:
            info(f"{self.description}: {self.done:,} done")
            return
        left = (now - self.start) / max(self.done, 1) * (self.total - self.done)
        share = self.done / self.total
        info(f"{self.description}: {self.done:,}/{self.total:,} ({share:.0%}), ETA {left:.0f} s")


def step(command: str, name: str, detail: str = "") -> None:
    """Name a step of a long command on stderr (``triage: embed 2,900 texts``), terminal or not,
    so a log shows where the time went; --json output on stdout is untouched."""
    info(f"{command}: {name}" + (f" — {detail}" if detail else ""))


@dataclass(frozen=True)
class Col:
    """A column of a ``fit_table``. ``keep``: columns with the lowest are left out first when the
    terminal is too narrow (None: always shown). ``wrap``: the cells wrap between words (a label),
    down to ``min_width`` or the longest word (a word past 30 cells folds); other cells keep
    their lines whole."""

    header: str
    keep: int | None = None
    wrap: bool = False
    min_width: int = 0
    justify: str = "left"
    width: int | None = None  # fixed, as fit_table sets it; None: as the cells need


# What rich's default box adds to a table: a border left of each column and one at the right end,
# one space of padding either side of each cell.
_PER_COLUMN, _EDGE = 3, 1


def _width(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


# A wrapping column's narrowest width counts a word up to this many cells: a longer one (a URL,
# a pasted token) is folded over lines, else it alone would take the width of every other column.
_FOLD_PAST = 30


def _longest_word(text: str) -> int:
    return min(max((_width(w) for w in text.split()), default=0), _FOLD_PAST)


def fit_table(
    cols: list[Col], rows: list[list[str]], width: int | None = None, title: str | None = None
) -> Any:
    """A rich Table that fits ``width`` (the terminal's by default) with no header or cell cut
    short: low-value columns are left out (lowest ``keep`` first) until the narrowest layout
    fits, and the caption names them; wrapping columns take the room that is left."""
    width = width or console().width
    least, most = {}, {}  # each column's narrowest and natural width
    for i, col in enumerate(cols):
        cells = [r[i] for r in rows]
        most[i] = max([_width(col.header)] + [_width(c) for c in cells])
        least[i] = most[i]
        if col.wrap:
            least[i] = max([col.min_width, _width(col.header)] + [_longest_word(c) for c in cells])
            most[i] = max(most[i], least[i])
    shown = list(range(len(cols)))
    droppable = sorted((c.keep, i) for i, c in enumerate(cols) if c.keep is not None)
    while sum(least[i] + _PER_COLUMN for i in shown) + _EDGE > width and droppable:
        shown.remove(droppable.pop(0)[1])
    # The room left goes to the wrapping columns, in order, up to what their cells need.
    widths = {i: least[i] for i in shown}
    room = width - sum(widths[i] + _PER_COLUMN for i in shown) - _EDGE
    for i in shown:
        grow = min(max(room, 0), most[i] - widths[i])
        widths[i] += grow
        room -= grow
    hidden = [c.header for i, c in enumerate(cols) if i not in shown]
    caption = f"not shown at this width: {', '.join(hidden)} (--json has every field)"
    return table(
        [replace(cols[i], width=widths[i]) for i in shown],
        [[row[i] for i in shown] for row in rows],
        title=title,
        caption=caption if hidden else None,
    )


# Characters of a query or label a listing shows: traffic holds pasted logs and pages, and one
# text of ten thousand characters filled the screen of `triage show`. The whole text is in
# --json and in the query's or cluster's own view.
def count(n: int, noun: str) -> str:
    """``n`` and its noun, which agree: "1 query", "0 queries", "12,345 judgments"."""
    if n == 1:
        return f"1 {noun}"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return f"{n:,} {noun[:-1]}ies"
    return f"{n:,} {noun}{'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


CLIP = 200


def clip(text: str | None, limit: int = CLIP) -> str:
    """The start of a long text, for a listing, saying how much is left out."""
    text = text or ""
    if len(text) <= limit:
        return text
    start = text[:limit].rstrip()  # the spaces a cut falls in are left out, and counted
    return f"{start}… (+{len(text) - len(start):,} characters)"


def print_whole(renderable: Any) -> None:
    """Print a table whose columns must all stay whole (a history's metric columns differ only
    past their first letters): in a terminal at its width, through a pipe or into a file at its
    natural width, never cut to the COLUMNS of a terminal no one is looking at."""
    out = console()
    if sys.stdout.isatty():
        out.print(renderable)
        return
    from rich.console import Console
    from rich.measure import Measurement

    natural = Measurement.get(out, out.options.update(width=100_000), renderable).maximum
    # A console of that width (print's own width= is capped at the console's).
    Console(width=max(out.width, natural), highlight=False, soft_wrap=False).print(renderable)


def table(
    columns: Sequence[str | Col],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    plain: bool = False,
) -> Any:
    """The one table renderer: ``rows`` under ``columns`` (a header, which wraps, or a ``Col``),
    cells as text (None as empty), a cell too long for its column folded, never cut. ``plain``:
    no box and no edge, for a report read as text."""
    from rich.table import Table
    from rich.text import Text

    frame = {"show_edge": False, "box": None, "pad_edge": False} if plain else {}
    out = Table(title=title, title_justify="left", caption=caption, caption_justify="left", **frame)
    for col in columns:
        col = col if isinstance(col, Col) else Col(col, wrap=True)
        out.add_column(
            col.header,
            justify=col.justify,  # type: ignore[arg-type]
            no_wrap=not col.wrap,
            width=col.width,
            overflow="fold",
        )
    # Cells hold queries and chunk texts from traffic: text, never rich's markup (a '[/red]' in a
    # query raised a MarkupError), and a terminal escape in one shows as a mark.
    for row in rows:
        out.add_row(*(Text("" if v is None else printable(str(v))) for v in row))
    return out
