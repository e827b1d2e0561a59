"""LlmMonitoring: dashboards per endpoint, alarms to one KMS-encrypted topic, rollout configs wired to the alarms."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from aws_cdk import App, Duration, Environment, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Capture, Match, Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import ConfigurationError, CopyScaling, EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.core.functions import python_function
from sagemaker_llm_cdk.operations.deployment_check import DeploymentCheck
from sagemaker_llm_cdk.operations.monitoring import SECTIONS, LlmMonitoring
from sagemaker_llm_cdk.settings.operations import MonitoringSettings
from syrupy.extensions.json import JSONSnapshotExtension

pytestmark = pytest.mark.synth

MODEL = "qwen3-8b"
PREFIX = "Ops"


def llm_stack(
    *,
    endpoint_name: str | None = None,
    copies: CopyScaling | None = None,
    app: App | None = None,
    env: Environment | None = None,
) -> tuple[Stack, LlmEndpoint]:
    """A stack with one LlmEndpoint (ml.g6e.12xlarge) hosting one model."""
    stack = Stack(app or App(), "Test", env=env)
    endpoint = LlmEndpoint(
        stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), endpoint_name=endpoint_name
    )
    endpoint.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL,
            physical_name=MODEL,
            model_data_s3_uri="s3://my-bucket/model/",
            copies=copies or CopyScaling(min_copies=0, max_copies=2),
        ),
    )
    return stack, endpoint


@dataclass
class FakeAdapter:
    """What monitor_adapter needs: a component name and an invocations metric."""

    component_name: str

    def metric_invocations(self, **kwargs: Any) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="AWS/SageMaker",
            metric_name="Invocations",
            statistic="Sum",
            dimensions_map={"InferenceComponentName": self.component_name},
            **kwargs,
        )


def front_door_function(stack: Stack) -> lambda_.Function:
    """A stand-in for the session front door (any function: only its metrics are read)."""
    return python_function(stack, "FrontDoor", folder="deployment_check", description="stand-in front door")


def render(value: Any) -> str:
    """A DashboardBody (string or Fn::Join) as text, references written as ${Logical.Attr} / ${Ref}."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(render(part) for part in parts)
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"unexpected token {value!r}")


def dashboard(template: Template) -> dict[str, Any]:
    body = Capture()
    template.has_resource_properties("AWS::CloudWatch::Dashboard", {"DashboardBody": body})
    return json.loads(render(body.as_object()))  # an Fn::Join: the widgets name the region and the endpoint


def plain_metrics(widget: dict[str, Any]) -> list[tuple[str, str, dict[str, str], dict[str, Any]]]:
    """(namespace, metric name, dimensions, options) of each non-expression line of a graph widget."""
    found = []
    for line in widget.get("properties", {}).get("metrics", []):
        if isinstance(line[0], dict):
            continue
        options = line[-1] if isinstance(line[-1], dict) else {}
        names = [p for p in line if not isinstance(p, dict)]
        namespace, metric = names[0], names[1]
        dims = dict(zip(names[2::2], names[3::2], strict=False))
        found.append((namespace, metric, dims, options))
    return found


def widgets_titled(board: dict[str, Any], text: str) -> list[dict[str, Any]]:
    return [w for w in board["widgets"] if text in w.get("properties", {}).get("title", "")]


def alarm_named(template: Template, name: str) -> dict[str, Any]:
    found = [
        r
        for r in template.find_resources("AWS::CloudWatch::Alarm").values()
        if r["Properties"].get("AlarmName") == name
    ]
    assert len(found) == 1, f"expected one alarm named {name}, found {len(found)}"
    return found[0]


def alarm_names(template: Template) -> set[str]:
    return {
        r["Properties"]["AlarmName"]
        for r in template.find_resources("AWS::CloudWatch::Alarm").values()
        if "AlarmName" in r["Properties"]
    }


