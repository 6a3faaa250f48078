"""The redacted import against an earlier goldmine's, whole commands alternated in one run.

The redaction of this wave checks what its patterns find (ingest/pii.py) and covers every stored
field, not only the query; the issue's bound is 1.3x the earlier import. This builds the earlier
revision (``--before``, default d1459b9, the last commit before the change) from git into
bench/out/, then times ``goldmine ingest searchlog LOG --redact`` (and without ``--redact``) with
each into a fresh store, alternated, and prints medians and ratios; asserts nothing about time.
Run: ``.venv/bin/python bench/bench_redact_ingest.py [--events N] [--repeat R] [--before REV]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(ROOT / "tests"))

from helpers import generate_searchlog  # noqa: E402

# Runs the earlier goldmine installed in a folder of its own, not the editable checkout.
OLD = """import sys
sys.path.insert(0, {folder!r})
import goldmine.ingest.redact as r
assert r.__file__.startswith({folder!r}), r.__file__
from goldmine.cli import main
sys.argv[0] = "goldmine"
main()
"""


def build_before(rev: str) -> Path:
    folder = OUT / f"goldmine-{rev}"
    if folder.exists():
        return folder
    tree = OUT / f"tree-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", str(tree), rev], check=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
             "-t", str(folder), str(tree)],
            check=True,
        )  # fmt: skip
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    return folder


def timed(command: list[str], store: Path) -> float:
    for p in store.parent.glob(store.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    start = time.perf_counter()
    subprocess.run([*command, "--db", str(store)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="d1459b9")
    args = parser.parse_args()
    log = generate_searchlog(OUT, args.events, ("jsonl",))["jsonl"]
    folder = build_before(args.before)
    runs = {
        "before": [sys.executable, "-c", OLD.format(folder=str(folder))],
        "now": [sys.executable, "-m", "goldmine"],
    }
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(args.repeat):
        for redact in (True, False):
            for name, launcher in runs.items():
                command = [*launcher, "ingest", "searchlog", str(log)]
                command += ["--redact"] if redact else []
                times.setdefault((name, redact), []).append(timed(command, OUT / "redact.duckdb"))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{args.events:,} events, medians of {args.repeat}, before = {args.before}")
    for redact in (True, False):
        said = "--redact" if redact else "no redaction"
        before, now = med[("before", redact)], med[("now", redact)]
        print(f"{said}: before {before:.2f} s, now {now:.2f} s ({now / before:.2f}x)")


if __name__ == "__main__":
    main()
