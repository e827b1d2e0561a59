"""EndpointPolicy: the endpoint policy a router of another account needs, attached in the endpoint owner's stack
(environment-agnostic and account- and region-bound), with its function allowed on that endpoint's ARN only; the
platform stack attaches it for a router of another account and none for one of its own; its validation rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    Destination,
    EndpointOptions,
    InferenceRouter,
    LlmEndpoint,
    RouterTarget,
    load_config,
)
from sagemaker_llm_cdk.routing.endpoint_policy import RESOURCE_TYPE, EndpointPolicy, merged_policy
from sagemaker_llm_cdk.routing.router import endpoint_policy_document
from support.aws_model import assert_valid_request

from stacks.llm_platform import LlmPlatformStack
from stacks.router_stage import Deployment, router_homes

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]

ROUTER_ARNS = ["arn:aws:sagemaker:us-east-1:111111111111:inference-router/SageMakerLlm-Chat"]


def document(endpoint_arn: str = "arn:aws:sagemaker:us-west-2:222222222222:endpoint/chat") -> dict[str, Any]:
    return endpoint_policy_document(router_account="111111111111", router_arns=ROUTER_ARNS, endpoint_arn=endpoint_arn)


def policy_statements(template: Template) -> list[dict[str, Any]]:
    return [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "sagemaker:PutEndpointPolicy" in s["Action"]
    ]


@pytest.mark.parametrize(
    "env", [None, Environment(account="222222222222", region="us-west-2")], ids=["environment-agnostic", "bound"]
)
def test_the_policy_is_put_on_its_endpoint_with_the_endpoint_arn_only(env):
    stack = Stack(App(), "Owner", env=env)
    endpoint = LlmEndpoint(
        stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), endpoint_name="chat"
    )
    EndpointPolicy(stack, "RouterPolicy", endpoint_name="chat", document=document(), endpoint=endpoint.cfn_endpoint)
    template = Template.from_stack(stack)

    ((logical, resource),) = template.find_resources(RESOURCE_TYPE).items()
    props = stack.resolve(resource["Properties"])
    assert json.loads(props["ResourcePolicy"]) == document()
    assert_valid_request(
        "sagemaker",
        "PutEndpointPolicy",
        {"EndpointName": props["EndpointName"], "ResourcePolicy": props["ResourcePolicy"]},
    )
    (endpoint_logical,) = template.find_resources("AWS::SageMaker::Endpoint")
    assert endpoint_logical in resource["DependsOn"]
    (grant,) = policy_statements(template)
    assert sorted(grant["Action"]) == [
        "sagemaker:DeleteEndpointPolicy",
        "sagemaker:GetEndpointPolicy",
        "sagemaker:PutEndpointPolicy",
    ]
    resources = grant["Resource"] if isinstance(grant["Resource"], list) else [grant["Resource"]]
    if env is not None:
        assert resources == [
            {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-west-2:222222222222:endpoint/chat"]]}
        ]
    else:
        assert resources == [
            {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":sagemaker:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":endpoint/chat",
                    ],
                ]
            }
        ]


def test_one_function_serves_every_policy_of_a_stack():
    stack = Stack(App(), "Owner", env=Environment(account="222222222222", region="us-west-2"))
    for name in ("chat", "Code"):
        EndpointPolicy(
            stack,
            f"Policy{name}",
            endpoint_name=name,
            document=document(f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/{name}"),
        )
    template = Template.from_stack(stack)

    assert len(template.find_resources(RESOURCE_TYPE)) == 2
    assert (
        len(
            [
                f
                for f in template.find_resources("AWS::Lambda::Function").values()
                if f["Properties"].get("Handler") == "index.on_event"
            ]
        )
        == 1
    )
    resources = list(
        r
        for s in policy_statements(template)
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    )
    assert sorted(stack.resolve(r)["Fn::Join"][1][-1] for r in resources) == [
        ":sagemaker:us-west-2:222222222222:endpoint/Code",
        ":sagemaker:us-west-2:222222222222:endpoint/chat",
        ":sagemaker:us-west-2:222222222222:endpoint/code",
    ]


def test_the_construct_rules():
    stack = Stack(App(), "Owner")
    with pytest.raises(ConfigurationError, match=r"endpoint_name: got '-chat'"):
        EndpointPolicy(stack, "A", endpoint_name="-chat", document=document())
    with pytest.raises(ConfigurationError, match=r"document: .*allowed: a policy document with a Statement"):
        EndpointPolicy(stack, "B", endpoint_name="chat", document={"Version": "2012-10-17"})
    with pytest.raises(ConfigurationError, match=r"document: got 'non-ASCII text'; allowed: ASCII characters only"):
        EndpointPolicy(stack, "C", endpoint_name="chat", document={**document(), "Id": "politique-é"})
    with pytest.raises(ConfigurationError, match=r"allowed: at most 20480 characters"):
        EndpointPolicy(stack, "D", endpoint_name="chat", document={**document(), "Id": "x" * 20480})
    invoke, describe = document()["Statement"]
    with pytest.raises(
        ConfigurationError,
        match=r"document\.Statement\[1\]\.Sid: got 'Describe-For-Router'; "
        r"allowed: letters and digits only \(IAM's Sid rule\)",
    ):
        EndpointPolicy(
            stack,
            "E",
            endpoint_name="chat",
            document={**document(), "Statement": [invoke, {**describe, "Sid": "Describe-For-Router"}]},
        )
    with pytest.raises(
        ConfigurationError,
        match=r"document\.Statement\[1\]\.Sid: got 'InvokeThroughRouter'; "
        r"allowed: each Sid once in the document",
    ):
        EndpointPolicy(stack, "F", endpoint_name="chat", document={**document(), "Statement": [invoke, invoke]})


def test_the_document_names_the_endpoint_as_written_and_in_lowercase():
    """SageMaker writes names in lowercase in the ARNs it returns and IAM compares ARNs as written: a mixed-case
    endpoint's statements list both forms (a lowercase one needs one)."""
    arn = "arn:aws:sagemaker:us-west-2:222222222222:endpoint/UsWest2-SageMakerLlm-Chat"
    for statement in document(arn)["Statement"]:
        assert statement["Resource"] == [arn, arn.lower()]
    for statement in document()["Statement"]:
        assert statement["Resource"] == "arn:aws:sagemaker:us-west-2:222222222222:endpoint/chat"


