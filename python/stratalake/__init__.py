"""stratalake: Apache Paimon-style primary-key tables for Apache Spark, in Python."""

from __future__ import annotations

__version__ = "0.1.0"
