"""``make bench``: every benchmark in bench/, one after another, each printing its own figures.

.venv/bin/python bench/run.py            # all
.venv/bin/python bench/run.py eval       # those whose file name contains "eval"
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    wanted = sys.argv[1:]
    scripts = sorted(
        p for p in HERE.glob("bench_*.py") if not wanted or any(w in p.name for w in wanted)
    )
    failed = []
    for script in scripts:
        print(f"\n######## {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
