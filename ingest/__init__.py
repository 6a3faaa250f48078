"""The ingest stage: search logs (and UBI), tickets, chat, the corpus and manual queries into the
store, one transaction per file, with every input row accounted for (stored, rejected with its
line and reason, or already present) and PII redacted before anything is stored.

The functions, one per command, are in ``goldmine.ingest.api``; ``goldmine.ingest.corpus``
has ``current_snapshot_id(con)`` for the stages that read the corpus.
"""
