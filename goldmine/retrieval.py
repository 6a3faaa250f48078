"""The built-in retrievers: BM25, dense MiniLM, and their reciprocal rank fusion.

Three stages use them: triage asks for each query's best score (the ``no-answer-likely`` tag), the
gold set drafts candidate chunks with one, and ``goldmine eval run --baseline bm25|dense|hybrid``
scores one against a gold set. So they are plain, deterministic and cheap to build:

- ``bm25``: bm25s (Lucene's BM25, k1 = 1.5, b = 0.75) over title + text, lower-cased, English stop
  words removed, Snowball English stemming (PyStemmer); runs of Chinese, Japanese or Korean
  characters as overlapping bigrams (Lucene's CJKAnalyzer), since a run has no spaces to split on.
- ``dense``: the bundled all-MiniLM-L6-v2 (or any sentence-transformers model) over title + text;
  chunk vectors come through :func:`goldmine.embed.embed_texts`, so they are cached in the store by
  the hash of that string and a re-run encodes only changed chunks. Score = cosine = dot product of
  L2-normalized vectors. (On Cranfield, title + text matches FACTS.md's reference MAP and recall
  exactly; text alone scores 0.004 lower MAP.) The queries are embedded with the backend the
  chunks were (``backend``: torch by default, ``gold draft`` passes triage's choice), never
  another: a query and a chunk of two backends agree only to a cosine of ~0.99.
- ``hybrid``: reciprocal rank fusion, score = sum over the two lists of 1 / (60 + rank), of the top
  N = max(k, 100) of each.

Ties are broken by chunk id, descending — trec_eval's order — so a run saved as a TREC file and read
back ranks exactly as it was returned. Scores are float (from float32 for BM25 and dense).

Only the queries are encoded at search time, without the cache: a retriever outlives the store
connection it was built with (commands hold the store only for their unit of work). A caller that
embedded the queries itself (``gold draft``, through the cache) passes their ``vectors``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.errors import InputError, NotFoundError
from goldmine.text import ARABIC_OPTIONAL, IGNORABLE, is_word_mark

if TYPE_CHECKING:
    import duckdb

KINDS = ("bm25", "dense", "hybrid")
RRF_K = 60
FUSION_DEPTH = 100

Hits = list[tuple[str, float]]


class Retriever:
    """Ranks the chunks it was built over.

    ``search(queries, k)`` gives, for each query, up to k (chunk_id, score) pairs, best first.
    """

    kind: str = ""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = np.asarray(list(ids), dtype=object)
        _check_ids(self.ids)
        # Position of each chunk in descending id order: the tie-break key.
        order = np.argsort(self.ids.astype(str), kind="stable")[::-1]
        self._tie_rank = np.empty(len(order), dtype=np.int64)
        self._tie_rank[order] = np.arange(len(order))

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, queries: Sequence[str], k: int) -> list[Hits]:
        raise NotImplementedError

    def _top(self, scores: np.ndarray, k: int) -> Hits:
        """The k best of one query's scores over every chunk, ties by chunk id descending."""
        n = len(scores)
        k = min(k, n)
        if k <= 0:
            return []
        if k < n:
            # Keep every chunk tied with the k-th best, then order exactly.
            kth = np.partition(scores, n - k)[n - k]
            candidates = np.flatnonzero(scores >= kth)
        else:
            candidates = np.arange(n)
        picked = candidates[np.lexsort((self._tie_rank[candidates], -scores[candidates]))][:k]
        return [(str(self.ids[i]), float(scores[i])) for i in picked]


def documents(titles: Sequence[str | None] | None, texts: Sequence[str]) -> list[str]:
    """What is indexed and embedded for a chunk: its title, a newline, its text (or the text)."""
    if titles is None:
        return list(texts)
    pairs = zip(titles, texts, strict=True)
    return [f"{title}\n{text}" if title else text for title, text in pairs]


def _check_ids(ids: np.ndarray) -> None:
    if len(ids) == 0:
        raise NotFoundError("the corpus is empty: there is nothing to retrieve from")
    unique, counts = np.unique(ids.astype(str), return_counts=True)
    if len(unique) != len(ids):
        raise InputError(
            f"chunk id {str(unique[counts > 1][0])!r} appears more than once in the corpus"
        )


