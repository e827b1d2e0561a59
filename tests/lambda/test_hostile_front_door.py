"""Hostile requests against the session front door (lambda/session_router): every caller's mistake is a 4xx JSON error.

``tests/lambda/test_session_router.py`` mutates every field of the Function URL event (requestContext and the
rest) with a few wrong types; this module does the same, with every replacement of ``support.hostile``, to the
request *body* of each route (``/open``, ``/invoke``, ``/close``, the fields and the model payload inside
``body``) and to the *headers*, and sends every method and a set of odd paths. For each request:

* refused: a 4xx JSON ``{"error": {"code", "message", "field"?}}``, nothing sent to SageMaker or DynamoDB; a
  wrong field is named in ``error.field``;
* accepted, when the mutation leaves a valid request: the first call goes to AWS, answered by
  ``botocore.stub.Stubber`` (DynamoDB: no such conversation, so a 404; SageMaker: a model reply for a
  stateless turn, 200).

Never a 500. One loaded module serves the whole test module; each request gets fresh stubbers.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from conftest import FakeLambdaContext, load_handler_module
from support import hostile
from support.aws_model import assert_valid_request
from support.hostile import DROP, Mutation

CONTEXT = FakeLambdaContext()
ENDPOINT, TABLE, BASE, ADAPTER = "llm-prod-endpoint", "llm-conversations", "qwen3-32b-base", "qwen3-32b-sql-lora"
CALLER = "arn:aws:sts::123456789012:assumed-role/chat-app/alice@example.com"
CHAT = {
    "model": "qwen3",
    "messages": [{"role": "user", "content": "hello"}],
    "max_tokens": 64,
    "stream": False,
    "temperature": 0.2,
    "stop": ["\n\n"],
}
BODIES = {
    "/open": {"component": BASE},
    "/invoke": {"conversation_id": "chat-42", "component": BASE, "body": CHAT, "content_type": "application/json"},
    "/close": {"conversation_id": "chat-42"},
}
MAX_BODY = 4096


def url_event(path: str, body: str | None, *, method: str = "POST", headers: Any = ...) -> dict[str, Any]:
    """A Function URL (payload 2.0) request signed by CALLER."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "host": "abc123.lambda-url.us-east-1.on.aws",
            "x-amz-date": "20300317T174640Z",
        }
        if headers is ...
        else headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc123",
            "requestId": "8a0b4b3e-0000-4000-8000-000000000001",
            "routeKey": "$default",
            "stage": "$default",
            "time": "17/Mar/2030:17:46:40 +0000",
            "timeEpoch": 1_900_000_000_000,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "chat-app",
            },
            "authorizer": {
                "iam": {
                    "accessKey": "ASIAEXAMPLEKEY000001",
                    "accountId": "123456789012",
                    "callerId": "AROAEXAMPLEROLEID0001:alice@example.com",
                    "cognitoIdentity": None,
                    "principalOrgId": "o-exampleorg1",
                    "userArn": CALLER,
                    "userId": "AROAEXAMPLEROLEID0001:alice@example.com",
                }
            },
        },
        "body": body,
        "isBase64Encoded": False,
    }


_LOADED: list[Any] = []


