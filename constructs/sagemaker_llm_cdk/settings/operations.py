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
BATCH_PERCENT_RANGE = (5, 50)
"""What AWS accepts as a rolling step, in percent of what runs. botocore: an inference component's
``MaximumBatchSize`` "must be between 5% to 50% of the copy count of the inference component"; an endpoint's
"must be between 5% to 50% of the variant's total instance count"."""


def batch_count_range(smallest: int, largest: int) -> tuple[int, int]:
    """(fewest, most) copies or instances a COPY_COUNT or INSTANCE_COUNT step may be so that it lies within
    ``BATCH_PERCENT_RANGE`` of every count from ``smallest`` to ``largest``; fewest > most when no count does.

    A model or endpoint that scales to zero has nothing to roll at zero: its smallest count is 1.
    """
    smallest = max(1, smallest)
    low, high = BATCH_PERCENT_RANGE
    return -(-max(smallest, largest) * low // 100), smallest * high // 100


def rolling_batch(smallest: int, largest: int) -> tuple[str, int]:
    """The rolling step AWS accepts at every count from ``smallest`` to ``largest`` copies or instances.

    ``("count", n)``: the fewest copies or instances within ``BATCH_PERCENT_RANGE`` of every count, when one
    is (e.g. 1 for 2-20 copies): a step of exactly n. Else ``("percent", p)``: CAPACITY_PERCENT, within the
    range whatever runs, of about one copy or instance at ``largest`` (100 / largest, at least 5, at most 50).
    """
    fewest, most = batch_count_range(smallest, largest)
    if fewest <= most:
        return "count", fewest
    low, high = BATCH_PERCENT_RANGE
    return "percent", min(high, max(low, 100 // max(1, largest)))


def batch_units(unit: str, value: int, count: int) -> int:
    """Copies or instances one step of ``(unit, value)`` replaces when ``count`` run.

    A percent is rounded up, and a step is at least one: AWS does not document how it rounds, and rounding up
    is the larger need (the headroom checks count with it).
    """
    if unit == "percent":
        return max(1, -(-count * value // 100))
    return value


class RolloutSettings(Settings):
    """How a model (inference component) update rolls out, and when SageMaker rolls it back.

    Default: about one copy at a time (a step within the 5-50% of the copy count AWS takes), five
    minutes of baking per batch while SageMaker watches the model's p99-latency and 5xx-rate alarms,
    all copies back at once on rollback.
    """

    enabled: Annotated[
        bool,
        Field(
            description=(
                "Give each inference component (and the endpoint) a DeploymentConfig with auto rollback. Default: true."
            )
        ),
    ] = True
    batch_copies: Annotated[
        int,
        Field(
            ge=1,
            le=1000,
            description=(
                "Copies replaced per rolling step (MaximumBatchSize, COPY_COUNT). AWS takes 5-50% of the copy count, "
                "so when set it must be that at every count a model may run: at least max_copies / 20 and at most "
                "min_copies / 2 (min_copies 0 counts as 1); a model whose copies do not allow it is refused. Unset: "
                "each model gets a step AWS takes for its copies: COPY_COUNT where one count fits every copy count (1 "
                "for 2-20 copies), else CAPACITY_PERCENT of about one copy (100 / max_copies, within 5-50). Default: "
                "unset (counted as 1 copy by preflight's headroom estimate)."
            ),
        ),
    ] = 1
    batch_percent: Annotated[
        int | None,
        Field(
            ge=5,
            le=50,
            description=(
                "Percent of a model's copy count replaced per rolling step (MaximumBatchSize, CAPACITY_PERCENT), 5-50 "
                "as AWS takes it; instead of batch_copies. Default: unset (see batch_copies)."
            ),
        ),
    ] = None
    rollback_batch_copies: Annotated[
        int | None,
        Field(
            ge=1,
            le=1000,
            description=("Copies restored per rollback step. Default: all at once (SageMaker's default)."),
        ),
    ] = None
    wait_seconds: Annotated[
        int,
        Field(
            ge=0,
            le=3600,
            description=(
                "Baking period after each step while the alarms are watched, 0-3600 s; also the endpoint's blue/green "
                "termination wait. Default: 300."
            ),
        ),
    ] = 300
    timeout_seconds: Annotated[
        int,
        Field(
            ge=600,
            le=28800,
            description=("Longest a whole rollout may take, 600-28800 s; model downloads count. Default: 14400 (4 h)."),
        ),
    ] = 14400
    endpoint_rollback: Annotated[
        bool,
        Field(
            description=(
                "Also give the endpoint a blue/green DeploymentConfig (all at once, baking period) that rolls back on "
                "the endpoint-level alarms, for instance-type or variant changes. Default: true."
            )
        ),
    ] = True

    @property
    def batch_copies_given(self) -> bool:
        """Whether ``batch_copies`` was written (a step of exactly that many copies), not left to the library."""
        return "batch_copies" in self.model_fields_set

    def _rules(self) -> list[Problem]:
        problems = []
        if self.timeout_seconds <= self.wait_seconds:
            problems.append(
                Problem(
                    "timeout_seconds",
                    self.timeout_seconds,
                    f"more than wait_seconds ({self.wait_seconds}): every step waits that long",
                    "raise timeout_seconds or lower wait_seconds",
                )
            )
        if self.batch_percent is not None and self.batch_copies_given:
            problems.append(
                Problem(
                    "batch_percent",
                    self.batch_percent,
                    f"not together with batch_copies ({self.batch_copies}): a step is either copies "
                    "or a percent of them",
                    "remove batch_copies or batch_percent",
                )
            )
        return problems


class MonitoringSettings(Settings):
    """Alarm thresholds and rollout policy of ``LlmMonitoring``. Set a threshold to null to turn its alarm off.

    Every alarm notifies one SNS topic (KMS-encrypted); ``email`` subscribes an address to it.
    """

    email: Annotated[
        str | None,
        Field(
            description=(
                "Subscribe this address to the alarm topic (the owner must confirm the subscription). Default: none."
            )
        ),
    ] = None
    p99_latency_seconds: Annotated[
        float | None,
        Field(
            gt=0,
            le=3600,
            description=(
                "Alarm when a model's (and the endpoint's) p99 ModelLatency stays above this many seconds for "
                "latency_minutes; also a rollback trigger. null: off. Default: 30."
            ),
        ),
    ] = 30.0
    latency_minutes: Annotated[
        int, Field(ge=1, le=60, description=("Consecutive minutes the latency must breach. Default: 5."))
    ] = 5
    error_rate_percent: Annotated[
        float | None,
        Field(
            gt=0,
            le=100,
            description=(
                "Alarm when 5xx responses exceed this share of invocations for error_rate_minutes; also a rollback "
                "trigger. null: off. Default: 5."
            ),
        ),
    ] = 5.0
    error_rate_minutes: Annotated[int, Field(ge=1, le=60, description="Consecutive minutes. Default: 5.")] = 5
    error_rate_min_requests: Annotated[
        int,
        Field(
            ge=1,
            le=1_000_000,
            description=(
                "Minutes with fewer invocations than this count as healthy (one failed request out of two is not an "
                "outage). Default: 10."
            ),
        ),
    ] = 10
    gpu_saturation_percent: Annotated[
        float | None,
        Field(
            gt=0,
            le=100,
            description=(
                "Alarm when a model's GPU utilization (normalized to the GPUs it holds) stays above this for "
                "gpu_saturation_minutes: it needs more copies or instances. null: off. Default: 95."
            ),
        ),
    ] = 95.0
    gpu_saturation_minutes: Annotated[int, Field(ge=1, le=1440, description="Consecutive minutes. Default: 30.")] = 30
    no_capacity_minutes: Annotated[
        int | None,
        Field(
            ge=1,
            le=1440,
            description=(
                "For models that scale to zero: alarm when requests keep finding no copy "
                "(NoCapacityInvocationFailures) for this many consecutive minutes. null: off. Default: 15."
            ),
        ),
    ] = 15
    capacity_plan_warning_days: Annotated[
        int | None,
        Field(
            ge=1,
            le=182,
            description=("monitor_capacity_plan: alarm when a plan has fewer days left. null: off. Default: 14."),
        ),
    ] = 14
    eagle_job_failed: Annotated[
        bool, Field(description=("monitor_eagle: alarm when an EAGLE optimization job fails. Default: true."))
    ] = True
    front_door_errors: Annotated[
        int | None,
        Field(
            ge=1,
            le=1_000_000,
            description=(
                "monitor_front_door: alarm when the front door has at least this many errors in 5 minutes. null: off. "
                "Default: 5."
            ),
        ),
    ] = 5
    rollout: Annotated[
        RolloutSettings,
        Field(description=("Rolling updates with auto rollback. Default: about one copy at a time, 5-minute baking.")),
    ] = RolloutSettings()

    def _rules(self) -> list[Problem]:
        if self.email is not None and (not _EMAIL.match(self.email) or len(self.email) > 254):
            return [
                Problem(
                    "email",
                    self.email,
                    "an email address like ops@example.com",
                    "write the address as name@domain, or remove email",
                )
            ]
        return []
