"""``gold draft --from clicks``: a click model's grades written as drafts (never gold) from the
stored search events, with the model and its parameters as provenance; agreement with people's
labels worked by hand; thresholds fitted on labels and checked out of fold."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from goldmine.goldset.clicks import (
    Sessions,
    cross_validate,
    fit_thresholds,
    grades,
    kappa,
)
from goldmine.goldset.items import add_item, item_version, label, show_item
from goldmine.store import open_store, transaction

from helpers import build

X, Y = "kb-reset-1", "kb-reset-2"


def _events(con, rows: list[tuple[str, list[str], list[str]]], batch: int = 2) -> None:
    for n, (query, shown, clicked) in enumerate(rows):
        con.execute(
            """INSERT INTO search_events (event_id, batch_id, source, ts, session_id, query,
                   result_ids, num_results, clicked_ids)
               VALUES (?, ?, 'searchlog', ?, ?, ?, ?, ?, ?)""",
            [f"b{batch}-{n}", batch, datetime(2026, 11, 10, 9, 0), f"s{n}", query, shown,
             len(shown), clicked],
        )  # fmt: skip


def _saturated(query: str = "Reset password!") -> list:
    # As tests/test_clicks.py: PBM with alpha_x = 0.8, alpha_y = 0.4, gamma = (1, 0.5) gives
    # exactly these counts, so EM's maximum is those parameters.
    xy = [(query, [X, Y], ([X] if i < 8 else []) + ([Y] if i < 2 else [])) for i in range(10)]
    yx = [(query, [Y, X], ([Y] if i < 4 else []) + ([X] if i < 4 else [])) for i in range(10)]
    return xy + yx


@pytest.fixture
def store(db_path: Path) -> Path:
    build(db_path)
    with open_store(db_path) as con, transaction(con):
        add_item(con, "reset password", origin="test", by="t", query_id="q_reset")
        add_item(con, "vpn setup", origin="test", by="t", query_id="q_vpn")
        _events(con, _saturated())
        # A batch that records no click at all does not count: its zero clicks say nothing.
        _events(con, [("reset password", [Y, X], [])] * 5, batch=3)
    return db_path


def _drafts(db: Path, qid: str) -> list[tuple]:
    with open_store(db) as con:
        return con.execute(
            "SELECT chunk_id, kind, suggested_grade, source, rank, round(score, 3) FROM gold_labels"
            " WHERE query_id = ? ORDER BY kind, chunk_id",
            [qid],
        ).fetchall()


def test_clicks_draft_grades_with_the_model_as_provenance(store: Path, cli) -> None:
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["source"] == "clicks" and got["model"] == "pbm"
    assert got["n_events"] == 20 and got["n_queries"] == 1 and got["n_pairs"] == 2
    assert (got["items"], got["drafts"]) == (1, 2)
    assert got["params"]["gamma"] == pytest.approx([1.0, 0.5], abs=0.01)
    assert got["thresholds"]["fitted"] is False and got["agreement"] is None
    # alpha_x 0.8 >= 0.5: grade 2; alpha_y 0.4 in [0.2, 0.5): grade 1. Ranked by score.
    assert _drafts(store, "q_reset") == [
        (X, "draft", 2, "clicks", 1, pytest.approx(0.8, abs=0.01)),
        (Y, "draft", 1, "clicks", 2, pytest.approx(0.4, abs=0.01)),
    ]
    with open_store(store) as con:
        item = show_item(con, "q_reset")
    assert item["status"] == "drafted" and item["drafted_by"] == "clicks:pbm"
    last = item["history"][-1]
    assert last["action"] == "draft" and last["by"] == "clicks:pbm"
    detail = last["detail"]
    assert detail["source"] == "clicks" and detail["model"] == "pbm"
    assert detail["params"]["gamma"] == pytest.approx([1.0, 0.5], abs=0.01)
    assert detail["thresholds"] == {"low": 0.2, "high": 0.5, "fitted": False, "min_shown": 2}
    assert [(c["chunk_id"], c["grade"], c["shown"], c["clicks"]) for c in detail["chunks"]] == [
        (X, 2, 20, 12),
        (Y, 1, 20, 6),
    ]
    # Nothing is gold: the item is not verified and holds no label.
    assert item["labels"] == [] and item["verified_by"] is None


def test_review_shows_the_click_grade_as_a_suggestion(store: Path, cli) -> None:
    from goldmine.goldset.review import _candidates, _suggest

    assert cli("--db", str(store), "gold", "draft", "--from", "clicks").returncode == 0
    with open_store(store) as con:
        item = show_item(con, "q_reset")
        candidates = _candidates(con, "q_reset", 1)
        _suggest(con, item, candidates)
    got = {c["chunk_id"]: c["suggestion"] for c in candidates}
    assert got[X]["grade"] == 2 and got[Y]["grade"] == 1 and got[X]["model"] == "clicks"
    assert got[X]["reason"].startswith("the click model's grade (score 0.80")


def test_the_text_output_names_the_model_thresholds_and_no_agreement(store: Path, cli) -> None:
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--click-model", "dbn")
    assert out.returncode == 0, out.stderr
    assert "drafted 1 query from clicks (DBN over 20 events of 1 gold query" in out.stderr
    assert "grades: 2 at score >= 0.5, 1 at >= 0.2; fixed: fewer than 30 labelled" in out.stderr
    assert "no labelled pair is scored by the model yet" in out.stderr
    with open_store(store) as con:
        detail = show_item(con, "q_reset")["history"][-1]["detail"]
    assert detail["model"] == "dbn" and 0 < detail["params"]["gamma"] <= 1
    assert {"attractiveness", "satisfaction"} <= set(detail["chunks"][0])


def test_labels_decided_items_and_other_drafts_are_respected(store: Path, cli) -> None:
    with open_store(store) as con, transaction(con):
        # A person graded Y: it is not drafted again, and counts for agreement.
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source, who, ts)
               VALUES ('q_reset', ?, 'draft', 1, 9.0, 'bm25', 'retriever:bm25', ?),
                      ('q_reset', 'kb-sso-1', 'draft', 2, 8.0, 'bm25', 'retriever:bm25', ?)""",
            [X, datetime(2026, 11, 1), datetime(2026, 11, 1)],
        )
        label(con, "q_reset", {Y: 0}, by="ana")
        before = item_version(con, "q_reset")
        # The vpn item is verified by a person: clicks on it are left alone (kb-vpn-2, clicked
        # every time, is not drafted). A chunk gone from the corpus is not drafted either.
        vpn = ["kb-vpn-1", "kb-vpn-2"]
        _events(
            con, [("vpn setup", vpn, vpn)] * 10 + [("reset password", ["gone"], ["gone"])] * 3, 4
        )
        label(con, "q_vpn", {"kb-vpn-1": 2}, by="ana")
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["items"], got["drafts"]) == (1, 1)
    assert got["skipped_labelled"] == 2  # Y and kb-vpn-1
    assert got["skipped_decided"] == 1 and got["missing_chunks"] == 1
    # X's bm25 draft became the click draft; the other retriever draft stays; Y keeps its label.
    assert [r[:5] for r in _drafts(store, "q_reset")] == [
        (X, "draft", 2, "clicks", 1),
        ("kb-sso-1", "draft", None, "bm25", 2),
        (Y, "label", None, "label", None),
    ]
    with open_store(store) as con:
        assert item_version(con, "q_reset") > before
        assert show_item(con, "q_vpn")["status"] == "verified"
        assert _drafts(store, "q_vpn") == [("kb-vpn-1", "label", None, "label", None, None)]


