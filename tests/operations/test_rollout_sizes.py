"""Rolling steps AWS takes: every copy and instance count the settings allow gets a MaximumBatchSize within
5-50% of what runs, and a batch_copies written outside that range is refused in the config's terms."""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import botocore
import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    CopyScaling,
    EndpointOptions,
    InstanceScaling,
    LlmEndpoint,
    LlmMonitoring,
    ModelSpec,
)
from sagemaker_llm_cdk.capacity.capacity_plan import CapacityPlan
from sagemaker_llm_cdk.settings.operations import (
    BATCH_PERCENT_RANGE,
    RolloutSettings,
    batch_count_range,
    batch_units,
    rolling_batch,
)

pytestmark = pytest.mark.synth

SERVICE_MODEL = Path(botocore.__file__).parent / "data" / "sagemaker" / "2017-07-24" / "service-2.json.gz"
COMPONENT_RANGE = "The value must be between 5% to 50% of the copy count of the inference component."
"""botocore, ``InferenceComponentRollingUpdatePolicy.MaximumBatchSize``."""
ENDPOINT_RANGE = "Value must be between 5% to 50% of the variant's total instance count."
"""botocore, ``RollingUpdatePolicy.MaximumBatchSize`` (the endpoint's ``DeploymentConfig``)."""
COUNTS = (1, 2, 3, 4, 5, 9, 10, 11, 19, 20, 21, 39, 40, 41, 63, 64, 100, 1000)
"""Copy and instance counts: the settings allow 1-1000 (0 for the fewest); these cross every boundary of the
5-50% range (1 and 2 copies, 20 and 40 where 5% is one and two)."""


@pytest.fixture(scope="module")
def shapes() -> dict[str, Any]:
    with gzip.open(SERVICE_MODEL) as raw:
        return json.load(raw)["shapes"]


def test_aws_documents_the_range_this_library_keeps(shapes):
    component = shapes["InferenceComponentRollingUpdatePolicy"]["members"]["MaximumBatchSize"]["documentation"]
    endpoint = shapes["RollingUpdatePolicy"]["members"]["MaximumBatchSize"]["documentation"]
    assert COMPONENT_RANGE in component and ENDPOINT_RANGE in endpoint
    assert BATCH_PERCENT_RANGE == (5, 50)
    # the Type values each size takes, in the API and in CloudFormation's schema (cfn-lint's copy)
    assert shapes["InferenceComponentCapacitySizeType"]["enum"] == ["COPY_COUNT", "CAPACITY_PERCENT"]
    assert shapes["CapacitySizeType"]["enum"] == ["INSTANCE_COUNT", "CAPACITY_PERCENT"]
    schema = pytest.importorskip("cfnlint.schema")
    component_schema = schema.PROVIDER_SCHEMA_MANAGER.get_resource_schema(
        "us-east-1", "AWS::SageMaker::InferenceComponent"
    ).schema["definitions"]
    endpoint_schema = schema.PROVIDER_SCHEMA_MANAGER.get_resource_schema(
        "us-east-1", "AWS::SageMaker::Endpoint"
    ).schema["definitions"]
    assert set(component_schema["InferenceComponentCapacitySizeType"]["enum"]) == {"COPY_COUNT", "CAPACITY_PERCENT"}
    assert set(endpoint_schema["CapacitySize"]["properties"]["Type"]["enum"]) == {"INSTANCE_COUNT", "CAPACITY_PERCENT"}


def in_aws_range(kind: str, value: int, smallest: int, largest: int) -> bool:
    """Whether a step is 5-50% of every count from ``smallest`` (at least 1: nothing rolls at zero) to ``largest``,
    as AWS documents (``COMPONENT_RANGE``, ``ENDPOINT_RANGE``)."""
    if kind in ("percent", "CAPACITY_PERCENT"):
        return 5 <= value <= 50
    return all(5 * count <= 100 * value <= 50 * count for count in range(max(1, smallest), largest + 1))


def ranges() -> list[tuple[int, int]]:
    return [(low, high) for low in (0, *COUNTS) for high in COUNTS if low <= high]


