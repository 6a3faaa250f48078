"""Readable clusters: each cluster's top terms by class-based TF-IDF, and its most central queries.

c-TF-IDF (as BERTopic computes it): the queries of a cluster are one document; a term's weight in
cluster c is its frequency there (as a share of the cluster's words, each query counted once per
event) times ``log(1 + A / f_t)``, where A is the mean number of words per cluster and f_t the
term's frequency over all clusters. A term frequent in one cluster and rare elsewhere ranks first;
one frequent everywhere ("how", "my", "card" in a card product) sinks. The terms are those of
scikit-learn's ``CountVectorizer`` (its English stop words out, its token pattern, words and word
pairs), counted and weighted by polars expressions: no Python loop over words, and one over
clusters only to read the top terms (1M queries: 26 s with ``CountVectorizer`` and sparse
matrices). Pairs count when they occur in two queries or more, so a pair made of a rare typo does
not lead a label.

The central examples are the queries with the highest cosine to their cluster's centroid
(``triage_assignments.similarity``, set when a query is clustered or joins), in the order that
makes the first of them the cluster's label (``queries.CENTRAL_ORDER``): a label is always one of
the cluster's own members, the one nearest its centre.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from goldmine.retrieval import cjk_bigrams
from goldmine.store import registered
from goldmine.triage.events import frame
from goldmine.triage.queries import CENTRAL_ORDER

if TYPE_CHECKING:
    import duckdb

N_TERMS = 5
N_CENTRAL = 3
# scikit-learn's word (two or more word characters) that starts with a letter of any script
# ("Überweisung", "пароль"; not "2fa" or "123"); a CJK run is cut into its bigrams first.
_TOKEN = r"(?u)\b[^\W\d_]\w+\b"
# scikit-learn's English stop words (its ``ENGLISH_STOP_WORDS``, BSD-3; tests/test_triage.py checks
# they are the same), held here because importing scikit-learn for them took 2 s of a labels step
# that otherwise takes a fraction of that, with the store held.
_STOP_WORDS = """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amoungst amount an and another any anyhow anyone
    anything anyway anywhere are around as at back be became because become becomes becoming
    been before beforehand behind being below beside besides between beyond bill both bottom
    but by call can cannot cant co con could couldnt cry de describe detail do done down due
    during each eg eight either eleven else elsewhere empty enough etc even ever every
    everyone everything everywhere except few fifteen fifty fill find fire first five for
    former formerly forty found four from front full further get give go had has hasnt have
    he hence her here hereafter hereby herein hereupon hers herself him himself his how
    however hundred i ie if in inc indeed interest into is it its itself keep last latter
    latterly least less ltd made many may me meanwhile might mill mine more moreover most
    mostly move much must my myself name namely neither never nevertheless next nine no
    nobody none noone nor not nothing now nowhere of off often on once one only onto or
    other others otherwise our ours ourselves out over own part per perhaps please put
    rather re same see seem seemed seeming seems serious several she should show side since
    sincere six sixty so some somehow someone something sometime sometimes somewhere still
    such system take ten than that the their them themselves then thence there thereafter
    thereby therefore therein thereupon these they thick thin third this those though three
    through throughout thru thus to together too top toward towards twelve twenty two un
    under until up upon us very via was we well were what whatever when whence whenever
    where whereafter whereas whereby wherein whereupon wherever whether which while whither
    who whoever whole whom whose why will with within without would yet you your yours
    yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
# What the token pattern leaves of a contraction ("hasn't": "hasn"; "I've": "ve"), no term that
# describes a cluster: out of the terms too, not of STOP_WORDS (the other steps' list).
# ("won't" leaves "won", which is also Korea's currency: it stays a term.)
_FRAGMENTS = """
    aren couldn didn doesn don hadn hasn haven isn ll mustn needn shan shouldn ve wasn weren wouldn
"""
FRAGMENTS = frozenset(_FRAGMENTS.split())


COUNT_CHUNK = 65_536  # texts counted at a time: the exploded words of a million are ~2 GB


