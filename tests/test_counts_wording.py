"""A count and its noun agree: one gold query was reported as "1 queries", one drafted query as
"drafted 1 queries", one published item as "published v1: 1 queries"."""

from __future__ import annotations

import pytest

from goldmine.output import count


@pytest.mark.parametrize(
    ("n", "noun", "expected"),
    [
        (1, "query", "1 query"),
        (0, "query", "0 queries"),
        (2, "query", "2 queries"),
        (12345, "query", "12,345 queries"),
        (1, "judgment", "1 judgment"),
        (3, "judgment", "3 judgments"),
        (2, "match", "2 matches"),
        (2, "day", "2 days"),
        (2, "index", "2 indexes"),
    ],
)
def test_a_count_and_its_noun_agree(n, noun, expected):
    assert count(n, noun) == expected
