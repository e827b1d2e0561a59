"""Tests for constructs/sagemaker_llm_cdk/session_front_door.py: SessionFrontDoor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, LoraAdapter, ModelSpec
from sagemaker_llm_cdk.sessions.front_door import SessionFrontDoor
from sagemaker_llm_cdk.settings.adapters import AdapterSpec, LoraSettings
from sagemaker_llm_cdk.settings.sessions import SessionSettings
from support.front_door import MODEL_URI, Built, build, function_environment
from support.principals import people

pytestmark = pytest.mark.synth


@pytest.fixture(scope="module")
def built() -> Built:
    return build()


@pytest.fixture(scope="module")
def template(built: Built) -> Template:
    return built.template


def role_statements(built: Built, role: iam.IRole) -> list[dict[str, Any]]:
    """Every statement of the inline policies attached to ``role``."""
    ref = built.resolve(role.role_name)
    statements = []
    for policy in built.template.find_resources("AWS::IAM::Policy").values():
        if ref in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def packaged_components(built: Built) -> list[str]:
    """The component names in the function's synthesized asset (allowed_components.json)."""
    import json
    from pathlib import Path

    assembly = built.app.synth()
    function_id = built.resolve(built.front_door.function.node.default_child.logical_id)
    key = built.template.to_json()["Resources"][function_id]["Properties"]["Code"]["S3Key"]
    asset = Path(assembly.directory) / f"asset.{key.removesuffix('.zip')}"
    assert (asset / "index.py").is_file()
    return json.loads((asset / "allowed_components.json").read_text())["components"]


# --------------------------------------------------------------------------- function and URL


def test_function_url_uses_iam_auth_without_cors(built: Built, template: Template):
    template.resource_count_is("AWS::Lambda::Url", 1)
    template.has_resource_properties(
        "AWS::Lambda::Url",
        {
            "AuthType": "AWS_IAM",
            "TargetFunctionArn": built.resolve(built.front_door.function.function_arn),
            "Cors": Match.absent(),
            "InvokeMode": Match.absent(),  # BUFFERED: the handler answers once per turn
        },
    )
    assert built.resolve(built.front_door.url) == built.resolve(built.front_door.function_url.url)


def test_function_shape(template: Template):
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "index.handler",
            "Timeout": 300,
            "MemorySize": 512,
            "Architectures": ["x86_64"],
            "TracingConfig": {"Mode": "Active"},
            "Environment": {"Variables": Match.object_like({"DEFAULT_COMPONENT": "qwen3-8b"})},
        },
    )


def test_environment(built: Built):
    env = function_environment(built)
    assert env["ENDPOINT_NAME"] == built.resolve(built.endpoint.endpoint_name)
    assert env["SESSIONS_TABLE"] == built.resolve(built.front_door.table.table_name)
    assert env["DEFAULT_COMPONENT"] == "qwen3-8b"
    assert "ALLOWED_COMPONENTS" not in env  # packaged with the handler: the environment does not grow per adapter
    assert env["OWNER_MODE"] == "session"
    assert env["SESSION_TTL_SECONDS"] == "1200"
    assert env["MAX_BODY_BYTES"] == "1048576"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "SageMakerLlm"


def test_settings_reach_handler_and_container():
    built = build(sessions=None, adapters=(), settings=SessionSettings(expiration_seconds=600, max_body_bytes=65536))
    env = function_environment(built)
    assert env["SESSION_TTL_SECONDS"] == "600"
    assert env["MAX_BODY_BYTES"] == "65536"
    assert packaged_components(built) == ["qwen3-8b"]
    built.template.has_resource_properties(
        "AWS::SageMaker::Model",
        {"PrimaryContainer": {"Environment": Match.object_like({"OPTION_SESSIONS_EXPIRATION": "600"})}},
    )


def test_served_components_are_packaged_with_the_handler(built: Built):
    assert packaged_components(built) == ["qwen3-8b", "qwen3-8b-sql", "qwen3-8b-legal"]