@pytest.mark.parametrize(("smallest", "largest"), ranges())
def test_the_chosen_step_is_in_range_at_every_count(smallest, largest):
    kind, value = rolling_batch(smallest, largest)
    assert in_aws_range(kind, value, smallest, largest)
    # about one copy or instance at the most, and never more than 5% needs
    assert batch_units(kind, value, largest) == max(1, -(-largest // 20))
    fewest, most = batch_count_range(smallest, largest)
    assert (kind == "count") == (fewest <= most)


# ----------------------------------------------------------------------------- inference components


@pytest.fixture(scope="module")
def components() -> dict[tuple[int, int], dict[str, Any]]:
    """``{(min_copies, max_copies): rendered RollingUpdatePolicy}``: one model per copy range, 60 models to an
    endpoint and its stack (a stack holds at most 500 resources)."""
    app = App()
    every = ranges()
    by_name = {}
    stacks = []
    for start in range(0, len(every), 60):
        stack = Stack(app, f"Copies{start}")
        endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.p5e.48xlarge"))
        for low, high in every[start : start + 60]:
            name = f"m-{low}-{high}"
            model = endpoint.add_model(
                name,
                ModelSpec(
                    name=name,
                    model_data_s3_uri="s3://my-weights/m/",
                    copies=CopyScaling(min_copies=low, max_copies=high),
                ),
            )
            model.configure_rollout(RolloutSettings(), {})
            by_name[model.component_name] = (low, high)
        stacks.append(stack)
    rendered = {}
    for stack in stacks:
        for resource in Template.from_stack(stack).find_resources("AWS::SageMaker::InferenceComponent").values():
            counts = by_name[resource["Properties"]["InferenceComponentName"]]
            rendered[counts] = resource["Properties"]["DeploymentConfig"]["RollingUpdatePolicy"]
    assert len(rendered) == len(every)
    return rendered


@pytest.mark.parametrize(("smallest", "largest"), ranges())
def test_every_copy_range_renders_a_step_aws_takes(components, smallest, largest):
    size = components[(smallest, largest)]["MaximumBatchSize"]
    assert size["Type"] in ("COPY_COUNT", "CAPACITY_PERCENT")
    assert in_aws_range(size["Type"], size["Value"], smallest, largest), (
        f"{size} is not 5-50% of every count of {smallest}-{largest} copies ({COMPONENT_RANGE})"
    )


def test_one_copy_rolls_half_of_it_and_two_copies_one_at_a_time(components):
    assert components[(1, 1)]["MaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 50}
    assert components[(0, 10)]["MaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 10}
    assert components[(2, 2)]["MaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 1}
    assert components[(3, 20)]["MaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 1}
    assert components[(4, 40)]["MaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 2}


def model_on(copies: CopyScaling) -> Any:
    stack = Stack(App(), "One")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.p5e.48xlarge"))
    return endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/q/", copies=copies))


def rendered_size(model: Any) -> dict[str, Any]:
    (resource,) = Template.from_stack(Stack.of(model)).find_resources("AWS::SageMaker::InferenceComponent").values()
    return resource["Properties"]["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"]


def test_a_written_batch_copies_in_range_is_kept():
    model = model_on(CopyScaling(min_copies=4, max_copies=40))
    model.configure_rollout(RolloutSettings(batch_copies=2), {})
    assert rendered_size(model) == {"Type": "COPY_COUNT", "Value": 2}


def test_a_written_batch_copies_above_half_the_fewest_copies_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "monitoring.rollout.batch_copies: got 1; allowed: 5-50% of every copy count model qwen3-8b may run (1-4, "
            "AWS's range for a rolling step): no copy count: 50% of 1 copy is less than one; fix: remove batch_copies "
            "(the library then picks a step AWS takes for each model), set batch_percent (5-50) instead, or raise "
            "copies.min_copies to 2 or more"
        ),
    ):
        model_on(CopyScaling(min_copies=0, max_copies=4)).configure_rollout(RolloutSettings(batch_copies=1), {})


def test_a_written_batch_copies_below_5_percent_of_the_most_copies_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "monitoring.rollout.batch_copies: got 1; allowed: 5-50% of every copy count model qwen3-8b may run "
            "(10-100, AWS's range for a rolling step): 5-5 copies; fix: remove batch_copies (the library then picks a "
            "step AWS takes for each model), set batch_percent (5-50) instead, or lower copies.max_copies to 20 or "
            "less"
        ),
    ):
        model_on(CopyScaling(min_copies=10, max_copies=100)).configure_rollout(RolloutSettings(batch_copies=1), {})


def test_batch_copies_is_refused_through_monitoring_too():
    model = model_on(CopyScaling())
    with pytest.raises(ConfigurationError, match=re.escape("monitoring.rollout.batch_copies: got 1; allowed: 5-50%")):
        LlmMonitoring(Stack.of(model), "Monitoring", settings={"rollout": {"batch_copies": 1}}).monitor_endpoint(
            model.endpoint
        )


def test_batch_percent_is_written_as_capacity_percent():
    model = model_on(CopyScaling(min_copies=0, max_copies=3))
    model.configure_rollout(RolloutSettings(batch_percent=25), {})
    assert rendered_size(model) == {"Type": "CAPACITY_PERCENT", "Value": 25}


def test_batch_percent_is_5_to_50():
    with pytest.raises(ConfigurationError, match=re.escape("batch_percent: got 60; allowed: at most 50")):
        RolloutSettings(batch_percent=60)
    with pytest.raises(ConfigurationError, match=re.escape("batch_percent: got 4; allowed: at least 5")):
        RolloutSettings(batch_percent=4)


def test_batch_percent_and_batch_copies_are_one_or_the_other():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "batch_percent: got 10; allowed: not together with batch_copies (1): a step is either copies or a percent "
            "of them; fix: remove batch_copies or batch_percent"
        ),
    ):
        RolloutSettings(batch_copies=1, batch_percent=10)


# ----------------------------------------------------------------------------- endpoints

PLAN_COUNTS = (1, 2, 4, 8, 16, 32, 64)
"""The instance counts a capacity plan may hold (``capacity.settings.ALLOWED_INSTANCE_COUNTS``)."""


def plan_spec(name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "instance_type": "ml.p5e.48xlarge",
        "instance_count": count,
        "duration_days": 30,
        "start_after": datetime(2027, 1, 4, tzinfo=UTC),
        "end_before": datetime(2027, 3, 1, tzinfo=UTC),
        "max_upfront_fee_usd": Decimal("150000"),
    }


ENDPOINT_CASES = sorted(
    {
        (low, high, plan)
        for high in COUNTS
        if high <= 64
        for low in (0, 3, high)
        if low <= high
        for plan in PLAN_COUNTS
        if high + 1 <= plan < 2 * high
    }
)
"""(min_instances, max_instances, plan instances) where the plan holds more than the endpoint but not a second
fleet, so a rolling update is all that may fit (never with 1 or 2 instances: plans hold 1, 2, 4, ... and 2 x 1 and
2 x 2 fit, or nothing does)."""


@pytest.mark.parametrize(("smallest", "largest"), ranges())
def test_every_instance_range_gets_a_step_aws_takes(smallest, largest):
    stack = Stack(App(), "Sizes")
    endpoint = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(
            instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=smallest, max_instances=largest)
        ),
    )
    kind, value = endpoint.rolling_batch_size()
    assert kind in ("INSTANCE_COUNT", "CAPACITY_PERCENT") and in_aws_range(kind, value, smallest, largest)


