"""Reliability tests: concurrency, crashes, bad input and corrupt files, object storage."""
