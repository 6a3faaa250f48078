"""Readable clusters: each cluster's top terms by class-based TF-IDF, and its most central queries.

c-TF-IDF (as BERTopic computes it): the queries of a cluster are one document; a term's weight in
cluster c is its frequency there (as a share of the cluster's words, each query counted once per
event) times ``log(1 + A / f_t)``, where A is the mean number of words per cluster and f_t the
term's frequency over all clusters. A term frequent in one cluster and rare elsewhere ranks first;
one frequent everywhere ("how", "my", "card" in a card product) sinks. Counting is scikit-learn's
``CountVectorizer`` (English stop words out, words and word pairs); the weighting is sparse matrix
arithmetic, so there is no Python loop over words, and one over clusters only to read the top
terms. Pairs count when they occur in two queries or more, so a pair made of a rare typo does not
lead a label.

The central examples are the queries with the highest cosine to their cluster's centroid
(``triage_assignments.similarity``, set when a query is clustered or joins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.store import registered

if TYPE_CHECKING:
    import duckdb

N_TERMS = 5
N_CENTRAL = 3
_TOKEN = r"(?u)\b[a-zA-Z]\w+\b"


def _counts(texts: list[str]) -> tuple[Any, np.ndarray]:
    """Term counts per text: every word (English stop words out), and the word pairs that occur
    in two texts or more."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer

    parts, vocab = [], []
    for ngrams, min_df in (((1, 1), 1), ((2, 2), 2)):
        vectorizer = CountVectorizer(
            stop_words="english", ngram_range=ngrams, min_df=min_df, token_pattern=_TOKEN
        )
        try:
            parts.append(vectorizer.fit_transform(texts))
        except ValueError:  # no such term (only stop words, or no pair twice)
            continue
        vocab.append(vectorizer.get_feature_names_out())
    if not parts:
        return None, np.array([], dtype=object)
    return sp.hstack(parts).tocsr(), np.concatenate(vocab)


def ctfidf_terms(
    cluster_ids: np.ndarray, texts: list[str], weights: np.ndarray, n_terms: int = N_TERMS
) -> dict[int, list[str]]:
    """Top terms per cluster by c-TF-IDF; ``weights`` counts each text (its event volume)."""
    import scipy.sparse as sp

    if not len(texts):
        return {}
    clusters, rows = np.unique(np.asarray(cluster_ids), return_inverse=True)
    counts, vocab = _counts(texts)
    if not len(vocab):  # nothing but stop words
        return {int(c): [] for c in clusters}
    member = sp.csr_matrix(
        (np.asarray(weights, dtype=np.float64), (rows, np.arange(len(texts)))),
        shape=(len(clusters), len(texts)),
    )
    tf = (member @ counts).tocsr()  # cluster x term
    words = np.asarray(tf.sum(axis=1)).ravel()
    freq = np.asarray(tf.sum(axis=0)).ravel()
    avg = words.mean() if len(words) else 1.0
    idf = np.log1p(avg / np.maximum(freq, 1e-12))
    score = sp.diags(1.0 / np.maximum(words, 1e-12)) @ tf @ sp.diags(idf)
    score = score.tocsr()
    out: dict[int, list[str]] = {}
    for i, c in enumerate(clusters):
        lo, hi = score.indptr[i], score.indptr[i + 1]
        data, cols = score.data[lo:hi], score.indices[lo:hi]
        top = np.lexsort((cols, -data))[: n_terms * 3]
        picked: list[str] = []
        for term in vocab[cols[top]]:
            # a term whose words are all shown already adds nothing ("second" after "second
            # card"); a pair replaces the single words it holds
            if all(w in " ".join(picked).split() for w in term.split()):
                continue
            picked = [p for p in picked if not (" " in term and p in term.split())] + [term]
            if len(picked) == n_terms:
                break
        out[int(c)] = picked
    return out


def label_clusters(con: duckdb.DuckDBPyConnection) -> int:
    """Rebuild ``triage_cluster_labels`` (top terms, central queries) for the current clusters."""
    import polars as pl

    rows = con.execute(
        """SELECT q.cluster_id, q.query, q.n_events FROM triage_queries q
           WHERE q.cluster_id IS NOT NULL ORDER BY q.cluster_id, q.norm_query"""
    ).fetchall()
    con.execute("DELETE FROM triage_cluster_labels")
    if not rows:
        return 0
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    terms = ctfidf_terms(ids, [r[1] for r in rows], np.array([r[2] for r in rows], dtype=float))
    frame = pl.DataFrame(
        {"cluster_id": list(terms), "terms": list(terms.values())},
        schema={"cluster_id": pl.Int64, "terms": pl.List(pl.Utf8)},
    )
    with registered(con, _gm_terms=frame):
        con.execute(
            f"""INSERT INTO triage_cluster_labels
                SELECT t.cluster_id, t.terms, c.central FROM _gm_terms t LEFT JOIN (
                    SELECT q.cluster_id,
                           list(q.query ORDER BY a.similarity DESC NULLS LAST, q.n_events DESC,
                                q.norm_query)[1:{N_CENTRAL}] AS central
                    FROM triage_queries q JOIN triage_assignments a USING (norm_query)
                    WHERE q.cluster_id IS NOT NULL AND a.norm_query = a.canonical_query
                    GROUP BY q.cluster_id
                ) c USING (cluster_id)"""
        )
    return len(terms)
