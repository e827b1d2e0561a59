"""Where the EAGLE loop keeps its artifacts: the prefixes of its bucket and the names it makes."""

from __future__ import annotations

from ..settings.eagle import JOB_NAME_PREFIX as JOB_NAME_PREFIX  # the serving model's name rule reads it too

DATASETS = "datasets"
MAP_RESULTS = "map-results"
JOBS = "jobs"
REPORTS = "reports"
BENCHMARKS = "benchmarks"
"""Prefix of the artifacts bucket the benchmark jobs write to."""
