"""Every numeric setting is classified: it becomes an AWS member whose bounds it takes from botocore's model, or it
is not an AWS property (with why). A new numeric field fails here until it is classified; a botocore whose bounds
moved fails here until the settings follow (they read botocore's bounds themselves, so this shows the mapping)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from decimal import Decimal
from typing import Any

import annotated_types
import pytest
import sagemaker_llm_cdk.settings
from pydantic import BaseModel
from sagemaker_llm_cdk.core import service_model

MODULES = (
    "sagemaker_llm_cdk.core.settings",
    *(f"sagemaker_llm_cdk.settings.{m.name}" for m in pkgutil.iter_modules(sagemaker_llm_cdk.settings.__path__)),
)
"""Every module of the settings floor, and the base of its models."""

AWS_MEMBERS: dict[tuple[str, str], tuple[str, str, str, str]] = {
    # (settings class, field): (service, shape, the member it becomes, "" or why the project's range is narrower)
    ("AsyncRouting", "max_time_in_backlog_seconds"): (
        "sagemaker",
        "InferenceRouterMaxTimeInBacklogSeconds",
        "InferenceRouter ClientConfig.MaxTimeInBacklogSeconds",
        "",
    ),
    ("Routing", "prefix_length"): (
        "sagemaker",
        "PrefixAwareRoutingPrefixLength",
        "ProductionVariantRoutingConfig.PrefixAwareRoutingConfig.PrefixLength",
        "",
    ),
    ("Routing", "concurrency_threshold"): (
        "sagemaker",
        "PrefixAwareRoutingConcurrencyThreshold",
        "PrefixAwareRoutingConfig.ConcurrencyThreshold",
        "",
    ),
    ("Placement", "max_zone_imbalance"): (
        "sagemaker",
        "AvailabilityZoneBalanceMaxImbalance",
        "InferenceComponentAvailabilityZoneBalance.MaxImbalance",
        "",
    ),
    ("InstanceRequirements", "cpu_cores"): (
        "sagemaker",
        "NumberOfCpuCores",
        "ComputeResourceRequirements.NumberOfCpuCoresRequired",
        "at most 1024: AWS sets no maximum, no instance has more cores",
    ),
    ("ModelSpec", "cpu_cores"): (
        "sagemaker",
        "NumberOfCpuCores",
        "ComputeResourceRequirements.NumberOfCpuCoresRequired",
        "at most 1024: AWS sets no maximum, no instance has more cores",
    ),
    ("InstanceRequirements", "accelerators"): (
        "sagemaker",
        "NumberOfAcceleratorDevices",
        "ComputeResourceRequirements.NumberOfAcceleratorDevicesRequired",
        "whole devices, at most 64: AWS sets no maximum",
    ),
    ("ModelSpec", "accelerators"): (
        "sagemaker",
        "NumberOfAcceleratorDevices",
        "ComputeResourceRequirements.NumberOfAcceleratorDevicesRequired",
        "whole devices, at most 64: AWS sets no maximum",
    ),
    ("InstanceRequirements", "min_memory_mb"): (
        "sagemaker",
        "MemoryInMb",
        "ComputeResourceRequirements.MinMemoryRequiredInMb",
        "at most 4,000,000: AWS sets no maximum",
    ),
    ("ModelSpec", "min_memory_mb"): (
        "sagemaker",
        "MemoryInMb",
        "ComputeResourceRequirements.MinMemoryRequiredInMb",
        "at most 4,000,000: AWS sets no maximum",
    ),
    ("ModelSpec", "model_data_download_timeout_seconds"): (
        "sagemaker",
        "ProductionVariantModelDataDownloadTimeoutInSeconds",
        "InferenceComponentStartupParameters.ModelDataDownloadTimeoutInSeconds",
        "",
    ),
    ("ModelSpec", "container_startup_timeout_seconds"): (
        "sagemaker",
        "ProductionVariantContainerStartupHealthCheckTimeoutInSeconds",
        "InferenceComponentStartupParameters.ContainerStartupHealthCheckTimeoutInSeconds",
        "",
    ),
    ("InstancePool", "priority"): (
        "sagemaker",
        "InstancePoolPriority",
        "ProductionVariant.InstancePools[].Priority",
        "",
    ),
    ("EndpointOptions", "volume_size_gb"): (
        "sagemaker",
        "ProductionVariantVolumeSizeInGB",
        "ProductionVariant.VolumeSizeInGB",
        "",
    ),
    ("EndpointOptions", "instance_provision_timeout_seconds"): (
        "sagemaker",
        "VariantInstanceProvisionTimeoutInSeconds",
        "ProductionVariant.VariantInstanceProvisionTimeoutInSeconds",
        "",
    ),
    ("InstanceScaling", "min_instances"): (
        "sagemaker",
        "ManagedInstanceScalingMinInstanceCount",
        "ProductionVariantManagedInstanceScaling.MinInstanceCount",
        "at most 1000: AWS sets no maximum",
    ),
    ("InstanceScaling", "max_instances"): (
        "sagemaker",
        "ManagedInstanceScalingMaxInstanceCount",
        "ProductionVariantManagedInstanceScaling.MaxInstanceCount",
        "at most 1000: AWS sets no maximum",
    ),
    ("InstanceScaling", "initial_instances"): (
        "sagemaker",
        "InitialTaskCount",
        "ProductionVariant.InitialInstanceCount",
        "at most 1000: AWS sets no maximum",
    ),
    ("CopyScaling", "min_copies"): (
        "sagemaker",
        "InferenceComponentCopyCount",
        "RuntimeConfig.CopyCount and the scalable target's MinCapacity",
        "at most 1000: AWS sets no maximum",
    ),
    ("CopyScaling", "max_copies"): (
        "sagemaker",
        "InferenceComponentCopyCount",
        "the scalable target's MaxCapacity",
        "at least 1 (a component that can never run a copy serves nothing), at most 1000",
    ),
    ("DataCapture", "sampling_percentage"): (
        "sagemaker",
        "SamplingPercentage",
        "DataCaptureConfig.InitialSamplingPercentage",
        "at least 1: 0 captures nothing (turn data capture off instead)",
    ),
    ("RolloutSettings", "wait_seconds"): (
        "sagemaker",
        "WaitIntervalInSeconds",
        "RollingUpdatePolicy.WaitIntervalInSeconds",
        "",
    ),
    ("RolloutSettings", "timeout_seconds"): (
        "sagemaker",
        "MaximumExecutionTimeoutInSeconds",
        "RollingUpdatePolicy.MaximumExecutionTimeoutInSeconds",
        "",
    ),
    ("EagleSettings", "max_instance_count"): (
        "sagemaker",
        "OptimizationJobMaxInstanceCount",
        "CreateOptimizationJob.MaxInstanceCount",
        "at most 64: AWS sets no maximum",
    ),
}

NOT_AWS_PROPERTIES: dict[tuple[str, str], str] = {
    ("RouterSpec", "unroutable_alarm_periods"): "EvaluationPeriods of the library's own router alarm (1-288: a day "
    "of five-minute checks)",
    ("DataCapture", "retention_days"): "an S3 lifecycle expiration the library sets on its own capture bucket",
    ("CopyScaling", "target_concurrent_requests_per_copy"): "the target tracking policy's TargetValue (a double "
    "with no bounds in Application Auto Scaling's model)",
    ("CopyScaling", "scale_in_cooldown_seconds"): "Application Auto Scaling's Cooldown (an integer with no bounds)",
    ("CopyScaling", "scale_out_cooldown_seconds"): "Application Auto Scaling's Cooldown (an integer with no bounds)",
    ("CapacityPlanSpec", "instance_count"): "checked by the plan's own rule against ReservedCapacityInstanceCount",
    ("CapacityPlanSpec", "duration_days"): "days, checked by the plan's rule (SageMaker's plans last 1-182 days)",
    ("CapacityPlanSpec", "max_upfront_fee_usd"): "the purchase's own cap, compared with the offering's fee",
    ("PlanExtension", "max_upfront_fee_usd"): "the extension's own cap, compared with the offering's fee",
    ("CapacityPlanSpec", "expiry_warning_days"): "when the library's expiry alarm warns",
    ("EagleDataset", "min_new_records"): "the library's own trigger for starting a run",
    ("EagleDataset", "retention_days"): "an S3 lifecycle expiration the library sets on its dataset prefix",
    ("EagleBenchmarkSettings", "max_hours"): "the benchmark job's budget the state machine enforces",
    ("EagleBenchmarkSettings", "deploy_wait_hours"): "how long the state machine waits for a deploy",
    ("EagleBenchmarkSettings", "slowdown_tolerance"): "the library's comparison of two benchmark runs",
    ("EagleBenchmarkSettings", "parameters"): "workload parameters passed through to the benchmark's workload config",
    ("EagleSettings", "max_runtime_hours"): "hours; becomes StoppingCondition.MaxRuntimeInSeconds (min 1 s in the "
    "model; at most 28 days in its documentation text, not in the shape)",
    ("EagleSettings", "speedup_threshold"): "the library's promotion rule",
    ("EagleSettings", "num_speculative_tokens"): "a vLLM speculative_config value in the container's environment",
    ("EagleSettings", "pretrained_head_speedup"): "the library's promotion rule",
    ("SessionSettings", "expiration_seconds"): "the front door's conversation lifetime in DynamoDB",
    ("SessionSettings", "max_body_bytes"): "the front door's request limit (6 MB is InvokeEndpoint's payload limit)",
    ("SessionSettings", "turn_log_retention_days"): "an S3 lifecycle expiration of the turn-log bucket",
    ("RolloutSettings", "batch_copies"): "a rolling step, sized within AWS's 5-50% of the copy count by its own rule",
    (
        "RolloutSettings",
        "batch_percent",
    ): "CapacitySize CAPACITY_PERCENT: AWS documents 5-50% in text, not in the shape",
    ("RolloutSettings", "rollback_batch_copies"): "a rolling step, sized within AWS's 5-50% by its own rule",
    ("LoraSettings", "max_gpu_adapters"): "an LMI container option (OPTION_MAX_LORAS)",
    ("LoraSettings", "max_cpu_adapters"): "an LMI container option (OPTION_MAX_CPU_LORAS)",
    ("LoraSettings", "max_rank"): "an LMI container option (OPTION_MAX_LORA_RANK), checked against vLLM's ranks",
    ("BudgetSettings", "max_usd_per_month"): "the budget's limit and the synth's refusal threshold",
    ("BudgetSettings", "actual_percent"): "AWS Budgets notification thresholds",
    ("BudgetSettings", "forecasted_percent"): "AWS Budgets notification thresholds",
}
"""Numeric settings that are not one AWS member, or whose member's bounds live elsewhere, and why."""
NUMERIC = (int, float, Decimal)


