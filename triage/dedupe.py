"""Step 2 of triage: near-identical variants join one canonical query (rapidfuzz).

``fuzz.ratio`` at cutoff 90 (FACTS.md: 95% of such pairs on banking77 share an intent, against 70%
for ``token_set_ratio``, which is also 40x slower). Two texts can only reach ratio r if the shorter
is at least r / (200 - r) of the longer, so queries sorted by length are compared block by block
against the length band they can match: ``process.cdist`` over a block x band, never n x n. Pairs
whose digits differ ("card 1" vs "card 7") are not variants, and neither are pairs where a content
word was swapped for another word rather than misspelled ("change my PIN" vs "get my PIN", "exchange
fee" vs "exchange rate"), or where one is negated: every word one has and the other lacks must
be a function word or within Elasticsearch's AUTO fuzziness of a word the other has. A text in
a script written without spaces (Chinese, Japanese, Thai) is nobody's variant.

Blocking keeps it near-linear: texts are compared only within blocks that share a rare content word
(:func:`block_keys`), a block of a common word split by a second key (:func:`_split_big`), and
inside a block only across the length band. Only queries triage has not
seen before are compared (against every current query); a query keeps
the canonical it was given. The canonical of a group is its most frequent variant (ties: shorter,
then alphabetical), reached through the variant's best-ranked match.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.output import progress
from goldmine.store import registered
from goldmine.triage.events import frame

if TYPE_CHECKING:
    import duckdb

FUZZY_CUTOFF = 90
BLOCK = 512
_DIGITS = re.compile(r"\d+")
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "me",
        "we",
        "you",
        "it",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "from",
        "into",
        "about",
        "as",
        "and",
        "or",
        "but",
        "so",
        "if",
        "then",
        "than",
        "there",
        "here",
        "what",
        "how",
        "why",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "please",
        "just",
        "still",
        "yet",
        "also",
        "too",
        "very",
        "some",
        "any",
        "s",
        "t",
    ]
)


def auto_fuzziness(length: int) -> int:
    """Edits a word of this length may differ by (Elasticsearch's AUTO: 0-2: 0, 3-5: 1, 6+: 2)."""
    return 0 if length < 3 else 1 if length < 6 else 2


NEGATIONS = frozenset(["not", "no", "never", "cannot", "cant", "dont", "didnt", "doesnt", "t"])


@lru_cache(maxsize=1 << 18)
def near_spelling(w: str, t: str) -> bool:
    """A misspelling or an inflection of the same word: the same first letter and within AUTO
    fuzziness of the longer (Elasticsearch's fuzzy query with prefix_length 1: "cant"/"cannot",
    "recieved"/"received", not "activate"/"reactivate"), or one stem ("currency"/"currencies":
    a shared prefix of all but two letters of the shorter, at least four). Cached: the same
    word pairs come back across millions of checked pairs of texts."""
    from rapidfuzz.distance import OSA

    if w[0] == t[0] and OSA.distance(w, t) <= auto_fuzziness(max(len(w), len(t))):
        return True
    shared = len(os.path.commonprefix([w, t]))
    return shared >= max(4, min(len(w), len(t)) - 2)


def words_compatible(a: str, b: str) -> bool:
    """Every word only one side has is a function word or a near-spelling of one the other has,
    and both or neither are negated ("can I" vs "can't I" differ by one letter, not by a typo)."""
    return _compatible(_signature(a), _signature(b))


# What the word rule reads of a text, made once a text (``_signature``): a head query is checked
# against many candidates, and each check split it, found its digits and searched its script
# again. A plain tuple, as few objects as the split and the digits were: the cache holds one a
# text, and the garbage collector walks every object it holds.
_Signature = tuple[tuple[str, ...], bool, frozenset[str], bool]  # digits, unspaced, words, negated


@lru_cache(maxsize=1 << 16)
def _signature(text: str) -> _Signature:
    words = frozenset(text.split())
    unspaced = bool(_UNSPACED.search(text))
    return tuple(_DIGITS.findall(text)), unspaced, words, bool(words & NEGATIONS)


def _compatible(sa: _Signature, sb: _Signature) -> bool:
    """``words_compatible`` of two texts' signatures."""
    if sa[3] != sb[3]:
        return False
    wa, wb = sa[2], sb[2]
    only_a, only_b = wa - wb, wb - wa
    words: frozenset[str] | None = None
    for mine, theirs in ((only_a, only_b), (only_b, only_a)):
        for w in mine - FUNCTION_WORDS:
            # near_spelling's rules both need the first letter: skip the cached calls that can't
            if any(t[0] == w[0] and near_spelling(w, t) for t in theirs):
                continue
            words = words or wa | wb
            if not _joined(w, words, theirs):
                return False
    return True


@lru_cache(maxsize=1 << 16)
def _prefixes(word: str) -> frozenset[str]:
    return frozenset(word[:k] for k in range(1, len(word)))


def _joined(w: str, words: set[str], theirs: set[str]) -> bool:
    """A split or joined word ("top up" / "topup"): w is two words of the pair end to end, or a
    piece of a word only the other side has that is w and another word of the pair end to end.
    The split points come from w's prefixes that are words of the pair (one set intersection;
    nearly every w checked has none), not a lookup per split point."""
    if any(w[len(p) :] in words for p in _prefixes(w) & words):
        return True
    n = len(w)
    return any(
        len(x) > n and ((x.startswith(w) and x[n:] in words) or (x.endswith(w) and x[:-n] in words))
        for x in theirs
    )


def length_band(lo: int, hi: int, cutoff: float = FUZZY_CUTOFF) -> tuple[int, int]:
    """Lengths a text must have to reach ``fuzz.ratio`` >= cutoff with one of length lo..hi."""
    return int(np.floor(lo * cutoff / (200 - cutoff))), int(np.ceil(hi * (200 - cutoff) / cutoff))


@dataclass
class Work:
    """What :func:`best_partners` did, counted when asked for (the benchmark prints it a query):
    the cells fuzz.ratio scored, the pairs over the cutoff among them, the word-rule checks."""

    cells: int = 0
    over: int = 0
    checks: int = 0


def over_cutoff(
    queries: list[str], targets: list[str], cutoff: float = FUZZY_CUTOFF
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, score) arrays of every pair with fuzz.ratio(queries[i], targets[j]) >= cutoff.

    Blocked by length: memory is one block x band, whatever the number of texts.
    """
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    q_len = np.array([len(t) for t in queries])
    t_len = np.array([len(t) for t in targets])
    q_order = np.argsort(q_len, kind="stable")
    t_order = np.argsort(t_len, kind="stable")
    t_sorted = t_len[t_order]
    for start in range(0, len(queries), BLOCK):
        rows = q_order[start : start + BLOCK]
        lo, hi = length_band(int(q_len[rows[0]]), int(q_len[rows[-1]]), cutoff)
        a, b = np.searchsorted(t_sorted, lo, "left"), np.searchsorted(t_sorted, hi, "right")
        cols = t_order[a:b]
        if len(cols) == 0:
            continue
        scores = _ratios([queries[i] for i in rows], [targets[j] for j in cols], cutoff)
        r, c = np.nonzero(scores)
        found.append((rows[r], cols[c], scores[r, c]))
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
    i, j, score = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return i, j, score


def _ratios(queries: list[str], targets: list[str], cutoff: float = FUZZY_CUTOFF) -> np.ndarray:
    """fuzz.ratio of every query against every target, rounded, 0 where under the cutoff."""
    from rapidfuzz import fuzz, process

    return process.cdist(
        queries,
        targets,
        scorer=fuzz.ratio,
        score_cutoff=cutoff,
        # threads pay off on big blocks only; a tiny block is faster on this one
        workers=-1 if len(queries) * len(targets) >= PARALLEL_CELLS else 1,
        dtype=np.uint8,
    )


# Scripts written without spaces between words (Chinese, Japanese kana, Thai, Lao, Myanmar,
# Khmer): a sentence there is one "word", and a changed character is a changed word (不, ない), so
# the word rule cannot tell a typo from another query.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff66-\uff9f]"
)


def variants(a: str, b: str) -> bool:
    """Two different texts over the cutoff that are one query written two ways: the same digits
    and compatible words (:func:`words_compatible`), in a script that writes words apart."""
    if a == b:
        return False
    sa, sb = _signature(a), _signature(b)
    return sa[0] == sb[0] and not (sa[1] or sb[1]) and _compatible(sa, sb)


def similar_pairs(
    queries: list[str], targets: list[str], cutoff: float = FUZZY_CUTOFF
) -> list[tuple[int, int, float]]:
    """(i, j, score) with fuzz.ratio(queries[i], targets[j]) >= cutoff that are variants."""
    if not queries or not targets:
        return []
    i, j, score = over_cutoff(queries, targets, cutoff)
    return [
        (int(a), int(b), float(s))
        for a, b, s in zip(i, j, score, strict=True)
        if variants(queries[a], targets[b])
    ]


KEYS_PER_QUERY = 3
PARALLEL_CELLS = 200_000


SPLIT_AT = 1000  # texts in a block before it is split by a second key (_split_big)


def block_keys(texts: Sequence[str], split_at: int = SPLIT_AT):
    """Blocking keys per text, as (j, key) rows in each text's key order: its three rarest content
    words (document frequency over texts, ties alphabetical); for texts of one or two content
    words also each word's first three letters, then each word's last three, so a misspelled
    keyword still meets its correct spelling; texts of function words only share one key.

    Two texts that share all but at most two of their content words share a key, so every variant
    pair the word rule accepts, short of every word being misspelled, lands in a common block.
    Polars expressions over the words (a Python loop per text was 4.5 s of a 200k-query run).
    """
    import polars as pl

    words = (
        pl.DataFrame({"text": texts}, schema={"text": pl.Utf8})
        .with_row_index("j")
        .select("j", w=pl.col("text").str.extract_all(r"\S+"))
        .explode("w")
        .filter(pl.col("w").is_not_null() & ~pl.col("w").is_in(sorted(FUNCTION_WORDS)))
        .unique(["j", "w"], keep="first", maintain_order=True)
        .with_columns(
            df=pl.len().over("w"), n=pl.len().over("j"), at=pl.int_range(pl.len()).over("j")
        )
    )
    rarest = (
        words.sort("j", "df", "w")
        .group_by("j", maintain_order=True)
        .head(KEYS_PER_QUERY)
        .select("j", key="w", pos=pl.int_range(pl.len()).over("j"))
    )
    short = words.filter(pl.col("n") <= 2)
    ends = [
        short.select("j", key="<" + pl.col("w").str.slice(0, 3), pos=10 + pl.col("at")),
        short.select("j", key=">" + pl.col("w").str.tail(3), pos=20 + pl.col("at")),
    ]
    bare = pl.DataFrame({"j": range(len(texts))}, schema={"j": pl.UInt32}).join(
        words, on="j", how="anti"
    )
    bare = bare.select("j", key=pl.lit("\0"), pos=pl.lit(0, pl.Int64))
    cast = {"j": pl.UInt32, "key": pl.Utf8, "pos": pl.Int64}
    keys = pl.concat([f.cast(cast) for f in (rarest, *ends, bare)])
    return (
        _split_big(keys, words, split_at)
        .sort("j", "pos")
        .unique(["j", "key"], keep="first", maintain_order=True)
        .select("j", "key")
    )


def _split_big(keys, words, split_at: int):
    """A block of more than ``split_at`` texts (a common word such as "top" at a million
    queries: tens of thousands of texts, compared in pairs) is split: each of its texts goes to
    the sub-blocks of the key with each of its other keys, and to the one of the key with the
    first letters of its content words (a misspelled or inflected word keeps its first letter,
    see near_spelling, so variants that share only this key still meet). Blocks then stay near
    ``split_at``: dedupe grows with the queries, not with their square. Measured on 200k
    generated queries: 99.7% of the partners found without the split are found with it.

    Only other keys that are big themselves make a sub-block: two texts that share a key and a
    small other key already meet in the other's whole block, and a sub-block of two big keys is
    named in one order, so "top|card" and "card|top" are one block. Either copy cost its cdist
    again, for pairs then dropped as judged before: the same partners with a third fewer
    memberships at 200k generated queries (3.87 a query, 5.80 before; blocks of two or more
    texts 51,867, 71,445 before)."""
    import polars as pl

    size = pl.len().over("key")
    small = keys.filter(size <= split_at)
    big = keys.filter(size > split_at)
    if not big.height:
        return keys
    others = big.join(big.select("j", other="key"), on="j").filter(pl.col("other") != pl.col("key"))
    letters = words.group_by("j").agg(sig=pl.col("w").str.slice(0, 1).unique().sort().str.join(""))
    initials = big.join(letters.select(pl.col("j").cast(pl.UInt32), "sig"), on="j", how="left")
    return pl.concat(
        [
            small,
            others.select(
                "j",
                key=pl.min_horizontal("key", "other") + "|" + pl.max_horizontal("key", "other"),
                pos="pos",
            ),
            initials.select("j", key=pl.col("key") + "#" + pl.col("sig").fill_null(""), pos="pos"),
        ]
    )


def blocked_pairs(
    queries: list[int], texts: list[str], advance: Callable[[int], None] | None = None
) -> set[tuple[int, int, float]]:
    """(i, j, score) index pairs into ``texts``: each of ``queries`` (indexes into texts) against
    the texts it shares a block with, length-banded cdist inside each block. Every pair, for the
    tests and the benchmark; dedupe itself needs only :func:`best_partners`. ``advance`` is told
    of each block done."""
    blocks, _ = block_table(texts)
    wanted = set(queries)
    found: set[tuple[int, int, float]] = set()
    for members in blocks:
        if advance is not None:
            advance(1)
        mine = [int(i) for i in members if i in wanted]
        if not mine or len(members) < 2:
            continue
        for a, b, score in similar_pairs([texts[i] for i in mine], [texts[j] for j in members]):
            found.add((mine[a], int(members[b]), score))
    return found


def block_table(
    texts: Sequence[str], split_at: int = SPLIT_AT
) -> tuple[list[np.ndarray], np.ndarray]:
    """The blocks as arrays of member indexes (by block id, in order of first use) and each
    text's block ids, one row per text padded with -1."""
    import polars as pl

    keys = block_keys(texts, split_at).with_row_index("row")
    keys = keys.select(
        "j",
        b=(pl.col("row").min().over("key").rank("dense") - 1).cast(pl.Int32),  # first use
        r=pl.col("row") - pl.col("row").min().over("j"),
    )
    table = np.full((len(texts), max(int(keys["r"].max() or 0) + 1, 1)), -1, dtype=np.int32)
    table[keys["j"].to_numpy(), keys["r"].to_numpy()] = keys["b"].to_numpy()
    if not keys.height:
        return [], table
    by_block = keys.sort("b", "j")
    j = by_block["j"].to_numpy().astype(np.int64)
    starts = np.flatnonzero(np.diff(by_block["b"].to_numpy(), prepend=-1))
    return np.split(j, starts[1:]), table


def blocks_holding(table: np.ndarray, queries: list[int] | np.ndarray) -> np.ndarray:
    """The ids of the blocks that hold one of ``queries`` (rows of ``block_table``'s table), in
    order: a weekly run's few new queries are matched in their own blocks, not in every block of
    the million queries before them."""
    ids = table[np.asarray(queries, dtype=np.int64)]
    return np.unique(ids[ids >= 0])


PAIR_CHUNK = 500_000  # candidate pairs per step of the shared-block check (x width^2 bytes)


def _first_shared_here(table: np.ndarray, i: np.ndarray, j: np.ndarray, block: int) -> np.ndarray:
    """Whether ``block`` is the lowest-numbered block texts i and j share (pairwise): a pair found
    in several blocks is judged in one of them, with no set of pairs already judged (at 1M
    queries such a set held tens of millions of pairs)."""
    keep = np.empty(len(i), dtype=bool)
    for a in range(0, len(i), PAIR_CHUNK):
        ti, tj = table[i[a : a + PAIR_CHUNK]], table[j[a : a + PAIR_CHUNK]]
        lower = np.where((ti >= 0) & (ti < block), ti, -2)  # i's blocks numbered below this one
        keep[a : a + PAIR_CHUNK] = ~(lower[:, :, None] == tj[:, None, :]).any(axis=(1, 2))
    return keep


MAX_CHECKS = 64  # word-rule checks per query before it stops looking for a partner
PICKY_AFTER = 8  # failed word-rule checks after which a query takes only close candidates
PICKY_SCORE = 94  # the fuzz.ratio a candidate then needs (_Partners._check)


def best_partners(
    queries: list[int],
    texts: list[str],
    advance: Callable[[int], None] | None = None,
    blocked: tuple[list[np.ndarray], np.ndarray] | None = None,
    max_checks: int = MAX_CHECKS,
    work: Work | None = None,
    picky_after: int = PICKY_AFTER,
) -> dict[int, tuple[int, float]]:
    """For each of ``queries`` (indexes into ``texts``, which are in rank order), its best-ranked
    variant ranked above it: {i: (j, score)} with the smallest j < i among the pairs
    :func:`blocked_pairs` would find. Candidates over the cutoff are checked in rank order and the
    first variant ends the search, so a head query's many variants cost one check each rather
    than one per pair of them (at 200k generated queries the word rule over every pair was 90% of
    the step); a pair two texts' blocks both hold is judged in the first of them only.

    A query stops looking after ``max_checks`` candidates failed the word rule: a head intent's
    variants sit over the cutoff with thousands of its look-alikes (a swapped synonym), and a
    query with no variant among them checked every one, so the checks per query grew with the
    traffic (3.5 a query at 200k generated queries, 1.2 at 50k). Its partner, when it has one, is
    nearly always among its first few candidates (99.7% within 64 at 200k). After
    ``PICKY_AFTER`` failed checks the word rule runs only on candidates at ``PICKY_SCORE`` or more
    (the others count as failed checks): failing look-alikes sit at 90-93 (a swapped word costs a
    few points of ratio), and the partners found that late are nearly all closer. Generated
    queries: checks 2.79 a query at 200k (3.33 without), 3.93 at 400k (5.01), 99.56% and 99.28%
    of the partners; banking77 keeps all 361. A query that found
    its partner or spent its checks is not scored again (:meth:`_Partners.match_block`).
    ``advance`` is told of each block done; ``blocked`` is ``block_table(texts)`` if the caller
    has it; ``work``, if given, counts what was compared (:class:`Work`); ``picky_after`` past
    the texts' number checks every candidate over the cutoff (the benchmark's reference)."""
    blocks, table = blocked or block_table(texts)
    wanted = np.zeros(len(texts), dtype=bool)
    wanted[queries] = True
    state = _Partners(texts, table, (max_checks, picky_after), work)
    for block in blocks_holding(table, queries):
        if advance is not None:
            advance(1)
        members = blocks[block]  # in rank order
        mine = state.live(members[wanted[members]], int(members[0]))
        if len(mine) == 0:
            continue
        # only partners ranked above the query can be its canonical
        state.match_block(block, mine, members[members < mine.max()])
    if work is not None:
        work.checks += state.word_checks
    return state.best


COLUMN_CHUNK = 64  # candidates scored at a time, in rank order (_Partners.match_block)


class _Partners:
    """What :func:`best_partners` carries from block to block: each query's best partner so far
    (``best``; ``best_j`` its index, the query's own before one is found) and the word-rule
    checks it has spent."""

    def __init__(
        self, texts: list[str], table: np.ndarray, bounds: tuple[int, int], work: Work | None
    ):
        self.texts, self.table, self.work = texts, table, work
        self.max_checks, self.picky_after = bounds  # checks in all; failed ones before picky
        self.word_checks = 0  # the candidates the word rule was run on (Work.checks)
        self.lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        self.best: dict[int, tuple[int, float]] = {}
        self.best_j = np.arange(len(texts), dtype=np.int64)
        self.checks = np.zeros(len(texts), dtype=np.int32)

    def live(self, rows: np.ndarray, first: int) -> np.ndarray:
        """The rows that candidates ranked ``first`` or below could still give a better partner:
        none found above ``first`` (nor are they above it themselves) and checks left."""
        return rows[(self.best_j[rows] > first) & (self.checks[rows] < self.max_checks)]

    def match_block(self, block: int, mine: np.ndarray, above: np.ndarray) -> None:
        """``mine`` against the texts ``above`` them in one block. Rows go by length, BLOCK at a
        time, against their length band's texts in rank order, COLUMN_CHUNK at a time; a row
        leaves once it has found its partner (the texts still to come rank below it) or spent
        its checks. A head intent's block holds thousands of look-alikes over the cutoff, and
        nearly every row finds its partner among the first: scoring it against the rest was
        the part of dedupe that grew faster than the traffic."""
        rows_by_length = mine[np.argsort(self.lengths[mine], kind="stable")]
        above_lengths = self.lengths[above]
        for start in range(0, len(rows_by_length), BLOCK):
            rows = rows_by_length[start : start + BLOCK]
            lo, hi = length_band(int(self.lengths[rows[0]]), int(self.lengths[rows[-1]]))
            band = above[(above_lengths >= lo) & (above_lengths <= hi)]  # rank order kept
            for at in range(0, len(band), COLUMN_CHUNK):
                cols = band[at : at + COLUMN_CHUNK]
                rows = self.live(rows, int(cols[0]))
                if len(rows) == 0:
                    break
                self._match(block, rows, cols)

    def _match(self, block: int, rows: np.ndarray, cols: np.ndarray) -> None:
        """Score rows x cols and check the pairs over the cutoff that could improve a row's
        partner and that no lower-numbered block shares."""
        scores = _ratios([self.texts[i] for i in rows], [self.texts[j] for j in cols])
        r, c = np.nonzero(scores)
        if self.work is not None:
            self.work.cells += scores.size
            self.work.over += len(r)
        i, j = rows[r], cols[c]
        keep = j < self.best_j[i]  # above the query and above the best partner it has so far
        keep[keep] = _first_shared_here(self.table, i[keep], j[keep], block)
        self._check(i[keep], j[keep], scores[r[keep], c[keep]])

    def _check(self, i: np.ndarray, j: np.ndarray, score: np.ndarray) -> None:
        """The word rule over candidate pairs (i, j), each i's in rank order of j: the first
        variant below i's best partner so far becomes it; once i is picky (``PICKY_AFTER``
        failed checks), a pair under ``PICKY_SCORE`` counts as a failed check without the word
        rule's cost: the query spends its checks, and leaves, as early as before."""
        best_j, checks = self.best_j, self.checks
        for n in np.lexsort((j, i)):
            a, b = int(i[n]), int(j[n])
            if best_j[a] <= b or checks[a] >= self.max_checks:
                continue
            checks[a] += 1
            if checks[a] > self.picky_after and score[n] < PICKY_SCORE:
                continue  # spent as a failed check: the query leaves as early as it did
            self.word_checks += 1
            if variants(self.texts[a], self.texts[b]):
                self.best[a] = (b, float(score[n]))
                best_j[a] = b


def dedupe_inputs(con: duckdb.DuckDBPyConnection):
    """Every current query, best-ranked first, with the canonical it already has (or null)."""
    return frame(
        con,
        """SELECT q.norm_query, q.n_events, a.canonical_query
           FROM triage_queries q LEFT JOIN triage_assignments a USING (norm_query)
           ORDER BY q.n_events DESC, length(q.norm_query), q.norm_query""",
    )


def plan_canonicals(rows_df, description: str = "fuzzy dedupe"):
    """A canonical for every query triage has not seen before (``dedupe_inputs`` rows), needing
    no store: (norm_query, canonical_query, fuzzy_score) rows, or None when none is new.

    The blocks are built here (polars, whose thread pool a forked process cannot use: it waits
    on it forever); the matching runs in a forked process where the platform forks: its Python
    objects are a gigabyte at 1M queries, and a process keeps such a heap after freeing it, under
    the vectors and the index that come next."""
    import polars as pl

    new_mask = rows_df["canonical_query"].is_null().to_numpy()
    if not new_mask.any():
        return None
    texts = rows_df["norm_query"].to_list()
    canonicals = rows_df["canonical_query"].to_list()
    new_idx = np.flatnonzero(new_mask)  # rank order: the frame is sorted best first
    blocked = block_table(texts)
    canonical, scores = in_child(_plan, texts, canonicals, new_idx, blocked, description)
    return pl.DataFrame(
        {
            "norm_query": [texts[i] for i in new_idx],
            "canonical_query": canonical,
            "fuzzy_score": scores,
        }
    )


def _plan(
    texts: list[str],
    canonicals: list[str | None],
    new_idx: np.ndarray,
    blocked: tuple[list[np.ndarray], np.ndarray],
    description: str,
) -> tuple[list[str], list[float]]:
    """Each new query's canonical and fuzzy score, in the order of ``new_idx``."""
    known = dict(zip(texts, canonicals, strict=True))
    queries = [int(i) for i in new_idx]
    shares = _shares(queries, usable_cores())
    with progress(description, total=len(blocks_holding(blocked[1], shares[0]))) as advance:
        best = parallel_partners(queries, texts, advance, blocked, shares=shares)
    canonical: list[str] = []
    scores: list[float] = []
    for i in new_idx:
        if i in best:
            j, score = best[i]
            target = known[texts[j]] or texts[j]
            known[texts[i]] = target
            canonical.append(target)
            scores.append(score)
        else:
            known[texts[i]] = texts[i]
            canonical.append(texts[i])
            scores.append(100.0)
    return canonical, scores


PARALLEL_MIN = 20_000  # new queries below which one process matches them all (a fork costs more)


def can_fork() -> bool:
    """Whether this process may fork workers: the platform forks, and the process is no daemon.
    A pool's worker is one (``multiprocessing.Pool``, a scheduler's task runner) and may not start
    children: the work then runs in the process itself, with the same result."""
    return "fork" in mp.get_all_start_methods() and not mp.current_process().daemon


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _shares(queries: list[int], workers: int, at_least: int | None = None) -> list[list[int]]:
    """The queries dealt out in rank order, one share per worker (one share below
    ``at_least`` queries, PARALLEL_MIN by default, or without fork): each share holds heads and
    tails alike."""
    at_least = PARALLEL_MIN if at_least is None else at_least
    if workers < 2 or len(queries) < at_least or not can_fork():
        return [queries]
    return [queries[w::workers] for w in range(workers)]


def parallel_partners(
    queries: list[int],
    texts: list[str],
    advance: Callable[[int], None] | None = None,
    blocked: tuple[list[np.ndarray], np.ndarray] | None = None,
    *,
    workers: int | None = None,
    at_least: int | None = None,
    shares: list[list[int]] | None = None,
) -> dict[int, tuple[int, float]]:
    """:func:`best_partners`, the queries dealt out to ``workers`` forked processes (default:
    the cores this process may use), or the ``shares`` given. A query's partner depends on its
    own candidates, in rank order, and the checks it spent, never on another query's, so the
    shares find what one process finds; at a million queries one process left a core idle for
    the whole step. Only the first share's process tells ``advance`` of its blocks."""
    shares = shares or _shares(queries, workers or usable_cores(), at_least)
    blocked = blocked or block_table(texts)
    if len(shares) == 1:
        return best_partners(shares[0], texts, advance, blocked)
    jobs = [(share, texts, advance if not w else None, blocked) for w, share in enumerate(shares)]
    best: dict[int, tuple[int, float]] = {}
    for found in in_children(best_partners, jobs):
        best.update(found)
    return best


_CALL: tuple | None = None  # what in_children's forked processes run, inherited, not pickled


def _call_inherited(n: int) -> Any:
    fn, jobs = _CALL
    return fn(*jobs[n])


def in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) in a forked process where this one may fork (its memory is returned when it
    exits; the arguments are inherited, only the result is pickled back), else in this one.
    fn must not use polars: the fork copies no thread of its pool."""
    return in_children(fn, [args])[0]


def in_children(fn: Callable[..., Any], jobs: list[tuple]) -> list[Any]:
    """fn(*args) for each args of ``jobs``, each in a forked process of its own, all at once;
    the results in the order of ``jobs`` (as :func:`in_child`); one after the other in this
    process where it may not fork (:func:`can_fork`)."""
    global _CALL

    if not can_fork():
        return [fn(*args) for args in jobs]

    _CALL = (fn, jobs)
    try:
        with ProcessPoolExecutor(len(jobs), mp_context=mp.get_context("fork")) as pool:
            return list(pool.map(_call_inherited, range(len(jobs))))
    finally:
        _CALL = None


def write_canonicals(con: duckdb.DuckDBPyConnection, rows, run_id: int) -> int:
    """Store the planned canonicals (a query keeps the canonical it is given); returns how many."""
    if rows is None:
        return 0
    with registered(con, _gm_new=rows):
        # The anti-join keeps a query's first canonical even if two plans raced for it.
        con.execute(
            "INSERT INTO triage_assignments (norm_query, canonical_query, fuzzy_score, run_id) "
            "SELECT n.norm_query, n.canonical_query, n.fuzzy_score, ? FROM _gm_new n "
            "WHERE NOT EXISTS (SELECT 1 FROM triage_assignments a "
            "                  WHERE a.norm_query = n.norm_query)",
            [run_id],
        )
    con.execute(
        """UPDATE triage_queries SET canonical_query = a.canonical_query,
                  fuzzy_score = a.fuzzy_score
           FROM triage_assignments a WHERE triage_queries.norm_query = a.norm_query"""
    )
    return rows.height
