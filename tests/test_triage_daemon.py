"""Triage run from a worker of a process pool.

A script that triages several stores at once, from ``multiprocessing.Pool`` (as a scheduler's
task runner does), runs triage in a daemonic process, and a daemonic process may not start
children: dedupe's forked plan and the k-NN index built while embedding ended the run with
``AssertionError: daemonic processes are not allowed to have children``. There, the same work
now runs in the process itself, with the same result.
"""

from __future__ import annotations

import multiprocessing as mp

import pytest

from goldmine.store import open_store
from goldmine.triage import cluster, dedupe

from helpers import TRIAGE_QUERIES, load_queries


def _square(x: int) -> int:
    return x * x


def _forks_in_a_worker(folder: str) -> tuple[list[int], int, bool]:
    builder = cluster.index_builder(cluster.BRUTE_MAX + 1, 1, folder)
    return (
        dedupe.in_children(_square, [(2,), (3,)]),
        dedupe.in_child(_square, 4),
        builder is None,
    )


def test_forked_work_runs_in_the_process_when_it_is_a_pool_worker(tmp_path):
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_forks_in_a_worker, (str(tmp_path),)) == ([4, 9], 16, True)


def _triage(db: str) -> tuple[int, int]:
    from goldmine.triage.pipeline import run_triage

    result = run_triage(db)
    return result.n_queries, result.n_embedded


@pytest.mark.slow
def test_triage_runs_in_a_pool_worker(db_path):
    queries = [q for qs in TRIAGE_QUERIES.values() for q in qs]
    with open_store(db_path) as con:
        load_queries(con, queries)
    with mp.get_context("spawn").Pool(1) as pool:
        n_queries, n_embedded = pool.apply(_triage, (str(db_path),))
    assert n_queries == len(queries) and n_embedded == len(queries) - 1
    with open_store(db_path) as con:
        clustered = con.execute(
            "SELECT count(*) FROM triage_queries WHERE cluster_id IS NOT NULL"
        ).fetchall()[0][0]
    assert clustered == len(queries)
