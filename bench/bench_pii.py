"""PII redaction: recall and precision per type on the labelled sets, and ingest speed with it.

1. Quality. Every line of tests/fixtures/pii_tuning.jsonl (the set the rules were tuned on) and
   pii_heldout.jsonl (other values and sentences, not looked at while tuning) is redacted the way
   an import does (DuckDB, the SQL candidate test, the ``gm_pii`` UDF; handles on, as tickets
   and chat have them). An expected span counts as found when a span of its type covers it
   with at most 3 characters more; a found span is right when it is such a cover. Printed per
   type, with the look-alike lines that lost any text. The redaction before this change
   (``BEFORE``'s ingest/redact.py, run from a temp copy) is scored on the same lines.
2. Speed. ``goldmine ingest searchlog --redact`` of bench_ingest's generated log (default 1M
   events) with today's redaction and with ``BEFORE``'s, alternating in the same run; medians
   and the median of the rounds' ratios. Asserts nothing about time.

``--rules REV`` puts ``REV``'s ingest/pii.py in ``BEFORE``'s place: the sets scored with its
``find`` and the import timed with its rules in today's engine (``redact.pii`` swapped), so a
change to the rules is measured alone, against the same lines in the same run.

Run: ``.venv/bin/python bench/bench_pii.py [--events N] [--repeat R] [--skip-speed]
[--rules REV]``
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb

from goldmine.ingest import api, batch, pii, redact
from goldmine.ingest.redact import install_macros, make_redactor, redact_text
from goldmine.store import open_store

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
BEFORE = "d1459b9"  # the commit before phonenumbers-backed redaction
TYPES = (
    "EMAIL",
    "PHONE",
    "CARD",
    "IBAN",
    "IPV4",
    "IPV6",
    "HANDLE",
    "SSN",
    "NINO",
    "NATIONAL_ID",
    "SECRET",
)
SLACK = 3  # characters a found span may take beyond the expected one (a bracket, a space)


def load(name: str) -> list[dict]:
    path = FIXTURES / f"pii_{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def spans_from(text: str, redacted: str) -> list[tuple[int, int, str]]:
    """Where ``redacted`` replaced parts of ``text`` by placeholders, as spans of ``text``:
    the text around the placeholders is unchanged, so it anchors each one."""
    out, pos, rpos = [], 0, 0
    i = 0
    while i < len(redacted):
        kind = next((t for t in TYPES if redacted.startswith(f"<{t}>", i)), None)
        if kind is None:
            i += 1
            continue
        literal = redacted[rpos:i]
        start = text.index(literal, pos) + len(literal) if literal else pos
        after = redacted[i + len(kind) + 2 :]
        nxt = next((j for j in range(len(after)) if after.startswith("<", j)), len(after))
        anchor = after[:nxt]
        # the last literal ends the text; another is the next text after the span
        end = len(text) - len(anchor) if nxt == len(after) else text.index(anchor, start + 1)
        out.append((start, end, kind))
        pos, rpos, i = end, i + len(kind) + 2, i + len(kind) + 2
    return out


def score(lines: list[dict], found: list[list[tuple[int, int, str]]]) -> dict:
    want, hit, got, right = Counter(), Counter(), Counter(), Counter()
    lookalike_hit = 0
    for line, spans in zip(lines, found, strict=True):
        expected = [tuple(s) for s in line["spans"]]
        for s, e, k in expected:
            want[k] += 1
            hit[k] += any(k == fk and fs <= s and fe >= e and (fe - fs) - (e - s) <= SLACK
                          for fs, fe, fk in spans)  # fmt: skip
        for fs, fe, fk in spans:
            got[fk] += 1
            right[fk] += any(k == fk and fs <= s and fe >= e and (fe - fs) - (e - s) <= SLACK
                             for s, e, k in expected)  # fmt: skip
        lookalike_hit += line["group"] == "lookalike" and bool(spans)
    lookalikes = sum(line["group"] == "lookalike" for line in lines)
    return {"want": want, "hit": hit, "got": got, "right": right,
            "lookalikes": lookalikes, "lookalike_hit": lookalike_hit}  # fmt: skip


def redact_lines(con, lines: list[dict], redactor) -> list[str]:
    return [redact_text(con, line["text"], redactor) for line in lines]


def print_table(title: str, s: dict) -> None:
    print(f"\n{title}")
    print(f"  {'type':<7} {'expected':>8} {'found':>6} {'recall':>7} {'redacted':>9} {'right':>6} "
          f"{'precision':>9}")  # fmt: skip
    for t in TYPES:
        want, hit, got, right = s["want"][t], s["hit"][t], s["got"][t], s["right"][t]
        recall = f"{hit / want:.3f}" if want else "-"
        precision = f"{right / got:.3f}" if got else "-"
        print(f"  {t:<7} {want:>8} {hit:>6} {recall:>7} {got:>9} {right:>6} {precision:>9}")
    want, hit = sum(s["want"].values()), sum(s["hit"].values())
    got, right = sum(s["got"].values()), sum(s["right"].values())
    print(f"  {'all':<7} {want:>8} {hit:>6} {hit / want:>7.3f} {got:>9} {right:>6} "
          f"{(right / got if got else 1):>9.3f}")  # fmt: skip
    clean = s["lookalikes"] - s["lookalike_hit"]
    print(f"  look-alike lines left whole: {clean} of {s['lookalikes']} "
          f"({clean / s['lookalikes']:.3f})")  # fmt: skip


def load_module(rev: str, path: str, name: str, tmp: Path):
    """``rev``'s file ``path`` as a module of its own, ``name`` (its interface is the same)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    file = tmp / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def quality_of_rules(rules, rev: str) -> None:
    """The sets scored with ``rev``'s pii.find and with today's, on the same lines."""
    for name in ("tuning", "heldout"):
        lines = load(name)
        for title, module in ((f"pii.py of {rev}", rules), ("today", pii)):
            found = [module.find(x["text"], module.DEFAULT_REGIONS, True) for x in lines]
            print_table(f"{name} ({len(lines)} lines), {title}", score(lines, found))