def logical_id(template: Template, cfn_type: str, predicate=lambda r: True) -> str:
    found = [k for k, r in template.find_resources(cfn_type).items() if predicate(r)]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def full() -> tuple[Stack, LlmEndpoint, LlmMonitoring, Template]:
    """Everything on one endpoint, called in an order unlike the dashboard's (eagle and adapters first)."""
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(
        stack, "Monitoring", alarm_prefix=PREFIX, settings=MonitoringSettings(email="ops@example.com")
    )
    monitoring.monitor_eagle(MODEL, endpoint=endpoint)
    monitoring.monitor_adapter(FakeAdapter("support-bot"), endpoint=endpoint)
    monitoring.monitor_endpoint(endpoint)
    monitoring.monitor_front_door(front_door_function(stack), "chat-door", endpoint=endpoint)
    monitoring.monitor_capacity_plan("chat-p5e-2026q1", endpoint=endpoint)
    return stack, endpoint, monitoring, Template.from_stack(stack)


def endpoint_name(template: Template) -> str:
    """The endpoint's physical name: stable and known at synth (LlmEndpoint derives it from the path)."""
    (endpoint,) = template.find_resources("AWS::SageMaker::Endpoint").values()
    return endpoint["Properties"]["EndpointName"]


def endpoint_dims(template: Template) -> dict[str, str]:
    return {"EndpointName": endpoint_name(template), "VariantName": "AllTraffic"}


# ----------------------------------------------------------------- dashboards
def test_endpoint_traffic_widgets_add_up_the_models_own_metrics(full):
    """An inference-component endpoint publishes invocations per component: the endpoint graphs sum them."""
    *_, template = full
    board = dashboard(template)
    (traffic,) = widgets_titled(board, "Invocations and errors")
    expressions = [line[0]["expression"] for line in traffic["properties"]["metrics"] if isinstance(line[0], dict)]
    assert expressions == ["FILL(invocations0, 0)", "FILL(invocation4xxerrors0, 0)", "FILL(invocation5xxerrors0, 0)"]
    component = {"InferenceComponentName": MODEL}
    assert [(n, m, d) for n, m, d, _ in plain_metrics(traffic)] == [
        ("AWS/SageMaker", metric, component) for metric in ("Invocations", "Invocation4XXErrors", "Invocation5XXErrors")
    ]
    (latency,) = [w for w in widgets_titled(board, "Model latency p99 per model")]
    assert [(m, d, o["stat"]) for _, m, d, o in plain_metrics(latency)] == [("ModelLatency", component, "p99")]
    (overhead,) = widgets_titled(board, "Overhead latency")
    assert [(m, o["stat"]) for _, m, _, o in plain_metrics(overhead)] == [
        ("OverheadLatency", "p50"),
        ("OverheadLatency", "p99"),
    ]


def test_endpoint_gpu_and_instance_count(full):
    *_, template = full
    board, dims = dashboard(template), endpoint_dims(template)
    (gpu,) = widgets_titled(board, "GPU and GPU memory utilization")
    assert [(n, m, d) for n, m, d, _ in plain_metrics(gpu)] == [
        ("/aws/sagemaker/Endpoints", "GPUUtilization", dims),
        ("/aws/sagemaker/Endpoints", "GPUMemoryUtilization", dims),
    ]
    (instances,) = widgets_titled(board, "Instances")
    ((namespace, metric, d, options),) = plain_metrics(instances)
    assert (namespace, metric, d, options["stat"], options["period"]) == (
        "/aws/sagemaker/Endpoints",
        "CPUUtilization",
        dims,
        "SampleCount",
        60,
    )


def test_model_widgets_use_the_component_dimension(full):
    *_, template = full
    board = dashboard(template)
    component = {"InferenceComponentName": MODEL}
    (copies,) = widgets_titled(board, "Copies per model")
    assert plain_metrics(copies)[0][:3] == ("/aws/sagemaker/InferenceComponents", "CopyCount", component)
    (no_capacity,) = widgets_titled(board, "NoCapacityInvocationFailures")
    assert plain_metrics(no_capacity)[0][:3] == ("AWS/SageMaker", "NoCapacityInvocationFailures", component)
    (gpu,) = widgets_titled(board, f"{MODEL}: GPU")
    assert [m for _, m, d, _ in plain_metrics(gpu) if d == component] == [
        "GPUUtilizationNormalized",
        "GPUMemoryUtilizationNormalized",
    ]
    (latency,) = widgets_titled(board, f"{MODEL}: model latency")
    assert [o["stat"] for *_, o in plain_metrics(latency)] == ["p50", "p90", "p99"]


