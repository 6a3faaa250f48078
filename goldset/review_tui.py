"""The review loop in a terminal: one key per action (``goldmine gold review``).

A person reads the query (text, context turns, tags, volume, failure signals, raw examples), then
each candidate chunk with its title and passage, query terms highlighted, and presses one key:

    2 / 1 / 0   grade the chunk: fully answers / useful context / not relevant
    x           every remaining candidate is not relevant
    s           search the corpus by keyword for another chunk
    a           no answer in the corpus (verified, with an empty relevant set)
    k           skip this query for now        r   reject this query (or reload, after a conflict)
    n           add a note                     u   undo the last action
    q           quit (everything is already saved)

The session (``goldmine.goldset.review.ReviewSession``) holds the queue, the writes and their
rules; this module only renders its ``View`` and maps keys, apart from it so the page
(``web.py``) carries no terminal code. On a terminal the screen is redrawn in place (the
alternate screen, as a pager does); piped, each step is printed in turn.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.goldset import disagreements
from goldmine.goldset import items as gi
from goldmine.goldset.review import (
    RELOAD_HINT,
    QueueFilter,
    ReviewSession,
    View,
    drafted_how,
    suggester,
)
from goldmine.goldset.textmatch import marked_words
from goldmine.output import console as get_console
from goldmine.text import printable

if TYPE_CHECKING:
    from goldmine.store import Store

# Two lines, each under 80 columns; ``[m]`` only where a model suggests a grade (keys_help).
KEYS_HELP = (
    "[2] answers  [1] useful  [0] not relevant  [x] rest not relevant\n"
    "[s] search  [a] no answer  [k] skip  [r] reject  [n] note  [u] undo  [q] quit"
)
MODEL_KEY = "  [m] model's"
PASSAGE_CHARS = 900


def keys_help(view: View | None) -> str:
    """The keys for this step: ``[m]`` only where there is a model's grade to take."""
    if view is None or not view.suggested:
        return KEYS_HELP
    first, second = KEYS_HELP.split("\n")
    return f"{first}{MODEL_KEY}\n{second}"


class Keys:
    """One key at a time from a terminal (cbreak mode), or from a pipe one character at a time."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdin
        self.fd = self.stream.fileno()
        self.tty = os.isatty(self.fd)

    def key(self) -> str:
        if self.tty:
            import termios
            import tty

            saved = termios.tcgetattr(self.fd)
            try:
                tty.setcbreak(self.fd, termios.TCSANOW)
                data = os.read(self.fd, 1)
            finally:
                termios.tcsetattr(self.fd, termios.TCSANOW, saved)
            return data.decode("utf-8", "replace") if data else "q"
        while True:
            ch = self.stream.read(1)
            if not ch:
                return "q"
            if not ch.isspace():
                return ch

    def line(self, prompt: str) -> str:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        if self.tty:
            data = b""
            while not data.endswith((b"\n", b"\r")):
                chunk = os.read(self.fd, 1)
                if not chunk:
                    break
                data += chunk
            return data.decode("utf-8", "replace").strip()
        # A script writes the key and its text on two lines ("s", then the words): the rest of
        # the key's line is no answer, the next line is.
        while True:
            text = self.stream.readline()
            if not text or text.strip():
                return text.strip()


def _render(console, view: View, message: str, alert: bool = False) -> None:
    """One step's screen: the query and what is known of it, then the candidate to grade."""
    from rich.text import Text

    console.rule(f"{view.verified} of {view.total} verified")
    if message:
        console.print(Text(printable(message), style="bold red" if alert else "dim"))
    _render_query(console, view)
    graded = [c for c in view.candidates if c["kind"] == "label"]
    waiting = [c for c in view.candidates if c["kind"] == "draft"]
    if graded:
        graded_ids = ", ".join(f"{c['chunk_id']}={c['grade']}" for c in graded)
        console.print(printable(f"graded: {graded_ids}"), markup=False)
    if view.item["no_answer"]:
        console.print("marked: no answer in the corpus", markup=False)
    if view.current is None:
        _render_nothing_to_grade(console, bool(graded))
    else:
        _render_candidate(console, view, len(graded) + 1, len(graded) + len(waiting))
    console.print(Text(keys_help(view), style="dim"))


