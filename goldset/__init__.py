"""The goldset stage."""