def test_adapter_front_door_capacity_and_eagle_rows(full):
    *_, template = full
    board = dashboard(template)
    (adapters,) = widgets_titled(board, "Adapter invocations")
    assert plain_metrics(adapters)[0][:3] == ("AWS/SageMaker", "Invocations", {"InferenceComponentName": "support-bot"})
    (door_errors,) = widgets_titled(board, "chat-door: errors")
    function_id = logical_id(
        template, "AWS::Lambda::Function", lambda r: r["Properties"].get("Description") == "stand-in front door"
    )
    assert plain_metrics(door_errors)[0][:3] == ("AWS/Lambda", "Errors", {"FunctionName": "${" + function_id + "}"})
    days = widgets_titled(board, "chat-p5e-2026q1: days left")
    assert [w["properties"]["view"] for w in days] == ["singleValue", "timeSeries"]
    for widget in days:
        assert plain_metrics(widget)[0][:3] == (
            "SageMakerLlm",
            "CapacityPlanDaysLeft",
            {"TrainingPlanName": "chat-p5e-2026q1"},
        )
    (speedup,) = widgets_titled(board, f"{MODEL}: speedup per run")
    ((namespace, metric, dims, options),) = plain_metrics(speedup)
    assert (namespace, metric, dims, options["stat"], options["period"]) == (
        "SageMakerLlm",
        "EagleSpeedup",
        {"ModelName": MODEL},
        "Maximum",
        86400,
    )


def test_sections_keep_their_order_whatever_the_call_order(full):
    *_, template = full
    board = dashboard(template)
    headers = [w for w in board["widgets"] if w["type"] == "text" and w["properties"]["markdown"].startswith("## ")]
    titles = [w["properties"]["markdown"].split("\n")[0] for w in sorted(headers, key=lambda w: w["y"])]
    assert [t.split(" ")[1] for t in titles] == ["Endpoint", "Model", "LoRA", "Session", "Capacity", "EAGLE"]
    assert len(SECTIONS) == 6


def test_one_dashboard_per_endpoint_named_after_prefix_and_region(full):
    _, endpoint, monitoring, template = full
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    template.has_resource_properties(
        "AWS::CloudWatch::Dashboard", {"DashboardName": {"Fn::Join": ["", [f"{PREFIX}-Chat-", {"Ref": "AWS::Region"}]]}}
    )
    assert list(monitoring.dashboards) == [endpoint.node.path]
    assert monitoring.overview_dashboard is None


def test_rows_without_endpoint_go_to_an_operations_dashboard():
    stack, _ = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring", alarm_prefix=PREFIX)
    monitoring.monitor_eagle("other-model")
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    template.has_resource_properties(
        "AWS::CloudWatch::Dashboard",
        {"DashboardName": {"Fn::Join": ["", [f"{PREFIX}-operations-", {"Ref": "AWS::Region"}]]}},
    )
    assert monitoring.overview_dashboard is not None


def test_many_adapters_spread_over_graphs():
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring")
    graphs = {id(monitoring.monitor_adapter(FakeAdapter(f"adapter-{i}"), endpoint=endpoint)) for i in range(51)}
    assert len(graphs) == 2


