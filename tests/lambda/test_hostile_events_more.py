"""Hostile events the custom resource handlers once crashed on or passed to AWS, each now answered clearly.

* ``endpoint_policy``: a policy nested 2,000 levels deep (a ``RecursionError`` in the parser), ``NaN`` and numbers
  beyond a double's range (sent on as the non-JSON ``NaN`` / ``Infinity``), and statements that allow anyone or
  every action (forwarded to ``PutEndpointPolicy``) are refused with one reason naming the field;
* ``inference_router``: a Delete whose physical id is no router name (botocore's ``InferenceRouterName`` rule)
  succeeds without sending ``DeleteInferenceRouter`` a name the service refuses;
* ``run_time_state``: parameter names SSM reserves (a first segment starting with ``aws`` or ``ssm``, any letter
  case) are refused before any read or write.

AWS is only ever a ``botocore.stub.Stubber``; each refusal is checked to have made no call at all (every request
the client would send is recorded, and the stubbers have nothing queued), and each request made is checked
against botocore's service model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import UnStubbedResponseError
from botocore.stub import Stubber
from conftest import load_handler_module
from support import hostile
from support.aws_model import assert_valid_request, request_problems

STACK_ID = "arn:aws:cloudformation:us-west-2:222222222222:stack/Platform/guid"
ROUTER_ACCOUNT = "111111111111"
ENDPOINT = "UsWest2-SageMakerLlm-Chat"
ENDPOINT_ARN = f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/{ENDPOINT.lower()}"
ROUTER_ARN = f"arn:aws:sagemaker:us-east-1:{ROUTER_ACCOUNT}:inference-router/sagemakerllm-chat"


class Recorded:
    """The AWS operations the clients of a handler were asked to send, each checked against the service model."""

    def __init__(self, clients: list[Any]) -> None:
        self.calls: list[str] = []
        self.clients = clients
        self.stubbers = [Stubber(client) for client in clients]

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        assert_valid_request(model.service_model.service_name, model.name, params)
        self.calls.append(model.name)

    def __enter__(self) -> Recorded:
        for client, stubber in zip(self.clients, self.stubbers, strict=True):
            client.meta.events.register("provide-client-params", self._record)
            stubber.activate()
        return self

    def __exit__(self, *args: Any) -> None:
        for client, stubber in zip(self.clients, self.stubbers, strict=True):
            stubber.deactivate()
            client.meta.events.unregister("provide-client-params", self._record)


def cr_event(request_type: str, resource_type: str, props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": resource_type,
        "StackId": STACK_ID,
        "RequestId": "req-1",
        "LogicalResourceId": "Resource",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:us-west-2:222222222222:function:framework", **props},
        **extra,
    }


# ------------------------------------------------------------------ endpoint_policy
POLICY_TYPE = "Custom::SageMakerEndpointPolicy"
PRINCIPAL = {"AWS": f"arn:aws:iam::{ROUTER_ACCOUNT}:root"}
INVOKE = {
    "Sid": "InvokeThroughRouter",
    "Effect": "Allow",
    "Principal": PRINCIPAL,
    "Action": "sagemaker:InvokeEndpoint",
    "Resource": ENDPOINT_ARN,
    "Condition": {"ArnEquals": {"sagemaker:SourceInferenceRouterArn": [ROUTER_ARN]}},
}
REFUSED = "Invalid endpoint policy properties (the endpoint policy was not changed):\n- "
ALLOWED_PRINCIPALS = (
    'allowed: {"AWS": ...} with account ids or IAM ARNs of an account root, a role or a user, no wildcards (an '
    "endpoint policy lets named accounts use the endpoint, never anyone); fix: name the router's account, e.g. "
    '{"AWS": "arn:aws:iam::111111111111:root"}'
)
ALLOWED_ACTIONS = (
    "allowed: sagemaker:InvokeEndpoint, sagemaker:InvokeEndpointAsync, sagemaker:DescribeEndpoint, each by name (no "
    "wildcards); fix: name the actions the router needs"
)


@pytest.fixture(scope="module")
def policy_module():
    module = load_handler_module("endpoint_policy")
    module.SETTLE_SECONDS = 0.0
    return module


@pytest.fixture
def policy(policy_module) -> Iterator[tuple[Any, Recorded]]:
    with Recorded([policy_module._sagemaker()]) as recorded:
        yield policy_module, recorded


def policy_event(document: dict[str, Any] | str, request_type: str = "Create", **extra: Any) -> dict[str, Any]:
    text = document if isinstance(document, str) else json.dumps(document, separators=(",", ":"))
    return cr_event(request_type, POLICY_TYPE, {"EndpointName": ENDPOINT, "ResourcePolicy": text}, **extra)


def statements(*items: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(items)}


def refused(module: Any, recorded: Recorded, event: dict[str, Any], lambda_context: Any) -> str:
    """The reason the handler refuses ``event``, asserting it made no AWS call."""
    with pytest.raises(module.EndpointPolicyError) as raised:
        module.on_event(event, lambda_context)
    assert recorded.calls == []
    return str(raised.value)


def test_a_policy_nested_2000_levels_deep_is_refused_naming_the_depth_allowed(policy, lambda_context):
    """Before: ``RecursionError`` from the JSON parser, a traceback as the deploy's reason."""
    module, recorded = policy
    text = '{"Version":"2012-10-17","Statement":[{"Condition":' + "[" * 2000 + "]" * 2000 + "}]}"
    assert len(text) < module.MAX_POLICY_CHARS
    with pytest.raises(RecursionError):
        json.loads(text)  # what the handler once did with it

    assert refused(module, recorded, policy_event(text), lambda_context) == (
        REFUSED + "ResourcePolicy: got arrays and objects nested 2003 levels deep; allowed: at most 6 (the deepest "
        "an IAM policy goes: document, Statement list, statement, Condition, operator, list of values); fix: pass "
        "the document InferenceRouter.endpoint_policy returns"
    )