# Chinese, Japanese and Korean script: Han (and its extensions and compatibility forms), kana
# (with the long-vowel mark and halfwidth forms) and Hangul (syllables and jamo).
_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_RUN = re.compile(f"[{_CJK}]+")


# bm25s's default words of two or more word characters, and one CJK character alone.
PLAIN_PATTERN = f"(?u)\\b\\w\\w+\\b|[{_CJK}]"


@functools.cache
def _marks() -> str:
    """The combining marks' ranges (U+0300 up to the supplementary ideographs) as the inside of
    a regex character class, read from unicodedata once (~25 ms): the marks written inside
    words, not enclosing ones (a keycap) nor variation selectors (an emoji's U+FE0F)."""
    ranges, start = [], None
    for code in range(0x300, 0x20000):
        mark = is_word_mark(chr(code))
        if mark and start is None:
            start = code
        elif not mark and start is not None:
            ranges.append(f"{chr(start)}-{chr(code - 1)}")
            start = None
    return "".join(ranges)


@functools.cache
def marked_pattern() -> str:
    """PLAIN_PATTERN with combining marks inside words: Hindi, Thai and Hebrew write vowels as
    marks, which ``\\w`` is not, so "किताब" was cut into pieces at each. Two or more word
    characters, or one before a mark, then marks and the word characters after them."""
    m = _marks()
    return f"(?u)(?:\\w\\w+|\\w(?=[{m}]))(?:[{m}]+\\w*)*|[{_CJK}]"


def token_pattern(texts: Sequence[str]) -> str:
    """The word pattern for a corpus: ``marked_pattern`` when a text holds a combining mark, else
    PLAIN_PATTERN, which reads text without marks alike and a third faster (1.4x the CPU on
    Cranfield's abstracts with the marks' class). ASCII texts are passed over at no cost."""
    found = re.compile(f"[{_marks()}]").search
    return marked_pattern() if any(not t.isascii() and found(t) for t in texts) else PLAIN_PATTERN


def fold(text: str) -> str:
    """Text as BM25 reads it: NFKC (full- and half-width forms, decomposed accents as one letter)
    and without Arabic's optional vowel marks (``text.ARABIC_OPTIONAL``), which people leave out
    of a query a text writes them in, nor the characters Unicode says to ignore (``text.IGNORABLE``:
    a page's soft hyphen, a pasted zero-width space), which would cut a word in two. ASCII text is
    as it is."""
    if text.isascii():
        return text
    return ARABIC_OPTIONAL.sub("", unicodedata.normalize("NFKC", IGNORABLE.sub("", text)))


def cjk_bigrams(text: str) -> str:
    """Text with each run of CJK characters written as its overlapping bigrams, space-separated
    ("重置密码" -> "重置 置密 密码"), as Lucene's CJKAnalyzer reads them: those scripts put no
    space between words, and a run taken whole as one token matches only itself. A character
    alone stays one term. Other text is untouched."""
    if text.isascii() or not CJK_RUN.search(text):  # isascii: most texts, at no cost
        return text
    return CJK_RUN.sub(_bigrams, text)


def _bigrams(run: re.Match[str]) -> str:
    return " " + " ".join(run_terms(run.group(0))) + " "


def run_terms(chars: str) -> list[str]:
    """The terms of one CJK run: its overlapping bigrams, or the character if it stands alone."""
    return [chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)]


def _check_k(k: int) -> None:
    if not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a whole number of at least 1, not {k!r}")