def test_owner_setting_reaches_the_handler():
    built = build(sessions=SessionSettings(owner="role"), adapters=())
    assert function_environment(built)["OWNER_MODE"] == "role"


def test_owner_setting_is_validated():
    from support.configs import model, problems

    assert problems(model(sessions={"owner": "person"})) == [
        "endpoints[0].models[0].sessions.owner: got 'person'; allowed: one of 'session', 'role' or 'cognito_identity'; "
        "fix: pick one of the listed values"
    ]
    with pytest.raises(ValueError, match="owner"):
        SessionSettings(owner="person")  # type: ignore[arg-type]


def test_settings_default_to_the_models_sessions():
    built = build(sessions=SessionSettings(expiration_seconds=3600), adapters=())
    assert built.front_door.settings.expiration_seconds == 3600
    assert function_environment(built)["SESSION_TTL_SECONDS"] == "3600"


def test_duplicate_components_are_served_once():
    app = App()
    stack = Stack(app, "Dup")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "m",
        ModelSpec(
            name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI, lora=LoraSettings(max_rank=16)
        ),
    )
    adapter = LoraAdapter(
        base,
        "Sql",
        base=base,
        settings=AdapterSpec(
            name="qwen3-8b-sql", physical_name="qwen3-8b-sql", artifact_s3_uri="s3://my-bucket/adapters/sql.tar.gz"
        ),
    )
    front_door = SessionFrontDoor(
        stack, "FrontDoor", endpoint=endpoint, default_component=base, components=[base, adapter, adapter]
    )
    assert [c.component_name for c in front_door.components] == ["qwen3-8b", "qwen3-8b-sql"]


# --------------------------------------------------------------------------- table


def test_table_key_ttl_billing_and_recovery(template: Template):
    template.resource_count_is("AWS::DynamoDB::Table", 1)
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "KeySchema": [{"AttributeName": "conversation_id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "conversation_id", "AttributeType": "S"}],
                "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "TableName": Match.absent(),
            },
            # Rows live at most expiration_seconds: deleting the table only makes conversations reopen sessions.
            "DeletionPolicy": "Delete",
        },
    )


def test_table_encrypted_with_its_own_customer_managed_key(built: Built, template: Template):
    key_arn = built.resolve(built.front_door.encryption_key.key_arn)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": key_arn},
        },
    )
    assert key_arn != built.resolve(built.endpoint.key.key_arn)
    template.has_resource(
        "AWS::KMS::Key",
        {
            "Properties": Match.object_like(
                {"EnableKeyRotation": True, "Description": Match.string_like_regexp("Session table")}
            ),
            "DeletionPolicy": "Retain",
        },
    )


def test_given_key_is_used():
    app = App()
    stack = Stack(app, "Keyed")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    front_door = SessionFrontDoor(
        stack, "FrontDoor", endpoint=endpoint, default_component=base, encryption_key=endpoint.key
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::KMS::Key", 1)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {"SSESpecification": Match.object_like({"KMSMasterKeyId": stack.resolve(endpoint.key.key_arn)})},
    )
    assert front_door.encryption_key is endpoint.key


# --------------------------------------------------------------------------- least privilege


def test_function_role_may_invoke_only_this_endpoint_and_its_served_components(built: Built):
    statements = role_statements(built, built.front_door.function.role)
    invoke = [s for s in statements if "sagemaker:InvokeEndpoint" in as_list(s["Action"])]
    assert len(invoke) == 1
    assert as_list(invoke[0]["Action"]) == ["sagemaker:InvokeEndpoint"]
    expected = [
        built.resolve(built.endpoint.endpoint_arn),
        built.resolve(built.base.component_arn),
        *[built.resolve(a.component_arn) for a in built.adapters],
    ]
    assert invoke[0]["Resource"] == expected
    sagemaker_actions = {a for s in statements for a in as_list(s["Action"]) if a.startswith("sagemaker:")}
    assert sagemaker_actions == {"sagemaker:InvokeEndpoint"}


