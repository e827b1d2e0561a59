"""Preflight: offline checks against real cfn-lint schemas and synthesized templates; live checks through Stubber."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore.session
import pytest
from aws_cdk import App, Stack
from botocore import xform_name
from botocore.exceptions import NoCredentialsError
from botocore.stub import Stubber
from sagemaker_llm_cdk import (
    ConfigurationError,
    EndpointOptions,
    LlmEndpoint,
    ModelSpec,
    parse_config,
    preflight,
    run_preflight,
)
from sagemaker_llm_cdk.core import regions
from sagemaker_llm_cdk.core.functions import POWERTOOLS_LAYER_VERSION
from sagemaker_llm_cdk.preflight import AwsClients, Finding, endpoint_instance_types, update_policy
from sagemaker_llm_cdk.preflight.offline import check_update_headroom
from support.aws_model import assert_valid_request

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
LAYER = f"AWSLambdaPowertoolsPythonV3-python313-x86_64:{POWERTOOLS_LAYER_VERSION}"


def endpoint(**overrides: Any) -> dict[str, Any]:
    spec = {
        "name": "Chat",
        "instance_type": "ml.g6e.12xlarge",
        "scaling": {"min_instances": 1, "max_instances": 2},
        "models": [{"name": "qwen3-8b", "model_data_s3_uri": "s3://team-llm-weights/qwen3-8b/", "accelerators": 1}],
    }
    spec.update(overrides)
    return spec


BUDGET = {"max_usd_per_month": 1_000_000, "notify_alarm_topic": True}
"""Two g6e instances always on pass the 1,000 accelerator-hour line, so every config here declares a budget."""


def config(*, endpoints: list[dict[str, Any]] | None = None, **top: Any):
    top.setdefault("budget", BUDGET)
    return parse_config({"endpoints": endpoints or [endpoint()], **top}, source="test.yaml")


def reserve_plan(**overrides: Any) -> dict[str, Any]:
    plan = {
        "name": "chat-p5e",
        "instance_type": "ml.p5e.48xlarge",
        "instance_count": 4,
        "duration_days": 30,
        "max_upfront_fee_usd": 150000,
    }
    plan.update(overrides)
    return plan


def p5e_endpoint(**overrides: Any) -> dict[str, Any]:
    return endpoint(instance_type="ml.p5e.48xlarge", capacity_plan="chat-p5e", **overrides)


def of(findings: list[Finding], check: str, severity: str | None = None) -> list[Finding]:
    return [f for f in findings if f.check == check and (severity is None or f.severity == severity)]


def offline(cfg, **kwargs: Any) -> list[Finding]:
    kwargs.setdefault("region", "us-east-1")
    return run_preflight(cfg, offline=True, now=NOW, **kwargs)


# ------------------------------------------------------------ synthesized app
@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Path:
    """A real environment-agnostic app: an endpoint with one model (inference component, Powertools functions)."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(outdir))
    stack = Stack(app, "Small")
    chat = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    chat.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://team-llm-weights/qwen3-8b/"))
    from sagemaker_llm_cdk import DeploymentCheck

    DeploymentCheck(stack, "Check", endpoint=chat)
    app.synth()
    return outdir


@pytest.fixture(scope="module")
def templates(synthesized: Path) -> dict[str, dict[str, Any]]:
    return regions.load_templates(synthesized)


def test_us_west_1_lacks_inference_components_a_blocker(templates):
    findings = offline(config(), region="us-west-1", templates=templates)
    (found,) = of(findings, "region.resource-types", "blocker")
    assert found.what.startswith(
        "AWS::SageMaker::InferenceComponent is not available in us-west-1 (used by Small.template.json/"
    )
    assert "us-east-1" in found.fix and "us-west-1" not in found.fix
    assert preflight.exit_code(findings) == 1


def test_us_east_1_has_every_type_image_and_layer(templates):
    findings = offline(config(), templates=templates)
    assert not [f for f in findings if f.severity != "info"], [f.line() for f in findings if f.severity != "info"]
    (types,) = of(findings, "region.resource-types")
    used = regions.resource_types_used(templates)
    assert "AWS::SageMaker::InferenceComponent" in used and "AWS::Lambda::Function" in used
    assert (
        types.what
        == f"all {len(used)} CloudFormation resource types of {len(templates)} template(s) exist in us-east-1"
    )
    assert preflight.exit_code(findings) == 0


def test_without_region_lists_the_regions_that_lack_a_type(templates):
    findings = offline(config(), region=None, templates=templates)
    (target,) = of(findings, "region.target", "warning")
    assert "no target region" in target.what
    (ic,) = [f for f in of(findings, "region.resource-types", "warning") if "InferenceComponent" in f.what]
    assert "missing in 21 region(s)" in ic.what and "us-west-1" in ic.what and "cn-north-1" in ic.what


def test_china_from_templates_whose_accounts_come_from_region_mappings(templates):
    """The constructs take the image and layer accounts from per-region mappings (Fn::FindInMap), so the
    synthesized template names no account preflight could judge: it says so, and still blocks the region
    for the resource types it lacks."""
    findings = offline(config(), region="cn-north-1", templates=templates)
    (image,) = of(findings, "image.account", "info")
    assert image.what.endswith("image URI depends on template values preflight cannot resolve")
    (layer,) = of(findings, "layer.account", "info")
    assert "layer ARN depends on template values" in layer.what
    assert of(findings, "region.partition")[0].what == "cn-north-1 is in partition aws-cn"
    (types,) = of(findings, "region.resource-types", "blocker")
    assert types.what.startswith("AWS::SageMaker::InferenceComponent is not available in cn-north-1")


def test_opt_in_region_image_account_from_the_config_alone():
    findings = offline(config(), region="af-south-1")
    (image,) = of(findings, "image.account", "blocker")
    assert image.subject == "endpoints[0].models[0].image"
    assert "626614931356.dkr.ecr.af-south-1.amazonaws.com/djl-inference:" in image.fix
    assert of(findings, "region.resource-types", "warning")[0].what.startswith("no synthesized templates")