@pytest.fixture
def router(monkeypatch):
    for name, value in {
        "ENDPOINT_NAME": ENDPOINT,
        "SESSIONS_TABLE": TABLE,
        "DEFAULT_COMPONENT": BASE,
        "ALLOWED_COMPONENTS": f"{BASE},{ADAPTER}",
        "MAX_BODY_BYTES": str(MAX_BODY),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TURN_LOG_STREAM", raising=False)
    if not _LOADED:  # one module for the whole test module, loaded in the test environment (metrics namespace)
        _LOADED.append(load_handler_module("session_router"))
        _LOADED[0].logger.setLevel(logging.CRITICAL)  # hundreds of refusals: their log records are not tested
    router_module = _LOADED[0]
    router_module._settings.cache_clear()
    yield router_module
    router_module._settings.cache_clear()


CALLED: list[str] = []
"""AWS operations the current request called (every request is also checked against the service model)."""


def _record(params: dict[str, Any], model: Any, **_: Any) -> None:
    checked = {k: v for k, v in params.items() if k != "ContentType"}  # \p{ASCII}: see test_session_router
    assert_valid_request(model.service_model.service_name, model.name, checked)
    CALLED.append(model.name)


def send(router: Any, event: Any) -> tuple[int, dict[str, Any], list[str]]:
    """(status, JSON answer, AWS operations called) for one request; AWS answers: no conversation, a model reply."""
    if not getattr(router, "_hostile_hooked", False):
        for client in (router._dynamodb(), router._sagemaker_runtime()):
            client.meta.events.register("provide-client-params", _record)
        router._hostile_hooked = True
    ddb, runtime = Stubber(router._dynamodb()), Stubber(router._sagemaker_runtime())
    reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}).encode()
    invoke = {"EndpointName": ENDPOINT, "InferenceComponentName": ANY, "Body": ANY, "ContentType": "application/json"}
    if event.get("rawPath") == "/open" if isinstance(event, dict) else False:  # a new session, then its row
        runtime.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(b"{}"), 2), "NewSessionId": "sid-1; Expires=2099-01-01T00:00:00Z"},
            {**invoke, "SessionId": "NEW_SESSION"},
        )
        ddb.add_response("put_item", {}, {"TableName": TABLE, "Item": ANY, "ConditionExpression": ANY})
    else:  # no such conversation; a stateless turn's reply
        ddb.add_response(
            "get_item", {}, {"TableName": TABLE, "Key": {"conversation_id": {"S": ANY}}, "ConsistentRead": True}
        )
        runtime.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(reply), len(reply)), "ContentType": "application/json"},
            invoke,
        )
    CALLED.clear()
    with ddb, runtime:
        response = router.handler(event, CONTEXT)
    assert isinstance(response, dict) and isinstance(response.get("body"), str), response
    response["body"].encode("utf-8")  # the answer has a UTF-8 form (no lone surrogate echoed from the request)
    return response["statusCode"], json.loads(response["body"]), list(CALLED)


def body_mutations(path: str) -> Iterator[Mutation]:
    yield from hostile.mutations(BODIES[path])


def expected_body_outcome(path: str, mutation: Mutation) -> tuple[int, str | None]:
    """(status, error.field) for a mutated request body; status 200/404 means accepted (it reached AWS)."""
    top, value = mutation.path[0], mutation.replacement
    size = len(hostile.as_json(mutation.event).encode("utf-8", "surrogatepass"))
    if size > MAX_BODY:
        return 413, None
    if value == hostile.ODD:
        return 400, None  # a lone surrogate: InvalidJson
    if top == "body" and (len(mutation.path) > 1 or isinstance(value, dict)):
        return 404, None  # the model's payload is any JSON object, passed on as given (only session keys are reserved)
    if top == "component" and (value is DROP or value is None):
        return (404 if path == "/invoke" else 200), None  # the base component
    if top == "content_type" and value is DROP:
        return 404, None
    if path == "/invoke" and top == "conversation_id" and (value is DROP or value is None):
        return 200, None  # a stateless turn
    return 400, top


@pytest.mark.parametrize("path", sorted(BODIES))
def test_every_field_of_a_request_body_mutated_is_a_4xx_naming_it_or_a_valid_request(router, path):
    failures, tried = [], 0
    for raw in ("", " ", "null", "[]", '"text"', "7", "{", '{"a":', "\x00", '{"body": NaN}', "{}" * 2):
        status, answer, called = send(router, url_event(path, raw))
        tried += 1
        if status != 400 or called or set(answer.get("error", {})) < {"code", "message"}:
            failures.append(f"body {raw!r}: {status} {answer} (AWS: {called})")
    for mutation in body_mutations(path):
        try:
            text = json.dumps(mutation.event, ensure_ascii=False)
        except ValueError:  # pragma: no cover - every replacement is JSON
            continue
        status, answer, called = send(router, url_event(path, text))
        tried += 1
        want_status, want_field = expected_body_outcome(path, mutation)
        error = answer.get("error", {})
        accepted = want_status in (200, 404)  # 404: it reached DynamoDB, which knows no such conversation
        if status != want_status:
            failures.append(f"{mutation}: {status} {error or answer} (expected {want_status})"[:300])
        elif status >= 400 and not {"code", "message"} <= set(error):
            failures.append(f"{mutation}: {status} without an error object: {answer}"[:300])
        elif accepted != bool(called):
            failures.append(f"{mutation}: {status} {'without' if accepted else 'after'} an AWS call ({called})")
        elif want_field is not None and error.get("field") != want_field:
            failures.append(f"{mutation}: error.field {error.get('field')!r}, expected {want_field!r}: {error}"[:300])
    assert not failures, hostile.report(failures, tried)
    assert tried > 20