def _term_counts(cluster_ids: np.ndarray, texts: Sequence[str], weights: np.ndarray):
    """(c, term, pair, tf) rows: each cluster's weighted count of each term, its words (English
    stop words out, lowercased, scikit-learn's token pattern) and the word pairs that occur in two
    texts or more: the counts of scikit-learn's ``CountVectorizer`` with those settings
    (tests/test_triage.py checks them on banking77), in polars, several times faster. Counted
    COUNT_CHUNK texts at a time, so memory is one chunk's words and the counts so far."""
    import polars as pl

    docs = pl.DataFrame(
        {
            "c": np.asarray(cluster_ids, dtype=np.int64),
            "text": texts,
            "w": np.asarray(weights, dtype=np.float64),
        },
        schema={"c": pl.Int64, "text": pl.Utf8, "w": pl.Float64},
    ).with_row_index("doc")
    parts = [_chunk_counts(docs.slice(a, COUNT_CHUNK)) for a in range(0, docs.height, COUNT_CHUNK)]
    del docs
    twice = (
        pl.concat([p for _, p in parts])
        .group_by("term")
        .agg(pl.col("n_docs").sum())
        .filter(pl.col("n_docs") >= 2)
    )
    tf = pl.concat([t for t, _ in parts]).group_by("c", "term", "pair").agg(pl.col("tf").sum())
    return pl.concat(
        [
            tf.filter(~pl.col("pair")),
            tf.filter(pl.col("pair")).join(twice.select("term"), on="term", how="semi"),
        ]
    )


def _composed(text: str) -> str:
    """A non-ASCII text as its terms are cut from: composed (NFC: a decomposed accent is one
    letter), lowercased, and lowercasing's dotted i (İ: i and a combining dot) an i, as
    ``normalize_query`` has it."""
    return unicodedata.normalize("NFC", text).lower().replace("i\u0307", "i")


@lru_cache(maxsize=1)
def _marked_token() -> re.Pattern[str]:
    """_TOKEN whose word goes on through combining marks, which Python's ``\\w`` leaves out:
    the vowel signs of Hindi, Tamil or Thai, and accents NFC does not compose. The marks of the
    Basic Multilingual Plane, gathered once (a few tens of milliseconds)."""
    marks = "".join(
        re.escape(chr(c))
        for c in range(0x300, 0x10000)
        if unicodedata.category(chr(c)) in ("Mn", "Mc")
    )
    return re.compile(rf"(?u)\b[^\W\d_](?:\w|[{marks}])+")


def _tokens(docs):
    """(doc, c, w, term list) per text, lowercased and cut by _TOKEN as scikit-learn does. Polars
    cuts ASCII texts; Python's ``re`` the others, because the two regex engines' ``\\w`` differ
    past ASCII (a combining accent, a superscript two, a zero-width joiner). A run of Chinese,
    Japanese or Korean characters, which have no spaces between words, is its bigrams
    (``retrieval.cjk_bigrams``, as BM25 reads it)."""
    import polars as pl

    ascii_only = pl.col("text").str.contains(r"^[\x00-\x7F]*$")
    fast = docs.filter(ascii_only).select(
        "doc", "c", "w", term=pl.col("text").str.to_lowercase().str.extract_all(_TOKEN)
    )
    rest = docs.filter(~ascii_only)
    cut = _marked_token()
    rest = rest.select("doc", "c", "w").with_columns(
        term=pl.Series(
            [cut.findall(cjk_bigrams(_composed(t))) for t in rest["text"]],
            dtype=pl.List(pl.Utf8),
        )
    )
    return pl.concat([fast, rest]).sort("doc", maintain_order=True)


