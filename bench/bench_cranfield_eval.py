"""Benchmark: the built-in baselines on Cranfield end to end through the CLI, beside ranx.

    .venv/bin/python bench/bench_cranfield_eval.py

Cranfield's corpus is imported with ``goldmine ingest corpus``, its 225 queries and 1,837
judgments with ``goldmine gold import`` (gain = judgment code, 4 highest, as ir_datasets reads
it and as FACTS.md's reference figures use), published as v1; then ``goldmine eval run --gold v1
--baseline bm25|dense|hybrid --save-run`` scores each baseline, and ranx scores the same saved run
files against the same exported qrels. Prints nDCG@10, MAP@100 and recall@100 (fractional, ranx's
``recall@100``) side by side, and the BM25 time beyond start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from realdata import REFERENCE, load_cranfield, shared_path, write_corpus_jsonl  # noqa: E402

METRICS = "ndcg@10,map@100,frac_recall@100"


def goldmine(*args: str, db: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "goldmine", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise SystemExit(f"goldmine {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def ranx_scores(qrels: Path, run: Path) -> tuple[float, float, float] | None:
    try:
        from ranx import Qrels, Run, evaluate
    except ImportError:
        return None
    values = evaluate(
        Qrels.from_file(str(qrels), kind="trec"),
        Run.from_file(str(run), kind="trec"),
        ["ndcg@10", "map@100", "recall@100"],
    )
    return values["ndcg@10"], values["map@100"], values["recall@100"]


def main() -> None:
    folder = shared_path("datasets", "cranfield")
    if folder is None:
        print("skipped: ../shared/datasets/cranfield is absent")
        return
    cran = load_cranfield(folder)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        db = tmp_path / "cranfield.duckdb"
        corpus = write_corpus_jsonl(cran.chunks, tmp_path / "corpus.jsonl")
        topics = tmp_path / "topics.tsv"
        topics.write_text("".join(f"{q}\t{text}\n" for q, text in cran.queries.items()))
        goldmine("ingest", "corpus", str(corpus), db=db)
        goldmine(
            "gold",
            "import",
            str(folder / "cranqrel"),
            "--topics",
            str(topics),
            "--grade-map",
            "1=1,2=2,3=3,4=4,-1=0",
            "--by",
            "bench",
            db=db,
        )
        goldmine("gold", "publish", "-m", "Cranfield", "--by", "bench", db=db)
        exported = tmp_path / "gold"
        goldmine(
            "gold", "export", "--version", "v1", "--out", str(exported), "--format", "trec", db=db
        )
        qrels = exported / "v0001.qrels"
        print(f"{'baseline':<8} {'':<9} {'nDCG@10':>8} {'MAP@100':>8} {'R@100':>8}  time")
        for kind in ("bm25", "dense", "hybrid"):
            run = tmp_path / f"{kind}.trec"
            started = time.perf_counter()
            out = goldmine(
                "eval",
                "run",
                "--gold",
                "v1",
                "--baseline",
                kind,
                "-k",
                "100",
                "-m",
                METRICS,
                "--save-run",
                str(run),
                "--json",
                "--no-store",
                db=db,
            )
            seconds = time.perf_counter() - started
            got = json.loads(out)["metrics"]
            ours = (got["ndcg@10"], got["map@100"], got["frac_recall@100"])
            print(
                f"{kind:<8} {'goldmine':<9} "
                + " ".join(f"{v:8.3f}" for v in ours)
                + f"  {seconds:.2f} s whole process"
            )
            theirs = ranx_scores(qrels, run)
            if theirs is not None:
                print(f"{'':<8} {'ranx':<9} " + " ".join(f"{v:8.3f}" for v in theirs))
            print(f"{'':<8} {'FACTS.md':<9} " + " ".join(f"{v:8.3f}" for v in REFERENCE[kind]))


if __name__ == "__main__":
    main()
