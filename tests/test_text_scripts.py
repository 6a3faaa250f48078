"""Query normalization and BM25's words in scripts that write vowels as combining marks (Hindi,
Thai, Arabic's optional vowel marks), in full- and half-width forms, and decomposed (NFD).

Normalization replaced every character that is no word character with a space, and combining
marks are none: "नमस्ते" became "नमस त", "दिन" (day) and "दान" (donation) were one query, and
Arabic with its vowel marks was cut into letters. BM25's word pattern dropped them alike, so a
Hindi query found no Hindi chunk."""

from __future__ import annotations

import pytest

from goldmine.retrieval import build_retriever_from_chunks
from goldmine.text import normalize_query


@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("नमस्ते दुनिया", "नमस्ते दुनिया"),
        ("สวัสดีครับ", "สวัสดีครับ"),
        # Arabic's optional vowel marks (tashkeel) and the stretching tatweel go, as Lucene's
        # Arabic normalizer drops them: people type the words without them
        ("مَرْحَبًا بِكُمْ", "مرحبا بكم"),
        ("مرحـــبا", "مرحبا"),
        ("İstanbul", "istanbul"),  # case folding writes İ as i and a combining dot
        ("שָׁלוֹם", "שָׁלוֹם"),  # Hebrew's points stay: they tell words apart
        ("Where's my CARD?!", "where s my card"),
        ("e\u0301te\u0301", "été"),
        ("emoji 👍 ok", "emoji ok"),
        ("ｐａｓｓｗｏｒｄ", "password"),
        # an emoji's presentation selector and a keycap are no part of a word
        ("Reset my password ❤️", "reset my password"),
        ("❤️ ✔️", ""),
        ("1️⃣ step", "1 step"),
        ("café\ufe0f", "café"),
    ],
)
def test_combining_marks_stay_in_their_word(text: str, norm: str) -> None:
    assert normalize_query(text) == norm


def test_two_hindi_words_one_vowel_apart_stay_two() -> None:
    assert normalize_query("दिन") != normalize_query("दान")


def test_bm25_finds_words_written_with_marks_widths_and_decomposed() -> None:
    ids = ["hi", "ar", "en", "vi", "ja"]
    texts = [
        "मुझे अपनी किताब वापस चाहिए",
        "هٰذَا كِتَابٌ جَدِيدٌ",
        "Reset your password under Settings.",
        "Chính sách hoàn tiền",  # composed (NFC)
        "パスワードを再設定する",
    ]
    retriever = build_retriever_from_chunks(ids, texts, "bm25")
    queries = ["किताब", "كتاب", "ｐａｓｓｗｏｒｄ", "hoa\u0300n tie\u0302\u0300n", "ﾊﾟｽﾜｰﾄﾞ"]
    hits = retriever.search(queries, 1)
    assert [h[0][0] if h else None for h in hits] == ids


def test_a_corpus_without_marks_keeps_the_plain_word_pattern() -> None:
    """The marks' class costs a third more CPU per text: only a corpus holding a mark pays it."""
    from goldmine.retrieval import PLAIN_PATTERN, marked_pattern, token_pattern

    assert token_pattern(["Reset your password", "café crème", "重置密码"]) == PLAIN_PATTERN
    assert token_pattern(["Reset your password", "मुझे अपनी किताब"]) == marked_pattern()


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("reset pass\u200bword", "reset password"),  # a zero-width space pasted from a page
        ("re\u00adset password", "reset password"),  # a soft hyphen
        ("reset\u2060password", "resetpassword"),  # a word joiner
        ("\ufeffreset password", "reset password"),  # a byte-order mark at a file's start
        ("如何\u200b重置密码", "如何重置密码"),
        ("می\u200cخواهم", "میخواهم"),  # Persian's zero-width non-joiner, often left out
        ("मैं\u200dने", "मैंने"),  # a zero-width joiner changes how it is drawn, not the word
        ("abc\u200fdef", "abcdef"),  # a right-to-left mark
        ("葛\U000e0100城", "葛城"),  # an ideograph's variation selector
    ],
)
def test_invisible_characters_leave_the_word_whole(text: str, plain: str) -> None:
    """Characters Unicode says to ignore when they cannot be drawn (zero-width space and
    joiners, soft hyphen, BOM, direction marks, variation selectors) were spaces: "reset
    pass\u200bword" was the query "reset pass word", apart from "reset password" it shows as.
    NFKC_Casefold, ICU's and Lucene's search folding, drops them."""
    assert normalize_query(text) == normalize_query(plain)


def test_bm25_reads_a_word_with_an_invisible_character_whole() -> None:
    """A soft hyphen in a page's text (HTML's &shy;) and a zero-width space pasted into a query
    cut the word in two for BM25: "pass\u00adword" was the terms "pass" and "word"."""
    ids = ["soft", "other"]
    texts = ["Reset your pass\u00adword under Settings.", "Close your account under Profile."]
    retriever = build_retriever_from_chunks(ids, texts, "bm25")
    hits = retriever.search(["password", "pass\u200bword", "in\u00adfor\u00adma\u00adtion"], 1)
    assert [h[0][0] if h else None for h in hits] == ["soft", "soft", None]
