"""The query in the corpus, as review shows it: the corpus's best chunks, and the words to mark.

The terminal's ``s`` and the page's ``/`` are one search, so a reviewer gets the same chunks in
either: BM25 over the current corpus snapshot (``goldmine.retrieval``), built once and kept until
the snapshot changes. A query whose words are not all in one chunk still finds the chunks holding
most of them, where a "contains every word" filter found nothing.

Marking follows BM25's own tokens (2+ word characters, lower-cased, Snowball English stems), so a
passage lights up on the words the ranking counted: whole words only (never "the" inside "theory")
and any word sharing a query word's stem ("passwords" for "password"). Stop words are never
marked: the English lists bm25s ships (the one BM25 drops, and NLTK's fuller one, which also
holds "what", "how", "my"), since a marked "how" in every passage points at nothing. Chinese,
Japanese and Korean runs are BM25's overlapping bigrams: a bigram the query holds is marked, and
bigrams that meet are one mark.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Any

from goldmine.goldset import items as gi
from goldmine.retrieval import CJK_RUN, run_terms

# bm25s's token pattern (its tokenize default): a word is two or more word characters.
_WORD = re.compile(r"(?u)\b\w\w+\b")


@cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@cache
def _stop_words() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN) | frozenset(STOPWORDS_EN_PLUS)


def _stems(words: list[str]) -> list[str]:
    return _stemmer().stemWords(words)


def query_stems(query: str) -> frozenset[str]:
    """The stems of the query's content words."""
    stop = _stop_words()
    words = [w for w in _WORD.findall(query.lower()) if w not in stop]
    return frozenset(_stems(words))


def marked_words(text: str, query: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text`` to mark for ``query``, in order."""
    wanted = query_stems(query)
    if not text or not (wanted or CJK_RUN.search(query)):
        return []
    stop = _stop_words()
    # CJK runs are BM25's bigrams (goldmine.retrieval.cjk_bigrams), marked apart from the words
    found = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(_latin(text))]
    words = sorted({w for _, _, w in found if w not in stop})
    keep = {w for w, stem in zip(words, _stems(words), strict=True) if stem in wanted}
    spans = [(start, end) for start, end, w in found if w in keep]
    return sorted(spans + _cjk_spans(text, query))


def _latin(text: str) -> str:
    """The text with its CJK runs blanked, offsets kept: a run is no word of BM25's."""
    return CJK_RUN.sub(lambda m: " " * len(m.group()), text)


def _cjk_spans(text: str, query: str) -> list[tuple[int, int]]:
    """The spans of the text's CJK bigrams (a lone character: itself) that the query holds, those
    that overlap or meet joined into one."""
    wanted = {t for run in CJK_RUN.findall(query) for t in run_terms(run)}
    spans: list[tuple[int, int]] = []
    for run in CJK_RUN.finditer(text) if wanted else ():
        for i, term in enumerate(run_terms(run.group())):
            if term not in wanted:
                continue
            start = run.start() + i
            end = start + len(term)
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
    return spans


class CorpusSearch:
    """The corpus's BM25 index for review, kept between searches and rebuilt for a new snapshot.

    Shared by every session of a page (one index per server, not per rater), so it is locked.
    """

    def __init__(self) -> None:
        self.snapshot_id: int | None = None
        self.index: Any = None
        self._lock = threading.Lock()

    def _retriever(self, con, snapshot_id: int | None) -> Any:
        from goldmine.retrieval import build_retriever

        with self._lock:
            if self.index is None or self.snapshot_id != snapshot_id:
                self.index = build_retriever(
                    con, "bm25", snapshot_id=snapshot_id, show_progress=False
                )
                self.snapshot_id = snapshot_id
            return self.index

    def search(self, con, text: str, limit: int) -> list[dict]:
        """Up to ``limit`` chunks of the current snapshot, best first, each with its ``score``;
        none when no word of ``text`` (but a stop word) is in the corpus."""
        if not _WORD.search(text):
            return []
        snapshot_id, _ = gi.current_snapshot(con)
        # A chunk's own id ("1391" from a qrels line) finds it first (``by_id``), then BM25's.
        named = gi.fetch_dicts(
            con,
            "SELECT chunk_id, title, url, text FROM chunks WHERE snapshot_id = ? AND chunk_id = ?",
            [snapshot_id, text.strip()],
        )
        hits = self._retriever(con, snapshot_id).search([text], limit)[0]
        hits = [(cid, score) for cid, score in hits if not named or cid != named[0]["chunk_id"]]
        rows = gi.fetch_dicts(
            con,
            """SELECT chunk_id, title, url, text FROM chunks
               WHERE snapshot_id = ? AND list_contains(?, chunk_id)""",
            [snapshot_id, [cid for cid, _ in hits]],
        )
        by_id = {r["chunk_id"]: r for r in rows}
        found = [{**by_id[cid], "score": score} for cid, score in hits if cid in by_id]
        return ([{**named[0], "score": 0.0, "by_id": True}] + found)[:limit] if named else found