def test_function_role_reads_and_writes_only_its_table(built: Built):
    statements = role_statements(built, built.front_door.function.role)
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))]
    assert len(dynamodb) == 1
    assert sorted(as_list(dynamodb[0]["Action"])) == ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"]
    assert dynamodb[0]["Resource"] == built.resolve(built.front_door.table.table_arn)
    assert "Condition" not in dynamodb[0]


def test_function_role_uses_the_key_only_through_dynamodb(built: Built):
    statements = role_statements(built, built.front_door.function.role)
    kms = [s for s in statements if any(a.startswith("kms:") for a in as_list(s["Action"]))]
    assert len(kms) == 1
    assert sorted(as_list(kms[0]["Action"])) == ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"]
    assert kms[0]["Resource"] == built.resolve(built.front_door.encryption_key.key_arn)
    assert kms[0]["Condition"] == {
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", ["dynamodb.", {"Ref": "AWS::Region"}, ".", {"Ref": "AWS::URLSuffix"}]]}
        }
    }


def test_function_role_has_no_wildcard_but_xray(built: Built):
    statements = role_statements(built, built.front_door.function.role)
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert not any("*" in action for action in as_list(statement["Action"])), statement
        if "*" in as_list(statement["Resource"]):
            assert sorted(as_list(statement["Action"])) == ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    role_id = built.resolve(built.front_door.function.role.node.default_child.logical_id)
    role = built.template.to_json()["Resources"][role_id]
    assert "ManagedPolicyArns" not in role["Properties"]


def test_grant_invoke_url(built: Built):
    function_arn = built.resolve(built.front_door.function.function_arn)
    statements = role_statements(built, built.caller)
    assert {
        "Action": "lambda:InvokeFunctionUrl",
        "Effect": "Allow",
        "Resource": function_arn,
        "Condition": {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
    } in statements
    # Function URLs also need InvokeFunction, limited to calls that come through a function URL.
    assert {
        "Action": "lambda:InvokeFunction",
        "Effect": "Allow",
        "Resource": function_arn,
        "Condition": {"Bool": {"lambda:InvokedViaFunctionUrl": True}},
    } in statements
    assert len(statements) == 2


def test_grant_stream_names_the_endpoint_and_the_served_components():
    built = build()
    reader = iam.Role(built.stack, "Streamer", assumed_by=people(built.stack))
    built.front_door.grant_stream(reader)
    statements = role_statements(built, reader)
    assert statements == [
        {
            "Action": "sagemaker:InvokeEndpointWithResponseStream",
            "Effect": "Allow",
            "Resource": [
                built.resolve(built.endpoint.endpoint_arn),
                built.resolve(built.base.component_arn),
                *[built.resolve(a.component_arn) for a in built.adapters],
            ],
        }
    ]


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_grant_stream_with_many_components_is_one_acknowledged_pattern(env):
    app = App()
    stack = Stack(app, "ManyStream", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    front_door = SessionFrontDoor(
        stack, "FrontDoor", endpoint=endpoint, default_component=base, components=_many_ducks(stack, endpoint, 30)
    )
    reader = iam.Role(stack, "Streamer", assumed_by=people(stack))
    front_door.grant_stream(reader)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    built = Built(app, stack, endpoint, base, [], front_door, reader)

    (statement,) = role_statements(built, reader)
    assert statement["Resource"] == [
        stack.resolve(endpoint.endpoint_arn),
        stack.resolve(stack.format_arn(service="sagemaker", resource="inference-component", resource_name="qwen3-8b*")),
    ]
    app.synth()  # raises on any unacknowledged AwsSolutions finding


# --------------------------------------------------------------------------- containers


def test_base_model_container_gets_stateful_sessions(built: Built, template: Template):
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "Environment": Match.object_like(
                    {
                        "OPTION_ENABLE_STATEFUL_SESSIONS": "true",
                        "OPTION_SESSIONS_EXPIRATION": "1200",
                        "OPTION_ENABLE_LORA": "true",
                    }
                )
            }
        },
    )
    assert built.base.environment["OPTION_ENABLE_STATEFUL_SESSIONS"] == "true"
    template.resource_count_is("AWS::SageMaker::Model", 1)  # adapters share the base's container


