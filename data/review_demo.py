"""The demo's scripted review: the ``goldmine gold label`` command standing in for the person.

The sample data's generator knows which chunks answer each phrasing (``data/generate.py``,
``INTENTS``); this script plays a reviewer who knows the shop: for every drafted query whose text is
one of those phrasings, it labels the answering chunks grade 2, or records "no answer" when the
corpus has none. Queries it does not recognise stay drafted: never gold without a person.

    python data/review_demo.py [--db FILE] [--by NAME]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import INTENTS  # noqa: E402  (the generator is data, beside this script)

from goldmine.cli import main as goldmine  # noqa: E402
from goldmine.text import normalize_query  # noqa: E402


def answer_key() -> dict[str, list[str]]:
    return {normalize_query(p): answer for _, answer, phrasings in INTENTS for p in phrasings}


def drafted(db: str | None) -> list[dict]:
    args = [sys.executable, "-m", "goldmine", "gold", "list", "--status", "drafted", "--json"]
    out = subprocess.run(args + (["--db", db] if db else []), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    data = json.loads(out.stdout)
    return data["items"] if isinstance(data, dict) else data


def label(args: list[str]) -> None:
    try:
        goldmine(args)
    except SystemExit as exc:
        if exc.code:
            raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db")
    parser.add_argument("--by", default="demo-reviewer")
    options = parser.parse_args()
    key = answer_key()
    db = ["--db", options.db] if options.db else []
    labelled = skipped = 0
    for item in drafted(options.db):
        answer = key.get(normalize_query(item["query"]))
        if answer is None:
            skipped += 1
            continue
        if answer:
            chunks = [arg for chunk in answer for arg in ("--chunk", f"{chunk}=2")]
            chunks.append("--rest-not-relevant")  # it knows the answer: the other drafts are not
            label(["gold", "label", item["query_id"], *chunks, "--by", options.by, *db])
        else:
            label(["gold", "label", item["query_id"], "--no-answer", "--by", options.by, *db])
        labelled += 1
    print(f"scripted review: {labelled} labelled, {skipped} left drafted (not in the answer key)")


if __name__ == "__main__":
    main()