def _chunk_counts(docs):
    """One chunk's (c, term, pair, tf) counts and its pairs' (term, n_docs) document counts
    (the chunks hold different texts, so the document counts add up)."""
    import polars as pl

    # flat columns: a stop-word filter inside list.eval took 1.1 GB at 200k queries
    words = (
        _tokens(docs)
        .explode("term")
        .filter(
            pl.col("term").is_not_null() & ~pl.col("term").is_in(sorted(STOP_WORDS | FRAGMENTS))
        )
    )
    # a word and the next kept word of the same text (explode keeps the order)
    pairs = words.select(
        "doc",
        "c",
        "w",
        term=pl.when(pl.col("doc") == pl.col("doc").shift(-1)).then(
            pl.col("term") + " " + pl.col("term").shift(-1)
        ),
    ).drop_nulls("term")
    tf = pl.concat(
        [
            words.group_by("c", "term").agg(tf=pl.col("w").sum()).with_columns(pair=False),
            pairs.group_by("c", "term").agg(tf=pl.col("w").sum()).with_columns(pair=True),
        ]
    )
    return tf, pairs.group_by("term").agg(n_docs=pl.col("doc").n_unique())


def _pick(ranked: list[str], n_terms: int) -> list[str]:
    """The first n_terms of a cluster's ranked terms that each add a word: a term whose words are
    all shown already adds nothing ("second" after "second card"); a pair replaces the single
    words it holds."""
    picked: list[str] = []
    for term in ranked:
        if all(w in " ".join(picked).split() for w in term.split()):
            continue
        picked = [p for p in picked if not (" " in term and p in term.split())] + [term]
        if len(picked) == n_terms:
            break
    return picked


def ctfidf_terms(
    cluster_ids: np.ndarray, texts: Sequence[str], weights: np.ndarray, n_terms: int = N_TERMS
) -> dict[int, list[str]]:
    """Top terms per cluster by c-TF-IDF; ``weights`` counts each text (its event volume).
    Ties rank single words before pairs, then alphabetically."""
    import polars as pl

    if not len(texts):
        return {}
    clusters = np.unique(np.asarray(cluster_ids))
    tf = _term_counts(cluster_ids, texts, weights)
    out: dict[int, list[str]] = {int(c): [] for c in clusters}
    if not tf.height:  # nothing but stop words
        return out
    avg = tf["tf"].sum() / len(clusters)  # a cluster of stop words only counts, with 0 words
    ranked = (
        tf.with_columns(
            score=pl.col("tf")
            * (1.0 / pl.col("tf").sum().over("c"))
            * (avg / pl.col("tf").sum().over("term")).log1p()
        )
        .sort(["c", "score", "pair", "term"], descending=[False, True, False, False])
        .group_by("c", maintain_order=True)
        .head(n_terms * 3)
        .group_by("c", maintain_order=True)
        .agg("term")
    )
    for c, terms in ranked.iter_rows():
        out[int(c)] = _pick(terms, n_terms)
    return out


def label_clusters(con: duckdb.DuckDBPyConnection) -> int:
    """Rebuild ``triage_cluster_labels`` (top terms, central queries) for the current clusters."""
    import polars as pl

    rows = frame(
        con,
        """SELECT q.cluster_id, q.query, q.n_events FROM triage_queries q
           WHERE q.cluster_id IS NOT NULL""",
    )
    con.execute("DELETE FROM triage_cluster_labels")
    if not rows.height:
        return 0
    terms = ctfidf_terms(
        rows["cluster_id"].to_numpy(), rows["query"], rows["n_events"].to_numpy().astype(float)
    )
    del rows
    terms_frame = pl.DataFrame(
        {"cluster_id": list(terms), "terms": list(terms.values())},
        schema={"cluster_id": pl.Int64, "terms": pl.List(pl.Utf8)},
    )
    with registered(con, _gm_terms=terms_frame):
        con.execute(
            f"""INSERT INTO triage_cluster_labels
                SELECT t.cluster_id, t.terms, c.central FROM _gm_terms t LEFT JOIN (
                    SELECT q.cluster_id,
                           list(q.query ORDER BY {CENTRAL_ORDER})[1:{N_CENTRAL}] AS central
                    FROM triage_queries q JOIN triage_assignments a USING (norm_query)
                    WHERE q.cluster_id IS NOT NULL AND a.norm_query = a.canonical_query
                    GROUP BY q.cluster_id
                ) c USING (cluster_id)"""
        )
    return len(terms)
