"""Click-drafted grades: a click model over search sessions proposes a grade per (query, chunk).

Clicks are biased by position: people click the first result because it is first. Two click
models correct for it, both fitted here by EM in numpy over sessions (the ranked results shown,
and which of them were clicked):

- **PBM**, the position-based model: ``P(click) = alpha[q, d] * gamma[rank]``; a result is
  clicked when it is examined (``gamma``, by rank) and attractive (``alpha``). EM treats both as
  hidden; ``gamma[1]`` is fixed to 1 (only the product is identified).
- **DBN**, the dynamic Bayesian network (Chapelle and Zhang, WWW 2009): people scan down the
  list; an examined result is clicked when attractive (``a[q, d]``); after a click they are
  satisfied with probability ``s[q, d]`` and stop; otherwise they go on to the next result with
  probability ``gamma``. Examination is hidden; EM runs forward-backward over each session's
  ranks, all sessions at once (padded arrays). The relevance it proposes is ``a * s``.

A grade is proposed from the model's score: 2 at or above ``high``, 1 at or above ``low``, else
0, with the thresholds named. The grades are drafts, never gold: ``gold review`` decides them.
Pairs shown fewer than ``min_shown`` times get no draft (too little evidence).

The two naive baselines the models are measured against: **clicked** (ever clicked: 1, else 0)
and **CTR** (clicks / impressions, through the same thresholds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from goldmine.errors import InputError

MODELS = ("pbm", "dbn")
HIGH, LOW = 0.5, 0.2  # score -> grade 2 / 1


@dataclass
class Sessions:
    """Sessions as padded arrays: ``pair[s, r]`` indexes ``keys`` (-1 past the list's end)."""

    keys: list[tuple[str, str]]  # (query key, doc id)
    pair: np.ndarray  # (S, R) int
    click: np.ndarray  # (S, R) bool
    shown: np.ndarray  # (S, R) bool

    @classmethod
    def build(cls, sessions: list[tuple[str, list[str], set]]) -> Sessions:
        """From ``(query key, ranked doc ids shown, clicked doc ids)`` per session."""
        if not sessions:
            raise InputError("no sessions with shown results: nothing to fit a click model on")
        width = max(len(docs) for _, docs, _ in sessions)
        index: dict[tuple[str, str], int] = {}
        pair = np.full((len(sessions), width), -1, dtype=np.int64)
        click = np.zeros((len(sessions), width), dtype=bool)
        for s, (q, docs, clicked) in enumerate(sessions):
            for r, d in enumerate(docs):
                pair[s, r] = index.setdefault((q, d), len(index))
                click[s, r] = d in clicked
        return cls(list(index), pair, click, pair >= 0)

    @classmethod
    def from_arrays(
        cls,
        keys: list[tuple[str, str]],
        session: np.ndarray,
        rank: np.ndarray,
        pair: np.ndarray,
        clicked: np.ndarray,
    ) -> Sessions:
        """From one row per shown result: its session (0..S-1), 0-based rank, index into
        ``keys`` and whether it was clicked (what a store's events explode into, in SQL)."""
        session, rank = np.asarray(session, dtype=np.int64), np.asarray(rank, dtype=np.int64)
        if session.size == 0:
            raise InputError("no sessions with shown results: nothing to fit a click model on")
        shape = (int(session.max()) + 1, int(rank.max()) + 1)
        grid = np.full(shape, -1, dtype=np.int64)
        click = np.zeros(shape, dtype=bool)
        grid[session, rank] = pair
        click[session, rank] = clicked
        return cls(list(keys), grid, click, grid >= 0)

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Impressions and clicks per pair."""
        n = len(self.keys)
        shown = np.bincount(self.pair[self.shown], minlength=n)
        clicks = np.bincount(self.pair[self.shown & self.click], minlength=n)
        return shown, clicks


@dataclass
class Fit:
    model: str
    scores: np.ndarray  # per pair: PBM alpha, DBN a * s, CTR, clicked
    params: dict[str, Any] = field(default_factory=dict)
    iterations: int = 0
    log_likelihood: list[float] = field(default_factory=list)


def prior_rate(data: Sessions) -> float:
    """The share of shown results clicked: where a pair's attractiveness starts (and, in the
    DBN, the Beta prior's mean, worth two impressions)."""
    shown = int(data.shown.sum())
    return float(np.clip(data.click[data.shown].sum() / max(1, shown), 1e-3, 1 - 1e-3))


def fit_pbm(data: Sessions, iterations: int = 100, tol: float = 1e-8) -> Fit:
    """The position-based model by EM (module doc)."""
    n, ranks = len(data.keys), data.pair.shape[1]
    alpha = np.full(n, prior_rate(data))
    gamma = np.full(ranks, 0.5)
    gamma[0] = 1.0
    p, c, m = np.where(data.shown, data.pair, 0), data.click.astype(np.float64), data.shown
    shown_per_pair = np.bincount(p[m], minlength=n).astype(np.float64)
    shown_per_rank = m.sum(axis=0).astype(np.float64)
    history: list[float] = []
    for _ in range(iterations):
        a, g = alpha[p], gamma[None, :]
        prob = np.clip(a * g, 1e-12, 1 - 1e-12)
        history.append(float(np.where(m, c * np.log(prob) + (1 - c) * np.log(1 - prob), 0).sum()))
        # E step: P(attractive | data) and P(examined | data) per impression
        ea = c + (1 - c) * a * (1 - g) / (1 - prob)
        ee = c + (1 - c) * g * (1 - a) / (1 - prob)
        alpha = np.bincount(p[m], weights=ea[m], minlength=n) / np.maximum(shown_per_pair, 1)
        gamma = np.where(m, ee, 0).sum(axis=0) / np.maximum(shown_per_rank, 1)
        scale = gamma[0] if gamma[0] > 0 else 1.0
        gamma, alpha = gamma / scale, np.clip(alpha * scale, 0, 1)
        if len(history) > 1 and abs(history[-1] - history[-2]) < tol:
            break
    return Fit("pbm", alpha, {"gamma": gamma.tolist()}, len(history), history)


def fit_dbn(
    data: Sessions, iterations: int = 100, tol: float = 1e-8, gamma: float | None = None
) -> Fit:
    """The dynamic Bayesian network by EM with forward-backward (module doc).

    ``gamma`` fixes the continuation probability (None: it is fitted).
    """
    n = len(data.keys)
    S, R = data.pair.shape
    p, c, m = np.where(data.shown, data.pair, 0), data.click.astype(np.float64), data.shown
    a0 = prior_rate(data)
    a, s = np.full(n, a0), np.full(n, 0.5)
    g = 0.9 if gamma is None else gamma
    shown_per_pair = np.bincount(p[m], minlength=n).astype(np.float64)
    history: list[float] = []
    for _ in range(iterations):
        ar, sr = a[p], s[p]
        # M[r](e, e') = P(C_r, E_{r+1} = e' | E_r = e); past the list's end nothing is observed.
        m11 = np.where(c > 0, ar * (1 - sr) * g, (1 - ar) * g)
        m10 = np.where(c > 0, ar * (sr + (1 - sr) * (1 - g)), (1 - ar) * (1 - g))
        m00 = np.where(c > 0, 0.0, 1.0)
        m11, m10, m00 = (np.where(m, x, y) for x, y in ((m11, g), (m10, 1 - g), (m00, 1.0)))
        fwd = np.zeros((S, R + 1, 2))
        fwd[:, 0, 1] = 1.0
        norms = np.zeros((S, R))
        for r in range(R):
            f0, f1 = fwd[:, r, 0], fwd[:, r, 1]
            n0 = f0 * m00[:, r] + f1 * m10[:, r]
            n1 = f1 * m11[:, r]
            z = np.maximum(n0 + n1, 1e-300)
            norms[:, r] = z
            fwd[:, r + 1, 0], fwd[:, r + 1, 1] = n0 / z, n1 / z
        history.append(float(np.log(norms).sum()))
        bwd = np.ones((S, R + 1, 2))
        for r in range(R - 1, -1, -1):
            b0, b1 = bwd[:, r + 1, 0], bwd[:, r + 1, 1]
            bwd[:, r, 0] = m00[:, r] * b0 / norms[:, r]
            bwd[:, r, 1] = (m10[:, r] * b0 + m11[:, r] * b1) / norms[:, r]
        post1 = fwd[:, :R, 1] * bwd[:, :R, 1]  # P(E_r = 1 | clicks)
        post0 = 1 - post1
        # xi(1, 0) and xi(1, 1): the transitions out of an examined rank
        x10 = fwd[:, :R, 1] * m10 * bwd[:, 1:, 0] / norms
        x11 = fwd[:, :R, 1] * m11 * bwd[:, 1:, 1] / norms
        ea = c + (1 - c) * post0 * ar
        # a clicked result: satisfied, given the session stopped after it (E_{r+1} = 0)
        stop_given_click = sr / np.maximum(sr + (1 - sr) * (1 - g), 1e-300)
        es = x10 * stop_given_click  # P(S_r = 1, clicked); zero where not clicked
        es = np.where(c > 0, es, 0.0)
        a = (np.bincount(p[m], weights=ea[m], minlength=n) + 2 * a0) / (shown_per_pair + 2)
        clicks = np.bincount(p[m], weights=c[m], minlength=n)
        s = (np.bincount(p[m], weights=es[m], minlength=n) + 1) / (clicks + 2)
        if gamma is None:
            # the transitions out of an examined, unsatisfied rank into a next rank that was shown
            inner = m[:, :-1] & m[:, 1:]
            went_on = float(np.where(inner, x11[:, :-1], 0).sum())
            could = float(np.where(inner, (post1 - es)[:, :-1], 0).sum())
            g = float(np.clip(went_on / could, 1e-6, 1 - 1e-6)) if could > 0 else g
        if len(history) > 1 and abs(history[-1] - history[-2]) < tol:
            break
    params = {"gamma": g, "attractiveness": a, "satisfaction": s}
    return Fit("dbn", a * s, params, len(history), history)


def baselines(data: Sessions) -> dict[str, Fit]:
    shown, clicks = data.counts()
    ctr = clicks / np.maximum(shown, 1)
    return {
        "clicked": Fit("clicked", (clicks > 0).astype(np.float64)),
        "ctr": Fit("ctr", ctr),
    }


def fit(data: Sessions, model: str) -> Fit:
    if model == "pbm":
        return fit_pbm(data)
    if model == "dbn":
        return fit_dbn(data)
    raise InputError(f"--model must be one of {', '.join(MODELS)}, not {model!r}")


def grades(scores: np.ndarray, high: float = HIGH, low: float = LOW) -> np.ndarray:
    """Score -> grade: 2 at or above ``high``, 1 at or above ``low``, else 0."""
    return np.where(scores >= high, 2, np.where(scores >= low, 1, 0))


# --- grade thresholds fitted on people's labels, checked by cross-validation -------------------


def kappa(human: np.ndarray, proposed: np.ndarray, levels: int = 3) -> float:
    """Cohen's linear-weighted kappa on grades 0..levels-1 (sklearn's ``cohen_kappa_score``
    with ``weights="linear"``, in numpy so the threshold search can call it a thousand times)."""
    human, proposed = np.asarray(human, dtype=np.int64), np.asarray(proposed, dtype=np.int64)
    n = human.size
    if n == 0:
        return 0.0
    table = (
        np.bincount(human * levels + proposed, minlength=levels * levels).reshape(levels, levels)
        / n
    )
    i = np.arange(levels)
    weights = np.abs(i[:, None] - i[None, :]) / (levels - 1)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0))
    denominator = float((weights * expected).sum())
    if denominator <= 0:
        return 1.0 if float((weights * table).sum()) == 0 else 0.0
    return 1.0 - float((weights * table).sum()) / denominator