def test_the_depth_is_read_from_the_text_brackets_inside_strings_do_not_count(policy_module):
    assert policy_module.nesting_depth('{"a": "[[[[{{{{", "b": [{"c": "]]}}\\"[["}]}') == 3
    assert policy_module.nesting_depth("[" * 7 + "]" * 7) == 7
    assert policy_module.nesting_depth('"[[["') == 0


def test_one_level_deeper_than_an_iam_policy_goes_is_refused(policy, lambda_context):
    module, recorded = policy
    deeper = {**INVOKE, "Condition": {"ArnEquals": {"sagemaker:SourceInferenceRouterArn": [[ROUTER_ARN]]}}}
    assert refused(module, recorded, policy_event(statements(deeper)), lambda_context).startswith(
        REFUSED + "ResourcePolicy: got arrays and objects nested 7 levels deep; allowed: at most 6 "
    )


@pytest.mark.parametrize("asynchronous", [False, True], ids=["realtime", "async"])
def test_the_document_the_construct_writes_is_accepted(policy_module, asynchronous):
    """The deepest document the library writes (a Condition with a list of router ARNs) passes every check."""
    from sagemaker_llm_cdk.routing.cross_account import endpoint_policy_document

    document = endpoint_policy_document(
        router_account=ROUTER_ACCOUNT,
        router_arns=[ROUTER_ARN, ROUTER_ARN.lower()],
        endpoint_arn=ENDPOINT_ARN.replace(ENDPOINT.lower(), ENDPOINT),
        asynchronous=asynchronous,
    )
    text = json.dumps(document)
    assert policy_module.nesting_depth(text) == policy_module.MAX_POLICY_DEPTH
    props = policy_module.parse_properties({"EndpointName": ENDPOINT, "ResourcePolicy": text})
    assert policy_module.statement_breadth(props.statements, ENDPOINT) == []


@pytest.mark.parametrize(
    "number",
    ["NaN", "Infinity", "-Infinity", "1e999999", "-1e999999", "1E400"],
)
def test_a_number_that_is_not_finite_is_refused(policy, lambda_context, number):
    """Before: parsed as NaN / infinity and sent on to PutEndpointPolicy as ``NaN`` / ``Infinity``: not JSON."""
    module, recorded = policy
    text = json.dumps(statements({**INVOKE, "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": 1}}}))
    text = text.replace('"aws:MultiFactorAuthAge": 1', f'"aws:MultiFactorAuthAge": {number}')
    assert refused(module, recorded, policy_event(text), lambda_context) == (
        REFUSED + f"ResourcePolicy: got the number {number}; allowed: finite numbers only (NaN, Infinity and numbers "
        "beyond a double's range are not JSON, which PutEndpointPolicy takes); fix: remove it or write it as a string"
    )