def _dashboard_bodies(stack: Stack) -> list[str]:
    return [
        render(r["Properties"]["DashboardBody"])
        for r in Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard").values()
    ]


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
@pytest.mark.parametrize("first", [0, 3, 50])
def test_monitor_adapters_draws_the_same_graphs_as_monitor_adapter_one_by_one(first, env):
    """The batch (a graph gets its lines when created) continues the last graph as one-by-one calls would."""

    def board(batched: bool) -> tuple[list[str], list[int]]:
        stack, endpoint = llm_stack(app=App(), env=env)
        monitoring = LlmMonitoring(stack, "Monitoring")
        adapters = [FakeAdapter(f"adapter-{i}") for i in range(first + 120)]
        graphs = [monitoring.monitor_adapter(a, endpoint=endpoint) for a in adapters[:first]]
        if batched:
            graphs += monitoring.monitor_adapters(adapters[first:], endpoint=endpoint)
        else:
            graphs += [monitoring.monitor_adapter(a, endpoint=endpoint) for a in adapters[first:]]
        order = list(dict.fromkeys(id(g) for g in graphs))
        return _dashboard_bodies(stack), [order.index(id(g)) for g in graphs]

    one_by_one, batch = board(False), board(True)
    assert batch == one_by_one
    body = json.loads(batch[0][0])
    titles = [w["properties"].get("title") for w in body["widgets"] if w["type"] == "metric"]
    lines = [
        len(w["properties"]["metrics"])
        for w in body["widgets"]
        if str(w["properties"].get("title", "")).startswith("Adapter invocations")
    ]
    assert sum(lines) == first + 120 and max(lines) == 50, lines
    assert titles.count("Adapter invocations") == 1 and "Adapter invocations (2)" in titles
    assert batch[1] == [i // 50 for i in range(first + 120)], "each adapter's graph, in order"


def test_monitor_adapters_with_no_adapters_adds_nothing():
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring")
    assert monitoring.monitor_adapters([], endpoint=endpoint) == []
    assert all("LoRA adapters" not in body for body in _dashboard_bodies(stack))


# --------------------------------------------------------------------- alarms
ALARMS = {
    # name suffix: (namespace, metric, dimensions, statistic, threshold, operator, evaluation periods)
    f"{MODEL}-p99-latency": (
        "AWS/SageMaker",
        "ModelLatency",
        {"InferenceComponentName": MODEL},
        "p99",
        30_000_000,
        "GreaterThanThreshold",
        5,
    ),
    f"{MODEL}-gpu-saturated": (
        "/aws/sagemaker/InferenceComponents",
        "GPUUtilizationNormalized",
        {"InferenceComponentName": MODEL},
        "Average",
        95,
        "GreaterThanThreshold",
        30,
    ),
    f"{MODEL}-no-capacity": (
        "AWS/SageMaker",
        "NoCapacityInvocationFailures",
        {"InferenceComponentName": MODEL},
        "Sum",
        1,
        "GreaterThanOrEqualToThreshold",
        15,
    ),
    f"{MODEL}-eagle-job-failed": (
        "SageMakerLlm",
        "EagleJobFailed",
        {"ModelName": MODEL},
        "Sum",
        1,
        "GreaterThanOrEqualToThreshold",
        1,
    ),
    "chat-p5e-2026q1-capacity-plan-expiring": (
        "SageMakerLlm",
        "CapacityPlanDaysLeft",
        {"TrainingPlanName": "chat-p5e-2026q1"},
        "Minimum",
        14,
        "LessThanThreshold",
        1,
    ),
}


@pytest.mark.parametrize("suffix", sorted(ALARMS))
def test_alarm_metric_threshold_and_topic(full, suffix):
    *_, template = full
    namespace, metric, dims, statistic, threshold, operator, periods = ALARMS[suffix]
    props = alarm_named(template, f"{PREFIX}-{suffix}")["Properties"]
    assert (props["Namespace"], props["MetricName"]) == (namespace, metric)
    assert {d["Name"]: d["Value"] for d in props["Dimensions"]} == dims
    assert props.get("Statistic", props.get("ExtendedStatistic")) == statistic
    assert (props["Threshold"], props["ComparisonOperator"]) == (threshold, operator)
    assert props["EvaluationPeriods"] == props["DatapointsToAlarm"] == periods
    assert props["TreatMissingData"] == "notBreaching"
    topic = {"Ref": logical_id(template, "AWS::SNS::Topic")}
    assert props["AlarmActions"] == [topic] and props["OKActions"] == [topic]


def test_error_rate_alarms_divide_5xx_by_invocations(full):
    *_, template = full
    props = alarm_named(template, f"{PREFIX}-{MODEL}-5xx-rate")["Properties"]
    assert (props["Threshold"], props["ComparisonOperator"], props["EvaluationPeriods"]) == (
        5,
        "GreaterThanThreshold",
        5,
    )
    (expression,) = [q for q in props["Metrics"] if "Expression" in q]
    assert expression["Expression"] == "IF(inv >= 10, 100 * FILL(err, 0) / inv, 0)" and expression["ReturnData"]
    stats = {q["Id"]: q["MetricStat"] for q in props["Metrics"] if "MetricStat" in q}
    assert stats["err"]["Metric"]["MetricName"] == "Invocation5XXErrors"
    assert stats["inv"]["Metric"]["MetricName"] == "Invocations"
    assert stats["err"]["Metric"]["Dimensions"] == [{"Name": "InferenceComponentName", "Value": MODEL}]


def test_endpoint_alarms_watch_the_models_per_component_metrics(full):
    """Rollback alarms on EndpointName/VariantName see nothing on an IC endpoint: they read InferenceComponentName."""
    *_, template = full
    props = alarm_named(template, f"{PREFIX}-Chat-endpoint-p99-latency")["Properties"]
    assert "Dimensions" not in props and props["Threshold"] == 30_000_000
    (expression,) = [q for q in props["Metrics"] if "Expression" in q]
    assert expression["Expression"] == "MAX([m0])" and expression["ReturnData"]
    (stat,) = [q["MetricStat"] for q in props["Metrics"] if "MetricStat" in q]
    assert stat["Stat"] == "p99" and stat["Metric"]["MetricName"] == "ModelLatency"
    assert stat["Metric"]["Dimensions"] == [{"Name": "InferenceComponentName", "Value": MODEL}]
    props = alarm_named(template, f"{PREFIX}-Chat-endpoint-5xx-rate")["Properties"]
    (expression,) = [q for q in props["Metrics"] if "Expression" in q]
    assert expression["Expression"] == "IF((FILL(i0, 0)) >= 10, 100 * (FILL(e0, 0)) / (FILL(i0, 0)), 0)"
    dims = {q["Id"]: q["MetricStat"]["Metric"]["Dimensions"] for q in props["Metrics"] if "MetricStat" in q}
    assert dims == {
        "e0": [{"Name": "InferenceComponentName", "Value": MODEL}],
        "i0": [{"Name": "InferenceComponentName", "Value": MODEL}],
    }


@pytest.mark.parametrize("env", [None, Environment(account="123456789012", region="us-east-1")])
def test_endpoint_alarms_cover_every_model_up_to_cloudwatch_limits(env):
    stack = Stack(App(), "Many", env=env)
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.48xlarge"))
    for i in range(6):
        endpoint.add_model(f"M{i}", ModelSpec(name=f"model-{i}", model_data_s3_uri="s3://my-bucket/model/"))
    LlmMonitoring(stack, "Monitoring", alarm_prefix=PREFIX).monitor_endpoint(endpoint)
    annotations = Annotations.from_stack(stack)  # synthesizes (forced); Template.from_stack then reuses that synth
    template = Template.from_stack(stack)
    latency = alarm_named(template, f"{PREFIX}-Chat-endpoint-p99-latency")["Properties"]
    assert [q["Expression"] for q in latency["Metrics"] if "Expression" in q] == ["MAX([m0, m1, m2, m3, m4, m5])"]
    rate = alarm_named(template, f"{PREFIX}-Chat-endpoint-5xx-rate")["Properties"]
    assert len([q for q in rate["Metrics"] if "MetricStat" in q]) == 10  # CloudWatch's limit: 5 models
    warnings = annotations.find_warning("*", Match.string_like_regexp("first 5 of 6 models"))
    assert len(warnings) == 1
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": {
                    "Alarms": [
                        {"AlarmName": f"{PREFIX}-Chat-endpoint-p99-latency"},
                        {"AlarmName": f"{PREFIX}-Chat-endpoint-5xx-rate"},
                    ]
                }
            }
        },
    )