def test_adapter_alone_enables_sessions_on_its_base():
    app = App()
    stack = Stack(app, "AdapterOnly")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    plain = endpoint.add_model(
        "Plain", ModelSpec(name="plain", physical_name="plain", model_data_s3_uri="s3://my-bucket/plain/")
    )
    base = endpoint.add_model(
        "m",
        ModelSpec(
            name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI, lora=LoraSettings(max_rank=16)
        ),
    )
    adapter = LoraAdapter(
        base,
        "Sql",
        base=base,
        settings=AdapterSpec(
            name="qwen3-8b-sql", physical_name="qwen3-8b-sql", artifact_s3_uri="s3://my-bucket/adapters/sql.tar.gz"
        ),
    )
    SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=plain, components=[adapter])
    assert base.environment["OPTION_ENABLE_STATEFUL_SESSIONS"] == "true"
    assert plain.environment["OPTION_ENABLE_STATEFUL_SESSIONS"] == "true"


def test_custom_container_gets_no_variables_and_a_warning():
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-server:1.0"
    built = build(image=image, adapters=())
    assert "OPTION_ENABLE_STATEFUL_SESSIONS" not in built.base.environment
    Annotations.from_stack(built.stack).has_warning(
        "/Chat/FrontDoor", Match.string_like_regexp("not LMI.*must implement SageMaker stateful sessions")
    )


def test_old_lmi_gets_a_version_warning():
    built = build(image="lmi:0.33.0-lmi15.0.0-cu128", adapters=())
    Annotations.from_stack(built.stack).has_warning(
        "/Chat/FrontDoor", Match.string_like_regexp("uses LMI 15 .*listed from LMI 16")
    )


def test_lmi_16_without_async_mode_gets_a_warning():
    built = build(image="lmi:0.34.0-lmi16.0.0-cu128", adapters=())
    Annotations.from_stack(built.stack).has_warning(
        "/Chat/FrontDoor", Match.string_like_regexp("OPTION_ASYNC_MODE=true")
    )


def test_recent_lmi_gets_no_warning():
    built = build(image="lmi:0.35.0-lmi17.0.0-cu128", adapters=())
    Annotations.from_stack(built.stack).has_no_warning("/Chat/FrontDoor", Match.any_value())


# --------------------------------------------------------------------------- metrics


def test_metrics(built: Built):
    front_door = built.front_door
    function_name = built.resolve(front_door.function.function_name)
    for metric, name in (
        (front_door.metric_errors(), "Errors"),
        (front_door.metric_throttles(), "Throttles"),
        (front_door.metric_duration(), "Duration"),
        (front_door.metric_invocations(), "Invocations"),
    ):
        assert metric.namespace == "AWS/Lambda"
        assert metric.metric_name == name
        assert built.resolve(metric.dimensions["FunctionName"]) == function_name
    server = front_door.metric_server_errors()
    assert (server.namespace, server.metric_name, server.statistic) == ("SageMakerLlm", "ServerErrors", "Sum")
    assert built.resolve(server.dimensions["service"]) == function_environment(built)["POWERTOOLS_SERVICE_NAME"]


# --------------------------------------------------------------------------- cdk-nag


def test_cdk_nag_reports_no_errors():
    built = build(nag=True)
    built.app.synth()  # raises on any unacknowledged AwsSolutions finding