NOT_FINITE = (
    "request body has the number {}, which is not finite: NaN, Infinity and numbers beyond a double's range (about "
    "1.8e308) are not JSON, so the model could not be sent them; send a finite number"
)


def _with_number(path: str, number: str) -> str:
    """The route's valid body with ``number`` in it: the model's temperature, or one more top-level field."""
    if path == "/invoke":
        return json.dumps(BODIES[path]).replace('"temperature": 0.2', f'"temperature": {number}')
    return json.dumps({**BODIES[path], "n": 0}).replace('"n": 0', f'"n": {number}')


@pytest.mark.parametrize("number", ["1e999999", "-1e999999", "1E400", "NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path", sorted(BODIES))
def test_a_number_that_is_not_finite_is_a_400_naming_it_and_nothing_is_sent(router, path, number):
    """Before: ``1e999999`` was read as infinity and sent on to InvokeEndpoint as ``Infinity``, which is not JSON
    (and ``NaN`` was refused without saying why)."""
    text = _with_number(path, number)
    assert number in text

    status, answer, called = send(router, url_event(path, text))

    assert (status, answer, called) == (
        400,
        {"error": {"code": "InvalidJson", "message": NOT_FINITE.format(number)}},
        [],
    )


@pytest.mark.parametrize("number", ["1e308", "-1.7976931348623157e308", "5e-324", "1e-999999"])
def test_a_finite_number_however_large_or_small_is_sent_on_as_json(router, number):
    """The largest and smallest doubles, and a number that rounds to zero, are numbers: the model gets them as JSON."""
    sent: list[bytes] = []

    def body(params: dict[str, Any], **_: Any) -> None:
        sent.append(params["Body"])

    stateless = {k: v for k, v in BODIES["/invoke"].items() if k != "conversation_id"}
    text = json.dumps(stateless).replace('"temperature": 0.2', f'"temperature": {number}')
    events = router._sagemaker_runtime().meta.events
    events.register("provide-client-params.sagemaker-runtime.InvokeEndpoint", body)
    try:
        status, _, called = send(router, url_event("/invoke", text))
    finally:
        events.unregister("provide-client-params.sagemaker-runtime.InvokeEndpoint", body)

    assert (status, called) == (200, ["InvokeEndpoint"])
    [forwarded] = sent
    strict = json.loads(forwarded, parse_constant=lambda name: pytest.fail(f"{name} sent to the model"))
    assert strict["temperature"] == float(number)


def test_headers_are_not_interpreted_but_must_be_strings(router):
    """Every header dropped, emptied, huge, odd or of another type; extra hostile headers. A header map of
    strings changes nothing (the request goes on: no such conversation, 404); anything else is 400 InvalidEvent."""
    body = json.dumps(BODIES["/invoke"])
    base = url_event("/invoke", body)
    failures, tried = [], 0
    cases: list[tuple[str, Any]] = [(str(m), m.event) for m in hostile.mutations(base, under=("headers",))]
    for headers in (
        None,
        {},
        [],
        "content-type: application/json",
        {"x-" + "h" * 8000: "v"},
        {f"x-{i}": "v" for i in range(2000)},
        {hostile.ODD: hostile.ODD},
        {"content-length": "-1"},
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-encoding": "gzip"},
        {"transfer-encoding": "chunked"},
        {"x-forwarded-for": "127.0.0.1, ::1"},
        {"accept-encoding": "gzip, br"},
        {"origin": "https://evil.example"},
    ):
        cases.append((f"headers = {str(headers)[:40]}", url_event("/invoke", body, headers=headers)))
    for label, event in cases:
        headers = event.get("headers")
        strings = headers is None or (
            isinstance(headers, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        )
        status, answer, called = send(router, event)
        tried += 1
        want = (404, "ConversationNotFound") if strings else (400, "InvalidEvent")
        if (status, answer.get("error", {}).get("code")) != want:
            failures.append(f"{label}: {status} {answer} (expected {want})"[:300])
        elif status == 400 and called:
            failures.append(f"{label}: refused after an AWS call {called}")
    assert not failures, hostile.report(failures, tried)


def test_every_other_event_field_with_every_replacement_is_answered_4xx(router):
    """test_session_router's field-by-field test with the full set of replacements: every field outside the body
    and the headers. Accepted (the field is not read, e.g. ``version``): the request goes on (404, no such
    conversation); anything else is a 4xx before any AWS call."""
    base = url_event("/invoke", json.dumps(BODIES["/invoke"]))
    failures, tried = [], 0
    for mutation in hostile.mutations(base, skip=lambda path: path[:1] in (("body",), ("headers",))):
        status, answer, called = send(router, mutation.event)
        tried += 1
        code = answer.get("error", {}).get("code")
        if not 400 <= status < 500 or bool(called) != (code == "ConversationNotFound"):
            failures.append(f"{mutation}: {status} {code} (AWS: {called})")
    assert not failures, hostile.report(failures, tried)
    assert tried > 300


@pytest.mark.parametrize(
    "method",
    ["GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "", "P" * 5000, hostile.ODD],
    ids=lambda value: repr(value)[:16],
)
def test_any_other_method_is_a_4xx(router, method):
    for path in sorted(BODIES):
        status, answer, called = send(router, url_event(path, json.dumps(BODIES[path]), method=method))
        assert 400 <= status < 500 and not called, (method, path, status, answer)
        assert {"code", "message"} <= set(answer["error"])


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "",
        "/invoke/",
        "//invoke",
        "/INVOKE",
        "/invoke?x=1",
        "/%2e%2e/open",
        "/../open",
        "/open\x00",
        "/" + "p" * 70_000,
        hostile.ODD,
        "/invoke/../close",
    ],
    ids=lambda value: repr(value)[:16],
)
def test_any_other_path_is_a_json_404_or_400(router, path):
    """Before: the 404 quoted the method and path whole: a 70 KB path came back in the answer, and a lone
    surrogate in it made an answer with no UTF-8 form."""
    status, answer, called = send(router, url_event(path, json.dumps(BODIES["/invoke"])))
    assert status in (400, 404) and not called, (path, status, answer)
    assert answer["error"]["code"] in ("RouteNotFound", "InvalidEvent")
    assert len(answer["error"]["message"]) < 600, "the path is quoted cut, not whole"


# ------------------------------------------------------------------ AWS throttling the front door's calls
DYNAMODB_THROTTLES = ("ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded")
SAGEMAKER_THROTTLES = ("ThrottlingException", "ModelNotReadyException")


@pytest.mark.parametrize("code", DYNAMODB_THROTTLES)
@pytest.mark.parametrize("path", BODIES)
def test_every_throttle_of_the_table_on_every_route_is_a_503_with_retry_after(router, path, code):
    """The first DynamoDB call of each route throttled (botocore's retries spent): a JSON 503, never a 500."""
    ddb, runtime = Stubber(router._dynamodb()), Stubber(router._sagemaker_runtime())
    if path == "/open":  # the session is opened, its row cannot be stored, the session is closed again
        runtime.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(b"{}"), 2), "NewSessionId": "sid-1; Expires=2099-01-01T00:00:00Z"},
        )
        ddb.add_client_error("put_item", code, "Rate of requests exceeds the allowed throughput.", 400)
        runtime.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(b"{}"), 2), "ClosedSessionId": "sid-1"},
            {
                "EndpointName": ENDPOINT,
                "InferenceComponentName": BASE,
                "SessionId": "sid-1",
                "Body": ANY,
                "ContentType": "application/json",
            },
        )
    else:
        ddb.add_client_error("get_item", code, "Rate of requests exceeds the allowed throughput.", 400)
    with ddb, runtime:
        response = router.handler(url_event(path, json.dumps(BODIES[path])), CONTEXT)
    runtime.assert_no_pending_responses()
    assert (response["statusCode"], response["headers"]["Retry-After"]) == (503, "1"), response
    answer = json.loads(response["body"])
    assert list(answer) == ["error"] and answer["error"]["code"] == "SessionStoreThrottled"
    assert code in answer["error"]["message"]


