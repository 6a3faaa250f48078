"""Tables the triage stage writes (migrations 200-299)."""

from goldmine.store import Migration

MIGRATIONS: list[Migration] = []
