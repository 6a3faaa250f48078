"""Benchmark: click-drafted grades against NIST's judgments on the TREC 2012 Session Track.

    .venv/bin/python bench/bench_clicks.py

The sessions (191 interactions with shown results, 259 clicks, keyed by topic) and NIST's
judgments (-2 and 0 as 0, 1 as 1, 2-4 as 2) from ../shared/datasets/trec_session_track. For the
pairs judged and shown once or more, and twice or more, each signal's agreement with NIST, by the
same code ``gold draft --from clicks`` runs (``goldset.clickdraft.compare_with_labels``):

- at the fixed thresholds (2 at 0.5, 1 at 0.2; clicked = relevant grades 1 or 0);
- with thresholds fitted on the labels, out of fold: 5 folds by topic, each topic's pairs graded
  with thresholds fitted on the other folds'. The fold assignment is drawn 10 times (seeds 0-9);
  the median and the range are printed.

Printed: AUC of the score (threshold-free), linear-weighted kappa, precision and recall of
"relevant" (grade >= 1), and the model's kappa over the best baseline's, in the same run.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from realdata import shared_path  # noqa: E402

SEEDS = range(10)
NAMES = {"pbm": "PBM", "dbn": "DBN", "clicked": "clicked = relevant", "ctr": "click-through rate"}


def main() -> None:
    from goldmine.goldset.clickdraft import FOLDS, _signals
    from goldmine.goldset.clicks import (
        Sessions,
        agreement,
        cross_validate,
        fit_dbn,
        fit_pbm,
        grades,
        read_trec_qrels,
        read_trec_sessions,
    )

    folder = shared_path("datasets", "trec_session_track")
    if folder is None:
        print("skipped: ../shared/datasets/trec_session_track is absent")
        return
    sessions = read_trec_sessions(folder / "sessiontrack2012.xml")
    qrels = read_trec_qrels(folder / "relevacne2012.txt")
    data = Sessions.build(sessions)
    started = time.perf_counter()
    fits = {"pbm": fit_pbm(data), "dbn": fit_dbn(data)}
    print(
        f"fitted PBM and DBN on {len(sessions)} sessions in {time.perf_counter() - started:.2f} s"
    )
    shown, _ = data.counts()
    for min_shown in (1, 2):
        judged = np.array(
            [k in qrels and shown[i] >= min_shown for i, k in enumerate(data.keys)], dtype=bool
        )
        human = np.array([qrels.get(k, 0) for k in data.keys])[judged]
        topics = np.array([k[0] for k in data.keys])[judged]
        signals = {**_signals(data, fits["pbm"]), "dbn": (fits["dbn"].scores, False)}
        print(
            f"\npairs judged and shown {min_shown}x or more: {judged.sum()} "
            f"({np.unique(topics).size} topics; NIST grades 0/1/2: {np.bincount(human).tolist()})"
        )
        print(
            f"{'signal':20} {'AUC':>6} | fixed: {'kappa':>6} {'P':>6} {'R':>6} | "
            f"fitted out of fold (median [range] over {len(SEEDS)} fold draws): kappa, P, R"
        )
        kappas = {}
        for name in ("pbm", "dbn", "clicked", "ctr"):
            scores, literal = signals[name]
            s = scores[judged]
            fixed = agreement(s.astype(int) if literal else grades(s), human, s)
            runs = [
                agreement(cross_validate(s, human, topics, folds=FOLDS, seed=seed), human, s)
                for seed in SEEDS
            ]
            k = [r["weighted_kappa"] for r in runs]
            p = statistics.median(r["precision"] for r in runs)
            r_ = statistics.median(r["recall"] for r in runs)
            kappas[name] = (fixed["weighted_kappa"], statistics.median(k))
            print(
                f"{NAMES[name]:20} {fixed['auc']:6.3f} | {fixed['weighted_kappa']:13.3f} "
                f"{fixed['precision']:6.3f} {fixed['recall']:6.3f} | "
                f"{statistics.median(k):.3f} [{min(k):.3f}-{max(k):.3f}], {p:.3f}, {r_:.3f}"
            )
        best_base = max(kappas["clicked"][1], kappas["ctr"][1])
        for model in ("pbm", "dbn"):
            fixed_k, fitted_k = kappas[model]
            print(
                f"{NAMES[model]}: fitted kappa / fixed {fitted_k / max(fixed_k, 1e-9):.2f}x;"
                f" / best baseline fitted {fitted_k / best_base:.2f}x"
            )


if __name__ == "__main__":
    main()
