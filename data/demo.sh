#!/usr/bin/env bash
# The demo: the whole pipeline on the bundled sample data (a fictional shop, Northwind Outfitters).
# Run it with `make demo`; everything it writes goes to demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=demo-out
rm -rf "$OUT" && mkdir -p "$OUT"
export GOLDMINE_DB="$OUT/goldmine.duckdb"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. The seed lesson's worked example: three queries, their gold chunk, what retrieval returned"
goldmine eval run --gold data/seed/gold.json --run data/seed/runs.json \
  --metrics recall@1,recall@3,mrr --no-store

step "2. A TREC qrels + run pair (ties broken as trec_eval does; a no-answer query scored apart)"
goldmine eval run --gold data/trec/qrels.txt --run data/trec/run.trec \
  --metrics recall@1,recall@3,mrr,ndcg@3,map --abstain-below 1 --no-store
if [ -d ../shared/conformance/trec_eval ]; then
  step "   ... and trec_eval's own test fixture; trec_eval's expected numbers follow"
  goldmine eval run --gold ../shared/conformance/trec_eval/qrels.test \
    --run ../shared/conformance/trec_eval/results.test \
    --metrics map,recip_rank,P_10,ndcg_cut_10,success_5 --no-store
  grep -E '^(map|recip_rank|P_10|ndcg_cut_10|success_5) ' ../shared/conformance/trec_eval/out.test.a \
    | grep -w all || true
fi

step "3. Monday import: the corpus, week 1 of search logs, tickets and chat"
goldmine ingest corpus data/sample/corpus.jsonl
goldmine ingest searchlog data/sample/searchlog_week1.jsonl --redact
goldmine ingest tickets data/sample/tickets.json
goldmine ingest chat data/sample/chat.jsonl

step "4. Triage: normalize, dedupe, embed, cluster; the failures nobody covers on top"
goldmine triage run
goldmine triage show --top 10

step "5. The starter set: fifty queries that cover the traffic, drafted with BM25"
goldmine gold starter --n 50
goldmine gold draft --retriever bm25 -k 10
step "   a scripted review (the label command standing in for the person), publish, export"
python data/review_demo.py --by demo-reviewer
goldmine gold publish -m "starter set" --by demo-reviewer
goldmine gold export --version v1 --out "$OUT/gold"
goldmine gold export --version v1 --out "$OUT/gold" --format trec

step "6. Regression eval: two retriever configurations on gold v1, one history row each"
goldmine eval run --gold v1 --baseline bm25 --label bm25 --history "$OUT/eval-history.csv"
goldmine eval run --gold v1 --baseline hybrid --label hybrid --history "$OUT/eval-history.csv"
step "   compare them query by query: better, worse, or inside the noise"
goldmine eval compare bm25 hybrid --plot "$OUT/compare.html"
goldmine eval history --file "$OUT/eval-history.csv" --plot "$OUT/history.html"

step "7. The next Monday: week 2 overlaps week 1, so only its new rows are stored"
goldmine ingest searchlog data/sample/searchlog_week2.jsonl --redact
goldmine ingest searchlog data/sample/searchlog_week1.jsonl --redact
goldmine triage run
goldmine status
step "   what to label next: the uncovered clusters worth most (the set grows from here)"
goldmine gold next --top 5

step "Done. Everything is in $OUT/: the store, gold/v0001.jsonl, the history, compare.html, history.html"