def test_front_door_alarm_counts_function_errors(full):
    *_, template = full
    props = alarm_named(template, f"{PREFIX}-chat-door-front-door-errors")["Properties"]
    assert (props["MetricName"], props["Statistic"], props["Period"]) == ("Errors", "Sum", 300)
    assert (props["Threshold"], props["ComparisonOperator"]) == (5, "GreaterThanOrEqualToThreshold")


def test_model_scaled_to_at_least_one_copy_has_no_no_capacity_alarm():
    stack, endpoint = llm_stack(copies=CopyScaling(min_copies=1, max_copies=2))
    LlmMonitoring(stack, "Monitoring", alarm_prefix=PREFIX).monitor_endpoint(endpoint)
    assert f"{PREFIX}-{MODEL}-no-capacity" not in alarm_names(Template.from_stack(stack))


def test_thresholds_come_from_settings():
    stack, endpoint = llm_stack()
    LlmMonitoring(
        stack,
        "Monitoring",
        alarm_prefix=PREFIX,
        settings={"p99_latency_seconds": 12.5, "latency_minutes": 3, "gpu_saturation_percent": 80},
    ).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    latency = alarm_named(template, f"{PREFIX}-{MODEL}-p99-latency")["Properties"]
    assert (latency["Threshold"], latency["EvaluationPeriods"]) == (12_500_000, 3)
    assert alarm_named(template, f"{PREFIX}-{MODEL}-gpu-saturated")["Properties"]["Threshold"] == 80