def test_image_in_another_region_is_a_blocker():
    cfg = config(
        endpoints=[
            endpoint(
                models=[
                    {
                        "name": "m",
                        "model_data_s3_uri": "s3://team-llm-weights/m/",
                        "image": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/mine:1",
                    }
                ]
            )
        ]
    )
    (found,) = of(offline(cfg), "image.region", "blocker")
    assert (
        found.what
        == "image 123456789012.dkr.ecr.eu-west-1.amazonaws.com/mine:1 is in eu-west-1, the endpoint in us-east-1"
    )


def test_unknown_region_and_region_other_than_the_target():
    assert of(offline(config(), region="xx-nowhere-9"), "region.partition", "blocker")[0].what == (
        "region 'xx-nowhere-9' is not a region botocore knows"
    )
    cfg = config(target={"region": "eu-west-1"})
    (found,) = of(offline(cfg, region="us-east-1"), "region.target", "blocker")
    assert "differs from target.region eu-west-1" in found.what


def test_eagle_job_on_a_type_optimization_jobs_do_not_offer():
    """The config itself refuses it now (one round of config errors), before preflight runs."""
    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\]\.models\[0\]\.eagle\.job_instance_type: got 'ml\.c5\.xlarge'; "
        r"allowed: an instance type SageMaker accepts for optimization jobs",
    ):
        config(
            endpoints=[
                endpoint(
                    instance_type="ml.c5.xlarge",
                    models=[
                        {
                            "name": "m",
                            "model_data_s3_uri": "s3://team-llm-weights/m/",
                            "architecture": "Qwen3ForCausalLM",
                            "eagle": {},
                        }
                    ],
                )
            ]
        )


def test_endpoint_config_instance_types_from_templates():
    bad = {
        "T.template.json": {
            "Resources": {
                "Config": {
                    "Type": "AWS::SageMaker::EndpointConfig",
                    "Properties": {
                        "ProductionVariants": [
                            {
                                "InstanceType": "ml.g6e.12xlarge",
                                "InstancePools": [{"InstanceType": "ml.nothing.large", "Priority": 1}],
                            }
                        ]
                    },
                }
            }
        }
    }
    (found,) = of(offline(config(), templates=bad), "instance-type.endpoint", "blocker")
    assert found.what == "ml.nothing.large is not offered for endpoints" and found.subject == "T.template.json/Config"


# -------------------------------------------------------------- plan windows
def test_purchase_window_that_has_ended():
    cfg = config(capacity_plans=[reserve_plan(start_after="2026-10-01T00:00:00Z", end_before="2026-11-15T00:00:00Z")])
    findings = offline(cfg)
    (found,) = of(findings, "plan.window", "blocker")
    assert found.what == "end_before 2026-11-15T00:00:00Z has passed" and found.subject == "capacity_plans[0]"


def test_purchase_window_too_short_from_now_and_start_in_the_past():
    cfg = config(capacity_plans=[reserve_plan(start_after="2026-11-01T00:00:00Z", end_before="2026-12-20T00:00:00Z")])
    findings = offline(cfg)
    assert of(findings, "plan.window", "warning")[0].what == "start_after 2026-11-01T00:00:00Z has passed"
    (short,) = of(findings, "plan.window", "blocker")
    assert short.what == "18.6 day(s) remain before end_before 2026-12-20T00:00:00Z but the plan lasts 30 day(s)"


def test_future_window_is_clean():
    cfg = config(capacity_plans=[reserve_plan(start_after="2027-01-04T00:00:00Z", end_before="2027-03-01T00:00:00Z")])
    assert not of(offline(cfg), "plan.window")


def test_a_reserve_plan_says_what_the_deploy_buys():
    (found,) = of(offline(config(capacity_plans=[reserve_plan(start_after="2027-01-04T00:00:00Z")])), "plan.purchase")
    assert found.severity == "info" and found.subject == "capacity_plans[0]"
    assert found.what == (
        "the deploy that creates plan chat-p5e buys ml.p5e.48xlarge x 4 for 30 days starting at or after "
        "2027-01-04T00:00:00Z as TrainingPlanName SageMakerLlm-chat-p5e, prepaid up to USD 150000 "
        "and never refunded"
    )


def test_a_pinned_plan_says_the_pinned_name_it_buys():
    cfg = config(capacity_plans=[reserve_plan(physical_name="chat-p5e")], stack_name="ChatProd")
    (found,) = of(offline(cfg), "plan.purchase")
    assert "as TrainingPlanName chat-p5e, prepaid" in found.what
    (found,) = of(offline(config(capacity_plans=[reserve_plan()], stack_name="ChatProd")), "plan.purchase")
    assert "as TrainingPlanName ChatProd-chat-p5e, prepaid" in found.what
    assert not of(offline(config()), "plan.purchase")


def test_binding_a_plan_that_starts_later_is_a_blocker():
    cfg = config(
        endpoints=[p5e_endpoint()],
        capacity_plans=[reserve_plan(start_after="2027-01-04T00:00:00Z", end_before="2027-03-01T00:00:00Z")],
    )
    (found,) = of(offline(cfg), "plan.active", "blocker")
    assert found.what == ("the endpoint is bound to plan chat-p5e, which cannot start before 2027-01-04T00:00:00Z")
    assert found.subject == "endpoints[0]" and "on-demand" in found.fix


def test_binding_a_plan_bought_by_the_same_config_warns():
    cfg = config(endpoints=[p5e_endpoint()], capacity_plans=[reserve_plan()])
    (found,) = of(offline(cfg), "plan.active", "warning")
    assert "bought by this config" in found.what


def test_existing_plan_in_another_region():
    cfg = config(
        endpoints=[p5e_endpoint()],
        capacity_plans=[
            {
                "existing_plan_arn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/chat-p5e",
                "instance_type": "ml.p5e.48xlarge",
                "instance_count": 4,
            }
        ],
    )
    (found,) = of(offline(cfg), "plan.region", "blocker")
    assert found.what == "plan chat-p5e is in us-west-2 (aws), the endpoint in us-east-1"


# ------------------------------------------------------------------ headroom
def test_blue_green_update_without_a_second_fleet_on_the_plan():
    cfg = config(
        endpoints=[p5e_endpoint(scaling={"min_instances": 1, "max_instances": 2})],
        capacity_plans=[reserve_plan(instance_count=2)],
    )
    (found,) = of(offline(cfg), "headroom.endpoint", "blocker")
    assert found.what == (
        "a blue/green endpoint update needs up to 4 instances (a second fleet for max_instances 2); "
        "plan chat-p5e holds 2"
    )
    assert "lower scaling.max_instances to 1" in found.fix


