"""lambda/_shared/llm_cdk_shared: the code every handler shares, and the assets that carry it.

The package is on sys.path here as it is in each asset (tests/conftest.py); the asset tests stage each
function's folder as the synth does and import its handler with nothing but that folder (and the
installed boto3 / Powertools / pydantic the runtime and layers give) on the path.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from llm_cdk_shared import aws_errors, clients, custom_resource, env
from llm_cdk_shared.problems import ShortError, problems
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sagemaker_llm_cdk.core import _assets
from support.aws_model import assert_valid_request

ROOT = Path(__file__).resolve().parents[2]
LAMBDA_ROOT = ROOT / "lambda"
SHARED = LAMBDA_ROOT / "_shared" / "llm_cdk_shared"
HANDLER_FOLDERS = sorted(p.name for p in LAMBDA_ROOT.iterdir() if (p / "index.py").is_file())


def client_error(code: str, message: str = "", operation: str = "DescribeModel", status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation
    )


# ------------------------------------------------------------------------------------------ clients


def test_a_getter_makes_its_client_once_with_the_default_retries_and_the_library_user_agent(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "capacity_plan")
    getter = clients.client_getter("sagemaker")
    client = getter()

    assert getter() is client
    config = client.meta.config
    assert config.retries == {"mode": "adaptive", "total_max_attempts": 9}
    assert config.user_agent_appid == "sagemaker-llm-cdk"
    assert config.user_agent_extra == "function/capacity_plan"


class _Sent(Exception):
    pass


def test_the_user_agent_reaches_the_request(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "deployment_check")
    client = clients.client_getter("sagemaker")()
    headers: list[str] = []

    def capture(request, **_: Any) -> None:  # the signed request, just before it would go on the wire
        agent = request.headers["User-Agent"]
        headers.append(agent.decode() if isinstance(agent, bytes) else agent)
        raise _Sent

    client.meta.events.register("before-send.sagemaker.DescribeEndpoint", capture)
    with pytest.raises(_Sent):
        client.describe_endpoint(EndpointName="e")
    assert "app/sagemaker-llm-cdk" in headers[0] and "function/deployment_check" in headers[0]


def test_a_getter_keeps_a_handlers_own_retries_and_timeouts():
    client = clients.client_getter(
        "dynamodb", retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=3
    )()
    config = client.meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (config.connect_timeout, config.read_timeout) == (2, 3)
    assert config.user_agent_appid == "sagemaker-llm-cdk"


def test_an_unsafe_service_name_is_cleaned_for_the_user_agent(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "my fn/../x")
    assert clients.client_config().user_agent_extra == "function/my-fn-..-x"
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME")
    assert clients.client_config().user_agent_extra == "function/unknown"


def test_tests_inject_a_client_and_clear_it():
    getter = clients.client_getter("ssm")
    fake = object()
    assert getter.inject(fake) is fake and getter() is fake
    getter.cache_clear()
    made = getter()
    assert made is not fake and made.meta.service_model.service_name == "ssm"


def test_each_getter_caches_on_its_own():
    first, second = clients.client_getter("s3"), clients.client_getter("s3")
    assert first() is not second()


def test_handlers_get_their_clients_from_the_shared_getter(load_handler):
    expected = {
        ("capacity_plan", "_sagemaker"): {"mode": "adaptive", "total_max_attempts": 9},
        ("capacity_plan_expiry", "_sagemaker"): {"mode": "adaptive", "total_max_attempts": 9},
        ("capacity_plan_expiry", "_ssm"): {"mode": "standard", "total_max_attempts": 6},
        ("capacity_plan_guard", "_sagemaker"): {"mode": "standard", "total_max_attempts": 6},
        ("deployment_check", "_sagemaker"): {"mode": "adaptive", "total_max_attempts": 9},
        ("eagle_dataset", "_s3"): {"mode": "adaptive", "total_max_attempts": 9},
        ("eagle_dataset", "_sfn"): {"mode": "adaptive", "total_max_attempts": 9},
        ("eagle_serving_model", "_sagemaker"): {"mode": "adaptive", "total_max_attempts": 9},
    }
    for (folder, getter), retries in expected.items():
        client = getattr(load_handler(folder), getter)()
        assert client.meta.config.retries == retries, (folder, getter)
        assert client.meta.config.user_agent_appid == "sagemaker-llm-cdk", (folder, getter)
    firehose = load_handler("session_router", "turn_log")._firehose().meta.config
    assert firehose.retries == {"mode": "standard", "total_max_attempts": 3} and firehose.read_timeout == 5


# ------------------------------------------------------------------------------------------ not found


@pytest.mark.parametrize(
    ("service", "code", "message", "expected"),
    [
        ("sagemaker", "ResourceNotFound", "Training plan x not found", True),
        ("sagemaker", "ResourceNotFoundException", "", True),
        ("sagemaker", "ValidationException", 'Could not find model "m".', True),
        ("sagemaker", "ValidationException", "Cannot find inference component ic", True),
        ("sagemaker", "ValidationException", "Endpoint e does not exist", True),
        ("sagemaker", "ValidationException", "Training plan NOT FOUND", True),
        ("sagemaker", "ValidationException", "1 validation error detected: Value 'a b' at 'modelName'", False),
        ("sagemaker", "AccessDeniedException", "not authorized; resource not found in policy", False),
        ("sagemaker", "ThrottlingException", "Rate exceeded", False),
        ("ssm", "ParameterNotFound", "", True),
        ("ssm", "ValidationException", "parameter not found", False),  # the message rule is SageMaker's only
        ("s3", "NoSuchKey", "", True),
        ("s3", "404", "", True),
        ("s3", "AccessDenied", "", False),
        ("dynamodb", "ResourceNotFoundException", "Requested resource not found", True),
        ("dynamodb", "ConditionalCheckFailedException", "", False),
    ],
)
def test_not_found_is_one_rule_with_codes_per_service(service, code, message, expected):
    assert aws_errors.not_found(client_error(code, message), service) is expected


def test_not_found_refuses_a_service_it_has_no_codes_for():
    with pytest.raises(ValueError, match="service 'kms' has no not-found codes; known: dynamodb, firehose"):
        aws_errors.not_found(client_error("NotFoundException"), "kms")


def test_error_code_and_message_of_anything():
    assert (
        aws_errors.error_code(client_error("X", "y")) == "X" and aws_errors.error_message(client_error("X", "y")) == "y"
    )
    assert aws_errors.error_code(ValueError("no response")) == "" and aws_errors.error_message(object()) == ""


SERVING_PROPS = {
    "ModelNamePrefix": "qwen-eagle",
    "ExecutionRoleArn": "arn:aws:iam::123456789012:role/r",
    "PrimaryContainer": {
        "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:1",
        "ModelDataSource": {
            "S3DataSource": {"S3Uri": "s3://w/m/", "S3DataType": "S3Prefix", "CompressionType": "None"}
        },
    },
}


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ResourceNotFoundException", "Model not found"),  # the serving model used to raise on these
        ("ValidationException", "Model qwen does not exist"),
        ("ValidationException", 'Could not find model "qwen".'),
    ],
)
def test_serving_model_creates_the_model_on_every_not_found_answer(load_handler, code, message):
    serving = load_handler("eagle_serving_model")
    name = serving.model_name(SERVING_PROPS)
    stubber = Stubber(serving._sagemaker())
    assert_valid_request("sagemaker", "DescribeModel", {"ModelName": name})
    stubber.add_client_error("describe_model", code, message, expected_params={"ModelName": name})
    request = serving.create_request(SERVING_PROPS)
    assert_valid_request("sagemaker", "CreateModel", request)
    stubber.add_response(
        "create_model", {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{name}"}, request
    )
    with stubber:
        assert serving._create_or_reuse(SERVING_PROPS)[0] == name
    stubber.assert_no_pending_responses()


def test_serving_model_still_raises_what_is_not_not_found(load_handler):
    serving = load_handler("eagle_serving_model")
    name = serving.model_name(SERVING_PROPS)
    stubber = Stubber(serving._sagemaker())
    stubber.add_client_error("describe_model", "AccessDeniedException", "no", expected_params={"ModelName": name})
    with stubber, pytest.raises(ClientError, match="AccessDeniedException"):
        serving._create_or_reuse(SERVING_PROPS)


def test_deployment_check_reads_cannot_find_as_missing(load_handler):
    check = load_handler("deployment_check")
    state, reason = check._unsettled(
        client_error("ValidationException", "Cannot find inference component ic-1"), "inference component ic-1"
    )
    assert state == "failed" and reason.startswith("inference component ic-1 does not exist (ValidationException")


# ------------------------------------------------------------------------------------------ environment


def test_environment_problems_name_the_variable_value_allowed_and_fix():
    environment = env.Environment({"TTL": "soon", "MODE": "person", "COUNT": "0", "URI": "bucket/x"})
    assert environment.integer("TTL", 60, minimum=1, maximum=3600) == 60
    assert environment.text("MODE", choices=("session", "role")) == "person"
    assert environment.integer("COUNT", 1) == 0
    assert environment.text("URI", prefix="s3://", allowed="an s3:// prefix") == "bucket/x"
    assert environment.text("TABLE", required=True, allowed="the DynamoDB table name") == ""
    assert environment.problems == [
        "TTL: got 'soon'; allowed: a whole number 1-3600; fix: set TTL to a whole number 1-3600 or unset it",
        "MODE: got 'person'; allowed: one of session, role; fix: set MODE to one of session, role",
        "COUNT: got '0'; allowed: a whole number >= 1; fix: set COUNT to a whole number >= 1 or unset it",
        "URI: got 'bucket/x'; allowed: an s3:// prefix; fix: set URI to a value starting with 's3://'",
        f"TABLE: got (not set); allowed: the DynamoDB table name; fix: {env.REDEPLOY}",
    ]


class _Misconfigured(RuntimeError):
    pass


def test_environment_check_raises_the_callers_error_with_every_problem():
    environment = env.Environment({"B": "x"})
    environment.text("A", required=True)
    environment.integer("B", 1)
    with pytest.raises(_Misconfigured, match=r"^router misconfigured: A: got \(not set\).*; B: got 'x'"):
        environment.check(_Misconfigured, "router misconfigured")
    env.Environment({}).check(_Misconfigured)  # nothing wrong: nothing raised


def test_environment_values_are_typed_and_stripped():
    environment = env.Environment({"N": " 42 ", "LIST": " a, b ,,a, c ", "X": "  ", "F": "1.5"})
    assert environment.integer("N", 1) == 42
    assert environment.csv("LIST") == ["a", "b", "c"]
    assert environment.text("X", default="d") == "d" and environment.raw("X") == ""
    assert environment.number("F", above=0, allowed="a number > 0") == 1.5
    assert environment.problems == []


def test_environment_number_refuses_nan_infinity_and_the_bound():
    environment = env.Environment({"A": "nan", "B": "inf", "C": "0"})
    for name in "ABC":
        environment.number(name, above=0, allowed="a number > 0")
    assert [p.split(":")[0] for p in environment.problems] == ["A", "B", "C"]


def test_one_shot_reads_raise_at_once(monkeypatch):
    monkeypatch.setenv("LIMIT", "-3")
    with pytest.raises(_Misconfigured, match="LIMIT: got '-3'; allowed: a whole number >= 0"):
        env.integer("LIMIT", 5, minimum=0, error=_Misconfigured)
    with pytest.raises(env.ConfigurationError, match=r"STATE: got \(not set\); allowed: a state machine ARN"):
        env.required("STATE", allowed="a state machine ARN", environ={})
    assert env.required("STATE", environ={"STATE": " arn "}) == "arn"
    assert env.integer("MISSING", None, environ={"MISSING": "7"}) == 7


def test_a_required_integer_without_default_is_a_problem_when_unset():
    environment = env.Environment({})
    environment.integer("MAX_RUNTIME_SECONDS", minimum=1)
    assert environment.problems == [
        "MAX_RUNTIME_SECONDS: got (not set); allowed: a whole number >= 1; "
        "fix: set MAX_RUNTIME_SECONDS to a whole number >= 1"
    ]


def test_expiry_reports_every_environment_problem_at_once(load_handler, monkeypatch, lambda_context):
    expiry = load_handler("capacity_plan_expiry")
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "")
    monkeypatch.setenv("STATUS_PARAMETERS", "p1=not-a-path")
    with pytest.raises(
        ValueError,
        match=(
            r"^capacity plan expiry check misconfigured: TRAINING_PLAN_NAMES: got \(not set\)"
            r".*; STATUS_PARAMETERS: got 'p1=not-a-path'"
        ),
    ):
        expiry.handler({}, lambda_context)


# ------------------------------------------------------------------------------------------ pydantic problems


class _Inner(BaseModel):
    name: str = Field(alias="Name", pattern=r"^[a-z]+$")


class _Props(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["fail", "on_demand"] = Field(alias="Mode")
    count: int = Field(alias="Count")
    items: list[_Inner] = Field(default_factory=list, alias="Items")
    plan: str = Field(default="", alias="Plan")

    @field_validator("plan")
    @classmethod
    def _plan(cls, value: str) -> str:
        if value == "bad":
            raise ValueError("Plan 'bad' is not a plan name; use letters and digits")
        if value == "odd":
            raise ValueError("must not be odd")
        return value


def test_problems_are_one_line_each_in_the_repository_style():
    with pytest.raises(ValidationError) as caught:
        _Props.model_validate({"Mode": "wait", "Items": [{"Name": "A B"}], "Plan": "bad", "Extra": 1})
    assert problems(caught.value, known=["Count", "Items", "Mode", "Plan"]) == [
        "Mode: got 'wait'; allowed: 'fail' or 'on_demand'",
        "Count: required field is missing; fix: add Count",
        "Items.0.Name: got 'A B'; allowed: pattern '^[a-z]+$'",
        "Plan 'bad' is not a plan name; use letters and digits",
        "Extra: unknown property (misspelt?); allowed: Count, Items, Mode, Plan; fix: remove it or correct its name",
    ]


def test_a_validator_message_gets_the_field_when_it_does_not_name_it_and_long_values_are_cut():
    with pytest.raises(ValidationError) as caught:
        _Props.model_validate({"Mode": "x" * 200, "Count": 1, "Plan": "odd"})
    lines = problems(caught.value)
    assert lines[0].startswith("Mode: got 'xxxx") and "...; allowed:" in lines[0] and len(lines[0]) < 140
    assert lines[1] == "Plan: must not be odd"


def test_an_object_that_is_not_one_is_named_without_pydantic_jargon():
    """An input that is no JSON object said ``allowed: a valid dictionary or instance of _Props``; a JSON input is
    never a model instance."""
    with pytest.raises(ValidationError) as caught:
        _Props.model_validate(["Mode"])
    assert problems(caught.value) == ["event: got ['Mode']; allowed: a valid dictionary"]
    with pytest.raises(ValidationError) as caught:
        _Props.model_validate({"Mode": "fail", "Count": 1, "Items": [7]})
    assert problems(caught.value) == ["Items.0: got 7; allowed: a valid dictionary"]


def test_a_problem_of_the_whole_object_names_the_root():
    with pytest.raises(ValidationError) as caught:
        custom_resource.CustomResourceEvent.model_validate({"RequestType": "Delete"})
    assert problems(caught.value, root="event") == ["event: Delete events need PhysicalResourceId"]


# ------------------------------------------------------------------------------------------ custom resource


class _EventError(Exception):
    pass


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ([], "Not a CloudFormation custom resource event (not a JSON object); nothing was done."),
        ({"RequestType": "Upsert"}, "- RequestType: got 'Upsert'; allowed: 'Create', 'Update' or 'Delete'"),
        ({}, "- RequestType: required field is missing"),
        ({"RequestType": "Update"}, "- event: Update events need PhysicalResourceId and OldResourceProperties"),
        (
            {"RequestType": "Delete", "PhysicalResourceId": ""},
            "PhysicalResourceId: got ''; allowed: at least 1 character",
        ),
    ],
)
def test_custom_resource_events_are_checked_before_any_call(event, expected):
    with pytest.raises(_EventError) as caught:
        custom_resource.parse_event(event, error=_EventError, not_done="nothing was done")
    assert expected in str(caught.value)


def test_a_valid_event_keeps_what_the_handler_reads():
    parsed = custom_resource.parse_event(
        {
            "RequestType": "Update",
            "PhysicalResourceId": "p",
            "ResponseURL": "u",
            "ResourceProperties": {"A": "1"},
            "OldResourceProperties": {},
        },
        error=_EventError,
        not_done="x",
    )
    assert (parsed.request_type, parsed.physical_resource_id, parsed.resource_properties) == ("Update", "p", {"A": "1"})
    assert parsed.old_resource_properties == {} and parsed.resource_type == ""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(alias="Name")


def test_properties_drop_the_service_token_and_list_the_known_ones():
    assert (
        custom_resource.parse_properties(
            _Strict, {"Name": "n", "ServiceToken": "arn"}, error=_EventError, what="thing", not_done="nothing was made"
        ).name
        == "n"
    )
    with pytest.raises(_EventError) as caught:
        custom_resource.parse_properties(
            _Strict, {"Nmae": "n"}, error=_EventError, what="thing", not_done="nothing was made"
        )
    assert str(caught.value) == (
        "Invalid thing properties (nothing was made):\n"
        "- Name: required field is missing; fix: add Name\n"
        "- Nmae: unknown property (misspelt?); allowed: Name, ServiceToken; "
        "fix: remove it or correct its name"
    )
    with pytest.raises(_EventError, match=r"^thing ResourceProperties are missing; nothing was made\.$"):
        custom_resource.parse_properties(_Strict, None, error=_EventError, what="thing", not_done="nothing was made")


def test_capacity_plan_and_guard_share_the_event_model(load_handler):
    plan, guard = load_handler("capacity_plan"), load_handler("capacity_plan_guard")
    assert issubclass(plan.CustomResourceEvent, custom_resource.CustomResourceEvent)
    assert guard.GuardEvent is custom_resource.CustomResourceEvent


def test_purchase_and_extension_check_shared_fields_with_one_type(load_handler):
    plan = load_handler("capacity_plan")
    for model in (plan.CapacityPlanProperties, plan.ExtensionProperties):
        assert (
            model.model_fields["plan_name"].metadata == plan.CapacityPlanProperties.model_fields["plan_name"].metadata
        )
        assert (
            model.model_fields["max_upfront_fee_usd"].metadata
            == plan.ExtensionProperties.model_fields["max_upfront_fee_usd"].metadata
        )
    with pytest.raises(plan.CapacityPlanPropertiesError, match="MaxUpfrontFeeUsd '\\$5' is not a number"):
        plan.parse_extension_properties(
            {"PlanName": "p", "ExtendUntil": "2026-06-01T00:00:00Z", "MaxUpfrontFeeUsd": "$5", "Extend": "approved"}
        )


# ------------------------------------------------------------------------------------------ import weight


def test_the_light_modules_import_neither_pydantic_nor_botocore():
    code = (
        "import sys; import llm_cdk_shared, llm_cdk_shared.env, llm_cdk_shared.aws_errors; "
        "print(json.dumps(sorted(m for m in ('pydantic', 'botocore', 'boto3') if m in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import json, sys; sys.path.insert(0, {str(SHARED.parent)!r}); " + code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == []


# ------------------------------------------------------------------------------------------ assets


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.mark.parametrize("folder", HANDLER_FOLDERS)
def test_each_staged_asset_holds_the_handler_and_the_shared_package(folder):
    staged = Path(_assets.staged_handler(folder))
    expected = {**_files(LAMBDA_ROOT / folder), **{f"llm_cdk_shared/{k}": v for k, v in _files(SHARED).items()}}
    assert _files(staged) == expected
    assert _assets.staged_handler(folder) == str(staged)  # deterministic: same content, same folder


def test_staged_folders_follow_their_content():
    plain = _assets.staged_handler("session_router")
    listed = _assets.staged_handler("session_router", {"allowed_components.json": b'{"components": ["a"]}'})
    other = _assets.staged_handler("session_router", {"allowed_components.json": b'{"components": ["b"]}'})
    assert len({plain, listed, other}) == 3
    (Path(listed) / "llm_cdk_shared" / "env.py").unlink()  # a temp cleaner took a file: staged again, whole
    assert _assets.staged_handler("session_router", {"allowed_components.json": b'{"components": ["a"]}'}) == listed
    assert (Path(listed) / "llm_cdk_shared" / "env.py").read_bytes() == (SHARED / "env.py").read_bytes()
    assert (Path(listed) / "allowed_components.json").read_bytes() == b'{"components": ["a"]}'
    assert _assets.shared_package_dir() == SHARED.resolve()


_IMPORT_ALONE = """
import json, sys
source = sys.argv[1]  # the repository's lambda/: never on the path, so nothing comes from it
sys.path[:] = [p for p in sys.path if not p.startswith(source)]
sys.path.insert(0, '.')
import index, llm_cdk_shared
print(json.dumps({'index': index.__file__, 'shared': llm_cdk_shared.__file__}))
"""


@pytest.mark.parametrize("folder", HANDLER_FOLDERS)
def test_each_staged_asset_imports_on_its_own(folder):
    staged = Path(_assets.staged_handler(folder))
    found = _cold_import(folder)["files"]
    assert found["index"] == str(staged / "index.py")
    assert found["shared"] == str(staged / "llm_cdk_shared" / "__init__.py")


# ------------------------------------------------------------------------------------------ cold start

HEAVY_MODULES = (
    "pydantic",
    "pydantic_core",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.parser",
    "llm_cdk_shared.custom_resource",
)
"""What no handler imports at module level (the cold start pays for boto3 and Powertools' Logger /
Metrics; validation models and the event handler are built on the paths that use them)."""

_COLD_CALL = (
    _IMPORT_ALONE
    + """