def _render_query(console, view: View) -> None:
    """The query, its context, facts, examples and notes; whose grades a rater sees."""
    from rich.text import Text

    item = view.item
    console.print(
        Text.assemble(
            (printable(item["query"]), "bold"),
            (printable(f"  ({item['query_id']}, {item['status']})"), "dim"),
        )
    )
    if item["context"]:
        console.print("[dim]context:[/dim]")
        console.print(Text(printable(item["context"]), style="italic"))
    facts = _facts(item, view.signals)
    if facts:
        console.print(printable("  ".join(facts)), markup=False)
    for ex in view.examples[:3]:
        console.print(Text(printable(f"  e.g. [{ex['source']}] {ex['text']}"), style="dim"))
    for note in item["notes"] or ():
        console.print(Text(printable(f"  note: {note}"), style="cyan"))
    if view.blind:
        console.print(
            "double-labelled: your grades are kept apart, the other rater's are hidden",
            style="magenta",
            markup=False,
        )
    for rater, grades in view.ratings.items():
        console.print(printable(f"{rater}: {_grades_text(grades)}"), style="magenta", markup=False)


def _facts(item: dict, signals: dict | None) -> list[str]:
    """Tags, volume and the failures triage counted (or the item's own frequency)."""
    facts = []
    if item["tags"]:
        facts.append("tags: " + ", ".join(item["tags"]))
    if signals:
        facts.append(f"volume {signals['n_events']}")
        failures = {
            k[2:]: v
            for k, v in signals.items()
            if k.startswith("n_") and k not in ("n_events", "n_sessions") and v
        }
        if failures:
            facts.append(
                "failures "
                + ", ".join(f"{k} {v}" for k, v in failures.items())
                + f" ({signals['failure_rate']:.0%})"
            )
    elif item["frequency"]:
        facts.append(f"volume {item['frequency']}")
    return facts


def _render_nothing_to_grade(console, graded: bool) -> None:
    if not graded:
        console.print("No candidate chunks: [s] search the corpus, [a] no answer.", markup=False)
    else:
        console.print(
            "Every candidate is graded and none answers: [s] search, [a] no answer,"
            " [k] skip, [r] reject.",
            markup=False,
        )


def _render_candidate(console, view: View, position: int, total: int) -> None:
    """The candidate to grade now: how it was drafted, who disagrees or suggests, its passage."""
    from rich.text import Text

    current = view.current
    console.print(
        Text.assemble(
            (f"candidate {position} of {total}", "bold"),
            printable(f"  {current['chunk_id']}"),
            (printable(f"  ({drafted_how(current)})"), "dim"),
        )
    )
    if current.get("grades"):
        console.print(
            Text.assemble(
                ("sources disagree: ", "bold magenta"),
                printable(disagreements.grades_text(current["grades"])),
            )
        )
    suggestion = current.get("suggestion")
    if suggestion:
        console.print(
            Text.assemble(
                (f"{suggester(suggestion)} suggests {suggestion['grade']}", "bold cyan"),
                (" ([m] to accept)", "dim"),
                printable(f": {suggestion['reason'] or ''}"),
            )
        )
        if suggestion.get("note"):
            console.print(Text(printable(suggestion["note"]), style="bold red"))
    if current["text"] is None:
        console.print("[red]this chunk is not in the current corpus snapshot[/red]")
        return
    if current["title"]:
        console.print(Text(printable(current["title"]), style="bold underline"))
    passage = current["text"]
    if len(passage) > PASSAGE_CHARS:
        passage = passage[:PASSAGE_CHARS] + " …"
    console.print(passage_text(passage, view.item["query"]))


def passage_text(text: str, query: str):
    """``text`` with the query's words marked (``textmatch.marked_words``: the page's marks), its
    control characters shown as marks (``printable``: one for one, so the marks hold)."""
    from rich.text import Text

    # rich drops a CR from a Text: line ends become LF first, so the marks fall on the text shown.
    text = printable(text).replace("\r\n", "\n").replace("\r", "\n")
    out = Text(text)
    for start, end in marked_words(text, query):
        out.stylize("bold yellow", start, end)
    return out