def test_blue_green_fits_a_plan_twice_the_fleet():
    cfg = config(
        endpoints=[p5e_endpoint(scaling={"min_instances": 1, "max_instances": 2})],
        capacity_plans=[reserve_plan(instance_count=4)],
    )
    assert not of(offline(cfg), "headroom.endpoint")


def test_rolling_endpoint_update_on_a_full_plan():
    cfg = config(
        endpoints=[p5e_endpoint(scaling={"min_instances": 1, "max_instances": 4})],
        capacity_plans=[reserve_plan(instance_count=4)],
    )
    spec = cfg.endpoints[0]
    rolling = SimpleNamespace(
        **{k: getattr(spec, k) for k in ("name", "instance_type", "scaling", "models", "capacity_plan")},
        update_policy="rolling",
        rolling_batch_instances=1,
    )
    ctx = preflight.PreflightContext(
        config=cfg.model_copy(update={"endpoints": (rolling,)}),
        source="t.yaml",
        region="us-east-1",
        partition="aws",
        now=NOW,
    )
    (found,) = [f for f in check_update_headroom(ctx) if f.check == "headroom.endpoint"]
    assert found.severity == "blocker"
    assert (
        found.what == "a rolling endpoint update needs max_instances + one batch = 5 instances; plan chat-p5e holds 4"
    )
    assert "lower scaling.max_instances to 3" in found.fix


def test_update_policy_read_from_the_synthesized_endpoint():
    cfg = config(
        endpoints=[p5e_endpoint(scaling={"min_instances": 1, "max_instances": 4})],
        capacity_plans=[reserve_plan(instance_count=4)],
    )

    def template(deployment: dict[str, Any]) -> dict[str, Any]:
        return {
            "S.template.json": {
                "Resources": {
                    "Chat": {
                        "Type": "AWS::SageMaker::Endpoint",
                        "Metadata": {"aws:cdk:path": "S/Chat/Resource"},
                        "Properties": {"EndpointConfigName": "c", "DeploymentConfig": deployment},
                    }
                }
            }
        }

    rolling = template(
        {
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
                "WaitIntervalInSeconds": 60,
            }
        }
    )
    (found,) = of(offline(cfg, templates=rolling), "headroom.endpoint", "blocker")
    assert (
        found.what == "a rolling endpoint update needs max_instances + one batch = 6 instances; plan chat-p5e holds 4"
    )
    blue_green = template({"BlueGreenUpdatePolicy": {"TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE"}}})
    (found,) = of(offline(cfg, templates=blue_green), "headroom.endpoint", "blocker")
    assert found.what.startswith("a blue/green endpoint update needs up to 8 instances")


