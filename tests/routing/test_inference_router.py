"""InferenceRouter: the routing targets it sends, who may invoke it, its validation rules, its checks and alarms,
in an environment-agnostic and an account- and region-bound stack; the ``routers:`` config rules; the pipeline's
Routers wave with the destinations of every regional stage (config/examples/router-two-regions.yaml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    Destination,
    EndpointOptions,
    InferenceRouter,
    LlmEndpoint,
    ModelSpec,
    RouterSpec,
    RouterTarget,
    RoutingTargetSpec,
    load_config,
)
from sagemaker_llm_cdk.core import service_model
from sagemaker_llm_cdk.routing.endpoint_policy import RESOURCE_TYPE as POLICY_TYPE
from sagemaker_llm_cdk.routing.router import RESOURCE_TYPE
from sagemaker_llm_cdk.settings.routing import ROUTING_PREFERENCES
from support.aws_model import assert_valid_request
from support.examples import cli_context, synthesize_in_process
from support.principals import people

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
WEST = "arn:aws:sagemaker:us-west-2:222222222222:inference-component/Prod-SageMakerLlm-qwen3-8b"


def router_stack(env: Environment | None = None, **kwargs: Any) -> tuple[Stack, InferenceRouter, iam.Role]:
    stack = Stack(App(), "Chat", env=env)
    endpoint = LlmEndpoint(
        stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), endpoint_name="chat"
    )
    model = endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-bucket/model/"))
    local = Destination.of_component(model, account=stack.account, region=stack.region)
    remote = Destination.from_arn(WEST, endpoint_name="prod-chat")
    router = InferenceRouter(stack, "Router", targets=[RouterTarget("qwen3-8b", (local, remote))], **kwargs)
    caller = iam.Role(stack, "Caller", assumed_by=people(stack))
    router.grant_invoke(caller)
    return stack, router, caller


def statements(template: Template, role_prefix: str) -> list[dict[str, Any]]:
    return [
        s
        for logical, p in template.find_resources("AWS::IAM::Policy").items()
        if logical.startswith(role_prefix)
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


@pytest.mark.parametrize(
    "env", [None, Environment(account="111111111111", region="us-east-1")], ids=["environment-agnostic", "bound"]
)
def test_the_router_sends_every_target_as_the_api_takes_it(env):
    stack, router, _ = router_stack(env)
    template = Template.from_stack(stack)

    (resource,) = template.find_resources(RESOURCE_TYPE).values()
    props = stack.resolve(resource["Properties"])
    assert props["RouterName"] == "Chat-Router"
    (target,) = props["RoutingTargets"]
    assert target["Name"] == "qwen3-8b"
    assert target["Destinations"][1] == {"ResourceArn": WEST}
    if env is not None:
        request = {"InferenceRouterName": props["RouterName"], "RoutingTargets": props["RoutingTargets"]}
        assert_valid_request("sagemaker", "UpdateInferenceRouter", request)
        assert target["Destinations"][0] == {
            "ResourceArn": "arn:aws:sagemaker:us-east-1:111111111111:inference-component/Chat-qwen3-8b"
        }
    assert len(template.find_resources("AWS::Scheduler::Schedule")) == 1
    assert len(template.find_resources("AWS::CloudWatch::Alarm")) == 2


def test_grant_invoke_allows_the_router_and_every_destination_exactly():
    stack, router, _ = router_stack(Environment(account="111111111111", region="us-east-1"))
    caller = [s for s in statements(Template.from_stack(stack), "CallerDefaultPolicy")]

    by_action = {json.dumps(s["Action"]): s["Resource"] for s in caller}
    assert by_action['"sagemaker:InvokeInferenceRouter"'] == [
        {
            "Fn::Join": [
                "",
                ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-east-1:111111111111:inference-router/Chat-Router"],
            ]
        },
        {
            "Fn::Join": [
                "",
                ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-east-1:111111111111:inference-router/chat-router"],
            ]
        },
    ]
    assert by_action['"sagemaker:InvokeEndpoint"'] == [
        "arn:aws:sagemaker:us-east-1:111111111111:endpoint/chat",
        "arn:aws:sagemaker:us-east-1:111111111111:inference-component/Chat-qwen3-8b",
        "arn:aws:sagemaker:us-east-1:111111111111:inference-component/chat-qwen3-8b",
        "arn:aws:sagemaker:us-west-2:222222222222:endpoint/prod-chat",
        WEST,
        WEST.lower(),
    ]
    assert not any("*" in json.dumps(s["Resource"]) for s in caller)


STACK_ID = "arn:aws:cloudformation:us-east-1:111111111111:stack/Chat/1d6e0a70-0000-0000-0000-000000000000"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "111111111111",
    "AWS::StackId": STACK_ID,
}


def _resolved(value: Any) -> str:
    """A policy value of the template as IAM sees it in stack ``STACK_ID`` (literals, pseudo parameters, Fn::Join)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in PSEUDO:
        return PSEUDO[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(_resolved(part) for part in parts)
    raise AssertionError(f"no model of {value!r}")


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def allowed(statements: list[dict[str, Any]], action: str, arn: str, tags: dict[str, str]) -> bool:
    """Whether an Allow of ``statements`` applies to ``action`` on ``arn``, a router with ``tags`` (no statement of
    these policies denies). A model of IAM for the forms these policies use: any other condition raises."""
    import fnmatch

    for statement in statements:
        if statement["Effect"] != "Allow":
            continue
        if not any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in _as_list(statement["Action"])):
            continue
        if not any(fnmatch.fnmatchcase(arn, _resolved(r)) for r in _as_list(statement["Resource"])):
            continue
        holds = True
        for operator, body in statement.get("Condition", {}).items():
            for key, wanted in body.items():
                assert operator == "StringEquals" and key.startswith("aws:ResourceTag/"), (operator, key)
                holds &= tags.get(key.split("/", 1)[1]) in [_resolved(w) for w in _as_list(wanted)]
        if holds:
            return True
    return False