def test_disabled_alarms_are_absent():
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(
        stack,
        "Monitoring",
        alarm_prefix=PREFIX,
        settings=MonitoringSettings(
            p99_latency_seconds=None,
            gpu_saturation_percent=None,
            no_capacity_minutes=None,
            eagle_job_failed=False,
            front_door_errors=None,
            capacity_plan_warning_days=None,
        ),
    )
    monitoring.monitor_endpoint(endpoint)
    assert monitoring.monitor_eagle(MODEL, endpoint=endpoint) is None
    assert monitoring.monitor_front_door(front_door_function(stack), "door") is None
    assert monitoring.monitor_capacity_plan("plan-a") is None
    template = Template.from_stack(stack)
    assert alarm_names(template) == {f"{PREFIX}-{MODEL}-5xx-rate", f"{PREFIX}-Chat-endpoint-5xx-rate"}
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": f"{PREFIX}-{MODEL}-5xx-rate"}]},
                "RollingUpdatePolicy": Match.any_value(),
            }
        },
    )


def test_no_rollback_alarms_means_no_auto_rollback():
    stack, endpoint = llm_stack()
    LlmMonitoring(
        stack, "Monitoring", settings=MonitoringSettings(p99_latency_seconds=None, error_rate_percent=None)
    ).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"DeploymentConfig": {"AutoRollbackConfiguration": Match.absent(), "RollingUpdatePolicy": Match.any_value()}},
    )
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {"DeploymentConfig": {"AutoRollbackConfiguration": Match.absent(), "BlueGreenUpdatePolicy": Match.any_value()}},
    )


# ----------------------------------------------------------- safe rollouts
def test_component_rolls_out_copy_by_copy_and_rolls_back_on_its_alarms(full):
    *_, template = full
    config = Capture()
    template.has_resource_properties("AWS::SageMaker::InferenceComponent", {"DeploymentConfig": config})
    assert config.as_object() == {
        # 0-2 copies: a step of one copy is 100% of one copy, more than AWS's 50%; half the copies is one of two
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
            "WaitIntervalInSeconds": 300,
            "MaximumExecutionTimeoutInSeconds": 14400,
        },
        "AutoRollbackConfiguration": {
            "Alarms": [{"AlarmName": f"{PREFIX}-{MODEL}-p99-latency"}, {"AlarmName": f"{PREFIX}-{MODEL}-5xx-rate"}]
        },
    }
    for alarm in config.as_object()["AutoRollbackConfiguration"]["Alarms"]:
        alarm_named(template, alarm["AlarmName"])


def test_component_is_created_after_the_alarms_it_names(full):
    *_, template = full
    (component,) = template.find_resources("AWS::SageMaker::InferenceComponent").values()
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    named = {
        k
        for k, r in alarms.items()
        if r["Properties"].get("AlarmName", "").startswith(f"{PREFIX}-{MODEL}-")
        and "eagle" not in r["Properties"]["AlarmName"]
    }
    assert named and named <= set(component["DependsOn"])


