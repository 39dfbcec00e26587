"""Evaluation: the question-set harness, benchmarks, and the loopback fakes of Slack, Discord and
Gemini that tests and benchmarks share."""