@pytest.mark.parametrize(
    ("principal", "where", "shown"),
    [
        ("*", "Principal", "'*'"),
        ({"AWS": "*"}, "Principal.AWS", "'*'"),
        ({"AWS": [PRINCIPAL["AWS"], "*"]}, "Principal.AWS", "'*'"),
        ({"AWS": "arn:aws:iam::*:root"}, "Principal.AWS", "'arn:aws:iam::*:root'"),
        ({"AWS": f"arn:aws:iam::{ROUTER_ACCOUNT}:role/*"}, "Principal.AWS", f"'arn:aws:iam::{ROUTER_ACCOUNT}:role/*'"),
        (
            {"AWS": f"arn:aws:iam::{ROUTER_ACCOUNT}:role/rout?r"},
            "Principal.AWS",
            "'arn:aws:iam::111111111111:role/rout?r'",
        ),
        ({"AWS": []}, "Principal.AWS", "[]"),
        ({"Service": "sagemaker.amazonaws.com"}, "Principal", '{"Service": "sagemaker.amazonaws.com"}'),
        ({"AWS": PRINCIPAL["AWS"], "Federated": "*"}, "Principal", None),
        (None, "Principal", "None"),
    ],
    ids=[
        "anyone",
        "any-aws",
        "anyone-in-a-list",
        "any-account",
        "any-role",
        "wildcard-character",
        "empty-list",
        "service",
        "federated-too",
        "missing",
    ],
)
def test_a_statement_that_allows_more_than_named_accounts_is_refused(policy, lambda_context, principal, where, shown):
    """Before: ``Principal: "*"`` was forwarded to PutEndpointPolicy (anyone could invoke the endpoint)."""
    module, recorded = policy
    statement = {k: v for k, v in INVOKE.items() if k != "Principal"}
    if principal is not None:
        statement["Principal"] = principal
    shown = shown or json.dumps(principal)
    assert refused(module, recorded, policy_event(statements(statement)), lambda_context) == (
        REFUSED + f"ResourcePolicy Statement[0].{where}: got {shown}; {ALLOWED_PRINCIPALS}"
    )


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        ("sagemaker:*", "'sagemaker:*'"),
        ("*", "'*'"),
        (["sagemaker:InvokeEndpoint", "sagemaker:Invoke*"], "'sagemaker:Invoke*'"),
        ("sagemaker:DeleteEndpoint", "'sagemaker:DeleteEndpoint'"),
        ([], "[]"),
        (7, "7"),
    ],
    ids=["service-wildcard", "everything", "wildcard-in-a-list", "another-action", "empty-list", "not-text"],
)
def test_a_statement_that_allows_more_than_invoking_and_describing_is_refused(policy, lambda_context, action, shown):
    """Before: ``sagemaker:*`` was forwarded to PutEndpointPolicy (the router's account could delete the endpoint)."""
    module, recorded = policy
    assert refused(module, recorded, policy_event(statements({**INVOKE, "Action": action})), lambda_context) == (
        REFUSED + f"ResourcePolicy Statement[0].Action: got {shown}; {ALLOWED_ACTIONS}"
    )


def test_every_broad_statement_is_listed_and_a_negation_is_refused(policy, lambda_context):
    module, recorded = policy
    document = statements(
        INVOKE,
        {**INVOKE, "Sid": "Anyone", "Principal": "*", "Action": "sagemaker:*"},
        {k: v for k, v in {**INVOKE, "Sid": "AllBut", "NotPrincipal": PRINCIPAL}.items() if k != "Principal"},
        {k: v for k, v in {**INVOKE, "Sid": "AllActionsBut", "NotAction": "x"}.items() if k != "Action"},
        {**INVOKE, "Sid": "Lower", "Effect": "allow"},
    )
    assert refused(module, recorded, policy_event(document), lambda_context) == (
        REFUSED
        + f"ResourcePolicy Statement[1].Principal: got '*'; {ALLOWED_PRINCIPALS}\n"
        + f"- ResourcePolicy Statement[1].Action: got 'sagemaker:*'; {ALLOWED_ACTIONS}\n"
        "- ResourcePolicy Statement[2].NotPrincipal: an Allow statement with NotPrincipal allows everything it does "
        "not list; allowed: Principal; fix: name the principals and actions allowed instead\n"
        "- ResourcePolicy Statement[3].NotAction: an Allow statement with NotAction allows everything it does not "
        "list; allowed: Action; fix: name the principals and actions allowed instead\n"
        "- ResourcePolicy Statement[4].Effect: got 'allow'; allowed: 'Allow' or 'Deny'; fix: set Effect"
    )