@pytest.mark.parametrize("code", SAGEMAKER_THROTTLES)
def test_every_throttle_of_sagemaker_is_a_429_with_retry_after(router, monkeypatch, code):
    """SageMaker throttling (or a model still loading) on every attempt the budget allows: a JSON 429."""
    monkeypatch.setattr(router.budget, "sleep", lambda seconds: None)
    runtime = Stubber(router._sagemaker_runtime())
    for _ in range(router.MODEL_MAX_ATTEMPTS):
        runtime.add_client_error(
            "invoke_endpoint", code, "Rate exceeded", 429 if code == "ModelNotReadyException" else 400
        )
    stateless = {k: v for k, v in BODIES["/invoke"].items() if k != "conversation_id"}
    with runtime:
        response = router.handler(url_event("/invoke", json.dumps(stateless)), CONTEXT)
    runtime.assert_no_pending_responses()
    assert (response["statusCode"], response["headers"]["Retry-After"]) == (429, "2"), response
    assert json.loads(response["body"])["error"]["code"] == "Throttled"


# ------------------------------------------------------------------ the turn log (EAGLE source front_door)
def test_the_turn_log_never_raises_whatever_the_turn(monkeypatch):
    """``turn_log.record_turn`` runs after the model answered: every field of the chat request and of the model's
    reply dropped or given each wrong JSON type is logged or skipped, never an exception (which would turn the
    answered turn into a 500). Before: a ``role`` that is a list or an object raised ``TypeError: unhashable``."""
    monkeypatch.setenv("TURN_LOG_STREAM", "SageMakerLlm-ChatTurns-AbC123")
    turn_log = load_handler_module("session_router", "turn_log")
    turn_log.logger.setLevel(logging.CRITICAL)
    reply = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
    request = {
        **CHAT,
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "user", "content": "hello"},
        ],
    }
    cases = [(m.event, reply) for m in hostile.mutations(request)] + [
        (request, m.event) for m in hostile.mutations(reply)
    ]
    cases += [(event, reply) for event in hostile.NOT_OBJECTS] + [(request, event) for event in hostile.NOT_OBJECTS]
    failures, logged = [], 0
    for turn, answer in [(request, reply), *cases]:
        firehose = Stubber(turn_log._firehose())
        firehose.add_response(
            "put_record",
            {"RecordId": "r1"},
            {"DeliveryStreamName": "SageMakerLlm-ChatTurns-AbC123", "Record": {"Data": ANY}},
        )
        with firehose:
            try:
                logged += turn_log.record_turn(BASE, turn, answer) is True
            except Exception as error:  # noqa: BLE001 - every failing turn is listed
                failures.append(f"{str(turn)[:60]} / {str(answer)[:60]}: {type(error).__name__}: {error}")
    assert not failures, hostile.report(failures, len(cases) + 1)
    assert 1 <= logged < len(cases), "the valid turn is logged, most hostile ones are not"