def test_endpoint_blue_green_with_baking_and_endpoint_alarms(full):
    *_, template = full
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE"},
                    "TerminationWaitInSeconds": 300,
                    "MaximumExecutionTimeoutInSeconds": 14400,
                },
                "AutoRollbackConfiguration": {
                    "Alarms": [
                        {"AlarmName": f"{PREFIX}-Chat-endpoint-p99-latency"},
                        {"AlarmName": f"{PREFIX}-Chat-endpoint-5xx-rate"},
                    ]
                },
            }
        },
    )


def test_rollout_settings_are_applied():
    stack, endpoint = llm_stack(copies=CopyScaling(min_copies=4, max_copies=8))  # 2 copies: 25-50% of 4-8
    LlmMonitoring(
        stack,
        "Monitoring",
        settings={
            "rollout": {"batch_copies": 2, "rollback_batch_copies": 1, "wait_seconds": 600, "timeout_seconds": 7200}
        },
    ).monitor_endpoint(endpoint)
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "DeploymentConfig": {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 2},
                    "RollbackMaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
                    "WaitIntervalInSeconds": 600,
                    "MaximumExecutionTimeoutInSeconds": 7200,
                },
                "AutoRollbackConfiguration": Match.any_value(),
            }
        },
    )


def test_rollout_off_leaves_deployment_configs_alone():
    stack, endpoint = llm_stack()
    LlmMonitoring(stack, "Monitoring", settings={"rollout": {"enabled": False}}).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SageMaker::InferenceComponent", {"DeploymentConfig": Match.absent()})
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"DeploymentConfig": Match.absent()})


def test_endpoint_rollback_can_be_turned_off_alone():
    stack, endpoint = llm_stack()
    LlmMonitoring(stack, "Monitoring", settings={"rollout": {"endpoint_rollback": False}}).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"DeploymentConfig": Match.absent()})
    template.has_resource_properties("AWS::SageMaker::InferenceComponent", {"DeploymentConfig": Match.any_value()})


def test_named_endpoint_alarms_exist_before_the_endpoint():
    stack, endpoint = llm_stack(endpoint_name="chat-prod")
    LlmMonitoring(stack, "Monitoring", alarm_prefix=PREFIX).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    alarm_named(template, f"{PREFIX}-Chat-endpoint-p99-latency")
    (resource,) = template.find_resources("AWS::SageMaker::Endpoint").values()
    alarms = {
        k
        for k, r in template.find_resources("AWS::CloudWatch::Alarm").items()
        if "-Chat-endpoint-" in r["Properties"].get("AlarmName", "")
    }
    assert len(alarms) == 2 and alarms <= set(resource["DependsOn"])


# ----------------------------------------------------------------------- topic
def test_topic_is_kms_encrypted_tls_only_and_cloudwatch_may_use_the_key(full):
    *_, template = full
    key_id = logical_id(template, "AWS::KMS::Key", lambda r: "alarms" in r["Properties"].get("Description", ""))
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}})
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            }
                        )
                    ]
                )
            },
        },
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


def test_email_subscribes_to_the_topic(full):
    *_, template = full
    template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "email",
            "Endpoint": "ops@example.com",
            "TopicArn": {"Ref": logical_id(template, "AWS::SNS::Topic")},
        },
    )


def test_no_email_no_subscription():
    stack, endpoint = llm_stack()
    LlmMonitoring(stack, "Monitoring").monitor_endpoint(endpoint)
    Template.from_stack(stack).resource_count_is("AWS::SNS::Subscription", 0)


def test_given_topic_is_used_and_no_topic_is_created():
    stack, endpoint = llm_stack()
    topic = sns.Topic.from_topic_arn(stack, "Existing", "arn:aws:sns:us-east-1:123456789012:ops")
    LlmMonitoring(stack, "Monitoring", alarm_topic=topic).monitor_endpoint(endpoint)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 0)
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        if "AlarmName" in alarm["Properties"]:
            assert alarm["Properties"]["AlarmActions"] == ["arn:aws:sns:us-east-1:123456789012:ops"]


def test_alarm_prefix_defaults_to_the_stack_name():
    stack, endpoint = llm_stack()
    LlmMonitoring(stack, "Monitoring").monitor_endpoint(endpoint)
    alarm_named(Template.from_stack(stack), f"Test-{MODEL}-p99-latency")


