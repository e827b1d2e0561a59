"""Hostile events against every CloudFormation custom resource handler: a caller's mistake is one clear failure.

Each handler gets the valid events of its own tests with every field dropped or given each wrong JSON type
(``support.hostile``), and events that are no JSON object. The outcome of each is one of:

* refused before any AWS call, with one error (Provider framework handlers: ``capacity_plan``,
  ``capacity_plan_guard``, ``deployment_check``) or one ``FAILED`` answer on the ResponseURL
  (``eagle_serving_model``, invoked by CloudFormation directly) whose message names the field and stays under
  CloudFormation's 4 KB response limit;
* accepted, where the mutation leaves a valid event (an unread field, an optional one dropped): the handler
  goes on to its first AWS call, which the handler's ``Stubber`` (no response queued) answers with
  ``UnStubbedResponseError``, or, for a Delete that needs no call, it succeeds.

Every wrong outcome is listed before the test fails. AWS is only ever a ``botocore.stub.Stubber``: no request
leaves the process. One loaded module per handler serves the whole test module (its clients are stubbed once).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import FakeLambdaContext, load_handler_module
from support import hostile
from support.cfn_response import recording_urlopen
from support.hostile import DROP, Mutation, outcome, stub_clients

CONTEXT = FakeLambdaContext()
MAX_REASON = 3500  # the handlers' own cap: CloudFormation's whole response must stay under 4096 bytes
ENVELOPE = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:provider",
    "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x",
    "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/llm/guid",
    "RequestId": "req-1",
    "LogicalResourceId": "Resource",
}
UNREAD = ("ServiceToken", "ResponseURL", "StackId", "RequestId", "LogicalResourceId")
"""Fields the Provider framework handlers never read."""


def cr_event(
    request_type: str,
    resource_type: str,
    props: dict[str, Any],
    physical_id: str | None = None,
    old: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A custom resource event; properties are copied so that mutating one never changes another."""
    event = {
        "RequestType": request_type,
        **ENVELOPE,
        "ResourceType": resource_type,
        "ResourceProperties": {"ServiceToken": ENVELOPE["ServiceToken"], **copy.deepcopy(props)},
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    if old is not None:
        event["OldResourceProperties"] = {"ServiceToken": ENVELOPE["ServiceToken"], **copy.deepcopy(old)}
    return event


def names_the_field(message: str, mutation: Mutation, valid: dict[str, Any]) -> bool:
    """The message names the mutated field, or (an object replaced or dropped) a field that object had."""
    if mutation.field in message:
        return True
    original: Any = valid
    for key in mutation.path:
        original = original[key]
    return isinstance(original, dict) and any(key in message for key in original if key != "ServiceToken")


def under(mutation: Mutation, *prefixes: str | tuple[str, ...]) -> bool:
    for prefix in prefixes:
        parts = (prefix,) if isinstance(prefix, str) else prefix
        if mutation.path[: len(parts)] == parts:
            return True
    return False


def check_provider_handler(
    handler: Callable[[Any, Any], Any],
    error: type[Exception],
    valid: dict[str, Any],
    accepted: Callable[[Mutation], bool],
    named: dict[tuple[str, ...], str] | None = None,
    delete: bool = False,
) -> int:
    """Send every hostile event; returns how many were tried. Fails listing every wrong outcome. ``named``: for a
    field whose absence has a documented default, what the message says instead of the field's name. ``delete``:
    a Delete, which these handlers answer without any AWS call (the resource is retained or was never made)."""
    failures, tried = [], 0
    for event in hostile.NOT_OBJECTS:
        kind, found = outcome(lambda event=event: handler(event, CONTEXT))
        tried += 1
        if not (kind == "raised" and isinstance(found, error) and "not a JSON object" in str(found)):
            failures.append(f"event {event!r}: {kind} {found!r}"[:300])
    for mutation in hostile.mutations(valid):
        kind, found = outcome(lambda mutation=mutation: handler(mutation.event, CONTEXT))
        tried += 1
        if accepted(mutation):
            if kind == "raised":
                failures.append(f"{mutation}: a valid event was refused: {type(found).__name__}: {found}"[:400])
            elif delete and kind != "ok":
                failures.append(f"{mutation}: a Delete made an AWS call")
        elif kind != "raised":
            failures.append(f"{mutation}: accepted ({kind}), should be refused before any AWS call")
        elif not isinstance(found, error):
            failures.append(f"{mutation}: {type(found).__name__} (not {error.__name__}): {found}"[:400])
        elif len(str(found)) > MAX_REASON or not (
            (named or {})[mutation.path] in str(found)
            if mutation.replacement is DROP and mutation.path in (named or {})
            else names_the_field(str(found), mutation, valid)
        ):
            failures.append(f"{mutation}: the message does not name {mutation.field} (or is too long): {found}"[:400])
    assert not failures, hostile.report(failures, tried)
    return tried


# ------------------------------------------------------------------ capacity_plan (Provider framework)
PLAN = {
    "PlanName": "llm-p5e-2026q1",
    "InstanceType": "ml.p5e.48xlarge",
    "InstanceCount": "4",
    "DurationDays": "7",
    "MaxUpfrontFeeUsd": "100000",
    "Purchase": "approved",
    "StartTimeAfter": "2026-01-10T00:00:00Z",
    "EndTimeBefore": "2026-02-10T00:00:00Z",
    "ConsentName": "llm-p5e-2026q1",
}
PLAN_TYPE = "Custom::SageMakerCapacityPlan"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/llm-p5e-2026q1"
EXTENSION = {
    "PlanName": "llm-p5e-2026q1",
    "ExtendUntil": "2026-01-27T11:30:00Z",
    "MaxUpfrontFeeUsd": "50000",
    "Extend": "approved",
}
EXTENSION_TYPE = "Custom::SageMakerCapacityPlanExtension"
OPTIONAL_PLAN = ("StartTimeAfter", "EndTimeBefore", "ConsentName")
PLAN_IDENTITY = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")


@pytest.fixture(scope="module")
def capacity_plan():
    return load_handler_module("capacity_plan")


def _plan_property_accepted(mutation: Mutation, request_type: str) -> bool:
    """A mutation of one ResourceProperties field that still declares the same valid plan."""
    if len(mutation.path) != 2:
        return False
    field, value = mutation.path[1], mutation.replacement
    whole = isinstance(value, int) and not isinstance(value, bool)
    if field == "ServiceToken":
        return True
    if field in ("StartTimeAfter", "EndTimeBefore") and (value is DROP or value is None or value == ""):
        return request_type == "Create"  # an Update may not change the window
    if field == "ConsentName":
        return value is DROP or value is None
    return (field == "DurationDays" and whole and value == 7) or (
        field == "MaxUpfrontFeeUsd" and value in (7, 1.5) and not isinstance(value, bool)
    )


@pytest.mark.parametrize("request_type", ["Create", "Update", "Delete"])
def test_capacity_plan_refuses_every_malformed_plan_event_by_name(capacity_plan, request_type):
    handler = stub_clients(capacity_plan).handler
    physical_id = None if request_type == "Create" else PLAN_ARN
    valid = cr_event(request_type, PLAN_TYPE, PLAN, physical_id, PLAN if request_type == "Update" else None)

    def accepted(mutation: Mutation) -> bool:
        path, value = mutation.path, mutation.replacement
        if under(mutation, *UNREAD):
            return True
        if path == ("ResourceType",):
            return value is DROP  # the plan type is the default
        if path == ("PhysicalResourceId",):
            return value == hostile.LONG  # any non-empty string (ODD has a lone surrogate: not valid text)
        if request_type == "Delete":  # properties are not read (the plan is retained); they must be an object
            return under(mutation, "ResourceProperties", "OldResourceProperties") and (
                len(path) > 1 or value is DROP or isinstance(value, dict)
            )
        if under(mutation, "OldResourceProperties") and len(path) == 2:
            # the old plan's identity is compared with the new one; its other properties are not read
            return path[1] not in PLAN_IDENTITY or (
                path[1] == "DurationDays" and value == 7 and not isinstance(value, bool)
            )
        return under(mutation, "ResourceProperties") and _plan_property_accepted(mutation, request_type)

    assert (
        check_provider_handler(
            handler, capacity_plan.CapacityPlanError, valid, accepted, delete=request_type == "Delete"
        )
        > 150
    )


def test_capacity_plan_extension_refuses_every_malformed_event_by_name(capacity_plan):
    handler = stub_clients(capacity_plan).handler
    valid = cr_event("Create", EXTENSION_TYPE, EXTENSION)

    def accepted(mutation: Mutation) -> bool:
        return under(mutation, *UNREAD, ("ResourceProperties", "ServiceToken")) or (
            mutation.path == ("ResourceProperties", "MaxUpfrontFeeUsd")
            and mutation.replacement in (7, 1.5)
            and not isinstance(mutation.replacement, bool)
        )

    # without ResourceType the event is a plan's (the default): the message lists the plan's missing properties
    named = {("ResourceType",): "InstanceType: required field is missing"}
    assert check_provider_handler(handler, capacity_plan.CapacityPlanError, valid, accepted, named) > 100


def test_capacity_plan_hostile_messages_name_field_value_and_what_is_allowed(capacity_plan):
    handler = stub_clients(capacity_plan).handler
    event = cr_event("Create", PLAN_TYPE, {**PLAN, "InstanceCount": [4], "DurationDays": hostile.LONG})
    with pytest.raises(capacity_plan.CapacityPlanPropertiesError) as raised:
        handler(event, CONTEXT)
    assert str(raised.value) == (
        "Invalid capacity plan properties (nothing was bought):\n"
        "- InstanceCount must be a whole number, got [4]\n"
        "- DurationDays must be a whole number, got '" + "x" * 76 + "..."
    )
    with pytest.raises(
        capacity_plan.CapacityPlanEventError,
        match=(
            r"^Not a valid CloudFormation custom resource event \(nothing was done\):\n"
            r"- RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'$"
        ),
    ):
        handler({**event, "RequestType": "Replace"}, CONTEXT)


# ------------------------------------------------------------------ capacity_plan_guard (Provider framework)
GUARD = {
    "PlanName": "chat-p5e-2027q1",
    "InstanceType": "ml.p5e.48xlarge",
    "MaxInstances": "2",
    "WhenNotActive": "fail",
    "Bound": "true",
    "EndpointConfigInputs": ["sha256:abc", "arn:aws:iam::123456789012:role/endpoint"],
    "UpdatePolicy": "BLUE_GREEN",
}
GUARD_TYPE = "Custom::SageMakerCapacityPlanGuard"


@pytest.mark.parametrize("request_type", ["Create", "Update", "Delete"])
def test_capacity_plan_guard_refuses_every_malformed_event_by_name(request_type):
    guard = stub_clients(load_handler_module("capacity_plan_guard"))
    physical_id = None if request_type == "Create" else "chat-p5e-2027q1/0123456789abcdef"
    valid = cr_event(request_type, GUARD_TYPE, GUARD, physical_id, GUARD if request_type == "Update" else None)

    def accepted(mutation: Mutation) -> bool:
        path, value = mutation.path, mutation.replacement
        is_object = value is DROP or isinstance(value, dict)
        if under(mutation, *UNREAD, ("ResourceProperties", "ServiceToken")):
            return True
        if path == ("ResourceType",):  # not read: CloudFormation sets it
            return value is DROP or isinstance(value, str)
        if path == ("PhysicalResourceId",):
            return value == hostile.LONG
        if path == ("OldResourceProperties",):  # an Update needs it (an object); only its Bound is read
            return isinstance(value, dict)
        if under(mutation, "OldResourceProperties"):
            return True
        if path == ("ResourceProperties",):
            return request_type == "Delete" and is_object
        if request_type == "Delete":
            return under(mutation, "ResourceProperties")
        return (path == ("ResourceProperties", "MaxInstances") and value == 7 and not isinstance(value, bool)) or (
            path == ("ResourceProperties", "EndpointConfigInputs") and value in ([], ["x"])
        )

    assert (
        check_provider_handler(guard.handler, guard.GuardError, valid, accepted, delete=request_type == "Delete") > 150
    )


# ------------------------------------------------------------------ deployment_check (Provider framework)
CHECK = {
    "EndpointName": "Endpoint-abc123",
    "EndpointConfigName": "EndpointConfig-new456",
    "Components": [{"Name": "qwen3-8b", "ModelName": "EndpointQwenModel-new789", "ArtifactUrl": "s3://b/k"}],
}
CHECK_TYPE = "Custom::SageMakerDeploymentCheck"
CHECK_ID = "deployment-check/Endpoint-abc123"


@pytest.fixture(scope="module")
def deployment_check():
    return load_handler_module("deployment_check")


@pytest.mark.parametrize("entry", ["on_event", "is_complete"])
@pytest.mark.parametrize("request_type", ["Create", "Update", "Delete"])
def test_deployment_check_refuses_every_malformed_event_by_name(deployment_check, entry, request_type):
    handler = getattr(stub_clients(deployment_check), entry)
    valid = cr_event(
        request_type,
        CHECK_TYPE,
        CHECK,
        None if request_type == "Create" else CHECK_ID,
        CHECK if request_type == "Update" else None,
    )

    def accepted(mutation: Mutation) -> bool:
        path, value = mutation.path, mutation.replacement
        if under(mutation, *UNREAD, "ResourceType", "OldResourceProperties", ("ResourceProperties", "ServiceToken")):
            return True
        if path == ("PhysicalResourceId",):
            return isinstance(value, str) and value != ""
        if request_type == "Delete":
            return under(mutation, "ResourceProperties")
        optional = path in (
            ("ResourceProperties", "Components", 0, "ModelName"),
            ("ResourceProperties", "Components", 0, "ArtifactUrl"),
        ) and value in (DROP, None)
        return (
            optional
            or (path == ("ResourceProperties", "Components") and value in (DROP, []))
            or (path == ("ResourceProperties", "Components", 0) and value is DROP)
        )

    assert (
        check_provider_handler(
            handler, deployment_check.DeploymentCheckFailed, valid, accepted, delete=request_type == "Delete"
        )
        > 150
    )


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (None, "Not a CloudFormation custom resource event (not a JSON object); nothing was checked."),
        (
            {"ResourceProperties": CHECK},
            "Not a valid CloudFormation custom resource event (nothing was checked):\n"
            "- RequestType: required field is missing; fix: add RequestType",
        ),
        (
            {"RequestType": "Replace", "ResourceProperties": CHECK},
            "Not a valid CloudFormation custom resource event "
            "(nothing was checked):\n- RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'",
        ),
        (
            {"RequestType": "Delete", "PhysicalResourceId": 7},
            "Not a valid CloudFormation custom resource event (nothing "
            "was checked):\n- PhysicalResourceId: got 7; allowed: the resource's physical id (a non-empty string), "
            "which Delete events carry",
        ),
        (
            {"RequestType": "Create", "ResourceProperties": ["x"]},
            "invalid ResourceProperties: got ['x']; allowed: a JSON "
            "object with EndpointName, EndpointConfigName and Components",
        ),
    ],
    ids=["not-an-object", "no-request-type", "unknown-request-type", "delete-id-not-a-string", "properties-a-list"],
)
@pytest.mark.parametrize("entry", ["on_event", "is_complete"])
def test_deployment_check_event_errors_are_exact(deployment_check, entry, event, message):
    """Before: a KeyError / TypeError traceback, an unknown RequestType checked as a Create, a list of
    properties reported as missing fields."""
    with pytest.raises(
        deployment_check.DeploymentCheckEventError if "event" in message else deployment_check.DeploymentCheckFailed
    ) as raised:
        getattr(stub_clients(deployment_check), entry)(event, CONTEXT)
    assert str(raised.value) == message


