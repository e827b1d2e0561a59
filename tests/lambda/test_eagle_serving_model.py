"""lambda/eagle_serving_model: the custom resource that creates the model serving a base model with its draft head."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request
from support.cfn_response import recording_urlopen

ROLE = "arn:aws:iam::123456789012:role/endpoint-role"
HEAD = "s3://eagle-artifacts/jobs/eagle-qwen3-32b-0123456789ab/draft/"
CONTAINER: dict[str, Any] = {
    "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128",
    "ModelDataSource": {
        "S3DataSource": {"S3Uri": "s3://weights/qwen3-32b/", "S3DataType": "S3Prefix", "CompressionType": "None"}
    },
    "AdditionalModelDataSources": [
        {"ChannelName": "eagle", "S3DataSource": {"S3Uri": HEAD, "S3DataType": "S3Prefix", "CompressionType": "None"}}
    ],
    "Environment": {
        "OPTION_MODEL_ID": "/opt/ml/model",
        "OPTION_SPECULATIVE_CONFIG": json.dumps(
            {"method": "eagle3", "model": "/opt/ml/additional-model-data-sources/eagle", "num_speculative_tokens": 5}
        ),
    },
}
PREFIX = "qwen3-32b-eagle"


def event(kind: str = "Create", physical_id: str | None = None, **props: Any) -> dict[str, Any]:
    properties = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:serving",
        "ModelNamePrefix": PREFIX,
        "ExecutionRoleArn": ROLE,
        "PrimaryContainer": copy.deepcopy(CONTAINER),
        **props,
    }
    body: dict[str, Any] = {
        "RequestType": kind,
        "ResponseURL": "https://cloudformation-custom-resource-response.s3.amazonaws.com/presigned",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Test/1",
        "RequestId": "req-1",
        "LogicalResourceId": "ServingModel",
        "ResourceType": "AWS::CloudFormation::CustomResource",
        "ResourceProperties": {k: v for k, v in properties.items() if v is not None},
    }
    if physical_id:
        body["PhysicalResourceId"] = physical_id
    return body


@pytest.fixture
def serving(load_handler, monkeypatch):
    module = load_handler("eagle_serving_model")
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(
        module.urllib.request,
        "urlopen",
        recording_urlopen(
            sent,
            lambda request: (
                request.get_method() == "PUT"
                and request.full_url.startswith("https://cloudformation-custom")
                and request.headers["Content-type"] == ""
            ),
        ),
    )
    module.sent = sent
    return module


@pytest.fixture
def stub(serving):
    stubber = Stubber(serving._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_describe(stub: Stubber, name: str, exists: bool) -> None:
    params = {"ModelName": name}
    assert_valid_request("sagemaker", "DescribeModel", params)
    if exists:
        stub.add_response(
            "describe_model",
            {
                "ModelName": name,
                "CreationTime": "2026-11-30T00:00:00Z",
                "ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}",
            },
            params,
        )
    else:
        stub.add_client_error(
            "describe_model", "ValidationException", f'Could not find model "{name}".', expected_params=params
        )


def test_create_makes_the_model_with_the_draft_channel(serving, stub, lambda_context):
    name = serving.model_name(event()["ResourceProperties"])
    expect_describe(stub, name, exists=False)
    request = {"ModelName": name, "ExecutionRoleArn": ROLE, "PrimaryContainer": CONTAINER}
    assert_valid_request("sagemaker", "CreateModel", request)
    stub.add_response("create_model", {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}"}, request)

    serving.handler(event(), lambda_context)

    [answer] = serving.sent
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == name
    assert answer["Data"] == {
        "ModelName": name,
        "ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}",
        "DraftHead": HEAD,
    }
    assert name.startswith(f"{PREFIX}-") and len(name) == len(PREFIX) + 13
    assert answer["RequestId"] == "req-1" and answer["LogicalResourceId"] == "ServingModel"


def test_vpc_config_is_passed(serving, stub, lambda_context):
    vpc = {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]}
    props = event(VpcConfig=vpc)["ResourceProperties"]
    name = serving.model_name(props)
    expect_describe(stub, name, exists=False)
    request = {"ModelName": name, "ExecutionRoleArn": ROLE, "PrimaryContainer": CONTAINER, "VpcConfig": vpc}
    assert_valid_request("sagemaker", "CreateModel", request)
    stub.add_response("create_model", {"ModelArn": "arn:aws:sagemaker:us-east-1:123456789012:model/x"}, request)
    serving.handler(event(VpcConfig=vpc), lambda_context)
    assert serving.sent[0]["Status"] == "SUCCESS"


def test_names_follow_the_properties(serving):
    base = event()["ResourceProperties"]
    other_head = copy.deepcopy(base)
    other_head["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"]["S3Uri"] = "s3://b/jobs/j2/draft/"
    reordered = dict(reversed(list(base.items())))
    assert serving.model_name(base) == serving.model_name(reordered)
    assert serving.model_name(base) != serving.model_name(other_head)
    assert serving.model_name({**base, "ServiceToken": "other"}) == serving.model_name(base)


def test_update_with_the_same_properties_reuses_the_model(serving, stub, lambda_context):
    name = serving.model_name(event()["ResourceProperties"])
    expect_describe(stub, name, exists=True)
    serving.handler(event("Update", physical_id=name), lambda_context)
    assert serving.sent[0]["Status"] == "SUCCESS" and serving.sent[0]["PhysicalResourceId"] == name


def test_delete_removes_only_a_model_it_made(serving, stub, lambda_context):
    name = serving.model_name(event()["ResourceProperties"])
    stub.add_response("delete_model", {}, {"ModelName": name})
    serving.handler(event("Delete", physical_id=name), lambda_context)
    serving.handler(event("Delete", physical_id="2026/11/30/[$LATEST]abc"), lambda_context)  # failed create
    assert [a["Status"] for a in serving.sent] == ["SUCCESS", "SUCCESS"]


def test_delete_of_a_missing_model_succeeds(serving, stub, lambda_context):
    name = serving.model_name(event()["ResourceProperties"])
    stub.add_client_error(
        "delete_model", "ValidationException", f'Could not find model "{name}".', expected_params={"ModelName": name}
    )
    serving.handler(event("Delete", physical_id=name), lambda_context)
    assert serving.sent[0]["Status"] == "SUCCESS"


def test_create_failure_is_reported_not_raised(serving, stub, lambda_context):
    name = serving.model_name(event()["ResourceProperties"])
    expect_describe(stub, name, exists=False)
    stub.add_client_error(
        "create_model",
        "ValidationException",
        "Could not access model data at s3://...",
        expected_params={"ModelName": name, "ExecutionRoleArn": ROLE, "PrimaryContainer": CONTAINER},
    )
    serving.handler(event(), lambda_context)
    [answer] = serving.sent
    assert answer["Status"] == "FAILED" and "Could not access model data" in answer["Reason"]
    assert answer["PhysicalResourceId"] == lambda_context.log_stream_name


@pytest.mark.parametrize(
    "props, message",
    [
        ({"ModelNamePrefix": "bad_prefix"}, "ModelNamePrefix"),
        ({"ModelNamePrefix": "x" * 51}, "ModelNamePrefix"),
        ({"ExecutionRoleArn": "role"}, "ExecutionRoleArn"),
        ({"PrimaryContainer": {}}, "PrimaryContainer"),
    ],
)
def test_bad_properties_fail_the_resource(serving, lambda_context, props, message):
    serving.handler(event(**props), lambda_context)
    assert serving.sent[0]["Status"] == "FAILED" and message in serving.sent[0]["Reason"]


def test_network_isolation_is_passed_and_names_a_different_model(serving, stub, lambda_context):
    props = event(EnableNetworkIsolation="true")["ResourceProperties"]
    name = serving.model_name(props)
    assert name != serving.model_name(event()["ResourceProperties"]), "switching isolation must make a new model"
    expect_describe(stub, name, exists=False)
    request = {
        "ModelName": name,
        "ExecutionRoleArn": ROLE,
        "PrimaryContainer": CONTAINER,
        "EnableNetworkIsolation": True,
    }
    assert_valid_request("sagemaker", "CreateModel", request)
    stub.add_response("create_model", {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}"}, request)
    serving.handler(event(EnableNetworkIsolation="true"), lambda_context)
    assert serving.sent[0]["Status"] == "SUCCESS"


def test_a_bad_network_isolation_value_fails_the_resource(serving, lambda_context):
    serving.handler(event(EnableNetworkIsolation="yes"), lambda_context)
    assert serving.sent[0]["Status"] == "FAILED"
    assert "EnableNetworkIsolation 'yes' must be true or false" in serving.sent[0]["Reason"]


def test_accepted_licence_arrives_as_string_and_is_sent_as_boolean(serving, stub, lambda_context):
    """CloudFormation passes custom-resource properties as strings: AcceptEula "true" becomes the boolean
    CreateModel's ModelAccessConfig wants (a gated JumpStart model served with its draft head)."""
    container = copy.deepcopy(CONTAINER)
    container["ModelDataSource"]["S3DataSource"]["ModelAccessConfig"] = {"AcceptEula": "true"}
    props = event(PrimaryContainer=container)["ResourceProperties"]
    name = serving.model_name(props)
    expect_describe(stub, name, exists=False)
    sent_container = copy.deepcopy(CONTAINER)
    sent_container["ModelDataSource"]["S3DataSource"]["ModelAccessConfig"] = {"AcceptEula": True}
    request = {"ModelName": name, "ExecutionRoleArn": ROLE, "PrimaryContainer": sent_container}
    assert_valid_request("sagemaker", "CreateModel", request)
    stub.add_response("create_model", {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}"}, request)
    serving.handler(event(PrimaryContainer=container), lambda_context)
    assert serving.sent[0]["Status"] == "SUCCESS"


def test_accept_eula_that_is_not_a_boolean_fails_the_resource(serving, lambda_context):
    container = copy.deepcopy(CONTAINER)
    container["ModelDataSource"]["S3DataSource"]["ModelAccessConfig"] = {"AcceptEula": "yes"}
    serving.handler(event(PrimaryContainer=container), lambda_context)
    [answer] = serving.sent
    assert answer["Status"] == "FAILED" and "AcceptEula 'yes' must be true or false" in answer["Reason"]


# ------------------------------------------------------------------ a pre-trained head's channel
def test_serving_model_sends_a_gated_pretrained_heads_accepted_licence_as_boolean(serving, lambda_context):
    """CloudFormation passes AcceptEula as "true"; CreateModel wants a boolean on the head's channel too."""
    sent = serving.sent
    gated = "s3://jumpstart-private-cache-prod-us-east-1/meta-textgeneration/llama/artifacts/eagle3-draft/v1/"
    container = {
        "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi28.0.0-cu130",
        "ModelDataSource": {
            "S3DataSource": {
                "S3Uri": "s3://jumpstart-private-cache-prod-us-east-1/m/",
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
                "ModelAccessConfig": {"AcceptEula": "true"},
            }
        },
        "AdditionalModelDataSources": [
            {
                "ChannelName": "eagle",
                "S3DataSource": {
                    "S3Uri": gated,
                    "S3DataType": "S3Prefix",
                    "CompressionType": "None",
                    "ModelAccessConfig": {"AcceptEula": "true"},
                },
            }
        ],
        "Environment": {"OPTION_SPECULATIVE_CONFIG": '{"method":"eagle3"}'},
    }
    properties = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:s",
        "ModelNamePrefix": "llama-eagle",
        "ExecutionRoleArn": "arn:aws:iam::123456789012:role/endpoint",
        "PrimaryContainer": container,
    }
    name = serving.model_name(properties)
    expected = json.loads(json.dumps(container))
    expected["ModelDataSource"]["S3DataSource"]["ModelAccessConfig"]["AcceptEula"] = True
    expected["AdditionalModelDataSources"][0]["S3DataSource"]["ModelAccessConfig"]["AcceptEula"] = True
    request = {"ModelName": name, "ExecutionRoleArn": properties["ExecutionRoleArn"], "PrimaryContainer": expected}
    assert_valid_request("sagemaker", "CreateModel", request)
    stub = Stubber(serving._sagemaker())
    stub.add_client_error(
        "describe_model", "ValidationException", f'Could not find model "{name}".', expected_params={"ModelName": name}
    )
    stub.add_response("create_model", {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}"}, request)
    event = {
        "RequestType": "Create",
        "ResponseURL": "https://cloudformation-custom-resource-response.s3/x",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/T/1",
        "RequestId": "r",
        "LogicalResourceId": "ServingModel",
        "ResourceType": "Custom::EagleServingModel",
        "ResourceProperties": properties,
    }
    with stub:
        serving.handler(event, lambda_context)
        stub.assert_no_pending_responses()
    assert sent[0]["Status"] == "SUCCESS" and sent[0]["Data"]["ModelName"] == name

    bad = json.loads(json.dumps(event))
    bad["ResourceProperties"]["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"][
        "ModelAccessConfig"
    ] = {"AcceptEula": "maybe"}
    serving.handler(bad, lambda_context)
    assert sent[1]["Status"] == "FAILED"
    assert "AdditionalModelDataSources[0].S3DataSource.ModelAccessConfig.AcceptEula 'maybe'" in sent[1]["Reason"]
