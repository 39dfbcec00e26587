"""The page and thread stores: one contract, run against the embedded store and PostgreSQL."""
