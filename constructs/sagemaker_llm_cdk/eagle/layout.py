"""Where the EAGLE loop keeps its artifacts: the prefixes of its bucket and the names it makes."""

from __future__ import annotations

DATASETS = "datasets"
MAP_RESULTS = "map-results"
JOBS = "jobs"
REPORTS = "reports"
JOB_NAME_PREFIX = "eagle-"
"""Optimization job names start with this (``lambda/eagle_job`` names jobs ``eagle-<model>-<hash>``)."""