def test_several_routers_share_one_policy_with_unique_statement_ids():
    one = document()
    assert merged_policy([("Chat", one)]) == one
    both = merged_policy([("Chat", one), ("code-router", one)])
    assert [s["Sid"] for s in both["Statement"]] == [
        "InvokeThroughRouterChat",
        "DescribeForRouterChat",
        "InvokeThroughRouterCodeRouter",
        "DescribeForRouterCodeRouter",
    ]


def test_the_owners_document_is_the_routers_own():
    """``InferenceRouter.endpoint_policy`` in the router's stack and the owner's ``endpoint_policies`` agree; an
    asynchronous target's endpoint allows InvokeEndpointAsync."""
    stack = Stack(App(), "Chat", env=Environment(account="111111111111", region="us-east-1"))
    west = Destination.from_arn("arn:aws:sagemaker:us-west-2:222222222222:endpoint/batch")
    from sagemaker_llm_cdk.settings.routing import AsyncRouting

    router = InferenceRouter(
        stack,
        "Router",
        targets=[
            RouterTarget(
                "batch",
                (west,),
                async_inference=AsyncRouting(
                    s3_output_path="s3://router-results/out/", s3_failure_path="s3://router-results/f/"
                ),
            )
        ],
    )

    policies = router.endpoint_policy("222222222222", "us-west-2")
    assert policies is not None
    assert policies["batch"]["Statement"][0]["Action"] == "sagemaker:InvokeEndpointAsync"