import importlib
from types import SimpleNamespace
HEAVY = json.loads(sys.argv[2])
index = importlib.import_module(sys.argv[3])  # index (imported above), or another entry module of the asset
found = {'import': [m for m in HEAVY if m in sys.modules], 'boto3': 'boto3' in sys.modules}
if len(sys.argv) > 4:
    call = json.loads(sys.argv[4])
    context = SimpleNamespace(function_name='f', memory_limit_in_mb=256, aws_request_id='r',
                              invoked_function_arn='arn:aws:lambda:us-east-1:123456789012:function:f',
                              get_remaining_time_in_millis=lambda: 300000)
    try:
        found['result'] = getattr(index, call['entry'])(call['event'], context)
    except Exception as exc:
        found['error'] = [type(exc).__name__, str(exc)]
    found['after'] = [m for m in HEAVY if m in sys.modules]
    found['built'] = {name: getattr(index, name).cache_info().currsize
                      for name in ('_models', '_event_model', '_app') if hasattr(index, name)}
print(json.dumps(found, default=str))
"""
)
_COLD_ENV = {
    "ROLE_ARN": "arn:aws:iam::123456789012:role/eagle-job",
    "OUTPUT_S3_URI": "s3://eagle-out/jobs/",
    "MAX_RUNTIME_SECONDS": "432000",
    "ENDPOINT_NAME": "chat",
    "SESSIONS_TABLE": "sessions",
    "DEFAULT_COMPONENT": "base",
}


def _cold(folder: str, call: dict[str, Any] | None = None, module: str = "index") -> dict[str, Any]:
    """Import the staged asset of ``folder`` in a fresh ``python -I`` (as test_each_staged_asset_imports_on_its_own
    does) and ``module`` of it, note which HEAVY_MODULES are loaded, then (``call``) run one entry point of
    ``module`` on one event."""
    staged = Path(_assets.staged_handler(folder))
    argv = [sys.executable, "-I", "-B", "-c", _COLD_CALL, str(LAMBDA_ROOT), json.dumps(HEAVY_MODULES), module]
    result = subprocess.run(
        argv + ([json.dumps(call)] if call else []),
        cwd=staged,
        capture_output=True,
        text=True,
        env={
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_SERVICE_NAME": folder,
            "POWERTOOLS_METRICS_NAMESPACE": "SageMakerLlmTest",
            "PATH": "/usr/bin:/bin",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            **_COLD_ENV,
        },
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    found: dict[str, Any] = json.loads(lines[-1])
    if call is None and module == "index":  # _IMPORT_ALONE's own line: where index and the shared package came from
        found["files"] = json.loads(lines[-2])
    return found


@functools.cache
def _cold_import(folder: str) -> dict[str, Any]:
    """``_cold(folder)``: one fresh interpreter per asset serves the import-alone and the heavy-modules tests."""
    return _cold(folder)


@pytest.mark.parametrize("folder", HANDLER_FOLDERS)
def test_no_handler_imports_pydantic_or_the_event_handler_at_import(folder):
    found = dict(_cold_import(folder))
    del found["files"]
    assert found == {"import": [], "boto3": True}


def test_the_eagle_benchmark_entry_module_imports_no_pydantic_either():
    # eagle_job's asset also serves the EAGLE benchmark functions (handler benchmark.start/check/serving)
    assert _cold("eagle_job", module="benchmark") == {"import": [], "boto3": True}


_PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e"
_IAM = {
    "iam": {
        "accessKey": "ASIAEXAMPLEKEY000001",
        "accountId": "123456789012",
        "callerId": "AIDAEXAMPLEUSERID0001",
        "cognitoIdentity": None,
        "principalOrgId": "o-exampleorg1",
        "userArn": "arn:aws:iam::123456789012:user/chat-app",
        "userId": "AIDAEXAMPLEUSERID0001",
    }
}


def _url_event(path: str, body: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "body": body,
        "isBase64Encoded": False,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "stage": "$default",
            "requestId": "r1",
            "routeKey": "$default",
            "authorizer": _IAM,
            "http": {
                "method": "POST",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "chat-app",
            },
        },
    }


def _url_error(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    error = {"code": code, "message": message, **({"field": field} if field else {})}
    return {
        "statusCode": 400,
        "body": json.dumps({"error": error}, separators=(",", ":")),
        "isBase64Encoded": False,
        "headers": {"Content-Type": "application/json"},
        "cookies": [],
    }


_LAZY_PATHS = [
    pytest.param(
        "capacity_plan",
        "handler",
        {"RequestType": "Replace"},
        [
            "CapacityPlanEventError",
            (
                "Not a valid CloudFormation custom resource event (nothing was done):\n"
                "- RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'"
            ),
        ],
        ["pydantic", "pydantic_core", "llm_cdk_shared.custom_resource"],
        {"_models": 0, "_event_model": 1},
        id="capacity_plan-bad-request-type",
    ),
    pytest.param(
        "capacity_plan",
        "handler",
        {
            "RequestType": "Create",
            "ResourceProperties": {
                "PlanName": "bad name",
                "InstanceType": "ml.p5e.48xlarge",
                "InstanceCount": "3",
                "DurationDays": "1",
                "MaxUpfrontFeeUsd": "10",
                "Purchase": "approved",
            },
        },
        [
            "CapacityPlanPropertiesError",
            (
                "Invalid capacity plan properties (nothing was bought):\n"
                "- PlanName 'bad name' is not a valid training plan name; use 1-64 letters, digits and hyphens, "
                "starting and ending with a letter or digit (e.g. 'llm-p5e-2026q1')\n"
                "- InstanceCount 3 is not offered; use one of 1, 2, 4, 8, 16, 32, 64"
            ),
        ],
        ["pydantic", "pydantic_core", "llm_cdk_shared.custom_resource"],
        {"_models": 1, "_event_model": 1},
        id="capacity_plan-bad-properties",
    ),
    pytest.param(
        "capacity_plan",
        "handler",
        {"RequestType": "Delete", "PhysicalResourceId": _PLAN_ARN, "ResourceProperties": {}},
        {"PhysicalResourceId": _PLAN_ARN},
        ["pydantic", "pydantic_core", "llm_cdk_shared.custom_resource"],
        {"_models": 0, "_event_model": 1},
        id="capacity_plan-delete-builds-no-properties-model",
    ),
    pytest.param(
        "capacity_plan_guard",
        "handler",
        {
            "RequestType": "Create",
            "ResourceProperties": {
                "PlanName": "chat-p5e",
                "InstanceType": "ml.p5e.48xlarge",
                "MaxInstances": "0",
                "WhenNotActive": "fail",
                "Bound": "true",
                "EndpointConfigInputs": [],
                "UpdatePolicy": "ROLLING",
            },
        },
        [
            "GuardEventError",
            (
                "Invalid capacity plan guard properties (nothing was checked):\n"
                "- MaxInstances '0' must be a whole number 1-1000"
            ),
        ],
        ["pydantic", "pydantic_core", "llm_cdk_shared.custom_resource"],
        {"_models": 1},
        id="capacity_plan_guard-bad-properties",
    ),
    pytest.param(
        "capacity_plan_guard",
        "handler",
        {"RequestType": "Delete"},
        [
            "GuardEventError",
            (
                "Not a valid CloudFormation custom resource event (nothing was checked):\n"
                "- event: Delete events need PhysicalResourceId"
            ),
        ],
        ["pydantic", "pydantic_core", "llm_cdk_shared.custom_resource"],
        {"_models": 0},
        id="capacity_plan_guard-delete-without-id",
    ),
    pytest.param(
        "deployment_check",
        "is_complete",
        {
            "RequestType": "Update",
            "PhysicalResourceId": "deployment-check/x",
            "ResourceProperties": {"EndpointName": "bad name"},
        },
        [
            "DeploymentCheckFailed",
            (
                "invalid ResourceProperties: EndpointName: got 'bad name'; allowed: pattern "
                "'^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$'; EndpointConfigName: required field is missing; "
                "fix: add EndpointConfigName"
            ),
        ],
        ["pydantic", "pydantic_core"],
        {"_models": 1},
        id="deployment_check-bad-properties",
    ),
    pytest.param(
        "deployment_check",
        "on_event",
        {"RequestType": "Delete", "PhysicalResourceId": "deployment-check/x"},
        {"PhysicalResourceId": "deployment-check/x"},
        [],
        {"_models": 0},
        id="deployment_check-delete-imports-no-pydantic",
    ),
    pytest.param(
        "eagle_job",
        "start",
        {"model_name": "m"},
        [
            "InvalidEventError",
            (
                "invalid StartEvent event: model_s3_uri: required field is missing; fix: add model_s3_uri; "
                "architecture: required field is missing; fix: add architecture; deployment_instance_type: required "
                "field is missing; fix: add deployment_instance_type; training_data: required field is missing; fix: "
                "add training_data; run_id: required field is missing; fix: add run_id"
            ),
        ],
        ["pydantic", "pydantic_core", "aws_lambda_powertools.utilities.parser"],
        {"_models": 1},
        id="eagle_job-bad-start-event",
    ),
    pytest.param(
        "eagle_job:benchmark",
        "start",
        {"phase": "during", "run_id": "r", "head": "s3://b/h/"},
        ["InvalidEventError", ("bad StartEvent: phase: got 'during'; allowed: 'before' or 'after'")],
        ["pydantic", "pydantic_core"],
        {"_models": 1},
        id="eagle_job-benchmark-bad-start-event",
    ),
    pytest.param(
        "eagle_dataset",
        "plan",
        {"capture_bucket": "b"},
        [
            "InvalidEventError",
            (
                "PlanEvent event is invalid: capture_bucket: got 'b'; allowed: pattern "
                "'^[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]$'; output_bucket: required field is missing; fix: add "
                "output_bucket; run_id: required field is missing; fix: add run_id; watermark_parameter: required "
                "field is missing; fix: add watermark_parameter"
            ),
        ],
        ["pydantic", "pydantic_core"],
        {"_models": 1},
        id="eagle_dataset-bad-plan-event",
    ),
    pytest.param(
        "session_router",
        "handler",
        "hello",
        {
            "statusCode": 400,
            "headers": {"Content-Type": "application/json"},
            "isBase64Encoded": False,
            "body": json.dumps(
                {
                    "error": {
                        "code": "InvalidEvent",
                        "message": ("the event is not a JSON object; invoke this function through its function URL"),
                    }
                }
            ),
        },
        [],
        {"_models": 0, "_app": 0},
        id="session_router-not-a-url-event-builds-nothing",
    ),
    pytest.param(
        "session_router",
        "handler",
        _url_event("/open", '{"bogus": 1}'),
        _url_error("InvalidField", "unknown field 'bogus'; allowed fields: component", "bogus"),
        ["pydantic", "pydantic_core", "aws_lambda_powertools.event_handler"],
        {"_models": 1, "_app": 1},
        id="session_router-bad-open-body",
    ),
    pytest.param(
        "session_router",
        "handler",
        _url_event("/close", "[1]"),
        _url_error("InvalidJson", "request body must be a JSON object, got list"),
        None,
        {"_models": 1, "_app": 1},
        id="session_router-close-body-not-an-object",
    ),
]


@pytest.mark.parametrize(("folder", "entry", "event", "expected", "heavy", "built"), _LAZY_PATHS)
def test_the_lazy_paths_still_validate(folder, entry, event, expected, heavy, built):
    """A fresh process (nothing heavy imported) given a bad event answers exactly as before, and loads only
    what that path needs: a Delete builds no properties model, a non-URL event no resolver. ``folder:module``
    names an entry module other than index."""
    folder, _, module = folder.partition(":")
    found = _cold(folder, {"entry": entry, "event": event}, module or "index")
    assert found["import"] == []
    assert found.get("error" if isinstance(expected, list) else "result") == expected, found
    if heavy is not None:
        assert found["after"] == heavy
    assert found["built"] == built


@pytest.mark.parametrize(
    "function", ["capacity_plan", "capacity_plan_guard", "deployment_check", "endpoint_policy", "inference_router"]
)
def test_every_handler_error_fits_cloudformation_s_answer(load_handler, function):
    """A handler's error is what CloudFormation shows as the reason, and its whole answer holds 4096 bytes: a long
    message is cut to the handler's MAX_MESSAGE_CHARS and says so; a short one is kept as it is."""
    module = load_handler(function)
    errors = [
        c for c in vars(module).values() if isinstance(c, type) and issubclass(c, ShortError) and c is not ShortError
    ]
    assert errors, f"{function} has no error class built on ShortError"
    for error in errors:
        assert error.max_chars == module.MAX_MESSAGE_CHARS <= 3500
        long = str(error("x" * 10_000))
        assert len(long) == module.MAX_MESSAGE_CHARS and long.endswith(" ...(truncated)")
        assert str(error("short")) == "short"