def _grades_text(grades: dict) -> str:
    """One rater's judgement of an item, for the adjudicator."""
    if None in grades:
        return "no answer"
    return ", ".join(f"{cid}={g}" for cid, g in sorted(grades.items())) or "nothing yet"


def run(
    store: Store | Path | None,
    by: str,
    keys: Keys | None = None,
    queue: QueueFilter | None = None,
    redact: Callable[[str], str] | None = None,
) -> tuple[int, int]:
    """The interactive loop; returns (verified, total) when the person quits or nothing is left.
    ``redact``: what notes go through before they are stored."""

    console = get_console()
    keys = keys or Keys()
    session = ReviewSession(store, by, queue, redact)
    # On a real terminal, one screen redrawn in place; piped or dumb, a plain scroll.
    in_place = console.is_terminal and not console.is_dumb_terminal
    if in_place:
        console.set_alt_screen(True)
    try:
        verified, total, farewell = _loop(console, keys, session, in_place)
    finally:
        if in_place:
            console.set_alt_screen(False)
    if farewell:
        console.print(farewell)
    return verified, total


def _loop(
    console, keys: Keys, session: ReviewSession, in_place: bool
) -> tuple[int, int, str | None]:
    """Show, read a key, act, until the person quits or nothing is left to decide."""
    while True:
        view = session.view()
        if in_place:
            console.clear()
        if view is None:
            with session.store.open(create=False) as con:
                verified, total = gi.progress_counts(con)
            done = f"Nothing left to review: {verified} of {total} verified."
            if session.message:
                console.print(printable(session.message), markup=False, style="dim")
            console.print(done)
            if not session.undo_stack:
                return verified, total, done if in_place else None
            console.print("[u] undo the last action, any other key to quit", markup=False)
            if keys.key() != "u":
                return verified, total, done if in_place else None
            session.undo()
            continue
        _render(console, view, session.message, alert=session.stale)
        key = keys.key()
        if key in ("q", "\x04", "\x03"):
            with session.store.open(create=False) as con:
                verified, total = gi.progress_counts(con)
            return (
                verified,
                total,
                (f"Saved. {verified} of {total} verified; `goldmine gold review` resumes here."),
            )
        session.message = ""
        if session.stale:
            if key == "r":
                session.reload()
            else:
                session.message = f"{view.item['query']!r} changed under you: {RELOAD_HINT}"
            continue
        _dispatch(console, keys, session, view, key)


def _dispatch(console, keys: Keys, session: ReviewSession, view: View, key: str) -> None:
    qid = view.item["query_id"]
    if key in ("2", "1", "0"):
        if view.current is None:
            session.message = "no candidate to grade: [s] search or [a] no answer"
        else:
            session.grade(qid, view.current["chunk_id"], int(key))
    elif key == "m":
        if view.current is None:
            session.message = "no candidate to grade: [s] search or [a] no answer"
        else:
            session.accept_suggestion(qid, view.current["chunk_id"])
    elif key == "x":
        session.rest_not_relevant(qid)
    elif key == "s":
        _search(console, keys, session, qid)
    elif key == "a":
        session.no_answer(qid)
    elif key == "k":
        session.skip(qid)
    elif key == "r":
        session.reject(qid)
    elif key == "n":
        session.note(qid, keys.line("note: "))
    elif key == "u":
        session.undo()
    else:
        session.message = f"unknown key {key!r}: {keys_help(view)}"


def _search(console, keys: Keys, session: ReviewSession, qid: str) -> None:
    from rich.text import Text

    words = keys.line("search the corpus for: ")
    hits = session.search(words)
    if not hits:
        session.message = f"no chunk matches {words!r}"
        return
    for n, hit in enumerate(hits, 1):
        snippet = " ".join(hit["text"].split())[:160]
        line = passage_text(f"{hit['chunk_id']}  {hit['title'] or ''}  {snippet}", words)
        how = "  its id" if hit.get("by_id") else f"  bm25 {hit['score']:.2f}"
        console.print(Text.assemble(f"[{n}] ", line, (how, "dim")))
    console.print("press a number to add that chunk as a candidate, any other key to go back")
    key = keys.key()
    if key.isdigit() and 1 <= int(key) <= len(hits):
        session.add_candidate(qid, hits[int(key) - 1]["chunk_id"])
    else:
        session.message = "search closed"
