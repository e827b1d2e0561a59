"""Every feature synthesizes nag-clean in an account- and region-bound stack and in an environment-agnostic one.

cdk-nag names a finding by the resource as the template spells it: ``<AWS::Region>`` in an
environment-agnostic stack, ``us-east-1`` in a bound one. An acknowledgement written for one form
does not match the other, so each feature is synthesized both ways with AwsSolutions, and the
validation report must hold no violation. (The apps in examples/ are run both ways in
tests/examples/test_examples.py.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import (
    AdapterSpec,
    CapacityPlan,
    EagleOptimization,
    EndpointOptions,
    InstanceScaling,
    LlmEndpoint,
    LoraSettings,
    ModelSpec,
    PromotionParameter,
    SessionFrontDoor,
    add_adapters,
    load_config,
)
from support.principals import people

from stacks import LlmPlatformStack, attach_checks

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
BOUND = Environment(account="123456789012", region="us-east-1")
ENVIRONMENTS = [pytest.param(None, id="agnostic"), pytest.param(BOUND, id="bound")]
WEIGHTS = "s3://my-weights/qwen3-8b/"


def _eagle(app: App, env: Environment | None) -> None:
    promotions = Stack(app, "Promotions", env=env)
    stack = Stack(app, "Eagle", env=env)
    head = PromotionParameter(promotions, "Head", model_name="qwen3-8b")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    model = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM")
    )
    eagle = EagleOptimization(stack, "QwenEagle", component=model, promotion_parameter=head.parameter)
    eagle.grant_start_run(iam.Role(stack, "Operator", assumed_by=people(stack)))


def _eagle_on_own_dataset(app: App, env: Environment | None) -> None:
    promotions = Stack(app, "Promotions", env=env)
    stack = Stack(app, "Eagle", env=env)
    head = PromotionParameter(promotions, "Head", model_name="qwen3-8b")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    model = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM")
    )
    EagleOptimization(
        stack,
        "QwenEagle",
        component=model,
        promotion_parameter=head.parameter,
        settings={"schedule": "cron(0 3 ? * SUN *)", "dataset": {"source": "s3", "s3_uri": "s3://my-data/chats/"}},
    )


def _capacity_plan(app: App, env: Environment | None) -> None:
    stack = Stack(app, "Reserved", env=env)
    plan = CapacityPlan(
        stack,
        "Plan",
        settings={
            "name": "chat-p5e",
            "instance_type": "ml.p5e.48xlarge",
            "instance_count": 2,
            "duration_days": 30,
            "start_after": datetime(2027, 1, 4, tzinfo=UTC),
            "end_before": datetime(2027, 3, 1, tzinfo=UTC),
            "max_upfront_fee_usd": Decimal("150000"),
        },
    )
    endpoint = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(
            instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=1, max_instances=2)
        ),
        capacity_plan=plan,
    )
    endpoint.add_model(
        "Qwen",
        ModelSpec(
            name="qwen3-32b", model_data_s3_uri="s3://my-weights/qwen3-32b/", accelerators=2, min_memory_mb=65536
        ),
    )


def _existing_capacity_plan(app: App, env: Environment | None) -> None:
    stack = Stack(app, "Reserved", env=env)
    plan = CapacityPlan(
        stack,
        "Plan",
        settings={
            "mode": "existing",
            "name": "chat-p5e-2027q1",
            "instance_type": "ml.p5e.48xlarge",
            "instance_count": 2,
        },
    )
    endpoint = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(
            instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=1, max_instances=2)
        ),
        capacity_plan=plan,
    )
    endpoint.add_model(
        "Qwen",
        ModelSpec(
            name="qwen3-32b", model_data_s3_uri="s3://my-weights/qwen3-32b/", accelerators=2, min_memory_mb=65536
        ),
    )


def _sessions_and_adapters(app: App, env: Environment | None) -> None:
    stack = Stack(app, "Chat", env=env)
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri=WEIGHTS, lora=LoraSettings(max_rank=16))
    )
    adapters = add_adapters(
        base, [AdapterSpec(name=f"qwen3-8b-a{i}", artifact_s3_uri=f"s3://my-adapters/a{i}.tar.gz") for i in range(3)]
    )
    SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, components=list(adapters))


def _eagle_in_a_vpc(app: App, env: Environment | None) -> None:
    from aws_cdk import aws_ec2 as ec2

    promotions = Stack(app, "Promotions", env=env)
    stack = Stack(app, "Eagle", env=env)
    head = PromotionParameter(promotions, "Head", model_name="qwen3-8b")
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        restrict_default_security_group=False,
        subnet_configuration=[ec2.SubnetConfiguration(name="models", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )
    from sagemaker_llm_cdk.core.nag import acknowledge

    acknowledge(vpc, "AwsSolutions-VPC7", "The test's own VPC (not made by the library) has no flow log.")
    endpoint = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(instance_type="ml.g6e.12xlarge"),
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
    )
    model = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM")
    )
    EagleOptimization(stack, "QwenEagle", component=model, promotion_parameter=head.parameter)


FEATURES: dict[str, Callable[[App, Environment | None], None]] = {
    "eagle-in-a-vpc": _eagle_in_a_vpc,
    "eagle-on-captured-traffic": _eagle,
    "eagle-on-own-dataset": _eagle_on_own_dataset,
    "capacity-plan-purchase": _capacity_plan,
    "capacity-plan-existing": _existing_capacity_plan,
    "sessions-and-adapters": _sessions_and_adapters,
}


def _violations(out: Path) -> list[Any]:
    report = json.loads((out / "validation-report.json").read_text())
    return [v for plugin in report.get("pluginReports", []) for v in plugin.get("violations", [])]


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_feature_is_nag_clean(feature, env, tmp_path):
    app = App(outdir=str(tmp_path))
    FEATURES[feature](app, env)
    attach_checks(app)
    app.synth()  # raises ValidationFailed on any unacknowledged AwsSolutions error
    assert _violations(tmp_path) == []
    stacks = [s for s in app.node.children if isinstance(s, Stack)]
    for stack in stacks:
        region = stack.resolve(stack.region)
        assert region == ("us-east-1" if env is not None else {"Ref": "AWS::Region"}), (feature, region)


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_default_app_is_nag_clean(env, tmp_path):
    app = App(outdir=str(tmp_path), context={"aws:cdk:enable-path-metadata": True})
    config = load_config(ROOT / "config" / "default.yaml")
    LlmPlatformStack(app, config.stack_name, config=config, env=env or Environment())
    attach_checks(app, extra_packs=config.checks.nag_warning_packs)
    app.synth()
    failures = [v for v in _violations(tmp_path) if v.get("severity") == "error"]
    assert failures == [], json.dumps(failures, indent=1)[:3000]
