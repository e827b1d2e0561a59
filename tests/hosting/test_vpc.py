"""Endpoints in a VPC: every VPC config example (README) and library use, in bound and env-agnostic stacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelSpec, parse_config
from support.stacks import MODEL_URI, only

from stacks import LlmPlatformStack, attach_checks
from tools.lint_templates import lint_folder

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
ENVS = [None, Environment(account="123456789012", region="us-east-1")]
MODEL = {"name": "qwen3-8b", "model_data_s3_uri": MODEL_URI}


def readme_vpc_examples() -> list[dict]:
    """Each YAML block of the endpoint guide (docs/endpoints-and-models.md) that declares an endpoint with a vpc."""
    page = (ROOT / "docs" / "endpoints-and-models.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.S)
    found = []
    for block in blocks:
        if not re.search(r"^\s*vpc:", block, flags=re.M):
            continue
        data = yaml.safe_load(block)  # a VPC example must be valid YAML
        if isinstance(data, dict):
            found += [e for e in data.get("endpoints", []) if isinstance(e, dict) and "vpc" in e]
    return found


def test_the_readme_has_a_vpc_example():
    assert readme_vpc_examples(), "docs/endpoints-and-models.md shows a vpc block"


@pytest.mark.parametrize("env", ENVS, ids=["agnostic", "bound"])
@pytest.mark.parametrize("example", readme_vpc_examples(), ids=lambda e: e["name"])
def test_readme_vpc_example_synthesizes_nag_clean(example, env, tmp_path):
    budget = {"max_usd_per_month": 1_000_000, "notify_alarm_topic": True}  # the example's GPUs pass 1,000 h
    config = parse_config(
        {"endpoints": [{**example, "models": [MODEL]}], "budget": budget}, source="docs/endpoints-and-models.md"
    )
    app = App(outdir=str(tmp_path))
    stack = LlmPlatformStack(app, "Vpc", config=config, env=env)
    attach_checks(app)
    app.synth()  # raised "You cannot reference a Subnet's availability zone if it was not supplied" before
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v for p in report.get("pluginReports", []) for v in p.get("violations", [])] == []
    assert lint_folder(tmp_path) == 0
    template = Template.from_stack(stack)
    vpc = config.endpoints[0].vpc
    expected = {"Subnets": list(vpc.subnet_ids), "SecurityGroupIds": list(vpc.security_group_ids)}
    assert only(template, "AWS::SageMaker::EndpointConfig")["Properties"]["VpcConfig"] == expected
    assert only(template, "AWS::SageMaker::Model")["Properties"]["VpcConfig"] == expected
    template.resource_count_is("AWS::EC2::SecurityGroup", 0)  # the config's groups, no new one


@pytest.mark.parametrize("env", ENVS, ids=["agnostic", "bound"])
@pytest.mark.parametrize("with_zones", [False, True], ids=["by-id", "with-zone"])
def test_library_subnets_imported_by_id_with_or_without_zone(env, with_zones):
    stack = Stack(App(), "Lib", env=env)
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-0abc12345def67890", availability_zones=["us-east-1a"])
    ids = ["subnet-0abc12345def67890", "subnet-0abc12345def67891"]
    subnets = [
        ec2.Subnet.from_subnet_attributes(stack, f"S{i}", subnet_id=s, availability_zone=f"us-east-1{'ab'[i]}")
        if with_zones
        else ec2.Subnet.from_subnet_id(stack, f"S{i}", s)
        for i, s in enumerate(ids)
    ]
    group = ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-0abc12345def67890")
    endpoint = LlmEndpoint(
        stack,
        "Endpoint",
        settings=EndpointOptions(instance_type="ml.g6e.12xlarge"),
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnets=subnets),
        security_groups=[group],
    )
    endpoint.add_model("m", ModelSpec(**MODEL))
    template = Template.from_stack(stack)
    assert only(template, "AWS::SageMaker::EndpointConfig")["Properties"]["VpcConfig"] == {
        "Subnets": ids,
        "SecurityGroupIds": ["sg-0abc12345def67890"],
    }
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    eni = next(s for s in statements if s.get("Sid") == "ManageEndpointNetworkInterfaces")
    tails = [stack.resolve(r) if isinstance(r, str) else r["Fn::Join"][1][-1] for r in eni["Resource"]]
    assert [t.rsplit(":", 1)[-1] for t in tails] == [
        "network-interface/*",
        f"subnet/{ids[0]}",
        f"subnet/{ids[1]}",
        "security-group/sg-0abc12345def67890",
    ]


def test_subnet_zones_one_per_subnet():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "endpoints[0].vpc.subnet_availability_zones: got ['us-east-1a']; allowed: one zone per subnet (2"
        ),
    ):
        parse_config(
            {
                "endpoints": [
                    {
                        "name": "Chat",
                        "instance_type": "ml.g6e.12xlarge",
                        "models": [MODEL],
                        "vpc": {
                            "vpc_id": "vpc-0abc12345def67890",
                            "subnet_ids": ["subnet-0abc12345def67890", "subnet-0abc12345def67891"],
                            "subnet_availability_zones": ["us-east-1a"],
                            "security_group_ids": ["sg-0abc12345def67890"],
                        },
                    }
                ]
            }
        )


def test_subnet_zone_names_are_checked():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "endpoints[0].vpc.subnet_availability_zones[0]: got 'use1-az1'; allowed: an Availability Zone name"
        ),
    ):
        parse_config(
            {
                "endpoints": [
                    {
                        "name": "Chat",
                        "instance_type": "ml.g6e.12xlarge",
                        "models": [MODEL],
                        "vpc": {
                            "vpc_id": "vpc-0abc12345def67890",
                            "subnet_ids": ["subnet-0abc12345def67890"],
                            "subnet_availability_zones": ["use1-az1"],
                            "security_group_ids": ["sg-0abc12345def67890"],
                        },
                    }
                ]
            }
        )