def test_rolling_policy_needs_max_plus_one_batch():
    ctx = SimpleNamespace()
    rolling = SimpleNamespace(update_policy="rolling", rolling_batch_instances=2)
    assert update_policy(ctx, rolling) == ("rolling", 2)  # type: ignore[arg-type]
    assert update_policy(ctx, SimpleNamespace()) == ("blue_green", 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("when_not_active, severity", [("on_demand", "warning"), ("fail", "blocker")])
def test_a_plan_not_started_yet_blocks_only_an_endpoint_that_cannot_serve_on_demand(when_not_active, severity):
    """The setting the synth reads (the plan's when_not_active) decides, as it decides CapacityReservationConfig."""
    cfg = config(
        endpoints=[p5e_endpoint()],
        capacity_plans=[
            reserve_plan(
                start_after="2027-01-04T00:00:00Z", end_before="2027-03-01T00:00:00Z", when_not_active=when_not_active
            )
        ],
    )
    (found,) = of(offline(cfg), "plan.active")
    assert found.severity == severity
    ctx = SimpleNamespace(plan_of=lambda endpoint: (0, cfg.capacity_plans[0]))
    assert preflight.serves_on_demand_until_active(ctx, cfg.endpoints[0]) is (when_not_active == "on_demand")


def test_pools_are_read_by_attribute():
    spec = SimpleNamespace(
        instance_type="ml.p5e.48xlarge",
        instance_pools=[SimpleNamespace(instance_type="ml.p5.48xlarge"), {"instance_type": "ml.p4d.24xlarge"}],
    )
    assert endpoint_instance_types(spec) == ["ml.p5e.48xlarge", "ml.p5.48xlarge", "ml.p4d.24xlarge"]


def test_model_update_without_room_for_a_batch():
    cfg = config(
        endpoints=[
            endpoint(
                scaling={"min_instances": 1, "max_instances": 1},
                models=[
                    {
                        "name": "m",
                        "model_data_s3_uri": "s3://team-llm-weights/m/",
                        "accelerators": 2,
                        "copies": {"min_copies": 1, "max_copies": 2},
                    }
                ],
            )
        ]
    )
    (found,) = of(offline(cfg), "headroom.models", "warning")
    assert found.what == (
        "at peak the models hold 4 of 4 accelerators (1 x ml.g6e.12xlarge); a model update needs 2 more "
        "for its first batch"
    )


# ---------------------------------------------------------------- live checks
class Stubs:
    """Stubbed clients per (service, region); every expected request is checked against botocore's model first."""

    def __init__(self) -> None:
        self.session = botocore.session.get_session()
        self.stubbers: dict[tuple[str, str | None], Stubber] = {}
        self.clients: dict[tuple[str, str | None], Any] = {}

    def client(self, service: str, region: str | None) -> Any:
        key = (service, region)
        if key not in self.clients:
            client = self.session.create_client(
                service, region_name=region or "us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
            )
            self.clients[key] = client
            self.stubbers[key] = Stubber(client)
            self.stubbers[key].activate()
        return self.clients[key]

    def add(
        self,
        service: str,
        operation: str,
        params: dict[str, Any],
        response: dict[str, Any],
        region: str | None = "us-east-1",
    ) -> None:
        assert_valid_request(service, operation, params)
        self.client(service, region)
        self.stubbers[(service, region)].add_response(_method(operation), response, params)

    def error(
        self,
        service: str,
        operation: str,
        params: dict[str, Any],
        code: str,
        status: int = 400,
        region: str | None = "us-east-1",
    ) -> None:
        assert_valid_request(service, operation, params)
        self.client(service, region)
        self.stubbers[(service, region)].add_client_error(
            _method(operation), service_error_code=code, http_status_code=status, expected_params=params
        )

    def done(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()

    def aws(self) -> AwsClients:
        return AwsClients(factory=self.client)


def _method(operation: str) -> str:
    return xform_name(operation)


def identity(stubs: Stubs, account: str = "123456789012") -> None:
    stubs.add(
        "sts",
        "GetCallerIdentity",
        {},
        {"Account": account, "Arn": f"arn:aws:iam::{account}:user/me", "UserId": "AIDAEXAMPLE"},
    )


def names(stubs: Stubs, *components: str, taken: tuple[str, ...] = (), stack_exists: bool = False) -> None:
    """DescribeStacks for the config's stack, then DescribeInferenceComponent for each fixed name."""
    if stack_exists:
        stubs.add(
            "cloudformation",
            "DescribeStacks",
            {"StackName": "SageMakerLlm"},
            {"Stacks": [{"StackName": "SageMakerLlm", "CreationTime": NOW, "StackStatus": "UPDATE_COMPLETE"}]},
        )
    else:
        assert_valid_request("cloudformation", "DescribeStacks", {"StackName": "SageMakerLlm"})
        stubs.client("cloudformation", "us-east-1")
        stubs.stubbers[("cloudformation", "us-east-1")].add_client_error(
            "describe_stacks",
            service_error_code="ValidationError",
            http_status_code=400,
            service_message="Stack with id SageMakerLlm does not exist",
            expected_params={"StackName": "SageMakerLlm"},
        )
    for name in components:
        params = {"InferenceComponentName": name}
        if name in taken:
            stubs.add(
                "sagemaker",
                "DescribeInferenceComponent",
                params,
                {
                    "InferenceComponentName": name,
                    "EndpointName": "someone-elses",
                    "CreationTime": NOW,
                    "LastModifiedTime": NOW,
                    "InferenceComponentStatus": "InService",
                    "InferenceComponentArn": f"arn:aws:sagemaker:us-east-1:123456789012:inference-component/{name}",
                    "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/someone-elses",
                },
            )
        else:
            stubs.error("sagemaker", "DescribeInferenceComponent", params, "ValidationException")


def quotas(stubs: Stubs, applied: list[tuple[str, float]], defaults: list[tuple[str, float]] = ()) -> None:
    def page(items):
        return {
            "Quotas": [
                {"ServiceCode": "sagemaker", "QuotaName": n, "QuotaCode": f"L-{i:08X}", "Value": v}
                for i, (n, v) in enumerate(items)
            ]
        }

    stubs.add(
        "service-quotas", "ListAWSDefaultServiceQuotas", {"ServiceCode": "sagemaker", "MaxResults": 100}, page(defaults)
    )
    stubs.add("service-quotas", "ListServiceQuotas", {"ServiceCode": "sagemaker", "MaxResults": 100}, page(applied))


def s3_prefix(stubs: Stubs, bucket: str, prefix: str, count: int) -> None:
    stubs.add(
        "s3",
        "ListObjectsV2",
        {"Bucket": bucket, "Prefix": prefix, "MaxKeys": 1},
        {"KeyCount": count, **({"Contents": [{"Key": prefix + "config.json"}]} if count else {})},
    )


def layer(stubs: Stubs, *, latest: int | None = POWERTOOLS_LAYER_VERSION) -> None:
    arn = f"arn:aws:lambda:us-east-1:017000801446:layer:{LAYER}"
    stubs.add(
        "lambda", "GetLayerVersionByArn", {"Arn": arn}, {"LayerVersionArn": arn, "Version": POWERTOOLS_LAYER_VERSION}
    )
    name = "/aws/service/powertools/python/x86_64/python3.13/latest"
    if latest is None:
        stubs.error("ssm", "GetParameter", {"Name": name}, "ParameterNotFound")
    else:
        stubs.add(
            "ssm",
            "GetParameter",
            {"Name": name},
            {"Parameter": {"Name": name, "Type": "String", "Value": arn.rsplit(":", 1)[0] + f":{latest}"}},
        )


def price(stubs: Stubs, instance_type: str, usd: str) -> None:
    from sagemaker_llm_cdk.operations.pricing import product_filters

    product = {
        "product": {"attributes": {"instanceName": instance_type, "platoinstancetype": "Hosting"}},
        "terms": {"OnDemand": {"T1": {"priceDimensions": {"D1": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}},
    }
    stubs.add(
        "pricing",
        "GetProducts",
        {
            "ServiceCode": "AmazonSageMaker",
            "Filters": product_filters(instance_type, "us-east-1"),
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        },
        {"PriceList": [json.dumps(product)], "FormatVersion": "aws_v1"},
    )


def live(cfg, stubs: Stubs, **kwargs: Any) -> list[Finding]:
    findings = run_preflight(cfg, region="us-east-1", clients=stubs.aws(), now=NOW, **kwargs)
    stubs.done()
    assert not [f for f in findings if f.check.startswith("preflight.")], [f.line() for f in findings]
    return findings


def test_live_on_demand_endpoint_all_present_with_price():
    stubs = Stubs()
    identity(stubs)
    names(stubs, "SageMakerLlm-qwen3-8b")
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 4)])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
    layer(stubs, latest=POWERTOOLS_LAYER_VERSION + 2)
    price(stubs, "ml.g6e.12xlarge", "10.4930000000")
    findings = live(config(), stubs)
    assert preflight.exit_code(findings) == 0, [f.line() for f in findings]
    assert (
        of(findings, "quota.endpoint", "info")[0].what
        == "quota 'ml.g6e.12xlarge for endpoint usage' is 4; the config needs up to 2"
    )
    assert of(findings, "s3.present", "info")[0].what == "1 S3 location(s) found: s3://team-llm-weights/qwen3-8b/"
    assert of(findings, "layer.latest")[0].what.startswith(
        f"Powertools layer version {POWERTOOLS_LAYER_VERSION + 2} is the latest"
    )
    (cost,) = of(findings, "cost.endpoint")
    assert cost.what == (
        "endpoint Chat (ml.g6e.12xlarge x 1-2, on demand): 720-1440 on-demand instance-hours per 30 "
        "days at USD 10.493/h (Price List API): floor USD 7,554.96, ceiling USD 15,109.92"
    )
    (total,) = of(findings, "cost.total")  # the cost model's totals, the same the synth's table shows
    assert total.what == "per 30 days: floor USD 7,554.96, ceiling USD 15,109.92 on demand; budget USD 1,000,000/month"


@pytest.mark.parametrize(
    ("pinned", "adapter_name"),
    [({}, "SageMakerLlm-sql"), ({"physical_name": "sql"}, "sql")],
    ids=["stack-prefixed", "pinned"],
)
def test_live_missing_data_quota_and_layer_are_blockers(pinned, adapter_name):
    """Names are checked as the stack creates them: <stack>-<name>, or the pinned physical_name."""
    stubs = Stubs()
    identity(stubs)
    names(stubs, "SageMakerLlm-qwen3-8b", adapter_name, taken=(adapter_name,))
    quotas(stubs, [], defaults=[("ml.g6e.12xlarge for endpoint usage", 0)])
    cfg = config(
        endpoints=[
            endpoint(
                models=[
                    {
                        "name": "qwen3-8b",
                        "model_data_s3_uri": "s3://team-llm-weights/qwen3-8b.tar.gz",
                        "lora": {"max_rank": 16},
                        "adapters": [{"name": "sql", "artifact_s3_uri": "s3://team-llm-adapters/sql.tar.gz", **pinned}],
                    }
                ]
            )
        ]
    )
    stubs.error("s3", "HeadObject", {"Bucket": "team-llm-weights", "Key": "qwen3-8b.tar.gz"}, "404", 404)
    stubs.error("s3", "HeadObject", {"Bucket": "team-llm-adapters", "Key": "sql.tar.gz"}, "403", 403)
    arn = f"arn:aws:lambda:us-east-1:017000801446:layer:{LAYER}"
    stubs.error("lambda", "GetLayerVersionByArn", {"Arn": arn}, "ResourceNotFoundException", 404)
    price(stubs, "ml.g6e.12xlarge", "10.49")
    findings = live(cfg, stubs)
    (quota,) = of(findings, "quota.endpoint", "blocker")
    assert quota.what == "quota 'ml.g6e.12xlarge for endpoint usage' is 0, the config may run 2"
    (weights,) = of(findings, "s3.present", "blocker")
    assert weights.what == "model weights: s3://team-llm-weights/qwen3-8b.tar.gz does not exist (404)"
    (adapter,) = of(findings, "s3.present", "warning")
    assert adapter.subject == "endpoints[0].models[0].adapters[0].artifact_s3_uri"
    assert of(findings, "layer.present", "blocker")[0].what == f"layer {arn} does not exist in us-east-1"
    (taken,) = of(findings, "names.free", "blocker")
    assert (
        taken.what
        == f"inference component {adapter_name} already exists (on endpoint someone-elses) and stack SageMakerLlm does "
        "not"
    )
    assert taken.subject == "endpoints[0].models[0].adapters[0].name"
    assert preflight.exit_code(findings) == 1


def test_live_plan_scheduled_blocks_the_bound_endpoint_and_quota_name_missing():
    stubs = Stubs()
    identity(stubs)
    stubs.add(
        "sagemaker",
        "DescribeTrainingPlan",
        {"TrainingPlanName": "chat-p5e"},
        {
            "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e",
            "TrainingPlanName": "chat-p5e",
            "Status": "Scheduled",
            "TotalInstanceCount": 4,
            "TargetResources": ["endpoint"],
            "StartTime": datetime(2027, 1, 4, tzinfo=UTC),
            "EndTime": datetime(2027, 2, 3, tzinfo=UTC),
            "ReservedCapacitySummaries": [],
        },
    )
    names(stubs, "SageMakerLlm-qwen3-8b", stack_exists=True)
    quotas(stubs, [])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 0)
    layer(stubs, latest=None)
    cfg = config(
        endpoints=[p5e_endpoint()],
        capacity_plans=[
            {
                "existing_plan_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e",
                "instance_type": "ml.p5e.48xlarge",
                "instance_count": 4,
            }
        ],
    )
    findings = live(cfg, stubs)
    (plan,) = of(findings, "plan.status", "blocker")
    assert plan.what == "plan chat-p5e is Scheduled (2027-01-04T00:00:00Z to 2027-02-03T00:00:00Z)"
    assert plan.subject == "endpoints[0]" and "on-demand" in plan.fix
    assert (
        of(findings, "quota.endpoint", "warning")[0].what
        == "no Service Quotas entry named 'ml.p5e.48xlarge for endpoint usage'"
    )
    assert (
        of(findings, "s3.present", "blocker")[0].what == "model weights: nothing under s3://team-llm-weights/qwen3-8b/"
    )
    assert of(findings, "cost.endpoint")[0].what.startswith(
        "endpoint Chat (ml.p5e.48xlarge x 1-2, only on plan chat-p5e): "
        "0-0 on-demand instance-hours, 1440 on the plan per 30 days"
    )
    assert not of(findings, "names.free")  # the stack exists and the name is free


