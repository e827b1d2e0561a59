"""Settings of how a model's copies run: how many (``CopyScaling``, with autoscaling on concurrent requests per
copy), where SageMaker places them over instances and Availability Zones (``Placement``), and what one copy needs
on each instance type of an endpoint with instance pools (``InstanceRequirements``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import Problem
from ..core.service_model import aws_max, aws_min
from ..core.settings import Settings


class CopyScaling(Settings):
    """How many copies of a model run, scaled on concurrent requests per copy.

    Default: exactly one copy, no autoscaling. With ``max_copies`` above ``min_copies`` a
    target-tracking policy keeps concurrent requests per copy near the target (high-resolution,
    10-second metric). With ``min_copies: 0`` the model scales to zero when idle, and a
    step policy brings one copy back when a request finds no capacity.
    """

    min_copies: Annotated[
        int, Field(ge=0, le=1000, description="Fewest copies; 0 scales to zero when idle. Default: 1.")
    ] = 1
    max_copies: Annotated[int, Field(ge=1, le=1000, description="Most copies. Default: 1.")] = 1
    target_concurrent_requests_per_copy: Annotated[
        float,
        Field(gt=0, le=10000, description=("Target tracking value for concurrent requests per copy. Default: 4.")),
    ] = 4.0
    scale_in_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 300.")] = 300
    scale_out_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 60.")] = 60
    pin_copy_count: Annotated[
        bool,
        Field(
            description=(
                "Autoscaled models only: also write RuntimeConfig.CopyCount (min_copies, at least 1) into the "
                "template. CloudFormation then sets the copy count back to it on every update of the component (a new "
                "image, a promoted draft head), whatever autoscaling had scaled to. Default: false: the template "
                "leaves the copy count to autoscaling, which starts the component at min_copies."
            )
        ),
    ] = False

    @property
    def initial(self) -> int:
        """Copies at creation: an inference component cannot be created with 0 copies."""
        return max(1, self.min_copies)

    @property
    def autoscaled(self) -> bool:
        return self.max_copies > self.min_copies or self.min_copies == 0

    @property
    def template_copy_count(self) -> int | None:
        """``RuntimeConfig.CopyCount`` for the template, or None to leave ``RuntimeConfig`` out.

        ``CopyCount`` is write-only in CloudFormation and its update handler calls
        ``UpdateInferenceComponentRuntimeConfig``: a count in the template resets an autoscaled
        component on every update (the ``DesiredCount`` problem of ECS services). So when
        autoscaling manages the count, the template does not carry one (unless ``pin_copy_count``).
        """
        if self.autoscaled and not self.pin_copy_count:
            return None
        return self.initial

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_copies > self.max_copies:
            problems.append(
                Problem(
                    "min_copies",
                    self.min_copies,
                    f"at most max_copies ({self.max_copies})",
                    "lower min_copies or raise max_copies",
                )
            )
        if self.pin_copy_count and not self.autoscaled:
            problems.append(
                Problem(
                    "pin_copy_count",
                    True,
                    "only for autoscaled models (a fixed count is always in the template)",
                    "remove pin_copy_count",
                )
            )
        return problems


class Placement(Settings):
    """Where SageMaker places a model's copies as they are added and removed (``SchedulingConfig``).

    Default: ``SPREAD`` over instances, balanced across Availability Zones (``PERMISSIVE``, at
    most one copy of difference), so losing one zone leaves copies running in the others.
    CloudFormation requires the zone balance whenever a placement is given, so it is always set.
    """

    strategy: Annotated[
        Literal["SPREAD", "BINPACK"],
        Field(
            description=(
                "SPREAD (copies spread over instances: one instance or zone lost takes the fewest copies) or BINPACK "
                "(copies packed onto few instances: frees whole instances to scale in, at the cost of resilience). "
                "Within each zone when zones are balanced. Default: SPREAD."
            )
        ),
    ] = "SPREAD"
    max_zone_imbalance: Annotated[
        int,
        Field(
            ge=aws_min("AvailabilityZoneBalanceMaxImbalance"),
            le=aws_max("AvailabilityZoneBalanceMaxImbalance"),
            description=(
                "Most copies by which any two Availability Zones may differ (AvailabilityZoneBalance.MaxImbalance, "
                "0-100); applies when the endpoint has instances in two or more zones. The balance is PERMISSIVE, the "
                "one mode SageMaker offers: copies are still placed when capacity cannot be balanced. Default: 1."
            ),
        ),
    ] = 1

    @classmethod
    def spread(cls, *, max_zone_imbalance: int = 1) -> Placement:
        return cls(strategy="SPREAD", max_zone_imbalance=max_zone_imbalance)

    @classmethod
    def binpack(cls, *, max_zone_imbalance: int = 1) -> Placement:
        return cls(strategy="BINPACK", max_zone_imbalance=max_zone_imbalance)


class InstanceRequirements(Settings):
    """What one copy of a model needs on one instance type of an endpoint with ``instance_pools``.

    Each field left out takes the model's own value (``accelerators``, ``min_memory_mb``, ``cpu_cores``).
    """

    instance_type: Annotated[str, Field(description="One of the endpoint's instance_pools types.")]
    accelerators: Annotated[
        int | None, Field(ge=1, le=64, description=("GPUs per copy on this type. Default: the model's accelerators."))
    ] = None
    min_memory_mb: Annotated[
        int | None,
        Field(
            ge=128,
            le=4_000_000,
            description=("Host memory per copy on this type, MB. Default: the model's min_memory_mb."),
        ),
    ] = None
    cpu_cores: Annotated[
        float | None,
        Field(
            ge=aws_min("NumberOfCpuCores"),
            le=1024,
            description=("CPU cores per copy on this type, at least 0.25. Default: the model's cpu_cores."),
        ),
    ] = None