def platform(tmp_path, account: str, homes_account: str) -> LlmPlatformStack:
    (tmp_path / "c.yaml").write_text((ROOT / "config" / "examples" / "router-two-regions.yaml").read_text())
    config = load_config(tmp_path / "c.yaml")
    homes = router_homes(
        config,
        [
            Deployment(Stack(App(), "Home"), homes_account, "us-east-1"),
            Deployment(Stack(App(), "Here"), account, "us-west-2"),
        ],
    )
    return LlmPlatformStack(
        App(),
        "SageMakerLlm",
        config=config,
        config_dir=ROOT / "config" / "examples",
        router_homes=homes,
        env=Environment(account=account, region="us-west-2"),
    )


def test_the_platform_stack_attaches_a_policy_for_a_router_of_another_account_only(tmp_path):
    remote = platform(tmp_path, "222222222222", "111111111111")
    (policy,) = remote.endpoint_policies.values()
    assert policy.document["Statement"][0]["Principal"] == {"AWS": "arn:aws:iam::111111111111:root"}
    assert policy.endpoint_arn.endswith(f":222222222222:endpoint/{policy.endpoint_name}")
    assert Template.from_stack(remote).find_resources(RESOURCE_TYPE)

    same = platform(tmp_path, "111111111111", "111111111111")
    assert same.endpoint_policies == {}
    assert Template.from_stack(same).find_resources(RESOURCE_TYPE) == {}


def test_the_callers_of_the_routers_account_get_grant_invoke(tmp_path):
    """Roles of ``callers`` in the router stack's account get the router's and every destination's ARNs exactly;
    a role of another account is left to its own account (and to the preflight)."""
    from stacks.router_stage import RouterStack

    data = (
        (ROOT / "config" / "examples" / "router-two-regions.yaml")
        .read_text()
        .replace(
            "    targets:\n      - name: qwen3-8b",
            "    callers:\n      - arn:aws:iam::111111111111:role/app/Caller\n"
            "      - arn:aws:iam::999999999999:role/Elsewhere\n    targets:\n      - name: qwen3-8b",
        )
    )
    (tmp_path / "c.yaml").write_text(data)
    config = load_config(tmp_path / "c.yaml")
    app = App()
    owner = LlmPlatformStack(
        app,
        "SageMakerLlm",
        config=config,
        config_dir=ROOT / "config" / "examples",
        env=Environment(account="111111111111", region="us-east-1"),
    )
    stack = RouterStack(
        app,
        "Routers",
        config=config,
        routers=list(enumerate(config.routers)),
        deployments=[Deployment(owner, "111111111111", "us-east-1")],
        env=Environment(account="111111111111", region="us-east-1"),
    )
    template = Template.from_stack(stack)

    policies = [
        p["Properties"]
        for p in template.find_resources("AWS::IAM::Policy").values()
        if p["Properties"].get("Roles") == ["Caller"]
    ]
    (policy,) = policies
    by_action = {s["Action"]: s["Resource"] for s in policy["PolicyDocument"]["Statement"]}
    assert set(by_action) == {"sagemaker:InvokeInferenceRouter", "sagemaker:InvokeEndpoint"}
    assert "*" not in json.dumps(stack.resolve(by_action))
    assert not [
        p for p in template.find_resources("AWS::IAM::Policy").values() if p["Properties"].get("Roles") == ["Elsewhere"]
    ]


def test_the_callers_rules():
    from sagemaker_llm_cdk import RouterSpec

    target = [{"name": "q", "model": "m"}]
    with pytest.raises(
        ConfigurationError,
        match=r"callers\[0\]: got 'arn:aws:iam::111111111111:user/x'; allowed: an "
        r"IAM role ARN",
    ):
        RouterSpec(name="Chat", targets=target, callers=["arn:aws:iam::111111111111:user/x"])
    with pytest.raises(ConfigurationError, match=r"callers\[1\]: .*allowed: each role once"):
        RouterSpec(name="Chat", targets=target, callers=["arn:aws:iam::111111111111:role/a"] * 2)
    with pytest.raises(ConfigurationError, match=r"callers"):
        RouterSpec(name="Chat", targets=target, callers=[f"arn:aws:iam::111111111111:role/r{i}" for i in range(51)])