def test_deployment_check_lists_many_problems_within_cloudformations_limit(deployment_check):
    """Before: every problem of 1000 bad components, 90 KB, past what CloudFormation takes as a reason."""
    components = [{"Name": f"bad_{i}", "ModelName": "bad name"} for i in range(1000)]
    event = cr_event("Create", CHECK_TYPE, {**CHECK, "Components": components})
    with pytest.raises(deployment_check.DeploymentCheckFailed) as raised:
        stub_clients(deployment_check).on_event(event, CONTEXT)
    message = str(raised.value)
    assert message.startswith("invalid ResourceProperties: Components.0.Name: got 'bad_0'; allowed: pattern ")
    assert len(message) <= 3000 and message.endswith(" ...(truncated)")


# ------------------------------------------------------------------ eagle_serving_model (answers CloudFormation)
CONTAINER = {
    "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128",
    "ModelDataSource": {
        "S3DataSource": {
            "S3Uri": "s3://weights/qwen3-32b/",
            "S3DataType": "S3Prefix",
            "CompressionType": "None",
            "ModelAccessConfig": {"AcceptEula": "true"},
        }
    },
    "AdditionalModelDataSources": [
        {
            "ChannelName": "eagle",
            "S3DataSource": {
                "S3Uri": "s3://eagle-artifacts/jobs/eagle-qwen3-32b-0123456789ab/draft/",
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
            },
        }
    ],
    "Environment": {"OPTION_MODEL_ID": "/opt/ml/model", "OPTION_SPECULATIVE_CONFIG": '{"method": "eagle3"}'},
}
SERVING = {
    "ModelNamePrefix": "qwen3-32b-eagle",
    "ExecutionRoleArn": "arn:aws:iam::123456789012:role/endpoint-role",
    "PrimaryContainer": CONTAINER,
    "EnableNetworkIsolation": "true",
    "VpcConfig": {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]},
}
SERVING_TYPE = "Custom::EagleServingModel"
_JSON_TYPES = ((bool,), (int, float), (str,), (list,), (dict,), (type(None),))


