"""Tables the goldset stage writes (migrations 300-399)."""

from goldmine.store import Migration

MIGRATIONS: list[Migration] = []
