"""Whole runs: the CLI, both pipelines, bad input, faults, evaluation, a database that restarts."""