ALLOWED_RESOURCE = (
    f"allowed: the endpoint's ARN, arn:<partition>:sagemaker:<region>:<account>:endpoint/{ENDPOINT}; fix: write the "
    "ARN of the endpoint this policy is attached to (an endpoint policy covers only it)"
)


@pytest.mark.parametrize(
    ("resource", "shown"),
    [
        ("*", "'*'"),
        (
            ENDPOINT_ARN.replace(ENDPOINT.lower(), "another-endpoint"),
            repr(ENDPOINT_ARN.replace(ENDPOINT.lower(), "another-endpoint")),
        ),
        (ENDPOINT_ARN.rsplit("/", 1)[0] + "/*", repr(ENDPOINT_ARN.rsplit("/", 1)[0] + "/*")),
        (
            "arn:aws:sagemaker:us-west-2:222222222222:model/chat",
            "'arn:aws:sagemaker:us-west-2:222222222222:model/chat'",
        ),
        ([ENDPOINT_ARN, "arn:aws:s3:::bucket/*"], "'arn:aws:s3:::bucket/*'"),
        (None, "None"),
        ([], "[]"),
    ],
    ids=["star", "another-endpoint", "every-endpoint", "another-type", "another-service", "missing", "empty"],
)
def test_a_statement_whose_resource_is_not_the_endpoint_is_refused(policy, lambda_context, resource, shown):
    module, recorded = policy
    statement = {k: v for k, v in {**INVOKE, "Resource": resource}.items() if v is not None}
    assert refused(module, recorded, policy_event(statements(statement)), lambda_context) == (
        REFUSED + f"ResourcePolicy Statement[0].Resource: got {shown}; {ALLOWED_RESOURCE}"
    )


def test_not_resource_in_an_allow_is_refused_and_the_name_may_differ_in_case(policy, lambda_context):
    module, recorded = policy
    negated = {k: v for k, v in {**INVOKE, "NotResource": ENDPOINT_ARN}.items() if k != "Resource"}
    assert refused(module, recorded, policy_event(statements(negated)), lambda_context) == (
        REFUSED + "ResourcePolicy Statement[0].NotResource: an Allow statement with NotResource allows every resource "
        "it does not list; allowed: Resource, the endpoint's ARN; fix: write Resource instead"
    )
    upper = {**INVOKE, "Resource": ENDPOINT_ARN.replace(ENDPOINT.lower(), ENDPOINT.upper())}
    assert module.statement_breadth([upper], ENDPOINT) == []


def test_an_update_to_a_broad_statement_is_refused_before_any_call(policy, lambda_context):
    module, recorded = policy
    old = policy_event(statements(INVOKE))["ResourceProperties"]
    update = policy_event(
        statements({**INVOKE, "Principal": {"AWS": "*"}}),
        "Update",
        PhysicalResourceId=ENDPOINT,
        OldResourceProperties=old,
    )
    assert refused(module, recorded, update, lambda_context) == (
        REFUSED + f"ResourcePolicy Statement[0].Principal.AWS: got '*'; {ALLOWED_PRINCIPALS}"
    )


@pytest.mark.parametrize(
    "statement",
    [
        {**INVOKE, "Action": ["SageMaker:invokeendpoint", "sagemaker:DescribeEndpoint"]},
        {**INVOKE, "Principal": {"AWS": [ROUTER_ACCOUNT, f"arn:aws-cn:iam::{ROUTER_ACCOUNT}:role/team/router-caller"]}},
        {"Sid": "NoOneElse", "Effect": "Deny", "Principal": "*", "Action": "*", "Resource": ENDPOINT_ARN},
    ],
    ids=["named-actions-in-any-case", "account-id-and-role", "deny-narrows"],
)
def test_statements_no_broader_than_the_constructs_reach_aws(policy, lambda_context, statement):
    """Named accounts and roles, the named actions (IAM reads them in any letter case), and a Deny of anything."""
    module, recorded = policy
    with pytest.raises(UnStubbedResponseError):  # the first call: GetEndpointPolicy (nothing queued)
        module.on_event(policy_event(statements(statement)), lambda_context)
    assert recorded.calls == ["GetEndpointPolicy"]


