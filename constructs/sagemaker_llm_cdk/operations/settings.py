"""Settings of operations: how a model update rolls out (``RolloutSettings``) and what is monitored and who is
warned (``MonitoringSettings``).
"""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from ..core.errors import Problem
from ..core.settings import Settings


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
MAX_ROLLBACK_ALARMS = 10
"""SageMaker's limit on AutoRollbackConfiguration.Alarms."""
MAX_ALARM_METRICS = 10
"""CloudWatch's limit on the metrics one alarm's math expression reads."""


class RolloutSettings(Settings):
    """How a model (inference component) update rolls out, and when SageMaker rolls it back.

    Default: one copy at a time, five minutes of baking per batch while SageMaker watches the
    model's p99-latency and 5xx-rate alarms, all copies back at once on rollback.
    """

    enabled: Annotated[bool, Field(description=(
        "Give each inference component (and the endpoint) a DeploymentConfig with auto rollback. Default: true."))] = True
    batch_copies: Annotated[int, Field(ge=1, le=1000, description=(
        "Copies replaced per rolling step (MaximumBatchSize, COPY_COUNT). Default: 1."))] = 1
    rollback_batch_copies: Annotated[int | None, Field(ge=1, le=1000, description=(
        "Copies restored per rollback step. Default: all at once (SageMaker's default)."))] = None
    wait_seconds: Annotated[int, Field(ge=0, le=3600, description=(
        "Baking period after each step while the alarms are watched, 0-3600 s; also the endpoint's blue/green "
        "termination wait. Default: 300."))] = 300
    timeout_seconds: Annotated[int, Field(ge=600, le=28800, description=(
        "Longest a whole rollout may take, 600-28800 s; model downloads count. Default: 14400 (4 h)."))] = 14400
    endpoint_rollback: Annotated[bool, Field(description=(
        "Also give the endpoint a blue/green DeploymentConfig (all at once, baking period) that rolls back on the "
        "endpoint-level alarms, for instance-type or variant changes. Default: true."))] = True

    def _rules(self) -> list[Problem]:
        if self.timeout_seconds <= self.wait_seconds:
            return [Problem("timeout_seconds", self.timeout_seconds,
                            f"more than wait_seconds ({self.wait_seconds}): every step waits that long",
                            "raise timeout_seconds or lower wait_seconds")]
        return []


class MonitoringSettings(Settings):
    """Alarm thresholds and rollout policy of ``LlmMonitoring``. Set a threshold to null to turn its alarm off.

    Every alarm notifies one SNS topic (KMS-encrypted); ``email`` subscribes an address to it.
    """

    email: Annotated[str | None, Field(description=(
        "Subscribe this address to the alarm topic (the owner must confirm the subscription). Default: none."))] = None
    p99_latency_seconds: Annotated[float | None, Field(gt=0, le=3600, description=(
        "Alarm when a model's (and the endpoint's) p99 ModelLatency stays above this many seconds for "
        "latency_minutes; also a rollback trigger. null: off. Default: 30."))] = 30.0
    latency_minutes: Annotated[int, Field(ge=1, le=60, description=(
        "Consecutive minutes the latency must breach. Default: 5."))] = 5
    error_rate_percent: Annotated[float | None, Field(gt=0, le=100, description=(
        "Alarm when 5xx responses exceed this share of invocations for error_rate_minutes; also a rollback "
        "trigger. null: off. Default: 5."))] = 5.0
    error_rate_minutes: Annotated[int, Field(ge=1, le=60, description="Consecutive minutes. Default: 5.")] = 5
    error_rate_min_requests: Annotated[int, Field(ge=1, le=1_000_000, description=(
        "Minutes with fewer invocations than this count as healthy (one failed request out of two is not an "
        "outage). Default: 10."))] = 10
    gpu_saturation_percent: Annotated[float | None, Field(gt=0, le=100, description=(
        "Alarm when a model's GPU utilization (normalized to the GPUs it holds) stays above this for "
        "gpu_saturation_minutes: it needs more copies or instances. null: off. Default: 95."))] = 95.0
    gpu_saturation_minutes: Annotated[int, Field(ge=1, le=1440, description="Consecutive minutes. Default: 30.")] = 30
    no_capacity_minutes: Annotated[int | None, Field(ge=1, le=1440, description=(
        "For models that scale to zero: alarm when requests keep finding no copy "
        "(NoCapacityInvocationFailures) for this many consecutive minutes. null: off. Default: 15."))] = 15
    capacity_plan_warning_days: Annotated[int | None, Field(ge=1, le=182, description=(
        "monitor_capacity_plan: alarm when a plan has fewer days left. null: off. Default: 14."))] = 14
    eagle_job_failed: Annotated[bool, Field(description=(
        "monitor_eagle: alarm when an EAGLE optimization job fails. Default: true."))] = True
    front_door_errors: Annotated[int | None, Field(ge=1, le=1_000_000, description=(
        "monitor_front_door: alarm when the front door has at least this many errors in 5 minutes. null: off. "
        "Default: 5."))] = 5
    rollout: Annotated[RolloutSettings, Field(description=(
        "Rolling updates with auto rollback. Default: one copy at a time, 5-minute baking."))] = RolloutSettings()

    def _rules(self) -> list[Problem]:
        if self.email is not None and (not _EMAIL.match(self.email) or len(self.email) > 254):
            return [Problem("email", self.email, "an email address like ops@example.com",
                            "write the address as name@domain, or remove email")]
        return []