def role_statements(stack: Stack, function: Any) -> list[dict[str, Any]]:
    template = Template.from_stack(stack)
    role = stack.resolve(function.role.node.default_child.logical_id)
    return [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


@pytest.mark.parametrize(
    "names",
    [("Pinned-Chat", "Pinned-Chat2"), ("Chat-Router", "Pinned-Chat")],
    ids=["pinned", "stack-prefixed-to-pinned"],
)
def test_after_a_rename_the_handlers_may_still_delete_and_wait_for_the_old_router(names):
    """CloudFormation updates the handlers' policy to the new name before its cleanup deletes the old router (and a
    rollback brings the old one back): the policy of the renamed stack allows what those requests need on the old
    router, which carries the owner tags the handler set when it created it, and nothing on another's router."""
    from sagemaker_llm_cdk.routing.router import LOGICAL_ID_TAG, STACK_TAG

    old, new = names
    stack, router, _ = router_stack(Environment(account="111111111111", region="us-east-1"), router_name=new)
    logical_id = stack.resolve(stack.get_logical_id(router.custom_resource.node.default_child))
    mine = {STACK_TAG: STACK_ID, LOGICAL_ID_TAG: logical_id}
    base = "arn:aws:sagemaker:us-east-1:111111111111:inference-router/"
    needs = (
        (
            router.on_event_function,
            ("DeleteInferenceRouter", "DescribeInferenceRouter", "UpdateInferenceRouter", "ListTags"),
        ),
        (router.is_complete_function, ("DescribeInferenceRouter", "DeleteInferenceRouter", "UpdateInferenceRouter")),
    )
    for function, actions in needs:
        policy = role_statements(stack, function)
        for arn in (base + old, base + old.lower()):
            for action in actions:
                assert allowed(policy, f"sagemaker:{action}", arn, mine), (function.node.id, action, arn)
            assert not allowed(policy, "sagemaker:CreateInferenceRouter", arn, mine)
        for theirs in (
            {STACK_TAG: STACK_ID.replace("1d6e0a70", "2f7a1b81"), LOGICAL_ID_TAG: logical_id},
            {STACK_TAG: STACK_ID, LOGICAL_ID_TAG: "OtherRouterResource"},
            {},
        ):
            for action in ("DeleteInferenceRouter", "UpdateInferenceRouter"):
                assert not allowed(policy, f"sagemaker:{action}", base + "Someone-Else", theirs), (action, theirs)
        assert allowed(policy, "sagemaker:DescribeInferenceRouter", base + new, {})


def test_a_long_generated_router_name_keeps_a_digest_and_one_that_fits_is_unchanged():
    from types import SimpleNamespace

    from sagemaker_llm_cdk.settings.routing import default_router_name

    from stacks.router_stage import router_name_of

    assert default_router_name("SageMakerLlm", "Chat") == "SageMakerLlm-Chat"  # deployed routers keep their names
    exact = "S" * 50 + "-" + "C" * 12
    assert default_router_name("S" * 50, "C" * 12) == exact
    stack = "SageMakerLlmWithAVeryLongStackNameForTheProductionAccount"
    one, two = (default_router_name(stack, name) for name in ("ChatRouterEast", "ChatRouterWest"))
    assert one != two
    for name in (one, two):
        assert len(name) == 63
        assert name.startswith("SageMakerLlmWithAVeryLongStackNameForTheProductionAccount-"[:54])
        assert_valid_request("sagemaker", "DescribeInferenceRouter", {"InferenceRouterName": name})
    config = SimpleNamespace(stack_name=stack)
    assert router_name_of(config, RouterSpec(name="ChatRouterEast", targets=[{"name": "chat", "model": "m"}])) == one
    assert (
        router_name_of(
            config, RouterSpec(name="ChatRouterEast", router_name="Pinned", targets=[{"name": "chat", "model": "m"}])
        )
        == "Pinned"
    )


def test_tags_of_the_owner_tags_prefix_and_too_many_tags_are_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"tags\['sagemaker-llm-cdk:stack-id'\]: got 'sagemaker-llm-cdk:stack-id'; "
        r"allowed: a tag key that does not start with 'sagemaker-llm-cdk:'",
    ):
        _router([RouterTarget("qwen3-8b", (REMOTE,))], tags={"sagemaker-llm-cdk:stack-id": "mine"})
    with pytest.raises(ConfigurationError, match=r"tags: got 49; allowed: at most 48 tags"):
        _router([RouterTarget("qwen3-8b", (REMOTE,))], tags={f"k{i}": "v" for i in range(49)})