# ------------------------------------------------------------------ validation
def test_email_must_be_an_address():
    stack, _ = llm_stack()
    with pytest.raises(ConfigurationError, match=r"(?s)Test/Monitoring.*email: got 'ops-at-example'.*name@domain"):
        LlmMonitoring(stack, "Monitoring", settings={"email": "ops-at-example"})


def test_rollout_timeout_must_exceed_the_wait():
    stack, _ = llm_stack()
    with pytest.raises(
        ConfigurationError, match=r"rollout.timeout_seconds: got 600; allowed: more than wait_seconds \(600\)"
    ):
        LlmMonitoring(stack, "Monitoring", settings={"rollout": {"wait_seconds": 600, "timeout_seconds": 600}})


def test_threshold_ranges_are_checked():
    with pytest.raises(ConfigurationError, match=r"error_rate_percent: got 150.*at most 100"):
        LlmMonitoring(llm_stack()[0], "Monitoring", settings={"error_rate_percent": 150})


def test_unknown_setting_is_refused_with_a_suggestion():
    with pytest.raises(ConfigurationError, match=r"p99_latency_second: .*did you mean 'p99_latency_seconds'"):
        LlmMonitoring(llm_stack()[0], "Monitoring", settings={"p99_latency_second": 10})


def test_alarm_prefix_must_be_a_plain_name():
    stack, _ = llm_stack()
    with pytest.raises(ConfigurationError, match=r"alarm_prefix: got 'ops team/prod'.*letters, digits"):
        LlmMonitoring(stack, "Monitoring", alarm_prefix="ops team/prod")


def test_front_door_name_must_be_a_plain_name():
    stack, _ = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring")
    with pytest.raises(ConfigurationError, match=r"name: got 'chat door'.*known at synth"):
        monitoring.monitor_front_door(front_door_function(stack), "chat door")


def test_endpoint_is_monitored_once():
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring")
    monitoring.monitor_endpoint(endpoint)
    with pytest.raises(ConfigurationError, match=r"endpoint: got 'Test/Chat'.*call monitor_endpoint once"):
        monitoring.monitor_endpoint(endpoint)


def test_same_alarm_twice_is_refused():
    stack, _ = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring", alarm_prefix=PREFIX)
    monitoring.monitor_eagle(MODEL)
    with pytest.raises(
        ConfigurationError, match=rf"alarm name: got '{PREFIX}-{MODEL}-eagle-job-failed'.*monitored twice"
    ):
        monitoring.monitor_eagle(MODEL)


def test_model_added_after_monitor_endpoint_fails_the_synth():
    stack, endpoint = llm_stack()
    monitoring = LlmMonitoring(stack, "Monitoring")
    monitoring.monitor_endpoint(endpoint)
    endpoint.add_model("Late", ModelSpec(name="late-model", model_data_s3_uri="s3://my-bucket/late/"))
    with pytest.raises(Exception, match=r"models \['Test-late-model'\] were added to Test/Chat after monitor_endpoint"):
        Template.from_stack(stack)


# ------------------------------------------------------------------------ nag
def test_cdk_nag_reports_no_errors():
    app = App()
    stack, endpoint = llm_stack(app=app)
    monitoring = LlmMonitoring(stack, "Monitoring", settings=MonitoringSettings(email="ops@example.com"))
    monitoring.monitor_endpoint(endpoint)
    monitoring.monitor_adapter(FakeAdapter("support-bot"), endpoint=endpoint)
    monitoring.monitor_front_door(front_door_function(stack), "door", endpoint=endpoint)
    monitoring.monitor_capacity_plan("plan-a", endpoint=endpoint)
    monitoring.monitor_eagle(MODEL, endpoint=endpoint)
    DeploymentCheck(stack, "Check", endpoint=endpoint, total_timeout=Duration.minutes(45))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()


# ------------------------------------------------------------------- snapshot
def test_dashboard_snapshot(full, snapshot):
    """The whole dashboard of the full fixture, for review when widgets change (references as ${Logical.Attr})."""
    *_, template = full
    assert dashboard(template) == snapshot(extension_class=JSONSnapshotExtension)
