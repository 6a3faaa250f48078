"""Review meets a corpus from the wild: chunk ids and texts as real exports carry them.

Ids with ``/``, ``#``, ``?``, ``%``, spaces, unicode, a NUL or a CR, six hundred characters, or
digits that read alike ("007" and "7"); texts with terminal escapes, HTML, RTL text and emoji.
The terminal shows every control character as a mark, never raw; a grade names a candidate the
item holds, never a chunk that is in no draft and no corpus (the page's fetch could send one).
The browser's half is ``tests/test_web_review.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from goldmine.goldset import items as gi
from goldmine.store import open_store, transaction

from helpers import ESCAPES, QUERY_WILD, WILD, build, gold, run_cli, shown, wild_store


def qid_of(db: Path, text: str) -> str:
    """The id of the item whose query is ``text`` as typed (``--json`` keeps it as it is)."""
    listed = json.loads(gold(run_cli, db, "list", "--json").stdout)
    return next(i["query_id"] for i in listed if i["query"] == text)


def test_the_terminal_shows_escapes_in_texts_as_marks_never_raw(db_path: Path) -> None:
    build(db_path, chunks=WILD)
    added = gold(run_cli, db_path, "add-query", f"{ESCAPES}vpn").stdout.split("\t")[1]
    with open_store(db_path) as con, transaction(con):
        assert gi.add_draft(con, added, "esc", "test", source="bm25")
    # Piped, rich adds no escape of its own: every one on stdout came from the data.
    result = run_cli("--db", str(db_path), "gold", "review", "--by", "rita", input="q")
    assert result.returncode == 0, result.stderr
    assert "the VPN passage" in result.stdout and "red title" in result.stdout
    raw = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", result.stdout)
    assert raw == [], f"control characters reached the terminal: {raw}"
    assert "\N{REPLACEMENT CHARACTER}[2J" in result.stdout  # shown, as the page shows it


def test_a_grade_names_a_candidate_the_item_holds(db_path: Path) -> None:
    """The NUL id as an HTML attribute gives it back (U+FFFD for the NUL): that grade went in
    as a label on a chunk no draft and no corpus holds, and the real candidate stayed open."""
    from goldmine.goldset.review import ReviewSession

    query_id = wild_store(db_path)
    session = ReviewSession(db_path, "rita")
    assert session.view() is not None
    session.grade(query_id, "nul\N{REPLACEMENT CHARACTER}id", 2)
    assert shown(run_cli, db_path, QUERY_WILD)["labels"] == []
    assert "no candidate" in session.message
    session.grade(query_id, "nul\x00id", 2)  # the real id still grades
    labels = shown(run_cli, db_path, QUERY_WILD)["labels"]
    assert [lab["chunk_id"] for lab in labels] == ["nul\x00id"]


def test_listings_show_escapes_in_queries_as_marks_never_raw(db_path: Path) -> None:
    """``gold starter``, ``next``, ``list`` and ``show`` print the query as the review does: a
    query of the log holding ``ESC[2J`` cleared the screen of whoever listed it."""
    build(db_path)
    text = f"{ESCAPES}vpn on linux"
    with open_store(db_path) as con, transaction(con):
        con.execute(
            """INSERT INTO triage_queries (norm_query, query, cluster_id, n_events, n_sessions,
                   sources, n_zero_results, n_no_click, n_failed, failure_rate, tags)
               VALUES (?, ?, 99, 50, 50, ['searchlog'], 25, 25, 50, 1.0, ['keyword'])""",
            [text, text],
        )
        con.execute(
            """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                   failure_rate, priority, tags) VALUES (99, ?, 50, 1, 50, 1.0, 50, [])""",
            [text],
        )
    outputs = [gold(run_cli, db_path, "next", "--top", "30").stdout]
    outputs.append(gold(run_cli, db_path, "starter", "--n", "30").stdout)
    outputs.append(gold(run_cli, db_path, "list").stdout)
    outputs.append(gold(run_cli, db_path, "show", qid_of(db_path, text)).stdout)
    outputs.append(gold(run_cli, db_path, "add-query", text).stdout)  # "already in the set"
    gold(run_cli, db_path, "label", qid_of(db_path, "vpn setup"), "--no-answer")
    gold(run_cli, db_path, "publish", "-m", "one")
    gold(run_cli, db_path, "label", qid_of(db_path, text), "--no-answer")
    gold(run_cli, db_path, "publish", "-m", "two")
    outputs.append(gold(run_cli, db_path, "diff", "v1", "v2").stdout)
    for out in outputs:
        assert "vpn on" in out
        raw = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
        assert raw == [], f"control characters reached the terminal: {raw} in {out[:300]!r}"


def test_a_query_that_looks_like_markup_is_listed_as_typed(db_path: Path) -> None:
    """A table cell is text, never rich's markup: ``[/red]`` in a query stopped ``gold list``
    with a MarkupError traceback, and ``[bold]…[/bold]`` lost its brackets."""
    build(db_path)
    typed = ["[/red] closing tag", "[bold]bold[/bold] query"]
    gold(run_cli, db_path, "add-query", *typed)
    listed = gold(run_cli, db_path, "list").stdout
    shown_ = gold(run_cli, db_path, "show", qid_of(db_path, typed[1])).stdout
    assert "[/red]" in listed and "[bold]bo" in listed  # folded in its column, brackets kept
    assert "[bold]bold[/bold] query" in shown_


def test_the_terminal_marks_the_words_of_a_passage_with_windows_line_ends() -> None:
    """rich drops each CR of a Text, so marks placed on the text with its CRs fell short by one
    character per line: 'set y' and 'ssword' instead of 'reset' and 'password'."""
    from goldmine.goldset.review_tui import passage_text

    text = passage_text("line one\r\nline two\r\nreset your password\rold mac", "reset password")
    assert [text.plain[s.start : s.end] for s in text.spans] == ["reset", "password"]
    assert text.plain == "line one\nline two\nreset your password\nold mac"


def test_a_corpus_without_a_word_to_index_drafts_and_finds_nothing(db_path: Path) -> None:
    """A tiny corpus whose chunks hold no word of two letters (bm25s's tokens) left BM25's
    vocabulary empty: ``gold draft`` and the review's search stopped with bm25s's ValueError
    (max() of an empty sequence) as a traceback."""
    from goldmine.goldset.review import ReviewSession

    build(db_path, chunks={"dots": ("", "!!! ..."), "one": ("", "a"), "num": ("", "7 8 9")})
    gold(run_cli, db_path, "add-query", "reset password")
    drafted = gold(run_cli, db_path, "draft", "--retriever", "bm25")
    assert "0 candidate chunks" in drafted.stdout + drafted.stderr
    assert ReviewSession(db_path, "rita").search("reset password") == []


def test_adding_a_chunk_the_corpus_lacks_adds_nothing_and_says_so(db_path: Path) -> None:
    """The page's search adds by id: an id the corpus lacks (as HTML altered a NUL id) wrote a
    'search-add' history row, moved the item's version and said 'added' for nothing."""
    from goldmine.goldset.review import ReviewSession

    query_id = wild_store(db_path)
    before = shown(run_cli, db_path, QUERY_WILD)
    session = ReviewSession(db_path, "rita")
    assert session.view() is not None
    session.add_candidate(query_id, "nul\N{REPLACEMENT CHARACTER}id")
    assert "no chunk" in session.message
    after = shown(run_cli, db_path, QUERY_WILD)
    assert after["version"] == before["version"] and after["drafts"] == before["drafts"]


def test_listings_show_bidi_overrides_as_marks_never_raw(db_path: Path) -> None:
    """A right-to-left override (U+202E) or isolate in a query makes the terminal draw the rest of
    the line backwards ("Trojan Source"): ``pay\u202eusd 01`` reads as ``pay10 dsu``, so a
    reviewer grades a query other than the one stored. Each is a mark, one for one; the
    right-to-left mark of real Hebrew text (U+200F) stays."""
    build(db_path)
    text = "vpn \u202epay\u202c on \u2067linux\u2069 \u200fעברית"
    gold(run_cli, db_path, "add-query", text)
    qid = qid_of(db_path, text)
    outputs = [gold(run_cli, db_path, "list").stdout, gold(run_cli, db_path, "show", qid).stdout]
    for out in outputs:
        assert "vpn" in out
        raw = re.findall(r"[\u202a-\u202e\u2066-\u2069]", out)
        assert raw == [], f"bidi controls reached the terminal: {raw} in {out[:300]!r}"
    assert "\N{REPLACEMENT CHARACTER}pay\N{REPLACEMENT CHARACTER}" in outputs[1]
    assert "\u200fעברית" in outputs[1]