def test_the_endpoint_policy_of_a_remote_account_is_awss_documented_one():
    _, router, _ = router_stack(Environment(account="111111111111", region="us-east-1"))

    policies = router.endpoint_policy("222222222222", "us-west-2")

    assert policies is not None and list(policies) == ["prod-chat"]
    invoke, describe = policies["prod-chat"]["Statement"]
    assert invoke["Principal"] == {"AWS": "arn:aws:iam::111111111111:root"}
    assert invoke["Action"] == "sagemaker:InvokeEndpoint"
    assert invoke["Resource"] == "arn:aws:sagemaker:us-west-2:222222222222:endpoint/prod-chat"
    assert invoke["Condition"] == {
        "ArnEquals": {
            "sagemaker:SourceInferenceRouterArn": [
                "arn:aws:sagemaker:us-east-1:111111111111:inference-router/Chat-Router",
                "arn:aws:sagemaker:us-east-1:111111111111:inference-router/chat-router",
            ]
        }
    }
    assert describe["Action"] == "sagemaker:DescribeEndpoint"
    assert router.endpoint_policy("111111111111", "us-east-1") is None
    assert_valid_request(
        "sagemaker",
        "PutEndpointPolicy",
        {"EndpointName": "prod-chat", "ResourcePolicy": json.dumps(policies["prod-chat"])},
    )


def test_an_endpoint_policy_needs_a_bound_stack():
    _, router, _ = router_stack()

    with pytest.raises(ConfigurationError, match=r"env: got 'an environment-agnostic stack'"):
        router.endpoint_policy("222222222222", "us-west-2")


def test_the_routing_preferences_are_botocores():
    assert set(ROUTING_PREFERENCES) == service_model.enum("InferenceRouterRoutingPreference")


# ------------------------------------------------------------------------------------------ rules


def _router(targets: list[RouterTarget], **kwargs: Any) -> None:
    stack = Stack(App(), "Chat", env=Environment(account="111111111111", region="us-east-1"))
    InferenceRouter(stack, "Router", targets=targets, **kwargs)


REMOTE = Destination.from_arn(WEST, endpoint_name="prod-chat")


def test_a_target_without_destinations_is_refused():
    with pytest.raises(ConfigurationError, match=r"targets\[0\]\.destinations: got 0; allowed: 1-10 destinations"):
        _router([RouterTarget("qwen3-8b", ())])