@pytest.fixture(scope="module")
def endpoints() -> dict[tuple[int, int, int], tuple[LlmEndpoint, dict[str, Any], dict[str, Any]]]:
    """``{case: (endpoint, rendered DeploymentConfig, rendered guard properties)}``, each endpoint on its own plan,
    ten to an app (a stack holds at most 500 resources)."""
    rendered = {}
    for start in range(0, len(ENDPOINT_CASES), 10):
        app = App()
        capacity, serving = Stack(app, "Capacity"), Stack(app, "Serving")
        built = {}
        for index, (low, high, count) in enumerate(ENDPOINT_CASES[start : start + 10]):
            plan = CapacityPlan(capacity, f"Plan{index}", settings=plan_spec(f"p{index}", count), name_prefix="Serving")
            endpoint = LlmEndpoint(
                serving,
                f"E{index}",
                settings=EndpointOptions(
                    instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=low, max_instances=high)
                ),
                capacity_plan=plan,
            )
            endpoint.configure_rollout(RolloutSettings(), {})
            built[(low, high, count)] = endpoint
        template = Template.from_stack(serving).to_json()["Resources"]
        for case, endpoint in built.items():
            config = template[serving.resolve(endpoint.cfn_endpoint.logical_id)]["Properties"]["DeploymentConfig"]
            assert endpoint.capacity_guard is not None
            guard = template[serving.resolve(endpoint.capacity_guard.node.default_child.logical_id)]["Properties"]
            rendered[case] = (endpoint, config, guard)
    return rendered


