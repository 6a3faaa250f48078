"""The triage stage."""
