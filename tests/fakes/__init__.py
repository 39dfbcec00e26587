"""Loopback fakes of the remote services, at least as strict as the real ones (see docs/evaluation.md, Tests)."""