def test_live_existing_plan_missing_and_active_plan_near_its_end():
    for status_response, expected in (
        (None, ("blocker", "plan chat-p5e does not exist in us-east-1")),
        (
            {
                "Status": "Active",
                "TotalInstanceCount": 2,
                "EndTime": NOW + timedelta(days=3),
                "StartTime": NOW - timedelta(days=20),
                "TargetResources": ["endpoint"],
                "ReservedCapacitySummaries": [
                    {
                        "InstanceType": "ml.p5e.48xlarge",
                        "TotalInstanceCount": 2,
                        "ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:123456789012:reserved-capacity/x",
                        "Status": "Active",
                    }
                ],
            },
            ("warning", "plan chat-p5e ends"),
        ),
        (
            {
                "Status": "Active",
                "TotalInstanceCount": 2,
                "EndTime": NOW + timedelta(days=60),
                "UpfrontFee": "98000",
                "CurrencyCode": "USD",
                "StartTime": NOW - timedelta(days=2),
                "TargetResources": ["endpoint"],
            },
            ("info", "plan chat-p5e is Active (2026-11-29T09:00:00Z to 2027-01-30T09:00:00Z, upfront fee USD 98000)"),
        ),
    ):
        stubs = Stubs()
        identity(stubs)
        if status_response is None:
            stubs.error("sagemaker", "DescribeTrainingPlan", {"TrainingPlanName": "chat-p5e"}, "ResourceNotFound")
        else:
            stubs.add(
                "sagemaker",
                "DescribeTrainingPlan",
                {"TrainingPlanName": "chat-p5e"},
                {
                    "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e",
                    "TrainingPlanName": "chat-p5e",
                    **status_response,
                },
            )
        names(stubs, "SageMakerLlm-qwen3-8b")
        quotas(stubs, [("ml.p5e.48xlarge for endpoint usage", 2)])
        s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
        layer(stubs)
        cfg = config(
            endpoints=[p5e_endpoint(scaling={"min_instances": 1, "max_instances": 1})],
            capacity_plans=[
                {"name": "chat-p5e", "mode": "existing", "instance_type": "ml.p5e.48xlarge", "instance_count": 2}
            ],
        )
        findings = live(cfg, stubs)
        severity, text = expected
        assert any(f.what.startswith(text) for f in of(findings, "plan.status", severity)), [f.line() for f in findings]


