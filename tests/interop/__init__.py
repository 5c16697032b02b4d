"""Interoperability tests against pypaimon, Apache Paimon's Python implementation."""