def test_a_delete_removes_a_broad_statement_an_earlier_version_accepted(policy_module, lambda_context):
    """A Delete is never refused for what a statement allows: removing it only narrows the policy."""
    broad = statements({**INVOKE, "Principal": "*", "Action": "sagemaker:*"})
    event = policy_event(broad, "Delete", PhysicalResourceId=ENDPOINT)
    mark = policy_module.owner_mark(STACK_ID, "Resource")
    written = json.dumps(
        {"Version": "2012-10-17", "Statement": policy_module.owned_statements(broad, mark)}, separators=(",", ":")
    )
    sm = Stubber(policy_module._sagemaker())
    sm.add_response(
        "get_endpoint_policy",
        {"EndpointName": ENDPOINT, "EndpointArn": ENDPOINT_ARN, "ResourcePolicy": written},
        {"EndpointName": ENDPOINT},
    )
    sm.add_response("delete_endpoint_policy", {}, {"EndpointName": ENDPOINT})
    sm.add_client_error(
        "get_endpoint_policy", service_error_code="ValidationException", expected_params={"EndpointName": ENDPOINT}
    )
    with sm:
        assert policy_module.on_event(event, lambda_context) == {"PhysicalResourceId": ENDPOINT}
    sm.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("current", "reason"),
    [
        (
            "[" * 2000 + "]" * 2000,
            f"endpoint {ENDPOINT} has a policy nested more than 6 levels deep, which no IAM policy is; the policy was "
            "not changed: fix or delete it (aws sagemaker delete-endpoint-policy) and deploy again",
        ),
        (
            '{"Statement": [{"Sid": "X", "Condition": {"NumericLessThan": {"k": NaN}}}]}',
            f"endpoint {ENDPOINT} has a policy that is not JSON; the policy was not changed, so nothing of another "
            "writer is lost: fix or delete the policy (aws sagemaker delete-endpoint-policy) and deploy again",
        ),
    ],
    ids=["deep", "nan"],
)
def test_a_hostile_policy_already_on_the_endpoint_is_never_written_back(policy_module, lambda_context, current, reason):
    """Another writer's policy is read before the merge: one too deep to parse, or holding NaN, is refused (before:
    a ``RecursionError``, or the NaN written back in PutEndpointPolicy)."""
    sm = Stubber(policy_module._sagemaker())
    sm.add_response(
        "get_endpoint_policy",
        {"EndpointName": ENDPOINT, "EndpointArn": ENDPOINT_ARN, "ResourcePolicy": current},
        {"EndpointName": ENDPOINT},
    )
    with sm, pytest.raises(policy_module.EndpointPolicyError) as raised:
        policy_module.on_event(policy_event(statements(INVOKE)), lambda_context)
    assert str(raised.value) == reason
    sm.assert_no_pending_responses()


# ------------------------------------------------------------------ inference_router
ROUTER_TYPE = "Custom::SageMakerInferenceRouter"
ROUTER_PROPS = {
    "RouterName": "SageMakerLlm-Chat",
    "RoutingTargets": [
        {
            "Name": "qwen3-8b",
            "Destinations": [
                {"ResourceArn": "arn:aws:sagemaker:us-east-1:111111111111:inference-component/Prod-qwen3-8b"}
            ],
        }
    ],
}
NOT_ROUTER_NAMES = (
    "-starts-with-a-hyphen",
    "ends-with-a-hyphen-",
    "under_score",
    "has space",
    "x" * 64,
    "arn:aws:sagemaker:us-east-1:111111111111:inference-router/sagemakerllm-chat",
    "2027/01/10/[$LATEST]0123456789abcdef",
    hostile.LONG,
)


@pytest.fixture(scope="module")
def router_module():
    return load_handler_module("inference_router")


@pytest.fixture
def router(router_module) -> Iterator[tuple[Any, Recorded]]:
    with Recorded([router_module._sagemaker(), router_module._cloudwatch()]) as recorded:
        yield router_module, recorded


def test_the_router_name_rule_is_botocores(router_module):
    pattern, least, most = router_module._router_name_rule()
    import botocore.session

    shape = botocore.session.get_session().get_service_model("sagemaker").shape_for("InferenceRouterName")
    assert (pattern.pattern, least, most) == (shape.metadata["pattern"], shape.metadata["min"], shape.metadata["max"])
    assert router_module.is_router_name(ROUTER_PROPS["RouterName"])


