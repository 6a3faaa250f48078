"""``triage run`` as a command: its steps on stderr, an empty store, a re-run after an interrupted
run, and readers served while it embeds with the store closed.

Queries go straight into the ingest tables (tests/test_triage.py's helpers); runs that embed use
the real bundled MiniLM and are marked slow.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goldmine.store import open_store

from helpers import TRIAGE_QUERIES as QUERIES
from helpers import load_queries

STEPS = ("normalize", "signals", "dedupe", "embed", "cluster", "tags", "rank", "labels")
TEXTS = [q for qs in QUERIES.values() for q in qs]


def test_an_empty_store_has_nothing_to_triage(cli, db_path: Path) -> None:
    with open_store(db_path):
        pass
    out = cli("triage", "run", "--db", str(db_path))
    assert out.returncode == 0, out.stderr
    assert "nothing to triage" in out.stderr and "goldmine ingest" in out.stderr
    data = json.loads(cli("triage", "run", "--db", str(db_path), "--json").stdout)
    assert data["n_events"] == 0 and data["nothing_to_triage"] is True
    with open_store(db_path) as con:
        runs = con.execute("SELECT count(*) FROM triage_runs").fetchall()[0][0]
    assert runs == 0  # nothing was run, so nothing is recorded as a run


def test_events_with_no_letter_or_digit_are_counted_not_lost_without_a_word(
    cli, db_path: Path
) -> None:
    # An emoji, a run of question marks, a zero-width space: no words to cluster, so they are
    # left out of triage, and the run says how many events and which texts.
    wordless = ["👍👍", "???", "\u200b", "👍👍"]
    with open_store(db_path) as con:
        load_queries(con, ["reset my password", "change my password", *wordless])
    out = cli("triage", "run", "--db", str(db_path), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["n_events"] == 4 and data["n_no_words"] == 8  # two events a text
    summary = next(line for line in out.stderr.splitlines() if line.startswith("triage run 1:"))
    assert "8 events left out: no letter or digit in their text" in summary, out.stderr
    assert "'👍👍'" in summary and "'???'" in summary, out.stderr


def test_a_store_of_wordless_events_says_so_not_that_it_is_empty(cli, db_path: Path) -> None:
    with open_store(db_path) as con:
        load_queries(con, ["🔥"])
    out = cli("triage", "run", "--db", str(db_path))
    assert out.returncode == 0, out.stderr
    assert "nothing to triage: 2 events left out: no letter or digit" in out.stderr, out.stderr
    assert "holds no searches" not in out.stderr


@pytest.mark.slow
def test_steps_are_named_on_stderr_and_json_stays_pure(cli, db_path: Path) -> None:
    with open_store(db_path) as con:
        load_queries(con, TEXTS)
    out = cli("triage", "run", "--db", str(db_path), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # stdout is one JSON document and nothing else
    assert data["n_embedded"] == len(TEXTS) - 1 and data["n_cached"] == 0
    lines = out.stderr.splitlines()
    named = [s for s in STEPS if any(line.startswith(f"triage: {s}") for line in lines)]
    assert named == list(STEPS), out.stderr
    embed_line = next(line for line in lines if line.startswith("triage: embed"))
    assert f"{len(TEXTS) - 1} texts" in embed_line
    assert list(data["timings"]) == list(STEPS)


@pytest.mark.slow
def test_a_rerun_after_an_interrupted_run_says_what_it_did(
    cli, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during clustering, after every vector was cached: the next run embeds nothing new
    and its summary says the vectors were found cached and the first run did not finish."""
    from goldmine.triage import cluster
    from goldmine.triage.pipeline import run_triage

    with open_store(db_path) as con:
        load_queries(con, TEXTS)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster, "cluster_fresh", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_triage(db_path)
    monkeypatch.undo()
    with open_store(db_path) as con:
        cached = con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
        clustered = con.execute(
            "SELECT count(*) FROM triage_assignments WHERE cluster_id IS NOT NULL"
        ).fetchall()[0][0]
    assert cached == len(TEXTS) - 1 and clustered == 0

    out = cli("triage", "run", "--db", str(db_path), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["n_embedded"] == 0 and data["n_cached"] == len(TEXTS) - 1
    assert data["n_clustered"] == len(TEXTS) - 1 and data["resumed_runs"] == [1]
    assert data["n_new_queries"] == 0 and data["n_deduped_before"] == len(TEXTS)
    summary = next(line for line in out.stderr.splitlines() if line.startswith("triage run 2:"))
    assert f"0 embedded ({len(TEXTS) - 1} found cached)" in summary, out.stderr
    assert "run 1 had not finished" in summary


@pytest.mark.slow
def test_status_answers_while_triage_embeds(cli, db_path: Path) -> None:
    """The long steps run with the store closed: a reader polling during the run gets in."""
    import polars as pl

    from helpers import SHARED

    banking = SHARED / "datasets" / "banking77" / "train.csv"
    if not banking.is_file():
        pytest.skip(f"{banking} is absent: real-data test skipped")
    texts = pl.read_csv(banking)["text"].to_list()[:1500]
    with open_store(db_path) as con:
        load_queries(con, texts)
    run = subprocess.Popen(
        [sys.executable, "-m", "goldmine", "triage", "run", "--db", str(db_path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    polls = []
    while run.poll() is None:
        start = time.monotonic()
        rc = cli("status", "--json", "--db", str(db_path), subprocess=True).returncode
        polls.append((rc, time.monotonic() - start))
        time.sleep(0.2)
    assert run.wait() == 0, run.stderr.read()
    assert len(polls) >= 5 and all(rc == 0 for rc, _ in polls), polls


@pytest.mark.slow
def test_the_backend_from_the_flag_or_goldmine_toml_keys_the_cache(cli, db_path: Path) -> None:
    """triage run embeds with onnx-int8 unless told; --backend torch (or [embed] backend in
    goldmine.toml) switches, and each backend's vectors are cached under their own key, so a
    switch re-embeds instead of mixing vectors; the cluster ids stay where they were."""
    with open_store(db_path) as con:
        load_queries(con, TEXTS)
    first = json.loads(cli("triage", "run", "--db", str(db_path), "--json").stdout)
    assert first["backend"] == "onnx-int8" and first["n_embedded"] == len(TEXTS) - 1
    with open_store(db_path) as con:
        load_queries(con, ["my card never arrived"], 100)
    (db_path.parent / "goldmine.toml").write_text('[embed]\nbackend = "torch"\n')
    out = subprocess.run(
        [sys.executable, "-m", "goldmine", "triage", "run", "--db", str(db_path), "--json"],
        capture_output=True,
        text=True,
        cwd=db_path.parent,
    )
    second = json.loads(out.stdout)
    assert second["backend"] == "torch" and second["n_embedded"] == 1, out.stderr
    bad = cli("triage", "run", "--db", str(db_path), "--backend", "cuda")
    assert bad.returncode == 2 and "one of torch, onnx, onnx-int8" in bad.stderr
    with open_store(db_path) as con:
        keys = dict(con.execute("SELECT model, count(*) FROM embeddings GROUP BY ALL").fetchall())
        params = con.execute(
            "SELECT params->>'backend' FROM triage_runs ORDER BY run_id"
        ).fetchall()
    assert keys == {"all-MiniLM-L6-v2@onnx-int8": len(TEXTS) - 1, "all-MiniLM-L6-v2": 1}
    assert [p[0] for p in params] == ["onnx-int8", "torch"]


def test_triage_run_on_no_store_is_an_error_and_makes_none(cli, tmp_path: Path) -> None:
    """``triage run --db typo.duckdb`` made an empty store and said "nothing to triage", exit 0,
    where every read command says there is no store."""
    typo = tmp_path / "typo.duckdb"
    out = cli("triage", "run", "--db", str(typo))
    assert out.returncode != 0 and "no goldmine store at" in out.stderr, out.stderr
    assert not typo.exists()


def test_nothing_to_triage_names_the_backend_a_run_would_use(cli, db_path: Path) -> None:
    with open_store(db_path):
        pass
    data = json.loads(cli("triage", "run", "--db", str(db_path), "--json").stdout)
    assert data["backend"] == "onnx-int8", data