@pytest.mark.parametrize(("smallest", "largest", "plan"), ENDPOINT_CASES)
def test_every_instance_range_renders_a_step_aws_takes(endpoints, smallest, largest, plan):
    endpoint, config, guard = endpoints[(smallest, largest, plan)]
    if "BlueGreenUpdatePolicy" in config:  # no rolling step fits the plan either (more than one instance above 20)
        assert largest + endpoint.rolling_batch_instances > plan and guard["UpdatePolicy"] == "NONE_FITS"
        return
    rolling = config["RollingUpdatePolicy"]
    for key in ("MaximumBatchSize", "RollbackMaximumBatchSize"):
        size = rolling[key]
        assert size["Type"] in ("INSTANCE_COUNT", "CAPACITY_PERCENT")
        assert in_aws_range(size["Type"], size["Value"], smallest, largest), (
            f"{size} is not 5-50% of every count of {smallest}-{largest} instances ({ENDPOINT_RANGE})"
        )
    # the guard counts the same step at deploy time, and the plan holds it beside the largest fleet
    assert guard["UpdatePolicy"] == "ROLLING"
    assert guard["RollingBatchSize"] == {
        "Type": rolling["MaximumBatchSize"]["Type"],
        "Value": str(rolling["MaximumBatchSize"]["Value"]),
    }
    assert largest + endpoint.rolling_batch_instances <= plan


def test_the_cases_cross_the_range_boundaries():
    assert {(0, 3, 4), (3, 3, 4), (10, 10, 16), (0, 20, 32), (20, 20, 32), (3, 40, 64), (0, 63, 64)} <= set(
        ENDPOINT_CASES
    )


def test_a_rolling_step_of_more_than_one_instance_is_counted(endpoints):
    endpoint, config, guard = endpoints[(0, 40, 64)]
    assert config["RollingUpdatePolicy"]["MaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 5}
    assert endpoint.rolling_batch_instances == 2
    endpoint, config, guard = endpoints[(0, 63, 64)]  # 5% of 63 is 4 instances: 67 do not fit 64
    assert "RollingUpdatePolicy" not in config and guard["UpdatePolicy"] == "NONE_FITS"


def test_blue_green_has_no_step_to_size():
    stack = Stack(App(), "OnDemand")
    for most in COUNTS:
        LlmEndpoint(
            stack,
            f"E{most}",
            settings=EndpointOptions(
                instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=1, max_instances=most)
            ),
        ).configure_rollout(RolloutSettings(), {})
    resources = Template.from_stack(stack).find_resources("AWS::SageMaker::Endpoint").values()
    assert len(resources) == len(COUNTS)
    for resource in resources:
        # ALL_AT_ONCE: botocore's TrafficRoutingConfig has a CanarySize or LinearStepSize only for CANARY and LINEAR
        assert resource["Properties"]["DeploymentConfig"] == {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE"},
                "TerminationWaitInSeconds": 300,
                "MaximumExecutionTimeoutInSeconds": 14400,
            }
        }