def _numeric(annotation: Any) -> bool:
    """Whether a field's type is, or holds, a number (``int | None``, ``tuple[int, ...]``, ``dict[str, int | str]``)."""
    if isinstance(annotation, type):
        return issubclass(annotation, NUMERIC) and annotation is not bool
    return any(_numeric(arg) for arg in typing.get_args(annotation))


def settings_models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and issubclass(cls, BaseModel) and cls.__module__ == module.__name__:
                found[cls.__name__] = cls
    return found


def numeric_fields() -> list[tuple[str, str, Any]]:
    out = []
    for _name, cls in sorted(settings_models().items()):
        for field_name, info in cls.model_fields.items():
            if _numeric(info.annotation):
                owner = next(c.__name__ for c in cls.__mro__ if field_name in getattr(c, "__annotations__", {}))
                out.append((owner, field_name, info))
    return sorted({(o, f): (o, f, i) for o, f, i in out}.values(), key=lambda t: (t[0], t[1]))


def bound(info: Any, kind: type) -> Any:
    for item in info.metadata:
        if isinstance(item, kind):
            return getattr(item, {annotated_types.Ge: "ge", annotated_types.Le: "le"}[kind])
    return None


def test_every_numeric_setting_is_classified():
    unclassified = [
        f"{owner}.{name}"
        for owner, name, _ in numeric_fields()
        if (owner, name) not in AWS_MEMBERS
        and (owner, name) not in NOT_AWS_PROPERTIES
        and owner != "MonitoringSettings"
    ]  # thresholds and periods of the library's own alarms
    assert unclassified == [], (
        "classify each new numeric setting in AWS_MEMBERS (the botocore shape it becomes) "
        f"or NOT_AWS_PROPERTIES (why not): {unclassified}"
    )


