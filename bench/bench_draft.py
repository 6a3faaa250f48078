"""Benchmark: ``gold draft --retriever hybrid`` on Cranfield, torch against triage's onnx-int8.

    .venv/bin/python bench/bench_draft.py                 # both backends, 1 repeat
    .venv/bin/python bench/bench_draft.py --repeats 3 --k 10

Cranfield's 1,400 abstracts are imported with ``goldmine ingest corpus`` and its 225 queries
added with ``gold add-query``, once; each run drafts a fresh copy of that store (an empty
embedding cache: every chunk and query is encoded) through the CLI, in a child process, with
``GOLDMINE_EMBED_BACKEND`` naming the backend. Printed per backend: the median wall time and the
child's CPU time (user + system, from ``getrusage``: on a shared machine the CPU time is the
figure that holds, the wall time moves with the load), the drafted top-k lists' overlap between
the two backends (share of each query's k chunks in common, top-1 the same), and each backend's
recall@k and P@1 against cranqrel (codes 1-4 relevant; a draft is what a person reviews).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD = ROOT.parent / "shared" / "datasets" / "cranfield"
GOLDMINE = [sys.executable, "-m", "goldmine"]
BACKENDS = ("torch", "onnx-int8")


def queries() -> list[str]:
    """cran.qry's 225 queries in file order (cranqrel numbers them 1..225 in that order)."""
    text = (CRANFIELD / "cran.qry").read_text()
    return [" ".join(b.split(".W", 1)[1].split()).rstrip(" .") for b in text.split(".I ")[1:]]


def relevant() -> dict[int, set[str]]:
    rel: dict[int, set[str]] = {}
    for line in (CRANFIELD / "cranqrel").read_text().splitlines():
        q, d, code = line.split()[:3]
        if int(code) in (1, 2, 3, 4):
            rel.setdefault(int(q), set()).add(d)
    return rel


def build(db: Path) -> None:
    run = {"check": True, "capture_output": True}
    subprocess.run([*GOLDMINE, "--db", str(db), "ingest", "corpus",
                    str(CRANFIELD / "cran.all.1400")], **run)  # fmt: skip
    subprocess.run([*GOLDMINE, "--db", str(db), "gold", "add-query", "--no-redact", "--by",
                    "bench", *queries()], **run)  # fmt: skip


def draft(db: Path, backend: str, k: int) -> tuple[float, float]:
    """One draft through the CLI: (wall seconds, the child's CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [*GOLDMINE, "--db", str(db), "gold", "draft", "--retriever", "hybrid", "-k", str(k)],
        check=True,
        capture_output=True,
        env={**os.environ, "GOLDMINE_EMBED_BACKEND": backend},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def drafted(db: Path) -> dict[int, list[str]]:
    """Each query's drafted chunks in rank order, by the query's position (1..225)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT i.position, list(l.chunk_id ORDER BY l.rank) FROM gold_labels l "
            "JOIN gold_items i USING (query_id) WHERE l.kind = 'draft' GROUP BY 1"
        ).fetchall()
    finally:
        con.close()
    return dict(rows)


def quality(lists: dict[int, list[str]], rel: dict[int, set[str]]) -> tuple[float, float]:
    judged = [q for q in lists if rel.get(q)]
    recall = statistics.mean(len(set(lists[q]) & rel[q]) / len(rel[q]) for q in judged)
    p1 = statistics.mean(float(lists[q][0] in rel[q]) for q in judged)
    return recall, p1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    if not CRANFIELD.is_dir():
        sys.exit(f"{CRANFIELD} is absent")
    rel = relevant()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "cranfield.duckdb"
        build(base)
        lists: dict[str, dict[int, list[str]]] = {}
        for backend in BACKENDS:
            walls, cpus = [], []
            for i in range(args.repeats):
                db = Path(tmp) / f"{backend}-{i}.duckdb"
                shutil.copy(base, db)
                wall, cpu = draft(db, backend, args.k)
                walls.append(wall)
                cpus.append(cpu)
                lists[backend] = drafted(db)
            recall, p1 = quality(lists[backend], rel)
            print(
                f"{backend:10} wall {statistics.median(walls):7.1f} s  "
                f"cpu {statistics.median(cpus):7.1f} s  "
                f"recall@{args.k} {recall:.4f}  P@1 {p1:.4f}"
            )
        a, b = (lists[x] for x in BACKENDS)
        overlap = statistics.mean(len(set(a[q]) & set(b[q])) / args.k for q in a)
        top1 = statistics.mean(float(a[q][0] == b[q][0]) for q in a)
        same = sum(set(a[q]) == set(b[q]) for q in a)
        print(
            f"top-{args.k} overlap torch vs onnx-int8: {overlap:.3f} (same set for {same} of "
            f"{len(a)} queries), top-1 the same for {top1:.1%}"
        )


if __name__ == "__main__":
    main()