def _json_type(value: Any) -> int:
    return next(i for i, types in enumerate(_JSON_TYPES) if isinstance(value, types))


@pytest.fixture(scope="module")
def serving_module():
    module = load_handler_module("eagle_serving_model")
    answers: list[dict[str, Any]] = []
    # module.urllib.request is the process's one urllib.request: patched for this module's tests only, then
    # restored (a later module in the same worker, e.g. the session client's, talks HTTP through it).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            module.urllib.request,
            "urlopen",
            recording_urlopen(
                answers, lambda request: request.get_method() == "PUT" and request.full_url == ENVELOPE["ResponseURL"]
            ),
        )
        module.answers = answers
        yield module


@pytest.fixture
def serving(serving_module):
    return stub_clients(serving_module)


def serving_outcome(serving: Any, event: Any) -> tuple[str, str]:
    """("raised", message) | ("aws", "") | ("SUCCESS"/"FAILED", reason), with exactly one answer when answered."""
    serving.answers.clear()
    try:
        serving.handler(event, CONTEXT)
    except Exception as error:  # noqa: BLE001
        assert not serving.answers
        return "raised", f"{type(error).__name__}: {error}"
    [answer] = serving.answers
    assert len(json.dumps(answer)) < 4096, "CloudFormation refuses a response over 4096 bytes"
    assert isinstance(answer["PhysicalResourceId"], str) and answer["PhysicalResourceId"]
    if "UnStubbedResponseError" in answer["Reason"]:
        return "aws", ""
    return answer["Status"], answer["Reason"]