@pytest.mark.parametrize("physical_id", NOT_ROUTER_NAMES, ids=lambda value: repr(value)[:30])
def test_a_delete_of_a_physical_id_that_is_no_router_name_succeeds_without_a_request(
    router, lambda_context, monkeypatch, physical_id
):
    """Before: ``DeleteInferenceRouter`` was sent the id, a name botocore's model (and the service) refuses, and the
    stack could not be deleted. Nothing this function created can have that id, so there is nothing to delete."""
    module, recorded = router
    assert request_problems("sagemaker", "DeleteInferenceRouter", {"InferenceRouterName": physical_id})
    logged: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(module.logger, "info", lambda message, extra=None: logged.append((message, extra or {})))
    delete = cr_event("Delete", ROUTER_TYPE, ROUTER_PROPS, PhysicalResourceId=physical_id)

    assert module.on_event(delete, lambda_context) == {"PhysicalResourceId": physical_id}
    assert module.is_complete(delete, lambda_context) == {"IsComplete": True}

    assert recorded.calls == []
    said = (
        "Delete of a physical id that is no inference router name: nothing this function created has it, so nothing "
        "is deleted and no request is sent",
        {"physical_id": physical_id[:100]},
    )
    assert logged == [said, said]


def test_a_delete_of_a_router_name_still_sends_the_delete(router, lambda_context):
    module, recorded = router
    delete = cr_event("Delete", ROUTER_TYPE, ROUTER_PROPS, PhysicalResourceId="SageMakerLlm-Chat")
    with pytest.raises(UnStubbedResponseError):
        module.on_event(delete, lambda_context)
    with pytest.raises(UnStubbedResponseError):
        module.is_complete(delete, lambda_context)
    assert recorded.calls == ["DeleteInferenceRouter", "DescribeInferenceRouter"]


# ------------------------------------------------------------------ run_time_state
STATE_TYPE = "Custom::SageMakerLlmRunTimeParameter"
STATE_NAME = "/sagemaker-llm/state/eagle/SageMakerLlm-qwen3-32b/draft-head"
STATE_PROPS = {"ParameterName": STATE_NAME, "InitialValue": "none", "Removal": "destroy"}


@pytest.fixture(scope="module")
def state_module():
    return load_handler_module("run_time_state")


@pytest.fixture
def state(state_module) -> Iterator[tuple[Any, Recorded]]:
    with Recorded([state_module._ssm(), state_module._sagemaker()]) as recorded:
        yield state_module, recorded


@pytest.mark.parametrize(
    ("name", "first", "prefix"),
    [
        ("aws", "'aws'", "aws"),
        ("/aws/service/x", "'aws'", "aws"),
        ("/AWS/x", "'AWS'", "aws"),
        ("awsome-state", "'awsome-state'", "aws"),
        ("ssm-x/y", "'ssm-x'", "ssm"),
        ("/SsmState/x", "'SsmState'", "ssm"),
    ],
)
@pytest.mark.parametrize("field", ["ParameterName", "SeedFrom"])
@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_a_name_ssm_reserves_is_refused_before_any_read_or_write(
    state, lambda_context, request_type, field, name, first, prefix
):
    """Before: GetParameter (and then PutParameter) was sent the name; SSM refuses to create it."""
    module, recorded = state
    extra = {"PhysicalResourceId": STATE_NAME, "OldResourceProperties": STATE_PROPS} if request_type == "Update" else {}
    event = cr_event(request_type, STATE_TYPE, {**STATE_PROPS, field: name}, **extra)
    with pytest.raises(module.StateError) as raised:
        module.handler(event, lambda_context)
    assert recorded.calls == []
    assert str(raised.value) == (
        "Invalid run-time parameter properties (no parameter was read or written):\n"
        f"- {field} {name!r}: its first segment {first} starts with {prefix!r} (any letter case), which SSM reserves; "
        "allowed: a first segment that starts with neither 'aws' nor 'ssm'; fix: name the parameter under "
        "/sagemaker-llm/state/"
    )


def test_a_delete_of_a_reserved_name_touches_nothing(state, lambda_context):
    """No Create of such a name succeeded, so there is nothing to untag or delete."""
    module, recorded = state
    event = cr_event("Delete", STATE_TYPE, {**STATE_PROPS, "ParameterName": "/aws/x"}, PhysicalResourceId="/aws/x")
    assert module.handler(event, lambda_context) == {"PhysicalResourceId": "/aws/x"}
    assert recorded.calls == []


@pytest.mark.parametrize("name", ["/sagemaker-llm/state/aws/x", "/my-aws/x", "/state/ssm", "a-ssm"])
def test_aws_or_ssm_past_the_start_of_the_first_segment_is_allowed(state, lambda_context, name):
    module, recorded = state
    with pytest.raises(UnStubbedResponseError):  # the first call: GetParameter (nothing queued)
        module.handler(cr_event("Create", STATE_TYPE, {**STATE_PROPS, "ParameterName": name}), lambda_context)
    assert recorded.calls == ["GetParameter"]
