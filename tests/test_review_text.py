"""What review shows of the corpus: the query's words marked in a passage, and the corpus search.

One highlight and one ranked search serve the terminal and the page (issue 27, items 9 and 10),
so these run against the functions both call, over a real DuckDB store.
"""

from __future__ import annotations

from pathlib import Path

from goldmine.goldset.review import ReviewSession
from goldmine.goldset.textmatch import marked_words
from goldmine.goldset.web import WebReview, highlight
from goldmine.store import open_store, transaction

from helpers import CHUNKS, add_snapshot, build


def marked(text: str, query: str) -> list[str]:
    return [text[a:b] for a, b in marked_words(text, query)]


def test_stop_words_are_never_marked_nor_parts_of_other_words() -> None:
    text = "The theory goes forth: for the theory of flutter, see Theodorsen."
    assert marked(text, "the theory for flutter") == ["theory", "theory", "flutter"]


def test_a_stem_of_a_query_word_is_marked_as_a_whole_word() -> None:
    text = "Passwords are reset here; resetting a password emails a link. Passwordless too."
    assert marked(text, "reset my password") == ["Passwords", "reset", "resetting", "password"]


def test_a_query_of_stop_words_marks_nothing() -> None:
    assert marked("what is there for the others to do", "what is the for") == []


def test_cjk_text_is_marked_on_the_bigrams_bm25_counted() -> None:
    """BM25 reads a CJK run as its bigrams; the passage lights up on those the query shares
    (one span where two meet), and an English word beside them as before. Nothing was marked."""
    text = "如何重置我的密码 (reset the password) 密码重置"
    assert marked(text, "重置密码 password") == ["重置", "密码", "password", "密码重置"]
    assert marked("パスワードを再設定する方法", "パスワード 再設定") == ["パスワード", "再設定"]
    assert marked("猫", "猫") == ["猫"]  # a lone character is a term, as in BM25
    assert marked("猫と犬", "猫") == []  # inside a run only its bigrams are: BM25 never counted it


def test_the_page_marks_the_same_words_and_escapes_the_rest() -> None:
    html = str(highlight("<b>the</b> theory goes forth", "the theory for"))
    assert html == "&lt;b&gt;the&lt;/b&gt; <mark>theory</mark> goes forth"


def test_search_ranks_chunks_holding_only_some_of_the_words(db_path: Path) -> None:
    build(db_path)
    session = ReviewSession(db_path, "rita")
    # No chunk holds every word; the VPN-on-mobile chunk holds three of them.
    hits = session.search("android qr code invoices")
    assert hits[0]["chunk_id"] == "kb-vpn-2"
    assert {"kb-invoice-1", "kb-invoice-2"} & {h["chunk_id"] for h in hits}
    assert hits == sorted(hits, key=lambda h: -h["score"])


def test_the_terminal_and_the_page_rank_alike(db_path: Path) -> None:
    build(db_path)
    terminal = ReviewSession(db_path, "rita").search("mobile vpn portal", limit=5)
    page = WebReview(db_path, "rita").search("mobile vpn portal", limit=5)
    assert [h["chunk_id"] for h in terminal] == [h["chunk_id"] for h in page]
    assert [h["score"] for h in terminal] == [h["score"] for h in page]


def test_the_index_is_kept_until_the_corpus_changes(db_path: Path) -> None:
    build(db_path)
    session = ReviewSession(db_path, "rita")
    session.search("vpn")
    index = session.searcher.index
    session.search("invoice")
    assert session.searcher.index is index  # built once, kept
    chunks = {**CHUNKS, "kb-fax-1": ("Faxing", "Send a fax from the portal's fax page.")}
    with open_store(db_path) as con, transaction(con):
        add_snapshot(con, chunks)
    assert session.search("fax")[0]["chunk_id"] == "kb-fax-1"  # the current snapshot's
    assert session.searcher.index is not index


def test_a_chunk_is_found_by_its_id(db_path: Path) -> None:
    """A labeller who knows the chunk ("1391" from cranqrel, a doc id from a bug report) typed
    its id and got "No chunk matches": the chunk of that id comes first, then BM25's hits."""
    build(db_path)
    session = ReviewSession(db_path, "rita")
    hits = session.search(" kb-fax-0 ") or [{}]
    assert hits == [{}]  # no such chunk: BM25 alone, which finds nothing for it
    hits = session.search("kb-invoice-2")
    assert hits[0]["chunk_id"] == "kb-invoice-2" and hits[0]["by_id"] is True
    assert [h["chunk_id"] for h in hits].count("kb-invoice-2") == 1