def test_live_eagle_job_quota_found_by_name():
    stubs = Stubs()
    identity(stubs)
    names(stubs, "SageMakerLlm-qwen3-8b")
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 2), ("ml.g6e.12xlarge for optimization job usage", 0)])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
    layer(stubs)
    price(stubs, "ml.g6e.12xlarge", "10.49")
    cfg = config(
        endpoints=[
            endpoint(
                models=[
                    {
                        "name": "qwen3-8b",
                        "model_data_s3_uri": "s3://team-llm-weights/qwen3-8b/",
                        "architecture": "Qwen3ForCausalLM",
                        "eagle": {},
                    }
                ]
            )
        ]
    )
    (found,) = of(live(cfg, stubs), "quota.eagle-job", "blocker")
    assert found.what == "quota 'ml.g6e.12xlarge for optimization job usage' is 0, the job needs 1"


def test_live_account_other_than_the_target():
    stubs = Stubs()
    identity(stubs, account="999999999999")
    names(stubs, "SageMakerLlm-qwen3-8b")
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 2)])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
    layer(stubs)
    price(stubs, "ml.g6e.12xlarge", "10.49")
    (found,) = of(live(config(target={"account": "123456789012"}), stubs), "credentials.account", "blocker")
    assert found.what == "credentials are for account 999999999999, target.account is 123456789012"


def test_no_credentials_skips_live_checks_without_a_call():
    class NoCredentials:
        def client(self, service: str, region: str | None = None) -> Any:
            assert service == "sts", f"no {service} call may happen without credentials"
            return SimpleNamespace(get_caller_identity=lambda: (_ for _ in ()).throw(NoCredentialsError()))

    findings = run_preflight(config(), region="us-east-1", clients=NoCredentials(), now=NOW)  # type: ignore[arg-type]
    (skipped,) = of(findings, "credentials", "warning")
    assert skipped.what == "live checks skipped: NoCredentialsError"
    # No lookup: the shipped table prices it; a figure it lacks reads unknown, never 0.
    assert of(findings, "cost.endpoint")[0].what.endswith("floor unknown, ceiling unknown")
    assert "from the price table of" in of(findings, "cost.total")[0].what
    assert [f.check for f in findings if f.check in ("quota.endpoint", "s3.present", "layer.present")] == []


# ----------------------------------------------------------------------- CLI
def test_cli_prints_the_default_configs_findings_offline(capsys):
    code = preflight.main(
        ["--config", str(ROOT / "config/default.yaml"), "--offline", "--no-synth", "--region", "us-east-1"]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"preflight of {ROOT / 'config/default.yaml'} for us-east-1 (offline): ")
    assert all(line.split()[0] in ("BLOCKER", "WARNING", "INFO") for line in out[:-1])
    assert any("[cost.endpoint]" in line for line in out)
    assert code == (1 if any(line.startswith("BLOCKER") for line in out) else 0)


def own_buckets(tmp_path: Path) -> Path:
    """The shipped configs in ``tmp_path/config``, their example buckets replaced by names a team would own."""
    folder = tmp_path / "config"
    folder.mkdir()
    for path in (ROOT / "config").glob("*.yaml"):
        (folder / path.name).write_text(path.read_text().replace("s3://my-llm-", "s3://acme-llm-"))
    return folder


def test_an_offline_verdict_says_the_live_checks_did_not_run(capsys, tmp_path):
    dev = own_buckets(tmp_path) / "dev.yaml"
    code = preflight.main(["--config", str(dev), "--offline", "--no-synth", "--region", "us-east-1"])
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 0
    assert verdict.endswith(
        "no blocker found by the offline checks; the live checks (plan status, quotas, names, S3 data, layers, "
        "prices) did not run: run with read-only AWS credentials before a deploy"
    )