def fit_thresholds(scores: np.ndarray, human: np.ndarray, points: int = 41) -> tuple[float, float]:
    """The (low, high) thresholds whose grades agree best with ``human`` (linear-weighted kappa),
    searched over the scores' quantiles (``points`` of them) and the fixed pair; ties keep the
    first found, the fixed pair first."""
    scores, human = np.asarray(scores, dtype=np.float64), np.asarray(human)
    grid = np.unique(np.quantile(scores, np.linspace(0, 1, points))) if scores.size else []
    best, where = kappa(human, grades(scores)), (LOW, HIGH)
    for i, low in enumerate(grid):
        for high in grid[i:]:
            k = kappa(human, grades(scores, float(high), float(low)))
            if k > best + 1e-12:
                best, where = k, (float(low), float(high))
    return where


def cross_validate(
    scores: np.ndarray, human: np.ndarray, groups: np.ndarray, *, folds: int = 5, seed: int = 0
) -> np.ndarray:
    """Out-of-fold grades: each query's pairs graded with thresholds fitted on the other folds'
    (folds by query, so one query's pairs never sit on both sides)."""
    groups = np.asarray(groups)
    names = np.unique(groups)
    order = np.random.default_rng(seed).permutation(names.size) % folds
    fold = order[np.searchsorted(names, groups)]
    out = np.zeros(len(scores), dtype=np.int64)
    for f in range(folds):
        test = fold == f
        if not test.any():
            continue
        low, high = fit_thresholds(scores[~test], human[~test])
        out[test] = grades(scores[test], high, low)
    return out