POOL = "us-east-1:0f6a8b1c-1111-4222-8333-944455556666"
COGNITO_IAM = {
    "accessKey": "ASIAEXAMPLEKEY000001",
    "accountId": "123456789012",
    "callerId": "AROAPOOLROLE:Cognito",
    "cognitoIdentity": {
        "amr": ["authenticated"],
        "identityId": "us-east-1:aaaaaaaa-0000-4000-8000-000000000001",
        "identityPoolId": POOL,
    },
    "principalOrgId": None,
    "userArn": "arn:aws:sts::123456789012:assumed-role/Pool_Auth/CognitoIdentityCredentials",
    "userId": "AROAPOOLROLE:CognitoIdentityCredentials",
}
FEDERATED_IAM = {
    **COGNITO_IAM,
    "cognitoIdentity": None,
    "userArn": "arn:aws:sts::123456789012:federated-user/alice@example.com",
}


@pytest.mark.parametrize("mode", ["session", "role", "cognito_identity"])
@pytest.mark.parametrize("start", [COGNITO_IAM, FEDERATED_IAM], ids=["cognito", "federated-user"])
def test_every_mutated_caller_identity_is_refused_or_an_owner_the_mode_allows(router, mode, start):
    """Whatever Lambda's request context says about the caller, the owner is one the mode accepts, or the caller
    is refused: under cognito_identity only an identity of the listed pool, in no mode a federated user."""
    refused, failures, tried = router.CallerNotAllowed, [], 0
    for mutation in hostile.mutations({"iam": start}, under=("iam",)):
        tried += 1
        try:
            owner = router.caller_owner(mutation.event["iam"], mode, (POOL,))
        except refused:
            continue
        if owner is None:
            continue
        if (
            not isinstance(owner, str)
            or ":federated-user/" in owner
            or mode == "cognito_identity"
            and not owner.startswith(f"cognito-identity/{POOL}/")
        ):
            failures.append(f"{mutation.field}={mutation.replacement!r:.40}: owner {owner!r:.80}")
    assert tried > 90 and not failures, "\n".join(failures)