def test_agreement_with_peoples_labels_by_hand(store: Path, cli) -> None:
    # vpn: kb-vpn-1 clicked in every session at rank 1, kb-vpn-2 never, at rank 2. People: 2
    # and 0. PBM: alpha 1 and ~0 -> grades 2 and 0, all agree (kappa 1, AUC 1).
    # clicked = relevant gives (1, 0) against (2, 0): linear weights |i - j| / 2, observed
    # disagreement (0.5 + 0) / 2 = 0.25; marginals human (.5 at 0, .5 at 2), proposed (.5 at 0,
    # .5 at 1): expected .25 * (0 + .5 + 1 + .5) / 2 = 0.5 -> kappa 1 - .25 / .5 = 0.5.
    with open_store(store) as con, transaction(con):
        _events(con, [("vpn setup", ["kb-vpn-1", "kb-vpn-2"], ["kb-vpn-1"])] * 10, batch=4)
        label(con, "q_vpn", {"kb-vpn-1": 2, "kb-vpn-2": 0}, by="ana")
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert out.returncode == 0, out.stderr
    a = json.loads(out.stdout)["agreement"]
    assert a["pbm"]["n_pairs"] == 2
    assert a["pbm"]["weighted_kappa"] == pytest.approx(1.0)
    assert a["pbm"]["auc"] == pytest.approx(1.0)
    assert a["clicked"]["weighted_kappa"] == pytest.approx(0.5)
    assert a["clicked"]["precision"] == 1.0 and a["clicked"]["recall"] == 1.0
    text = cli("--db", str(store), "gold", "draft", "--from", "clicks")
    assert "agreement with people's labels on 2 pairs shown 2x or more" in text.stdout
    assert "clicked = relevant" in text.stdout