# --- agreement with people's labels -------------------------------------------------------------


BOOTSTRAP_ROUNDS = 1000
TOO_FEW = 10  # labelled pairs under which no figure is worth reading


def auc_interval(
    scores: np.ndarray, relevant: np.ndarray, queries: np.ndarray, rounds: int = BOOTSTRAP_ROUNDS
) -> tuple[float | None, list[float] | None]:
    """ROC AUC of ``scores`` for ``relevant`` (ties count a half, as scikit-learn's) and its 95%
    bootstrap interval over queries (``queries`` labels each pair's query): (None, None) with
    one class only, an interval of None with fewer than two queries.

    Each round's AUC comes from counts per (query, score level): the rounds draw queries, so a
    round is a product of its draw with those counts, and the AUC the Mann-Whitney sum over
    score levels (positives at a level beat the negatives below it, and half those at it).
    """
    relevant = np.asarray(relevant).astype(bool)
    if relevant.all() or not relevant.any():
        return None, None
    _, level = np.unique(np.asarray(scores, dtype=np.float64), return_inverse=True)
    _, query = np.unique(np.asarray(queries), return_inverse=True)
    shape = (query.max() + 1, level.max() + 1)
    pos = np.zeros(shape)
    neg = np.zeros(shape)
    np.add.at(pos, (query[relevant], level[relevant]), 1)
    np.add.at(neg, (query[~relevant], level[~relevant]), 1)
    n = shape[0]
    drawn = np.vstack([np.ones(n), _draws(n, rounds) if n > 1 else np.empty((0, n))])
    p, q = drawn @ pos, drawn @ neg  # (1 + rounds, levels)
    below = np.cumsum(q, axis=1) - q
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (p * (below + q / 2)).sum(1) / (p.sum(1) * q.sum(1))
    rest = auc[1:][~np.isnan(auc[1:])]
    if n < 2 or len(rest) < rounds // 2:
        return float(auc[0]), None
    low, high = np.percentile(rest, [2.5, 97.5])
    return float(auc[0]), [float(low), float(high)]