@pytest.mark.parametrize("request_type", ["Create", "Update", "Delete"])
def test_serving_model_answers_every_malformed_event_with_a_reason_naming_the_field(serving, request_type):
    """Every malformed event is answered FAILED on the ResponseURL before any AWS call, naming the field (a
    wrong JSON type never reaches AWS); only an event without an https ResponseURL cannot be answered. A Delete
    of anything but a model this function made succeeds without an AWS call."""
    name = serving.model_name(SERVING)
    valid = cr_event(request_type, SERVING_TYPE, SERVING, None if request_type == "Create" else name)
    failures, tried = [], 0
    for event in hostile.NOT_OBJECTS:
        kind, message = serving_outcome(serving, event)
        tried += 1
        if kind != "raised" or "not a JSON object" not in message:
            failures.append(f"event {event!r}: {kind} {message}"[:300])
    for mutation in hostile.mutations(valid):
        kind, message = serving_outcome(serving, mutation.event)
        tried += 1
        path, value = mutation.path, mutation.replacement
        if path == ("ResponseURL",):
            expected = {"raised"}
        elif under(mutation, "ServiceToken", "ResourceType", ("ResourceProperties", "ServiceToken")):
            expected = {"aws"}  # not read (a Delete deletes the model it made)
        elif path == ("PhysicalResourceId",):
            expected = {"SUCCESS"} if request_type == "Delete" else {"aws"}  # Delete: not a model it made
        elif path in (("StackId",), ("RequestId",), ("LogicalResourceId",)) and value == hostile.ODD:
            expected = {"aws"}  # any short non-empty string is echoed back as given
        elif request_type == "Delete" and under(mutation, "ResourceProperties"):
            expected = {"aws"} if path[1:2] != ("ModelNamePrefix",) and path != ("ResourceProperties",) else {"SUCCESS"}
        elif path in (("ResourceProperties", "VpcConfig"), ("ResourceProperties", "EnableNetworkIsolation")):
            expected = (
                {"aws"}
                if value is DROP or (path[1] == "EnableNetworkIsolation" and value in (True, False))
                else {"FAILED"}
            )  # VpcConfig: an object with SecurityGroupIds and Subnets
        elif (
            under(mutation, ("ResourceProperties", "PrimaryContainer"), ("ResourceProperties", "VpcConfig"))
            and len(path) > 2
        ):
            original: Any = valid
            for key in path:
                original = original[key]
            same_type = (
                value is DROP
                or _json_type(value) == _json_type(original)
                or (path[-1] == "AcceptEula" and isinstance(value, bool))
            )
            expected = {"FAILED", "aws"} if same_type else {"FAILED"}  # a wrong type never reaches AWS
        else:
            expected = {"FAILED"}
        if kind not in expected:
            failures.append(f"{mutation}: {kind} (expected {' or '.join(sorted(expected))}): {message}"[:400])
        elif kind in ("FAILED", "raised") and not names_the_field(message, mutation, valid):
            failures.append(f"{mutation}: the reason does not name {mutation.field}: {message}"[:400])
    assert not failures, hostile.report(failures, tried)
    assert tried > 300


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"ResourceProperties": "x"},
            "PropertiesError: ResourceProperties: got 'x'; allowed: a JSON object of "
            "ModelNamePrefix, ExecutionRoleArn, PrimaryContainer, VpcConfig, EnableNetworkIsolation, PromotedHead",
        ),
        (
            {"ResourceProperties": {**SERVING, "VpcConfg": {}}},
            "PropertiesError: ResourceProperties: unknown 'VpcConfg' "
            "(misspelt?); allowed: ModelNamePrefix, ExecutionRoleArn, PrimaryContainer, VpcConfig, "
            "EnableNetworkIsolation, PromotedHead, ServiceToken, ServiceTimeout; nothing was created",
        ),
        (
            {"ResourceProperties": {**SERVING, "PrimaryContainer": {**CONTAINER, "ModelDataSource": 7}}},
            "PropertiesError: the CreateModel request of these properties is invalid (nothing was created):\n"
            "Invalid type for parameter PrimaryContainer.ModelDataSource, value: 7, "
            "type: <class 'int'>, valid types: <class 'dict'>",
        ),
        (
            {"RequestType": "Replace", "StackId": None},
            "EventError: Not a valid CloudFormation custom resource event "
            "(nothing was done):\n- RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'\n"
            "- StackId: got None; allowed: the non-empty string (at most 1024 characters) CloudFormation sends",
        ),
    ],
    ids=["properties-not-an-object", "misspelt-property", "container-member-of-a-wrong-type", "bad-envelope"],
)
def test_serving_model_failed_reasons_are_exact(serving, change, reason):
    """Before: ``AttributeError: 'str' object has no attribute 'get'`` answered as the reason, a misspelt
    VpcConfig silently dropped, an unknown RequestType without the allowed ones, and a KeyError (no answer at
    all: CloudFormation waited an hour) for a missing StackId."""
    event = {**cr_event("Create", SERVING_TYPE, SERVING), **change}
    assert serving_outcome(serving, event) == ("FAILED", reason)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"ResponseURL": None},
            "EventError: ResponseURL: got None; allowed: the https:// presigned URL CloudFormation "
            "sends. Nothing was done and CloudFormation cannot be answered.",
        ),
        (
            {"ResponseURL": "file:///etc/passwd"},
            "EventError: ResponseURL: got 'file:///etc/passwd'; allowed: the https:// "
            "presigned URL CloudFormation sends. Nothing was done and CloudFormation cannot be answered.",
        ),
    ],
    ids=["no-url", "not-https"],
)
def test_serving_model_without_an_https_response_url_raises_one_clear_error(serving, change, message):
    """Before: ``ValueError: unknown url type`` after the work was done, or a ``file://`` URL opened."""
    assert serving_outcome(serving, {**cr_event("Delete", SERVING_TYPE, SERVING, "x"), **change}) == ("raised", message)


@pytest.mark.parametrize("physical_id", [7, ["qwen3-32b-eagle-0123456789ab"], None])
def test_serving_model_delete_of_a_physical_id_it_never_made_succeeds_without_aws(serving, physical_id):
    """Before: ``TypeError: expected string or bytes-like object`` for a physical id that is not a string (the stack
    stuck in DELETE_FAILED). Now: nothing this function made, so nothing to delete: SUCCESS, no AWS call."""
    event = cr_event("Delete", SERVING_TYPE, SERVING)
    event["PhysicalResourceId"] = physical_id
    assert serving_outcome(serving, event) == ("SUCCESS", f"See CloudWatch log stream {CONTEXT.log_stream_name}")
