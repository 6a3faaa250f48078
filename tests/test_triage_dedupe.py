"""Fuzzy dedupe's work inside a block: a query leaves the block's comparisons once it has its
partner or has spent its checks, and the partners stay those of every pair compared."""

from __future__ import annotations

import itertools

from goldmine.text import normalize_query
from goldmine.triage import dedupe


def _reference(texts: list[str]) -> dict[int, tuple[int, float]]:
    """Each text's best-ranked variant above it among every pair the blocks hold."""
    want: dict[int, tuple[int, float]] = {}
    for i, j, score in dedupe.blocked_pairs(list(range(len(texts))), texts):
        if j < i and (i not in want or j < want[i][0]):
            want[i] = (j, score)
    return want


def _head_and_variants(n: int) -> list[str]:
    """A head query, then n variants of it ranked below it that differ only by function words
    (every one a variant of the head, many over the cutoff with each other too)."""
    from rapidfuzz import fuzz

    head = "international money transfer declined yesterday"
    words = head.split()
    extra = ["my", "the", "a", "is", "was", "i", "me", "to", "of", "for", "so", "it", "by"]
    texts = [head]
    for (at1, w1), (at2, w2) in itertools.combinations(
        itertools.product(range(len(words) + 1), extra), 2
    ):
        placed = [*words]
        placed.insert(at2, w2)
        placed.insert(at1, w1)
        text = normalize_query(" ".join(placed))
        if text not in texts and fuzz.ratio(text, head) >= 91:
            texts.append(text)
        if len(texts) > n:
            return texts
    raise AssertionError("too few variants")


def test_a_query_that_found_its_partner_is_not_scored_again():
    """Each variant finds the head among the first candidates in rank order and leaves: it is
    scored against one chunk of the block, not against the variants below the head (they
    rank below the partner it has), and the partners are those of every pair."""
    texts = _head_and_variants(4 * dedupe.COLUMN_CHUNK)
    work = dedupe.Work()
    got = dedupe.best_partners(list(range(len(texts))), texts, work=work)
    assert got == _reference(texts)
    assert {j for j, _ in got.values()} == {0} and len(got) == len(texts) - 1
    assert work.checks == len(texts) - 1  # the head, once each
    assert work.cells <= len(texts) * dedupe.COLUMN_CHUNK


def test_a_query_that_spent_its_checks_is_not_scored_again():
    """Look-alikes that are never variants (other card numbers): each stops after MAX_CHECKS
    failed checks and is not scored against the rest of the block."""
    texts = [
        f"my debit card {n} was blocked while travelling abroad"
        for n in range(1000, 1000 + 4 * dedupe.COLUMN_CHUNK)
    ]
    work = dedupe.Work()
    got = dedupe.best_partners(list(range(len(texts))), texts, work=work)
    assert got == _reference(texts) == {}
    assert work.checks == sum(min(i, dedupe.MAX_CHECKS) for i in range(len(texts)))
    assert work.cells <= 2 * len(texts) * max(dedupe.COLUMN_CHUNK, dedupe.MAX_CHECKS)


def test_a_query_that_failed_its_first_checks_takes_only_close_candidates():
    """After PICKY_AFTER look-alikes failed the word rule (another card, another place: fuzz.ratio
    90-93), the word rule runs only on candidates at PICKY_SCORE or more: the other look-alikes
    count as failed checks unchecked, and the close variant ranked below them is its partner."""
    from rapidfuzz import fuzz

    query = "my debit card was blocked at the airport while i was travelling abroad last week"
    lookalikes = [
        query.replace("debit", card).replace("airport", place)
        for card in ("gold", "bank", "blue", "main", "joint", "spare", "black", "green")
        for place in ("station", "market")
    ]
    close = query.replace("airport", "airprot")
    texts = [*lookalikes, close, query]
    scores = [fuzz.ratio(query, t) for t in lookalikes]
    assert all(90 <= s < dedupe.PICKY_SCORE for s in scores) and len(scores) > dedupe.PICKY_AFTER
    assert fuzz.ratio(query, close) >= dedupe.PICKY_SCORE
    work = dedupe.Work()
    got = dedupe.best_partners([len(texts) - 1], texts, work=work)
    assert got == {len(texts) - 1: (len(texts) - 2, round(fuzz.ratio(query, close)))}
    assert work.checks == dedupe.PICKY_AFTER + 1  # the failed look-alikes, then the partner


def _ranked_banking77(path) -> list[str]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        texts = [normalize_query(row["text"]) for row in csv.DictReader(f)]
    return list(dict.fromkeys(t for t in texts if t))  # distinct, in the file's order


def test_queries_dealt_to_several_processes_find_the_partners_one_finds(shared_dataset):
    """A query's partner depends on its own candidates and checks alone, so queries dealt out
    to forked processes (as a big first run's are, one share per core) find what one process
    finds: the same partner with the same score, a head's crowd of variants included."""
    texts = _ranked_banking77(shared_dataset("datasets", "banking77", "train.csv"))
    texts += [t for t in _head_and_variants(3 * dedupe.COLUMN_CHUNK) if t not in set(texts)]
    queries = list(range(len(texts)))
    one = dedupe.best_partners(queries, texts)
    assert len(one) > 300
    for workers in (2, 3):
        assert dedupe.parallel_partners(queries, texts, workers=workers, at_least=1) == one


def test_a_small_dedupe_stays_in_one_process(monkeypatch):
    """Below ``at_least`` new queries the matching is not dealt out: a fork costs more."""
    texts = _head_and_variants(dedupe.COLUMN_CHUNK)
    monkeypatch.setattr(dedupe, "in_children", lambda *a: (_ for _ in ()).throw(AssertionError))
    got = dedupe.parallel_partners(list(range(len(texts))), texts, workers=2)
    assert got == dedupe.best_partners(list(range(len(texts))), texts)


def test_a_big_first_run_plans_the_same_canonicals_on_several_cores(
    shared_dataset, monkeypatch, tmp_path
):
    """plan_canonicals past PARALLEL_MIN new queries deals them out from inside its own forked
    process, and the canonicals and scores are those of one process."""
    import polars as pl

    texts = _ranked_banking77(shared_dataset("datasets", "banking77", "train.csv"))
    rows = pl.DataFrame(
        {"norm_query": texts, "n_events": [1] * len(texts), "canonical_query": [None] * len(texts)},
        schema={"norm_query": pl.Utf8, "n_events": pl.Int64, "canonical_query": pl.Utf8},
    )
    monkeypatch.setattr(dedupe, "usable_cores", lambda: 2)
    monkeypatch.setattr(dedupe, "PARALLEL_MIN", len(texts) + 1)
    one = dedupe.plan_canonicals(rows)
    monkeypatch.setattr(dedupe, "PARALLEL_MIN", 1)
    log = tmp_path / "forks"  # the share's processes are forked by the plan's, not by this one
    dealt = dedupe.in_children

    def counted(fn, jobs):
        with open(log, "a") as f:
            f.write(f"{len(jobs)}\n")
        return dealt(fn, jobs)

    monkeypatch.setattr(dedupe, "in_children", counted)
    assert dedupe.plan_canonicals(rows).equals(one)
    assert log.read_text().split() == ["1", "2"]  # the plan's own process, then one per share
    assert (one["canonical_query"] != one["norm_query"]).sum() > 300
