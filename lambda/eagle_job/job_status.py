"""The final state of an optimization job: whether it is terminal, and when it ran.

``record`` runs once the state machine's wait loop saw a terminal status in DescribeOptimizationJob; the
response (``job_events`` ``JobDescription``) gives the job's start and end, with the creation and last
modification times standing in for a job that never started or never reported an end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from job_errors import JobNotTerminalError
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only
    from datetime import datetime
    from typing import TypeAlias

    # job_events.models() classes, built on first use
    JobDescription: TypeAlias = Any
    RecordEvent: TypeAlias = Any

TERMINAL_STATUSES = frozenset({"COMPLETED", "FAILED", "STOPPED"})


def terminal_status(run: RecordEvent) -> str:
    """The job's status; JobNotTerminalError while it is not one of ``TERMINAL_STATUSES``."""
    status: str = run.job.OptimizationJobStatus
    if status not in TERMINAL_STATUSES:
        raise JobNotTerminalError(
            f"optimization job {run.job_name!r} has job.OptimizationJobStatus {_shown(status)}; record only after it "
            "is one of "
            f"{sorted(TERMINAL_STATUSES)} (the state machine's wait loop should not have exited)."
        )
    return status


def began(job: JobDescription) -> datetime | None:
    """When the job started optimizing (its creation time when it never did)."""
    return job.OptimizationStartTime or job.CreationTime


def ended(job: JobDescription) -> datetime | None:
    """When the job ended (its last modification when it reported no end)."""
    return job.OptimizationEndTime or job.LastModifiedTime