class BM25Retriever(Retriever):
    kind = "bm25"

    def __init__(self, ids: Sequence[str], titles: Sequence[str | None], texts: Sequence[str]):
        super().__init__(ids)
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        docs = documents(titles, texts)
        self._pattern = token_pattern(docs)  # the queries' too: words read as the corpus's
        tokens = self._tokenize(docs)
        # A corpus with no word to index (every chunk empty, punctuation or one-letter words)
        # has no index: bm25s cannot build one (max() of an empty vocabulary), and no query can
        # share a term with it, so every search finds nothing.
        self._index = None
        if tokens.vocab:
            self._index = bm25s.BM25()
            self._index.index(tokens, show_progress=False)

    def _query_token_ids(self, queries: Sequence[str]) -> list[list[int]]:
        if self._index is None:
            return [[] for _ in queries]
        tokens = self._tokenize(list(queries), return_ids=False)
        return [self._index.get_tokens_ids([t for t in query if t]) for query in tokens]

    def _tokenize(self, texts: list[str], **how: Any) -> Any:
        """bm25s's tokens of texts folded (:func:`fold`), their CJK runs cut into bigrams
        (:func:`cjk_bigrams`), combining marks in their words (:func:`token_pattern`)."""
        return self._bm25s.tokenize(
            [cjk_bigrams(fold(t)) for t in texts],
            stopwords="en",
            stemmer=self._stemmer,
            token_pattern=self._pattern,
            show_progress=False,
            **how,
        )

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for one query (zeros when no query term is in the corpus)."""
        ids = self._query_token_ids([query])[0]
        if not ids:
            return np.zeros(len(self), dtype=np.float32)
        return self._index.get_scores_from_ids(ids)

    def search(self, queries: Sequence[str], k: int) -> list[Hits]:
        """Chunks sharing no term with the query are left out, so a query may get fewer than k."""
        _check_k(k)
        hits: list[Hits] = []
        for ids in self._query_token_ids(queries):
            if not ids:
                hits.append([])
                continue
            top = self._top(self._index.get_scores_from_ids(ids), k)
            hits.append([h for h in top if h[1] > 0])
        return hits


class DenseRetriever(Retriever):
    kind = "dense"

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        *,
        titles: Sequence[str | None] | None = None,
        con: duckdb.DuckDBPyConnection | None = None,
        model: str | None = None,
        show_progress: bool = True,
        vectors: np.ndarray | None = None,
        backend: str | None = None,
    ):
        """``vectors``: the chunks' vectors when the caller embedded them (with ``backend``)."""
        super().__init__(ids)
        from goldmine.embed import embed_backend, embed_texts, embed_uncached, model_key

        self.model = model_key(model)
        # Resolved once: the queries must be embedded as the chunks were.
        self.backend = embed_backend(backend)
        texts = documents(titles, texts)
        if vectors is not None:  # embedded by the caller (gold draft, with the store closed)
            self.vectors = vectors
        elif con is not None:
            self.vectors = embed_texts(
                con, texts, self.model, show_progress=show_progress, backend=self.backend
            )
        else:
            self.vectors = embed_uncached(
                texts, self.model, show_progress=show_progress, backend=self.backend
            )

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        from goldmine.embed import embed_uncached

        return embed_uncached(list(queries), self.model, backend=self.backend)

    def search(
        self, queries: Sequence[str], k: int, vectors: np.ndarray | None = None
    ) -> list[Hits]:
        """``vectors``: the queries' own, when the caller embedded them with this backend."""
        _check_k(k)
        if not len(queries):
            return []
        return self.search_vectors(self.embed_queries(queries) if vectors is None else vectors, k)

    def search_vectors(self, q: np.ndarray, k: int) -> list[Hits]:
        """``search`` for queries already embedded (e.g. from the cache) with the same model."""
        _check_k(k)
        hits: list[Hits] = []
        # Blocks of queries bound the score matrix (block x chunks float32) on large corpora.
        block = max(1, 4_000_000 // max(len(self), 1))
        for start in range(0, len(q), block):
            scores = q[start : start + block] @ self.vectors.T
            hits.extend(self._top(row, k) for row in scores)
        return hits


class HybridRetriever(Retriever):
    """Reciprocal rank fusion (k = 60) of BM25 and dense, each cut to its top max(k, 100)."""

    kind = "hybrid"

    def __init__(self, bm25: BM25Retriever, dense: DenseRetriever):
        if list(bm25.ids) != list(dense.ids):
            raise InputError("hybrid: the BM25 and dense retrievers must cover the same chunks")
        super().__init__(bm25.ids)
        self.bm25 = bm25
        self.dense = dense
        self._position = {str(chunk_id): i for i, chunk_id in enumerate(self.ids)}

    def search(
        self, queries: Sequence[str], k: int, vectors: np.ndarray | None = None
    ) -> list[Hits]:
        """``vectors``: the queries' own for the dense side, as ``DenseRetriever.search``."""
        _check_k(k)
        depth = max(k, FUSION_DEPTH)
        lexical = self.bm25.search(queries, depth)
        semantic = self.dense.search(queries, depth, vectors)
        hits: list[Hits] = []
        for one, two in zip(lexical, semantic, strict=True):
            fused = np.zeros(len(self), dtype=np.float64)
            for ranked in (one, two):
                for rank, (chunk_id, _) in enumerate(ranked, start=1):
                    fused[self._position[chunk_id]] += 1.0 / (RRF_K + rank)
            hits.append([h for h in self._top(fused, k) if h[1] > 0])
        return hits


def build_retriever_from_chunks(
    ids: Sequence[str],
    texts: Sequence[str],
    kind: str = "bm25",
    *,
    titles: Sequence[str | None] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    model: str | None = None,
    show_progress: bool = True,
    backend: str | None = None,
) -> Retriever:
    """A retriever over chunks in memory; with ``con``, dense vectors are cached in the store.
    ``backend``: the dense side's (default: embed.embed_backend's choice, torch unless set)."""
    kind = _check_kind(kind)
    ids, texts = list(ids), list(texts)
    titles = list(titles) if titles is not None else [None] * len(ids)
    if not (len(ids) == len(texts) == len(titles)):
        raise InputError(
            f"ids, texts and titles differ in length ({len(ids)}, {len(texts)}, {len(titles)})"
        )
    if kind == "bm25":
        return BM25Retriever(ids, titles, texts)
    dense = DenseRetriever(
        ids,
        texts,
        titles=titles,
        con=con,
        model=model,
        show_progress=show_progress,
        backend=backend,
    )
    if kind == "dense":
        return dense
    return HybridRetriever(BM25Retriever(ids, titles, texts), dense)


def build_retriever(
    con: duckdb.DuckDBPyConnection,
    kind: str = "bm25",
    *,
    snapshot_id: int | None = None,
    model: str | None = None,
    show_progress: bool = True,
) -> Retriever:
    """A retriever over a stored corpus snapshot (the current one, the highest id, by default)."""
    kind = _check_kind(kind)
    snapshot_id = resolve_snapshot(con, snapshot_id)
    frame = con.sql(
        "SELECT chunk_id, title, text FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        params=[snapshot_id],
    ).pl()
    if frame.height == 0:
        raise NotFoundError(f"corpus snapshot {snapshot_id} has no chunks")
    return build_retriever_from_chunks(
        frame["chunk_id"].to_list(),
        frame["text"].to_list(),
        kind,
        titles=frame["title"].to_list(),
        con=con,
        model=model,
        show_progress=show_progress,
    )


def resolve_snapshot(con: duckdb.DuckDBPyConnection, snapshot_id: int | None = None) -> int:
    """The given snapshot id, checked, or the current one; NotFoundError when there is none."""
    known = [
        row[0]
        for row in con.execute(
            "SELECT snapshot_id FROM corpus_snapshots ORDER BY snapshot_id"
        ).fetchall()
    ]
    if not known:
        raise NotFoundError(
            "no corpus in the store: import one first with `goldmine ingest corpus FILE`"
        )
    if snapshot_id is None:
        return known[-1]
    if snapshot_id not in known:
        raise NotFoundError(
            f"corpus snapshot {snapshot_id} not found; the store has snapshots "
            + ", ".join(str(s) for s in known)
        )
    return snapshot_id


def best_scores(retriever: Retriever, queries: Sequence[str]) -> list[float]:
    """Each query's best score over the corpus (0.0 when nothing matches): for no-answer-likely."""
    return [hits[0][1] if hits else 0.0 for hits in retriever.search(queries, 1)]


def _check_kind(kind: Any) -> str:
    value = str(kind).strip().lower()
    if value not in KINDS:
        raise InputError(f"unknown baseline {kind!r}; choose one of: {', '.join(KINDS)}")
    return value