def test_more_than_ten_destinations_are_refused():
    many = tuple(Destination.from_arn(f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/e{i}") for i in range(11))
    with pytest.raises(ConfigurationError, match=r"targets\[0\]\.destinations: got 11; allowed: 1-10 destinations"):
        _router([RouterTarget("qwen3-8b", many)])


def test_no_targets_and_repeated_names_are_refused():
    with pytest.raises(ConfigurationError, match=r"targets: got 0; allowed: 1-20 routing targets"):
        _router([])
    with pytest.raises(ConfigurationError, match=r"targets\[1\]\.name: got 'a'; allowed: a name no other target uses"):
        _router([RouterTarget("a", (REMOTE,)), RouterTarget("a", (REMOTE,))])


def test_a_repeated_destination_is_refused():
    with pytest.raises(
        ConfigurationError, match=r"targets\[0\]\.destinations\[1\]: got .*; allowed: each destination once"
    ):
        _router([RouterTarget("qwen3-8b", (REMOTE, REMOTE))])


def test_a_destination_in_another_partition_is_refused():
    china = Destination.from_arn("arn:aws-cn:sagemaker:cn-north-1:222222222222:endpoint/chat")
    with pytest.raises(ConfigurationError, match=r"allowed: a destination in the router's partition \(aws\)"):
        _router([RouterTarget("qwen3-8b", (china,))])


def test_instance_pool_order_needs_an_async_target():
    with pytest.raises(
        ConfigurationError, match=r"routing_preference: got 'InstancePoolOrder'; allowed: LocalRegionFirst"
    ):
        _router([RouterTarget("qwen3-8b", (REMOTE,), routing_preference="InstancePoolOrder")])


def test_a_bad_router_name_and_schedule_are_refused():
    with pytest.raises(ConfigurationError, match=r"router_name: got 'chat_router'"):
        _router([RouterTarget("qwen3-8b", (REMOTE,))], router_name="chat_router")
    with pytest.raises(ConfigurationError, match=r"check_schedule"):
        _router([RouterTarget("qwen3-8b", (REMOTE,))], check_schedule="every 5 minutes")


def test_a_component_arn_needs_its_endpoint():
    with pytest.raises(
        ConfigurationError, match=r"endpoint_name: got None; allowed: the endpoint that hosts the component"
    ):
        Destination.from_arn(WEST)
    with pytest.raises(ConfigurationError, match=r"arn: got 'arn:aws:s3:::bucket'"):
        Destination.from_arn("arn:aws:s3:::bucket")


# ------------------------------------------------------------------------------------------ config rules


def test_config_rules_of_a_routing_target():
    with pytest.raises(ConfigurationError, match=r"adapter: got 'sql'; allowed: an adapter together with its model"):
        RoutingTargetSpec(name="sql", adapter="sql", destinations=[{"arn": WEST, "endpoint_name": "prod-chat"}])
    with pytest.raises(ConfigurationError, match=r"destinations: got \[\]; allowed: at least one destination"):
        RoutingTargetSpec(name="qwen")
    with pytest.raises(ConfigurationError, match=r"routing_preference: got 'InstancePoolOrder'"):
        RoutingTargetSpec(name="qwen", model="qwen3-8b", routing_preference="InstancePoolOrder")
    with pytest.raises(ConfigurationError, match=r"name: got 'qwen_3'"):
        RoutingTargetSpec(name="qwen_3", model="qwen3-8b")
    with pytest.raises(ConfigurationError, match=r"destinations\[1\]\.arn: got .*; allowed: each destination once"):
        RoutingTargetSpec(
            name="q", destinations=[{"arn": WEST, "endpoint_name": "e"}, {"arn": WEST, "endpoint_name": "e"}]
        )


def test_config_rules_of_an_async_target():
    out = {"s3_output_path": "s3://router-results/out/", "s3_failure_path": "s3://router-results/failed/"}
    with pytest.raises(
        ConfigurationError, match=r"model: got 'qwen3-8b'; allowed: no model for an asynchronous target"
    ):
        RoutingTargetSpec(name="q", model="qwen3-8b", async_inference=out)
    with pytest.raises(
        ConfigurationError, match=r"destinations\[0\]\.arn: got .*; allowed: an asynchronous endpoint's ARN"
    ):
        RoutingTargetSpec(name="q", destinations=[{"arn": WEST, "endpoint_name": "e"}], async_inference=out)
    with pytest.raises(ConfigurationError, match=r"s3_output_path: got 'bucket/out'"):
        RoutingTargetSpec(
            name="q",
            destinations=[{"arn": "arn:aws:sagemaker:us-west-2:222222222222:endpoint/a"}],
            async_inference={**out, "s3_output_path": "bucket/out"},
        )
    with pytest.raises(ConfigurationError, match=r"kms_key_arn: got '1234'; allowed: a KMS key ARN or alias ARN"):
        RoutingTargetSpec(
            name="q",
            destinations=[{"arn": "arn:aws:sagemaker:us-west-2:222222222222:endpoint/a"}],
            async_inference={**out, "kms_key_arn": "1234"},
        )
    with pytest.raises(ConfigurationError, match=r"error_topic_arn: got 'topic'"):
        RoutingTargetSpec(
            name="q",
            destinations=[{"arn": "arn:aws:sagemaker:us-west-2:222222222222:endpoint/a"}],
            async_inference={**out, "error_topic_arn": "topic"},
        )
    with pytest.raises(ConfigurationError, match=r"max_time_in_backlog_seconds"):
        RoutingTargetSpec(
            name="q",
            destinations=[{"arn": "arn:aws:sagemaker:us-west-2:222222222222:endpoint/a"}],
            async_inference={**out, "max_time_in_backlog_seconds": 30},
        )


def test_config_rules_of_a_destination_and_a_router():
    with pytest.raises(ConfigurationError, match=r"endpoint_name: got 'e'; allowed: nothing for an endpoint ARN"):
        RoutingTargetSpec(
            name="q",
            destinations=[{"arn": "arn:aws:sagemaker:us-west-2:222222222222:endpoint/a", "endpoint_name": "e"}],
        )
    with pytest.raises(ConfigurationError, match=r"arn: got 'arn:aws:sagemaker:us-west-2:2222:endpoint/a'"):
        RoutingTargetSpec(name="q", destinations=[{"arn": "arn:aws:sagemaker:us-west-2:2222:endpoint/a"}])
    with pytest.raises(ConfigurationError, match=r"name: got 'chat-router'; allowed: 1-63 letters and digits"):
        RouterSpec(name="chat-router", targets=[{"name": "q", "model": "m"}])
    with pytest.raises(ConfigurationError, match=r"router_name: got '-chat'"):
        RouterSpec(name="Chat", router_name="-chat", targets=[{"name": "q", "model": "m"}])
    with pytest.raises(ConfigurationError, match=r"targets\[1\]\.name: got 'q'; allowed: a name no other target"):
        RouterSpec(name="Chat", targets=[{"name": "q", "model": "m"}, {"name": "q", "model": "m"}])
    with pytest.raises(ConfigurationError, match=r"check_schedule"):
        RouterSpec(name="Chat", targets=[{"name": "q", "model": "m"}], check_schedule="rate(5 minute)")


def test_a_router_names_models_of_the_config(tmp_path):
    data = (ROOT / "config" / "examples" / "router-two-regions.yaml").read_text()
    data = data.split("routers:")[0] + (
        "routers:\n"
        "  - {name: Chat, targets: [{name: a, model: qwen3-8b}]}\n"
        "  - {name: Chat, targets: [{name: a, model: qwen3-9b}]}\n"
    )
    (tmp_path / "c.yaml").write_text(data)
    with pytest.raises(ConfigurationError) as error:
        load_config(tmp_path / "c.yaml")
    text = str(error.value)
    assert "routers[1].targets[0].model: got 'qwen3-9b'; allowed: a model of endpoints[].models[] (qwen3-8b)" in text
    assert "routers[1].name: got 'Chat'; allowed: a name no other router uses" in text


# ------------------------------------------------------------------------------------------ pipeline


@pytest.fixture(scope="module")
def pipeline_out(tmp_path_factory) -> Path:
    """The two-region example pipeline, synthesized as `make synth PIPELINE=...` does (cdk-nag fails it on a
    finding)."""
    outdir = tmp_path_factory.mktemp("router-pipeline")
    context = {**cli_context(ROOT), "pipeline": "config/examples/pipelines/router-two-regions.yaml"}
    synthesize_in_process(ROOT / "app.py", outdir, context=context)
    return outdir


def test_the_routers_wave_follows_every_regional_stage_and_routes_to_both(pipeline_out):
    pipeline = json.loads((pipeline_out / "SageMakerLlmRouterPipeline.template.json").read_text())
    (inner,) = [r for r in pipeline["Resources"].values() if r["Type"] == "AWS::CodePipeline::Pipeline"]
    assert [s["Name"] for s in inner["Properties"]["Stages"]][-2:] == ["Regions", "Routers"]
    (path,) = pipeline_out.glob("assembly-SageMakerLlmRouterPipeline-Routers/*Routers*.template.json")
    (router,) = [r for r in json.loads(path.read_text())["Resources"].values() if r["Type"] == RESOURCE_TYPE]
    props = router["Properties"]
    assert props["RouterName"] == "SageMakerLlm-Chat"
    assert props["RoutingTargets"] == [
        {
            "Name": "qwen3-8b",
            "RoutingPreference": "LocalRegionFirst",
            "Destinations": [
                {
                    "ResourceArn": "arn:aws:sagemaker:us-east-1:111111111111:inference-component/"
                    "UsEast1-SageMakerLlm-qwen3-8b"
                },
                {
                    "ResourceArn": "arn:aws:sagemaker:us-west-2:222222222222:inference-component/"
                    "UsWest2-SageMakerLlm-qwen3-8b"
                },
            ],
        }
    ]
    assert_valid_request(
        "sagemaker",
        "CreateInferenceRouter",
        {"InferenceRouterName": props["RouterName"], "RoutingTargets": props["RoutingTargets"]},
    )


def test_the_other_accounts_stage_attaches_the_routers_endpoint_policy(pipeline_out):
    """The router runs in 111111111111; the us-west-2 stage (222222222222) attaches AWS's documented endpoint policy
    on its endpoint, exactly the document ``InferenceRouter.endpoint_policy`` builds; us-east-1 (the router's own
    account) attaches none."""

    def resources(stage: str, kind: str) -> dict[str, Any]:
        (path,) = [
            p
            for p in pipeline_out.glob(f"assembly-SageMakerLlmRouterPipeline-{stage}/*.template.json")
            if "Capacity" not in p.name and "Promotion" not in p.name
        ]
        return {k: r for k, r in json.loads(path.read_text())["Resources"].items() if r["Type"] == kind}

    assert resources("UsEast1", POLICY_TYPE) == {}
    (policy,) = resources("UsWest2", POLICY_TYPE).values()
    props = policy["Properties"]
    document = json.loads(props["ResourcePolicy"])
    arn = f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/{props['EndpointName']}"
    arns = [arn, arn.lower()]  # as written and as SageMaker writes it
    assert arn != arn.lower()
    assert document == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "InvokeThroughRouter",
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
                "Action": "sagemaker:InvokeEndpoint",
                "Resource": arns,
                "Condition": {
                    "ArnEquals": {
                        "sagemaker:SourceInferenceRouterArn": [
                            "arn:aws:sagemaker:us-east-1:111111111111:inference-router/SageMakerLlm-Chat",
                            "arn:aws:sagemaker:us-east-1:111111111111:inference-router/sagemakerllm-chat",
                        ]
                    }
                },
            },
            {
                "Sid": "DescribeForRouter",
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
                "Action": "sagemaker:DescribeEndpoint",
                "Resource": arns,
            },
        ],
    }
    assert_valid_request("sagemaker", "PutEndpointPolicy", {k: props[k] for k in ("EndpointName", "ResourcePolicy")})
    (endpoint_logical,) = resources("UsWest2", "AWS::SageMaker::Endpoint")
    assert endpoint_logical in policy["DependsOn"]
    statements = [
        s
        for p in resources("UsWest2", "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "sagemaker:PutEndpointPolicy" in s["Action"]
    ]
    (grant,) = statements
    assert sorted(grant["Action"]) == [
        "sagemaker:DeleteEndpointPolicy",
        "sagemaker:GetEndpointPolicy",
        "sagemaker:PutEndpointPolicy",
    ]
    assert all(
        "*" not in json.dumps(r)
        for r in (grant["Resource"] if isinstance(grant["Resource"], list) else [grant["Resource"]])
    )