def test_cdk_nag_still_flags_an_unreviewed_wildcard():
    built = build(adapters=(), nag=True)
    built.front_door.function.add_to_role_policy(
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{built.front_door.table.table_arn}/index/*"])
    )
    with pytest.raises(Exception, match="AwsSolutions-IAM5"):
        built.app.synth()


# --------------------------------------------------------------------------- validation


@dataclass
class Duck:
    component_name: str
    component_arn: str
    endpoint: Any


def second_endpoint(stack: Stack) -> Any:
    other = LlmEndpoint(stack, "Other", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    return other.add_model(
        "o", ModelSpec(name="other-model", physical_name="other-model", model_data_s3_uri="s3://my-bucket/other/")
    )


def test_component_of_another_endpoint_is_refused():
    app = App()
    stack = Stack(app, "Wrong")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    foreign = second_endpoint(stack)
    with pytest.raises(
        ConfigurationError,
        match=(
            r"in Wrong/FrontDoor:\n  - components\[0\]: got 'other-model'; allowed: an inference component of "
            r"endpoint Wrong/Endpoint; fix: serve other-model through a front door on its own endpoint "
            r"\(it is on Wrong/Other\), or remove it from components$"
        ),
    ):
        SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, components=[foreign])


def test_default_component_of_another_endpoint_is_refused():
    app = App()
    stack = Stack(app, "Wrong")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    with pytest.raises(
        ConfigurationError,
        match=r"default_component: got 'other-model'; allowed: an inference "
        r"component of endpoint Wrong/Endpoint",
    ):
        SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=second_endpoint(stack))


def test_something_that_is_not_a_component_is_refused():
    app = App()
    stack = Stack(app, "Wrong")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    with pytest.raises(
        ConfigurationError,
        match=r"components\[1\]: got 'str'; allowed: a model or adapter with "
        r"component_name and component_arn",
    ):
        SessionFrontDoor(
            stack, "FrontDoor", endpoint=endpoint, default_component=base, components=[base, "qwen3-8b-sql"]
        )  # type: ignore[list-item]


def test_settings_that_contradict_the_models_sessions_are_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"settings: got .*'expiration_seconds': 600.*allowed: nothing, or the "
        r"model's own sessions settings .*'expiration_seconds': 1200",
    ):
        build(adapters=(), settings=SessionSettings(expiration_seconds=600))


def test_container_variable_set_otherwise_in_the_model_is_refused():
    app = App()
    stack = Stack(app, "Conflict")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "m",
        ModelSpec(
            name="qwen3-8b",
            physical_name="qwen3-8b",
            model_data_s3_uri=MODEL_URI,
            environment={"OPTION_SESSIONS_EXPIRATION": "300"},
        ),
    )
    with pytest.raises(
        ConfigurationError,
        match=(
            r"default_component.environment.OPTION_SESSIONS_EXPIRATION: got '300'; allowed: '1200'.*fix: remove "
            r"OPTION_SESSIONS_EXPIRATION from its spec.environment, or make this front door's session expiry 300 "
            r"seconds"
        ),
    ):
        SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base)
    assert "OPTION_ENABLE_STATEFUL_SESSIONS" not in base.environment  # nothing changed before the error


def test_second_front_door_with_another_expiry_on_the_same_model_is_refused():
    app = App()
    stack = Stack(app, "Twice")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    SessionFrontDoor(stack, "First", endpoint=endpoint, default_component=base)
    with pytest.raises(
        ConfigurationError,
        match=r"OPTION_SESSIONS_EXPIRATION: got '1200'; allowed: '600'.*another "
        r"session front door",
    ):
        SessionFrontDoor(
            stack, "Second", endpoint=endpoint, default_component=base, settings=SessionSettings(expiration_seconds=600)
        )


def _many_ducks(stack: Stack, endpoint: Any, count: int) -> list[Any]:
    return [
        Duck(
            f"qwen3-8b-a{i:04d}",
            f"arn:aws:sagemaker:us-east-1:123456789012:inference-component/qwen3-8b-a{i:04d}",
            endpoint,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_beyond_twenty_components_one_acknowledged_name_pattern_replaces_the_list(env):
    app = App()
    stack = Stack(app, "Many", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    front_door = SessionFrontDoor(
        stack, "FrontDoor", endpoint=endpoint, default_component=base, components=_many_ducks(stack, endpoint, 20)
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    built = Built(app, stack, endpoint, base, [], front_door, None)  # type: ignore[arg-type]

    statements = role_statements(built, front_door.function.role)
    invoke = [s for s in statements if "sagemaker:InvokeEndpoint" in as_list(s["Action"])]
    pattern = stack.resolve(
        stack.format_arn(service="sagemaker", resource="inference-component", resource_name="qwen3-8b*")
    )
    assert invoke[0]["Resource"] == [stack.resolve(endpoint.endpoint_arn), pattern]
    assert len(front_door.components) == 21
    app.synth()  # raises on any unacknowledged AwsSolutions finding: the pattern's acknowledgement matches


def test_twenty_components_are_still_named_one_by_one():
    app = App()
    stack = Stack(app, "Twenty")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    front_door = SessionFrontDoor(
        stack, "FrontDoor", endpoint=endpoint, default_component=base, components=_many_ducks(stack, endpoint, 19)
    )
    assert len(front_door.component_resources) == 20 and not any("*" in r for r in front_door.component_resources)


@pytest.mark.parametrize(
    ("names", "pattern"),
    [(["qwen3-8b", "qwen3-8b-sql"], "qwen3-8b*"), (["a-1", "a-2", "a-10"], "a-*"), (["base", "sql"], "*")],
)
def test_component_name_pattern(names, pattern):
    from sagemaker_llm_cdk.sessions.front_door import component_name_pattern

    assert component_name_pattern(names) == pattern


def test_a_thousand_adapters_with_sessions_synthesize_within_every_limit():
    """Nothing that grows with the adapter count in one environment variable or policy document."""
    import json

    from sagemaker_llm_cdk.adapters.adapter_stack import add_adapters

    app = App()
    stack = Stack(app, "Thousand", env=Environment(account="123456789012", region="us-east-1"))
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "m",
        ModelSpec(
            name="qwen3-8b", model_data_s3_uri=MODEL_URI, sessions=SessionSettings(), lora=LoraSettings(max_rank=16)
        ),
    )
    adapters = add_adapters(
        base,
        [
            AdapterSpec(name=f"qwen3-8b-a{i:04d}", artifact_s3_uri=f"s3://my-bucket/adapters/a{i:04d}.tar.gz")
            for i in range(1000)
        ],
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, components=adapters)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))

    assembly = app.synth()
    templates = {
        a.stack_name: json.loads(Path(assembly.directory, a.template_file).read_text())
        for a in assembly.stacks_recursively
    }
    built = Built(app, stack, endpoint, base, list(adapters), front_door, None)  # type: ignore[arg-type]
    env = function_environment(built)
    assert len(json.dumps(env)) < 1024  # Lambda allows 4 KB of environment in all
    for template in templates.values():
        assert len(json.dumps(template)) < 1_000_000  # CloudFormation's template size limit (from S3)
        assert len(template["Resources"]) <= 500
        assert len(template.get("Outputs", {})) <= 200
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::IAM::Policy":
                assert len(json.dumps(resource["Properties"]["PolicyDocument"])) <= 10_240
    assert len(packaged_components(built)) == 1001
    statements = role_statements(built, front_door.function.role)
    invoke = [s for s in statements if "sagemaker:InvokeEndpoint" in as_list(s["Action"])][0]
    assert len(invoke["Resource"]) == 2
    assert len(json.dumps(statements)) < 10_240 // 4  # all inline policies of a role: 10,240 characters
    Annotations.from_stack(stack).has_no_error("*", Match.any_value())


def test_duck_typed_component_on_the_endpoint_is_served():
    app = App()
    stack = Stack(app, "Duck")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model("m", ModelSpec(name="qwen3-8b", physical_name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    duck = Duck(
        "imported-adapter", "arn:aws:sagemaker:us-east-1:123456789012:inference-component/imported-adapter", endpoint
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, components=[duck])
    assert [c.component_name for c in front_door.components] == ["qwen3-8b", "imported-adapter"]