def _draws(n: int, rounds: int) -> np.ndarray:
    """How often each of n queries is drawn in each bootstrap round: (rounds, n), seeded."""
    return np.random.default_rng(0).multinomial(n, np.full(n, 1 / n), size=rounds)


def kappa_interval(
    human: np.ndarray, proposed: np.ndarray, queries: np.ndarray, rounds: int = BOOTSTRAP_ROUNDS
) -> list[float] | None:
    """The 95% bootstrap interval over queries of the linear-weighted kappa on 0-2; None with
    fewer than two queries, or when most rounds leave it undefined (one grade throughout).
    A round's confusion matrix is its draw times each query's matrix: one product, no loop."""
    _, query = np.unique(np.asarray(queries), return_inverse=True)
    n = int(query.max()) + 1 if query.size else 0
    if n < 2:
        return None
    cell = (query * 3 + np.asarray(human, dtype=np.int64)) * 3 + np.asarray(proposed, np.int64)
    per_query = np.bincount(cell, minlength=n * 9).reshape(n, 3, 3).astype(np.float64)
    conf = np.einsum("rq,qij->rij", _draws(n, rounds), per_query)
    i = np.arange(3)
    weights = np.abs(i[:, None] - i[None, :]) / 2
    total = conf.sum((1, 2))
    expected = conf.sum(2)[:, :, None] * conf.sum(1)[:, None, :] / total[:, None, None]
    chance = (weights * expected).sum((1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(chance > 0, 1 - (weights * conf).sum((1, 2)) / chance, np.nan)
    kept = values[~np.isnan(values)]
    if len(kept) < rounds // 2:
        return None
    low, high = np.percentile(kept, [2.5, 97.5])
    return [float(low), float(high)]


def chance_reading(
    n: int,
    auc: float | None,
    auc_ci: list[float] | None,
    kappa: float,
    kappa_ci: list[float] | None,
) -> str:
    """What an agreement can be taken to say, in words: too few pairs, or which of the AUC (its
    interval holds 0.5, or lies under it) and the kappa (its interval reaches 0; a kappa of 0
    or less without one) is no better than chance; "" when neither is."""
    if n < TOO_FEW:
        return f"too few pairs to say ({n})"
    worse = auc_ci is not None and auc_ci[1] < 0.5
    chance = [
        name
        for name, at_chance in (
            ("AUC", auc_ci is not None and auc_ci[0] <= 0.5 and not worse),
            ("kappa", kappa_ci[0] <= 0 if kappa_ci is not None else kappa <= 0),
        )
        if at_chance
    ]
    said = ["AUC worse than chance"] if worse else []
    if chance:
        said.append(" and ".join(chance) + " no better than chance")
    if auc is not None and auc_ci is None:
        said.append("no AUC interval: too few queries")
    return "; ".join(said)


def agreement(
    proposed: np.ndarray,
    human: np.ndarray,
    scores: np.ndarray | None = None,
    queries: np.ndarray | None = None,
) -> dict[str, Any]:
    """Linear-weighted kappa on 0-2, precision/recall/F1 of "relevant" (grade >= 1), and, given
    the scores, the ROC AUC of the score for "relevant" (threshold-free), with its interval over
    ``queries`` (each pair's query) and a plain reading of it."""
    from sklearn.metrics import cohen_kappa_score

    proposed, human = np.asarray(proposed), np.asarray(human)
    pr, hr = proposed >= 1, human >= 1
    tp = int(np.count_nonzero(pr & hr))
    precision = tp / max(1, int(pr.sum()))
    recall = tp / max(1, int(hr.sum()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    same = len(set(proposed.tolist()) | set(human.tolist())) <= 1
    kappa = 1.0 if same else float(cohen_kappa_score(human, proposed, weights="linear"))
    auc, ci = None, None
    groups = np.arange(hr.size) if queries is None else queries
    if scores is not None and 0 < int(hr.sum()) < hr.size:
        auc, ci = auc_interval(np.asarray(scores), hr, groups)
    kappa_ci = None if same else kappa_interval(human, proposed, groups)
    return {
        "n_pairs": int(proposed.size),
        "auc": auc,
        "auc_ci95": ci,
        "reading": chance_reading(int(proposed.size), auc, ci, kappa, kappa_ci),
        "weighted_kappa": kappa,
        "weighted_kappa_ci95": kappa_ci,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_relevant_human": int(hr.sum()),
        "n_relevant_proposed": int(pr.sum()),
    }


# --- the TREC Session Track (real sessions with NIST's judgments) -------------------------------


def read_trec_sessions(path: Path) -> list[tuple[str, list[str], set]]:
    """Every interaction of a Session Track XML file: (topic, ranked ClueWeb ids, clicked ids).

    The query key is the session's topic: NIST judged documents per topic, and a topic's sessions
    reformulate the same need.
    """
    import xml.etree.ElementTree as ET

    out = []
    for session in ET.parse(path).getroot().iter("session"):
        topic = session.find("topic")
        key = topic.get("num") if topic is not None else session.get("num")
        for inter in session.iter("interaction"):
            docs = [
                (int(r.get("rank")), (r.findtext("clueweb09id") or r.findtext("clueweb12id")))
                for r in inter.iter("result")
            ]
            docs = [d for _, d in sorted(docs) if d]
            ranks = {int(c.findtext("rank")) for c in inter.iter("click") if c.findtext("rank")}
            ordered = sorted(int(r.get("rank")) for r in inter.iter("result"))
            clicked = {docs[ordered.index(r)] for r in ranks if r in ordered}
            if docs:
                out.append((str(key), docs, clicked))
    return out


def read_trec_qrels(path: Path) -> dict[tuple[str, str], int]:
    """NIST's judgments as goldmine grades: -2 (spam) and 0 -> 0; 1 -> 1; 2, 3, 4 -> 2."""
    out: dict[tuple[str, str], int] = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4:
            g = int(parts[3])
            out[(parts[0], parts[2])] = 0 if g <= 0 else (1 if g == 1 else 2)
    return out


def measure(
    sessions: list[tuple[str, list[str], set]],
    qrels: dict[tuple[str, str], int],
    *,
    min_shown: int = 1,
    high: float = HIGH,
    low: float = LOW,
) -> dict[str, dict[str, float]]:
    """Each model's and baseline's proposed grades against the judgments, on the judged pairs."""
    data = Sessions.build(sessions)
    shown, _ = data.counts()
    judged = np.array(
        [k in qrels and shown[i] >= min_shown for i, k in enumerate(data.keys)], dtype=bool
    )
    human = np.array([qrels.get(k, 0) for k in data.keys])[judged]
    fits = {"pbm": fit_pbm(data), "dbn": fit_dbn(data), **baselines(data)}
    out = {}
    for name, f in fits.items():
        proposed = grades(f.scores, high, low) if name != "clicked" else f.scores.astype(int)
        out[name] = agreement(proposed[judged], human, f.scores[judged])
    return out
