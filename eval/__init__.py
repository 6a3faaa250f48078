"""The eval stage: score a retriever's ranked chunk ids against a gold set, exactly and fast."""