def test_require_live_without_credentials_is_one_clear_error(capsys, monkeypatch, tmp_path):
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code = preflight.main(
        ["--config", str(ROOT / "config/dev.yaml"), "--no-synth", "--region", "us-east-1", "--require-live"]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.strip() == (
        "error: a deploy needs AWS credentials and none resolved (NoCredentialsError); fix: set AWS_PROFILE (or sign "
        "in with `aws sso login`) for the target account, then run it again"
    )
    assert "Traceback" not in captured.out + captured.err


def test_require_live_and_offline_are_refused_together(capsys):
    with pytest.raises(SystemExit) as exited:
        preflight.main(["--config", str(ROOT / "config/dev.yaml"), "--no-synth", "--offline", "--require-live"])
    assert exited.value.code == 2
    assert "--require-live needs the live checks: drop --offline" in capsys.readouterr().err


def test_make_deploy_runs_preflight_on_its_cdk_out_before_cdk_deploy():
    import subprocess

    dry = subprocess.run(
        ["make", "-n", "-o", "synth", "deploy", "CONFIG=config/dev.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    preflight_line = next(i for i, line in enumerate(dry) if "-m sagemaker_llm_cdk.preflight" in line)
    deploy_line = next(i for i, line in enumerate(dry) if line.startswith("cdk deploy --app cdk.out"))
    assert preflight_line < deploy_line
    assert "--config config/dev.yaml --cdk-out cdk.out --require-live" in dry[preflight_line]


def test_a_live_verdict_says_no_blocker_found():
    from sagemaker_llm_cdk.preflight.findings import summary_line

    assert summary_line([], source="c.yaml", region="us-east-1", live=True) == (
        "preflight of c.yaml for us-east-1 (live checks ran): 0 blocker(s), 0 warning(s), 0 info; no blocker found"
    )


def test_cli_exit_codes(tmp_path, capsys, synthesized):
    clean = tmp_path / "clean.yaml"
    clean.write_text(
        "endpoints:\n  - name: Chat\n    instance_type: ml.g6e.12xlarge\n    models:\n"
        "      - {name: qwen3-8b, model_data_s3_uri: 's3://team-llm-weights/qwen3-8b/'}\n"
    )
    assert (
        preflight.main(["--config", str(clean), "--offline", "--cdk-out", str(synthesized), "--region", "us-east-1"])
        == 0
    )
    assert (
        preflight.main(["--config", str(clean), "--offline", "--cdk-out", str(synthesized), "--region", "us-west-1"])
        == 1
    )
    capsys.readouterr()
    bad = tmp_path / "bad.yaml"
    bad.write_text("endpoints:\n  - name: Chat\n    instance_type: ml.nope\n    models: []\n")
    assert preflight.main(["--config", str(bad), "--offline", "--no-synth"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "problem(s) in" in err and "endpoints[0].instance_type: got 'ml.nope'" in err
    assert "Traceback" not in err
    assert preflight.main(["--config", str(clean), "--offline", "--cdk-out", str(tmp_path / "none")]) == 2
    assert "no synthesized templates there" in capsys.readouterr().err


def test_cli_json_lines(capsys, synthesized, tmp_path):
    clean = tmp_path / "clean.yaml"
    clean.write_text(
        "endpoints:\n  - name: Chat\n    instance_type: ml.g6e.12xlarge\n    models:\n"
        "      - {name: qwen3-8b, model_data_s3_uri: 's3://team-llm-weights/qwen3-8b/'}\n"
    )
    preflight.main(
        ["--config", str(clean), "--offline", "--cdk-out", str(synthesized), "--region", "us-west-1", "--json"]
    )
    lines = capsys.readouterr().out.strip().splitlines()
    records = [json.loads(line) for line in lines[:-1]]
    assert {"severity", "check", "what", "why", "fix", "subject"} == set(records[0])
    assert any(r["severity"] == "blocker" and r["check"] == "region.resource-types" for r in records)


def test_module_runs_from_a_fresh_interpreter(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION"] = "1"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sagemaker_llm_cdk.preflight",
            "--config",
            "config/dev.yaml",
            "--offline",
            "--no-synth",
            "--region",
            "us-east-1",
        ],
        cwd=own_buckets(tmp_path).parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        result.stdout.strip()
        .splitlines()[-1]
        .startswith("preflight of config/dev.yaml for us-east-1 (offline): 0 blocker(s)")
    )
    assert "Traceback" not in result.stderr


def test_regions_module_needs_no_cdk():
    """The schema lookups are plain data: they run in an interpreter where aws_cdk cannot be imported."""
    code = (
        "import sys, importlib.util, pathlib; sys.modules['aws_cdk'] = None; "
        "spec = importlib.util.spec_from_file_location('r', "
        "pathlib.Path('constructs/sagemaker_llm_cdk/core/regions.py')); m = importlib.util.module_from_spec(spec); "
        "spec.loader.exec_module(m); print(len(m.regions_with('AWS::SageMaker::InferenceComponent')), "
        "m.partition_of('us-gov-west-1'))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    count, partition = result.stdout.split()
    assert int(count) == len(regions.schema_regions()) - 21 and partition == "aws-us-gov"


def test_live_weights_in_a_bucket_of_another_region():
    stubs = Stubs()
    identity(stubs)
    names(stubs, "SageMakerLlm-qwen3-8b")
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 2)])
    params = {"Bucket": "team-llm-weights", "Prefix": "qwen3-8b/", "MaxKeys": 1}
    assert_valid_request("s3", "ListObjectsV2", params)
    stubs.client("s3", "us-east-1")
    stubs.stubbers[("s3", "us-east-1")].add_response(
        "list_objects_v2",
        {
            "KeyCount": 1,
            "Contents": [{"Key": "qwen3-8b/config.json"}],
            "ResponseMetadata": {"HTTPHeaders": {"x-amz-bucket-region": "eu-west-1"}},
        },
        params,
    )
    layer(stubs)
    price(stubs, "ml.g6e.12xlarge", "10.49")
    (found,) = of(live(config(), stubs), "s3.region", "blocker")
    assert found.what == "model weights: bucket team-llm-weights is in eu-west-1, the endpoint in us-east-1"


FAKE_APP = """
import json, os, pathlib
context = json.loads(os.environ["CDK_CONTEXT_JSON"])
assert context["config"].endswith("clean.yaml") and context["@aws-cdk/core:flag"] is True, context
resources = {"Ic": {"Type": "AWS::SageMaker::InferenceComponent"}, "Meta": {"Type": "AWS::CDK::Metadata"},
             "Custom": {"Type": "Custom::Thing"}}
pathlib.Path(os.environ["CDK_OUTDIR"], "App.template.json").write_text(json.dumps({"Resources": resources}))
"""


def test_cli_synthesizes_with_the_cdk_json_app_and_context(tmp_path, monkeypatch, capsys):
    (tmp_path / "app.py").write_text(FAKE_APP)
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": {"@aws-cdk/core:flag": True}}))
    clean = tmp_path / "clean.yaml"
    clean.write_text(
        "endpoints:\n  - name: Chat\n    instance_type: ml.g6e.12xlarge\n    models:\n"
        "      - {name: qwen3-8b, model_data_s3_uri: 's3://team-llm-weights/qwen3-8b/'}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert preflight.main(["--config", str(clean), "--offline", "--region", "eu-west-3"]) == 1
    out = capsys.readouterr().out
    assert "AWS::SageMaker::InferenceComponent is not available in eu-west-3 (used by App.template.json/Ic)" in out
    assert "Custom::Thing" not in out and "AWS::CDK::Metadata" not in out
    (tmp_path / "app.py").write_text("raise SystemExit('the app is broken')")
    assert preflight.main(["--config", str(clean), "--offline", "--region", "us-east-1"]) == 1
    (synth,) = [line for line in capsys.readouterr().out.splitlines() if "[synth]" in line]
    assert synth.startswith("BLOCKER [synth] the app does not synthesize; why: the app is broken")


def test_live_reserve_plan_is_described_by_its_stack_prefixed_name():
    """The stacks buy (or adopt) SageMakerLlm-chat-p5e: preflight asks SageMaker for that name, not the config's."""
    stubs = Stubs()
    identity(stubs)
    stubs.error("sagemaker", "DescribeTrainingPlan", {"TrainingPlanName": "SageMakerLlm-chat-p5e"}, "ResourceNotFound")
    names(stubs, "SageMakerLlm-qwen3-8b")
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 2)])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
    layer(stubs)
    findings = live(config(capacity_plans=[reserve_plan()]), stubs)
    (plan,) = of(findings, "plan.status", "info")
    assert plan.what == "plan chat-p5e is not bought yet: no TrainingPlanName SageMakerLlm-chat-p5e (see plan.purchase)"