def test_thresholds_fit_refused_without_enough_labels(store: Path, cli) -> None:
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--thresholds", "fit")
    assert out.returncode == 2
    assert "error: --thresholds fit: fewer than 30 labelled pairs" in out.stderr


def test_no_click_events_is_not_found(db_path: Path, cli) -> None:
    build(db_path)
    with open_store(db_path) as con, transaction(con):
        add_item(con, "reset password", origin="test", by="t")
    out = cli("--db", str(db_path), "gold", "draft", "--from", "clicks")
    assert out.returncode == 2
    assert "no search events with shown results and clicks belong to a gold query" in out.stderr
    bad = cli("--db", str(db_path), "gold", "draft", "--from", "clicks", "--click-model", "ubm")
    assert bad.returncode == 2 and "--click-model must be one of pbm, dbn" in bad.stderr
    assert cli("--db", str(db_path), "gold", "draft", "--from", "logs").returncode == 2


def test_a_rerun_regrades_the_click_drafts_but_never_removes_one(store: Path, cli) -> None:
    assert cli("--db", str(store), "gold", "draft", "--from", "clicks").returncode == 0
    first = _drafts(store, "q_reset")
    # --min-grade 2 drafts no new grade-1 pair, but Y, drafted before, stays as it was.
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--min-grade", "2", "--json")
    assert json.loads(out.stdout)["drafts"] == 0
    assert _drafts(store, "q_reset") == first
    # New sessions where Y is never clicked: Y is regraded with the new evidence, not removed.
    with open_store(store) as con, transaction(con):
        _events(con, [("reset password", [Y, X], [X])] * 20, batch=5)
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert json.loads(out.stdout)["items"] == 1
    after = {r[0]: r for r in _drafts(store, "q_reset")}
    assert set(after) == {X, Y}
    assert after[Y][5] < first[1][5] and after[Y][2] <= first[1][2]


