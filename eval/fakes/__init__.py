"""Loopback fakes of the remote services, at least as strict as the real ones (see the README)."""