def test_the_tables_name_only_settings_that_exist():
    fields = {(owner, name) for owner, name, _ in numeric_fields()}
    assert set(AWS_MEMBERS) - fields == set()
    assert set(NOT_AWS_PROPERTIES) - fields == set()


@pytest.mark.parametrize("key", sorted(AWS_MEMBERS), ids=lambda k: f"{k[0]}.{k[1]}")
def test_a_setting_takes_aws_bounds_or_says_why_it_is_narrower(key):
    service, shape, member, narrower = AWS_MEMBERS[key]
    low, high = service_model.limits(shape, service)
    (info,) = [i for owner, name, i in numeric_fields() if (owner, name) == key]
    ge, le = bound(info, annotated_types.Ge), bound(info, annotated_types.Le)
    if low is not None:
        assert ge is not None and ge >= low, f"{key} allows {ge}, below {member}'s minimum {low}"
    if high is not None:
        assert le is not None and le <= high, f"{key} allows {le}, above {member}'s maximum {high}"
    if (ge, le) != (low, high):
        assert narrower, f"{key}: {ge}-{le} differs from {member}'s {low}-{high}; say why in AWS_MEMBERS"
    else:
        assert not narrower, f"{key} takes {member}'s range exactly; drop the reason"


def test_the_provision_timeout_is_aws_300_to_3600():
    """botocore (VariantInstanceProvisionTimeoutInSeconds), CloudFormation's schema and the heterogeneous-endpoints
    guide all say 300-3600; the setting once took 1800-10800."""
    from sagemaker_llm_cdk.settings.hosting import EndpointOptions

    info = EndpointOptions.model_fields["instance_provision_timeout_seconds"]
    assert (bound(info, annotated_types.Ge), bound(info, annotated_types.Le)) == (300, 3600)
    assert service_model.limits("VariantInstanceProvisionTimeoutInSeconds") == (300, 3600)


def test_limits_refuse_a_shape_that_is_not_a_number():
    with pytest.raises(ValueError, match=r"sagemaker shape EndpointName is a string, not a number"):
        service_model.limits("EndpointName")
    with pytest.raises(ValueError, match=r"sagemaker shape InferenceComponentCopyCount has no max"):
        service_model.aws_max("InferenceComponentCopyCount")