def _history(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute("SELECT seq, query_id, action FROM gold_history ORDER BY seq").fetchall()


def test_a_rerun_with_the_same_proposals_changes_nothing(store: Path, cli) -> None:
    first = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert json.loads(first.stdout)["items"] == 1
    history, drafts = _history(store), _drafts(store, "q_reset")
    with open_store(store) as con:
        version = item_version(con, "q_reset")
    again = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert again.returncode == 0, again.stderr
    assert _history(store) == history and _drafts(store, "q_reset") == drafts
    with open_store(store) as con:
        assert item_version(con, "q_reset") == version
    got = json.loads(again.stdout)
    assert (got["items"], got["drafts"], got["unchanged"]) == (0, 0, 1)
    text = cli("--db", str(store), "gold", "draft", "--from", "clicks")
    assert "1 query unchanged" in text.stderr
    # New sessions give other scores: a change again, one history row, the version moves.
    with open_store(store) as con, transaction(con):
        _events(con, [("reset password", [Y, X], [X])] * 20, batch=5)
    fewer = cli("--db", str(store), "gold", "draft", "--from", "clicks")
    assert fewer.returncode == 0, fewer.stderr
    assert len(_history(store)) == len(history) + 1
    with open_store(store) as con:
        assert item_version(con, "q_reset") > version


# --- thresholds and the vectorized session builder ----------------------------------------------


def test_kappa_matches_sklearn() -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(3)
    for _ in range(20):
        h, p = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
        assert kappa(h, p) == pytest.approx(cohen_kappa_score(h, p, weights="linear"))
    assert kappa(np.array([2, 0, 0, 1]), np.array([2, 1, 0, 0])) == pytest.approx(3 / 7)


def test_fitted_thresholds_recover_a_separable_grading() -> None:
    # 0.1 and 0.3 are 0, 0.6 is 1, 0.9 is 2: low in (0.3, 0.6], high in (0.6, 0.9].
    s, h = np.array([0.1, 0.3, 0.6, 0.9]), np.array([0, 0, 1, 2])
    low, high = fit_thresholds(s, h)
    assert 0.3 < low <= 0.6 < high <= 0.9
    assert grades(s, high, low).tolist() == [0, 0, 1, 2]
    # When the fixed pair is already best it is kept.
    assert fit_thresholds(np.array([0.1, 0.3, 0.6]), np.array([0, 1, 2])) == (0.2, 0.5)


def test_cross_validation_grades_each_query_with_the_others_thresholds() -> None:
    # Ten queries, each with a 0 at 0.1, a 1 at 0.35 and a 2 at 0.7: any fold's thresholds
    # recover the rest. One odd query (its 2 at 0.3) is graded by the others' thresholds: 1.
    s = np.tile([0.1, 0.35, 0.7], 10)
    h = np.tile([0, 1, 2], 10)
    groups = np.repeat([f"q{i}" for i in range(10)], 3)
    s[29] = 0.3
    out = cross_validate(s, h, groups, folds=5)
    assert out[:27].tolist() == h[:27].tolist()
    assert out[29] == 1


def test_sessions_from_arrays_match_build() -> None:
    rows = [("q", ["x", "y"], {"x"}), ("q", ["y"], set())]
    built = Sessions.build(rows)
    made = Sessions.from_arrays(
        [("q", "x"), ("q", "y")],
        session=np.array([0, 0, 1]),
        rank=np.array([0, 1, 0]),
        pair=np.array([0, 1, 1]),
        clicked=np.array([True, False, False]),
    )
    assert made.keys == built.keys
    assert np.array_equal(made.pair, built.pair) and np.array_equal(made.click, built.click)
    assert np.array_equal(made.shown, built.shown)


@pytest.mark.slow
def test_fitted_thresholds_on_the_trec_session_track(shared_dataset) -> None:
    # The README's figures (bench/bench_clicks.py, measured, not a target): on the 366 pairs
    # judged and shown twice or more, thresholds fitted out of fold lift DBN's kappa from 0.03
    # to about 0.16, and clicked = relevant, fitted the same way, still agrees best.
    from goldmine.goldset.clickdraft import compare_with_labels
    from goldmine.goldset.clicks import fit_dbn, read_trec_qrels, read_trec_sessions

    folder = shared_dataset("datasets", "trec_session_track")
    data = Sessions.build(read_trec_sessions(folder / "sessiontrack2012.xml"))
    qrels = read_trec_qrels(folder / "relevacne2012.txt")
    shown, _ = data.counts()
    fixed, cv, mask = compare_with_labels(data, fit_dbn(data), qrels, shown >= 2)
    assert int(mask.sum()) == 366
    assert fixed["dbn"]["weighted_kappa"] == pytest.approx(0.030, abs=0.002)
    assert cv["dbn"]["fitted_kappa"] > 4 * cv["dbn"]["fixed_kappa"]
    assert cv["clicked"]["fitted_kappa"] > cv["dbn"]["fitted_kappa"]


# --- re-runs keep what other runs drafted; agreement says when it is chance ---------------------


def _drafted_with_nothing(db: Path) -> list[str]:
    with open_store(db) as con:
        return [
            r[0]
            for r in con.execute(
                "SELECT query_id FROM gold_items i WHERE status = 'drafted' AND NOT EXISTS "
                "(SELECT 1 FROM gold_labels l WHERE l.query_id = i.query_id)"
            ).fetchall()
        ]


def test_a_rerun_with_a_higher_min_shown_keeps_the_other_runs_drafts(store: Path, cli) -> None:
    # kb-vpn-1 is shown once, clicked: only a --min-shown 1 run drafts it.
    with open_store(store) as con, transaction(con):
        _events(con, [("vpn setup", ["kb-vpn-1", "kb-vpn-2"], ["kb-vpn-1"])], batch=4)
    one = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--min-shown", "1")
    assert one.returncode == 0, one.stderr
    vpn = _drafts(store, "q_vpn")
    assert [r[:4] for r in vpn] == [("kb-vpn-1", "draft", 2, "clicks")]
    with open_store(store) as con:
        version = item_version(con, "q_vpn")
    two = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert two.returncode == 0, two.stderr
    # The default --min-shown 2 scores nothing on q_vpn: its draft stays, untouched.
    assert _drafts(store, "q_vpn") == vpn
    assert [r[0] for r in _drafts(store, "q_reset")] == [X, Y]
    assert _drafted_with_nothing(store) == []
    with open_store(store) as con:
        assert show_item(con, "q_vpn")["status"] == "drafted"
        assert item_version(con, "q_vpn") == version


def test_an_item_left_drafted_with_nothing_goes_back_to_candidate(store: Path, cli) -> None:
    # What an earlier re-run left behind: drafted by clicks, no candidate to review.
    with open_store(store) as con, transaction(con):
        con.execute(
            "UPDATE gold_items SET status = 'drafted', drafted_by = 'clicks:pbm' "
            "WHERE query_id = 'q_vpn'"
        )
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks")
    assert out.returncode == 0, out.stderr
    assert _drafted_with_nothing(store) == []
    with open_store(store) as con:
        item = show_item(con, "q_vpn")
    assert item["status"] == "candidate"
    assert item["history"][-1]["action"] == "status"
    assert "1 query drafted with nothing to review went back to candidate" in out.stderr


def test_auc_and_its_interval_over_queries_match_sklearn() -> None:
    from sklearn.metrics import roc_auc_score

    from goldmine.goldset.clicks import auc_interval

    # By hand: relevant 0.9 and 0.3, not relevant 0.8 and 0.1: 3 of 4 pairs ordered right.
    auc, ci = auc_interval(np.array([0.9, 0.8, 0.3, 0.1]), np.array([1, 0, 1, 0]), np.arange(4))
    assert auc == pytest.approx(0.75)
    assert ci is not None and ci[0] <= 0.75 <= ci[1]
    rng = np.random.default_rng(5)
    for _ in range(10):
        s = rng.integers(0, 6, 60) / 5  # ties, counted a half as sklearn does
        h = rng.integers(0, 2, 60)
        auc, ci = auc_interval(s, h, rng.integers(0, 12, 60))
        assert auc == pytest.approx(roc_auc_score(h, s))
        assert ci[0] <= auc <= ci[1]
    # One class only: no AUC, no interval.
    assert auc_interval(np.array([0.1, 0.2]), np.array([1, 1]), np.arange(2)) == (None, None)


def test_agreement_says_plainly_when_clicks_are_no_better_than_chance(store: Path, cli) -> None:
    # Twelve queries, each with its first result clicked every time; people found the first
    # relevant in half of them and the second in the other half: the clicks say nothing.
    with open_store(store) as con, transaction(con):
        for i in range(12):
            qid, first, second = f"q_t{i}", f"t{i}-a", f"t{i}-b"
            add_item(con, f"topic {i}", origin="test", by="t", query_id=qid)
            _events(con, [(f"topic {i}", [first, second], [first])] * 4, batch=10 + i)
            good, bad = (first, second) if i % 2 else (second, first)
            for chunk, grade in ((good, 2), (bad, 0)):
                con.execute(
                    "INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, who, ts) "
                    "VALUES (?, ?, 'label', ?, 'label', 'ana', ?)",
                    [qid, chunk, grade, datetime(2026, 11, 1)],
                )
    out = cli("--db", str(store), "gold", "draft", "--from", "clicks", "--json")
    assert out.returncode == 0, out.stderr
    pbm = json.loads(out.stdout)["agreement"]["pbm"]
    assert pbm["n_pairs"] == 24 and pbm["auc"] == pytest.approx(0.5, abs=0.05)
    low, high = pbm["auc_ci95"]
    assert low < 0.5 < high
    k_low, k_high = pbm["weighted_kappa_ci95"]
    assert k_low <= pbm["weighted_kappa"] <= k_high and k_low < 0 < k_high
    assert pbm["reading"] == "AUC and kappa no better than chance"
    text = cli("--db", str(store), "gold", "draft", "--from", "clicks")
    row = next(line for line in text.stdout.splitlines() if "PBM" in line)
    assert "no better than chance" in row and f"{low:.2f} to {high:.2f}" in row
    assert "0.000" not in row


def test_kappa_interval_over_queries_holds_the_kappa() -> None:
    from goldmine.goldset.clicks import kappa_interval

    rng = np.random.default_rng(7)
    h, p = rng.integers(0, 3, 80), rng.integers(0, 3, 80)
    p[:60] = h[:60]  # agree on three quarters
    low, high = kappa_interval(h, p, rng.integers(0, 16, 80))
    assert 0 < low <= kappa(h, p) <= high < 1
    assert kappa_interval(h[:3], p[:3], np.zeros(3)) is None  # one query: nothing to resample