def _models_config(*models: dict[str, Any]) -> dict[str, Any]:
    return {
        "target": {"region": "us-east-1"},
        "endpoints": [{"name": "chat", "instance_type": "ml.p5e.48xlarge", "models": list(models)}],
    }


def test_a_model_that_may_serve_a_draft_head_is_a_warning_with_how_to_try_it():
    cfg = parse_config(
        _models_config(
            {"name": "plain", "model_data_s3_uri": "s3://team-llm-weights/plain/", "architecture": "Qwen3ForCausalLM"},
            {
                "name": "fast",
                "model_data_s3_uri": "s3://team-llm-weights/fast/",
                "architecture": "Qwen3ForCausalLM",
                "eagle": {},
            },
        )
    )
    (found,) = of(offline(cfg), "eagle.head-serving")
    assert found.severity == "warning" and found.subject == "endpoints[0].models[1]"
    assert (
        "model fast serves an EAGLE loop's promoted head through a SageMaker model with an "
        "AdditionalModelDataSources channel ('eagle')" in found.what
    )
    assert "not for inference components" in found.why
    assert "promote a head on a test endpoint" in found.fix


def test_no_head_serving_warning_without_eagle():
    cfg = parse_config(_models_config({"name": "plain", "model_data_s3_uri": "s3://team-llm-weights/plain/"}))
    assert of(offline(cfg), "eagle.head-serving") == []


def test_a_jumpstart_lock_entry_not_read_from_jumpstart_is_a_blocker(templates):
    """Preflight reads the rule the synth put in the template, so it says what CloudFormation will say."""
    from sagemaker_llm_cdk.hosting.jumpstart import DEPLOY_RULE_PREFIX

    description = (
        "JumpStart lock entry m 1.0.0 in us-east-1 was written from the fixture f.json, not read from JumpStart"
    )
    with_rule = {name: dict(template) for name, template in templates.items()}
    name = sorted(with_rule)[0]
    with_rule[name]["Rules"] = {
        f"{DEPLOY_RULE_PREFIX}M100": {
            "Assertions": [{"Assert": {"Fn::Equals": ["fixture", "jumpstart"]}, "AssertDescription": description}]
        }
    }
    (found,) = of(offline(config(), templates=with_rule), "jumpstart.lock-source", "blocker")
    assert (found.what, found.subject) == (description, name)
    assert "refuses every deploy" in found.why
    assert of(offline(config(), templates=templates), "jumpstart.lock-source") == []


@pytest.mark.parametrize(("held_by", "blocks"), [("chat-v1", True), ("chat-v2", False)], ids=["renamed", "same"])
def test_live_a_renamed_endpoint_whose_components_keep_their_names_is_a_blocker(held_by, blocks):
    """The stack exists and its component is on endpoint chat-v1; the config names the endpoint chat-v2. CloudFormation
    creates chat-v2 and its components before it deletes chat-v1's, so the component's create fails on its name."""
    stubs = Stubs()
    identity(stubs)
    stubs.add(
        "cloudformation",
        "DescribeStacks",
        {"StackName": "SageMakerLlm"},
        {"Stacks": [{"StackName": "SageMakerLlm", "CreationTime": NOW, "StackStatus": "UPDATE_COMPLETE"}]},
    )
    if held_by == "chat-v2":
        stubs.add(
            "sagemaker",
            "DescribeEndpoint",
            {"EndpointName": "chat-v2"},
            {
                "EndpointName": "chat-v2",
                "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/chat-v2",
                "EndpointStatus": "InService",
                "CreationTime": NOW,
                "LastModifiedTime": NOW,
            },
        )
    else:
        stubs.error("sagemaker", "DescribeEndpoint", {"EndpointName": "chat-v2"}, "ValidationException")
    name = "SageMakerLlm-qwen3-8b"
    stubs.add(
        "sagemaker",
        "DescribeInferenceComponent",
        {"InferenceComponentName": name},
        {
            "InferenceComponentName": name,
            "EndpointName": held_by,
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
            "InferenceComponentStatus": "InService",
            "InferenceComponentArn": f"arn:aws:sagemaker:us-east-1:123456789012:inference-component/{name}",
            "EndpointArn": f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{held_by}",
        },
    )
    quotas(stubs, [("ml.g6e.12xlarge for endpoint usage", 4)])
    s3_prefix(stubs, "team-llm-weights", "qwen3-8b/", 1)
    layer(stubs, latest=POWERTOOLS_LAYER_VERSION)
    price(stubs, "ml.g6e.12xlarge", "10.4930000000")
    findings = live(config(endpoints=[endpoint(endpoint_name="chat-v2")]), stubs)
    taken = of(findings, "names.free", "blocker")
    if not blocks:
        assert not taken and preflight.exit_code(findings) == 0, [f.line() for f in findings]
        return
    (finding,) = taken
    assert (
        finding.what == f"inference component {name} is on endpoint chat-v1, and the config puts it on endpoint chat-v2"
    )
    assert finding.subject == "endpoints[0].models[0].name"
    assert "creates the renamed endpoint and its components before it deletes the old ones" in finding.why
    assert "physical_name" in finding.fix
    assert preflight.exit_code(findings) == 1