def quality(before) -> None:
    con = duckdb.connect()
    install_macros(con)
    now = make_redactor(True, handles=True)
    old = before.make_redactor(True, handles=True)
    for name in ("tuning", "heldout"):
        lines = load(name)
        out = redact_lines(con, lines, now)
        # The UDF path and pii.find must give the same spans (the SQL test lets through
        # every text find would change).
        direct = [pii.find(x["text"], now.regions, True) for x in lines]
        same = sum(
            spans_from(x["text"], r) == d for x, r, d in zip(lines, out, direct, strict=True)
        )
        print(f"\n{name}: {len(lines)} lines; DuckDB path equals pii.find on {same}")
        print_table(f"{name}, today", score(lines, direct))
        before.install_macros(con)
        old_out = [before.redact_text(con, x["text"], old) for x in lines]
        old_spans = [spans_from(x["text"], r) for x, r in zip(lines, old_out, strict=True)]
        print_table(f"{name}, before ({BEFORE})", score(lines, old_spans))
        if "--show-misses" in sys.argv and name == "tuning":
            for x, d in zip(lines, direct, strict=True):
                if [list(s) for s in d] != x["spans"]:
                    print("   miss/extra:", x["text"], x["spans"], d)


@contextlib.contextmanager
def pii_rules(module):
    """Today's engine with ``module`` as its rules (``redact.pii``: the pre-test and the UDF)."""
    saved, redact.pii = redact.pii, module
    try:
        yield
    finally:
        redact.pii = saved


def ingest_time(db: Path, log: Path, module, rules=pii) -> float:
    """One ``ingest searchlog --redact`` with ``module``'s redaction (today's or before's),
    ``rules`` the pii.py today's redaction calls."""
    saved = api.make_redactor, batch.install_macros
    api.make_redactor, batch.install_macros = module.make_redactor, module.install_macros
    try:
        with pii_rules(rules):
            for p in (db, Path(str(db) + ".wal")):
                p.unlink(missing_ok=True)
            start = time.perf_counter()
            with open_store(db) as con:
                api.searchlog(con, [log], redact=True)
            return time.perf_counter() - start
    finally:
        api.make_redactor, batch.install_macros = saved


def speed(earlier: tuple, said: str, n: int, repeat: int, out: Path) -> None:
    """Today's import against ``earlier``, a redact.py and the pii.py it calls (``BEFORE``'s
    redaction, or today's calling ``--rules``' pii.py), named ``said``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import generate_searchlog

    log = generate_searchlog(out, n, ("jsonl",))["jsonl"]
    times: dict[str, list[float]] = {"today": [], "before": []}
    for r in range(repeat):
        for name, (module, pii_module) in (("before", earlier), ("today", (redact, pii))):
            seconds = ingest_time(out / "pii.duckdb", log, module, pii_module)
            times[name].append(seconds)
            print(f"  round {r + 1} {name:<7} {seconds:6.2f} s", flush=True)
    ratios = [t / b for t, b in zip(times["today"], times["before"], strict=True)]
    print(f"\n{n:,} events, ingest searchlog --redact, medians of {repeat} rounds")
    print(f"  before ({said}): {statistics.median(times['before']):.2f} s")
    print(f"  today: {statistics.median(times['today']):.2f} s")
    print(f"  today / before: {statistics.median(ratios):.2f}x "
          f"[{min(ratios):.2f}-{max(ratios):.2f}]  (target <= 1.3)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--show-misses", action="store_true", help="list the tuning set's misses")
    parser.add_argument("--rules", metavar="REV", help="compare with REV's ingest/pii.py alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.rules:
            rules = load_module(args.rules, "ingest/pii.py", "pii_before", Path(tmp))
            quality_of_rules(rules, args.rules)
            earlier, said = (redact, rules), f"pii.py of {args.rules}"
        else:
            before = load_module(BEFORE, "ingest/redact.py", "redact_before", Path(tmp))
            quality(before)
            earlier, said = (before, pii), BEFORE
        if not args.skip_speed:
            speed(earlier, said, args.events, args.repeat, args.out)


if __name__ == "__main__":
    main()
