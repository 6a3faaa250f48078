"""goldmine: turn production traffic into a retrieval gold set, and score retrievers against it.

The core package holds what the four stages share: the DuckDB store and its migrations, config
resolution, errors, text utilities and the CLI entry. The stages themselves live in
``goldmine.ingest``, ``goldmine.triage``, ``goldmine.goldset`` and ``goldmine.eval``.
"""

__version__ = "0.1.0"
