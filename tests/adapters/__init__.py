"""Slack and Discord through their real client libraries, against strict loopback fakes."""
