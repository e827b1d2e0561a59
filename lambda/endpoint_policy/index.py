"""Custom resource (provider framework on_event) that keeps its own statements in an endpoint's resource policy.

An inference router in another account may route to an endpoint of this account only when the endpoint's owner
allows it in an endpoint policy; CloudFormation has no property or resource type for that policy, so
``EndpointPolicy`` (``sagemaker_llm_cdk.routing.endpoint_policy``) attaches it through this function.

An endpoint has one policy, which ``PutEndpointPolicy`` replaces whole and ``DeleteEndpointPolicy`` removes, and
several resources (two stacks, or two resources of one stack) may route to one endpoint. So each resource owns only
the statements whose ``Sid`` carries its owner mark and changes only those: it reads the policy
(``GetEndpointPolicy``), replaces its own statements, keeps everyone else's as they are (statements with no
``Sid`` too), and deletes the policy only when no statement is left.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).

Event (``aws_cdk.custom_resources.Provider``), checked before any AWS call
--------------------------------------------------------------------------
StackId, LogicalResourceId   the resource's identity: its owner mark is made of them
RequestType "Create" | "Update" | "Delete". ResourceProperties (strict: any other key is refused):
    EndpointName     the endpoint in this account and region (1-63 letters, digits and hyphens); the physical id
    ResourcePolicy   the resource's statements as a JSON policy document (1-20480 ASCII characters, nested at most
                     ``MAX_POLICY_DEPTH`` levels, finite numbers only; each ``Sid``, when given, letters and digits
                     only and unique)
    ServiceToken     ignored

What a statement may allow (Create and Update; ``statement_breadth``)
--------------------------------------------------------------------
The documents ``EndpointPolicy`` is given (``InferenceRouter.endpoint_policy``) allow named accounts to invoke and
describe one endpoint, and nothing more. So an ``Allow`` statement must name its ``Principal`` as ``{"AWS": ...}``
with account ids or IAM ARNs of an account root, a role or a user (no ``*`` or ``?``), and its ``Action`` from
``ALLOWED_ACTIONS`` (named, no wildcards), and its ``Resource`` must be the endpoint's own ARN
(``arn:<partition>:sagemaker:<region>:<account>:endpoint/<EndpointName>``, the name in any letter case);
``NotPrincipal``, ``NotAction`` and ``NotResource`` are refused in it. A ``Deny``
statement can only narrow access and is written as given. A Delete removes this resource's statements whatever
they allow.

Statement ids
-------------
Each statement of ``ResourcePolicy`` is written with the ``Sid`` ``<its Sid or StatementN><owner mark><content>``:
the owner mark is ``Cfn`` and 12 hex digits of SHA-256 over ``<StackId>/<LogicalResourceId>`` (IAM allows letters
and digits only in a ``Sid``), the content 8 hex digits of SHA-256 over the statement without its ``Sid``. A
statement is this resource's when its ``Sid`` ends with the owner mark and 8 hex digits. The stack id holds the
stack's GUID, so a stack deleted and deployed again, or another stack of the same name, owns nothing of the old
one's; the content digest lets a write be checked by ``Sid`` alone, whatever form SageMaker stores it in.

Concurrent writers
------------------
``GetEndpointPolicy`` returns no revision and ``PutEndpointPolicy`` / ``DeleteEndpointPolicy`` take no condition,
so the API gives no way to write only when nobody else wrote in between. Instead each write is checked: after
writing, the function waits ``SETTLE_SECONDS``, reads the policy again, and writes again (up to ``ATTEMPTS`` times)
when its own statements are not exactly the ones it meant (missing, stale, or still there after a delete). Two
resources of this library that race therefore both end with their statements in place; a writer that does not
check (the console, the CLI) can still overwrite or be overwritten in the moment between a read and a write.

on_event
--------
Create and Update: merge this resource's statements into the endpoint's policy; returns the endpoint name as the
physical id and Data {EndpointArn}. An Update that names another endpoint returns the new name, so CloudFormation
then deletes this resource's statements from the old endpoint in its cleanup (and a rollback's Update puts them
back); the same endpoint in other letter case keeps the physical id (SageMaker's names ignore case), so no cleanup
removes what the Update wrote. A statement left unmarked by an earlier version of this function (equal to one of
the old properties' statements, its ``Sid`` as given) is taken as this resource's and replaced. Delete: removes this
resource's statements when the physical id is the endpoint the properties name (a create that failed attached
nothing), and deletes the policy when no statement is left; an endpoint that is gone, or has no policy, needs
nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Iterable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.aws_errors import error_code, not_found
from llm_cdk_shared.problems import ShortError

if TYPE_CHECKING:  # names in annotations only; nothing here is imported on a cold start
    from typing import TypeAlias

    PolicyEvent: TypeAlias = Any
    PolicyProperties: TypeAlias = Any

logger = Logger()

RESOURCE_TYPE = "Custom::SageMakerEndpointPolicy"
MAX_MESSAGE_CHARS = 3500
MAX_POLICY_CHARS = 20480
"""botocore's ``EndpointPolicyDocument`` length limit, for the merged policy as it is written."""
POLICY_VERSION = "2012-10-17"
MARK_PREFIX = "Cfn"
ATTEMPTS = 4
"""Writes of one request before it fails: the first, and one per check that found its statements changed."""
SETTLE_SECONDS = 2.0
"""How long after a write the policy is read again to check it (a concurrent writer's write lands in between)."""
MAX_POLICY_DEPTH = 6
"""Nesting levels a policy may have: the deepest an IAM policy goes (document, Statement list, statement,
Condition, operator, list of values). Checked on the text, before it is parsed (the parser recurses)."""
ALLOWED_ACTIONS = ("sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointAsync", "sagemaker:DescribeEndpoint")
"""What an ``Allow`` statement may allow: what ``InferenceRouter.endpoint_policy`` writes (IAM compares action
names without regard to case)."""
_SID = re.compile(r"^[A-Za-z0-9]+$")
_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
"""A JSON string (its brackets are text) or a bracket: what ``nesting_depth`` counts."""
_PRINCIPAL = re.compile(r"^([0-9]{12}|arn:aws[a-z-]*:iam::[0-9]{12}:(root|(role|user)/[A-Za-z0-9+=,.@_/-]+))$")
"""An account id, or the IAM ARN of an account root, a role or a user: wildcard-free."""
_sagemaker = clients.client_getter("sagemaker", retries={"mode": "standard", "max_attempts": 5})


class EndpointPolicyError(ShortError):
    """What CloudFormation shows as the reason the deploy failed; kept short."""

    max_chars = MAX_MESSAGE_CHARS


class NotFinite(ValueError):
    """A JSON text holds NaN, Infinity or a number beyond a double's range (which Python reads as infinity)."""


class EndpointGone(EndpointPolicyError):
    """The endpoint does not exist (any more): nothing to attach to, and nothing left to remove."""


@functools.cache
def _models() -> SimpleNamespace:
    """The event and properties models, built on the first event that needs them: pydantic is not imported on a
    cold start."""
    from llm_cdk_shared import custom_resource
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class PolicyEvent(custom_resource.CustomResourceEvent):
        stack_id: str = Field(alias="StackId", min_length=1)
        logical_resource_id: str = Field(alias="LogicalResourceId", min_length=1)

    class PolicyProperties(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, populate_by_name=True)

        endpoint_name: str = Field(alias="EndpointName", pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
        resource_policy: str = Field(alias="ResourcePolicy", min_length=1, max_length=MAX_POLICY_CHARS)

        @field_validator("resource_policy")
        @classmethod
        def _document(cls, value: str) -> str:
            if not value.isascii():
                raise ValueError("ResourcePolicy may hold ASCII characters only (PutEndpointPolicy refuses others)")
            depth = nesting_depth(value)
            if depth > MAX_POLICY_DEPTH:
                raise ValueError(
                    f"ResourcePolicy: got arrays and objects nested {depth} levels deep; allowed: at most "
                    f"{MAX_POLICY_DEPTH} (the deepest an IAM policy goes: document, Statement list, statement, "
                    "Condition, operator, list of values); fix: pass the document InferenceRouter.endpoint_policy "
                    "returns"
                )
            try:
                document = strict_json(value)
            except NotFinite as error:
                raise ValueError(
                    f"ResourcePolicy: got the number {error}; allowed: finite numbers only (NaN, Infinity and "
                    "numbers beyond a double's range are not JSON, which PutEndpointPolicy takes); fix: remove it "
                    "or write it as a string"
                ) from None
            except ValueError:
                raise ValueError("ResourcePolicy must be a JSON policy document") from None
            if not isinstance(document, dict) or not document.get("Statement"):
                raise ValueError("ResourcePolicy must be a policy document with a Statement")
            problem = statement_problem(document["Statement"])
            if problem:
                raise ValueError(problem)
            return value

        @property
        def statements(self) -> list[dict[str, Any]]:
            return _statements(strict_json(self.resource_policy))

    return SimpleNamespace(PolicyProperties=PolicyProperties, PolicyEvent=PolicyEvent)


def __getattr__(name: str) -> Any:
    """``PolicyProperties`` and ``PolicyEvent`` as module attributes (PEP 562), built on first access."""
    if name in ("PolicyProperties", "PolicyEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> PolicyEvent:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(
        event, error=EndpointPolicyError, model=_models().PolicyEvent, not_done="the endpoint policy was not changed"
    )


def parse_properties(raw: Any) -> PolicyProperties:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().PolicyProperties,
        raw,
        error=EndpointPolicyError,
        what="endpoint policy",
        not_done="the endpoint policy was not changed",
    )


# ---------------------------------------------------------------------- what a document may be
def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of JSON text ``text`` nest, read without parsing it (no recursion)."""
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise NotFinite(name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotFinite(text)
    return number


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON, without what Python's parser accepts beyond JSON: ``NaN``, ``Infinity`` and numbers
    that only fit as infinity raise ``NotFinite`` (their text); anything else not JSON raises ``ValueError``."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)


def _texts(value: Any) -> list[Any]:
    """A policy element that IAM allows as one value or a list of them, as a list."""
    return list(value) if isinstance(value, list) else [value]


def _principal_problem(field: str, principal: Any) -> str | None:
    fix = 'fix: name the router\'s account, e.g. {"AWS": "arn:aws:iam::111111111111:root"}'
    allowed = (
        'allowed: {"AWS": ...} with account ids or IAM ARNs of an account root, a role or a user, no wildcards '
        "(an endpoint policy lets named accounts use the endpoint, never anyone)"
    )
    if not isinstance(principal, dict) or set(principal) != {"AWS"}:
        return f"{field}: got {_shown(principal)}; {allowed}; {fix}"
    names = _texts(principal["AWS"])
    if not names:
        return f"{field}.AWS: got []; {allowed}; {fix}"
    for name in names:
        if not isinstance(name, str) or not _PRINCIPAL.match(name):
            return f"{field}.AWS: got {_shown(name)}; {allowed}; {fix}"
    return None


def _action_problem(field: str, action: Any) -> str | None:
    allowed = f"allowed: {', '.join(ALLOWED_ACTIONS)}, each by name (no wildcards)"
    known = {a.lower() for a in ALLOWED_ACTIONS}
    actions = _texts(action)
    if not actions:
        return f"{field}: got []; {allowed}; fix: name the actions the router needs"
    for item in actions:
        if not isinstance(item, str) or item.lower() not in known:
            return f"{field}: got {_shown(item)}; {allowed}; fix: name the actions the router needs"
    return None


_ENDPOINT_ARN = re.compile(r"arn:aws[a-z-]*:sagemaker:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:endpoint/([a-zA-Z0-9-]{1,63})")


def _resource_problem(field: str, resource: Any, endpoint_name: str | None) -> str | None:
    name = endpoint_name or "<EndpointName>"
    allowed = f"allowed: the endpoint's ARN, arn:<partition>:sagemaker:<region>:<account>:endpoint/{name}"
    fix = "fix: write the ARN of the endpoint this policy is attached to (an endpoint policy covers only it)"
    resources = _texts(resource)
    if resource is None or not resources:
        return f"{field}: got {_shown(resource)}; {allowed}; {fix}"
    for item in resources:
        match = _ENDPOINT_ARN.fullmatch(item) if isinstance(item, str) else None
        if match is None or (endpoint_name is not None and match.group(1).lower() != endpoint_name.lower()):
            return f"{field}: got {_shown(item)}; {allowed}; {fix}"
    return None


def statement_breadth(statements: list[dict[str, Any]], endpoint_name: str | None = None) -> list[str]:
    """Why each statement allows more than an endpoint policy of this library does (module docstring): one line per
    statement that does, naming the field, the value, what is allowed and the fix; empty when none.
    ``endpoint_name``: the endpoint the policy is attached to (each ``Resource`` must be its ARN)."""
    problems: list[str] = []
    for index, statement in enumerate(statements):
        field = f"ResourcePolicy Statement[{index}]"
        effect = statement.get("Effect")
        if effect not in ("Allow", "Deny"):
            problems.append(f"{field}.Effect: got {_shown(effect)}; allowed: 'Allow' or 'Deny'; fix: set Effect")
            continue
        if effect == "Deny":
            continue  # a Deny only narrows what the policy allows
        negated = [key for key in ("NotPrincipal", "NotAction") if key in statement]
        if negated:
            problems.append(
                f"{field}.{negated[0]}: an Allow statement with {negated[0]} allows everything it does not list; "
                f"allowed: {negated[0].removeprefix('Not')}; fix: name the principals and actions allowed instead"
            )
            continue
        if "NotResource" in statement:
            problems.append(
                f"{field}.NotResource: an Allow statement with NotResource allows every resource it does not list; "
                "allowed: Resource, the endpoint's ARN; fix: write Resource instead"
            )
            continue
        for problem in (
            _principal_problem(f"{field}.Principal", statement.get("Principal")),
            _action_problem(f"{field}.Action", statement.get("Action")),
            _resource_problem(f"{field}.Resource", statement.get("Resource"), endpoint_name),
        ):
            if problem:
                problems.append(problem)
    return problems


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------- statement ids
def statement_problem(statement: Any) -> str | None:
    """Why a document's ``Statement`` cannot be written as a resource's own statements, or None."""
    statements = statement if isinstance(statement, list) else [statement]
    seen: set[str] = set()
    for index, item in enumerate(statements):
        if not isinstance(item, dict):
            return f"ResourcePolicy Statement[{index}] must be an object, got {type(item).__name__}"
        sid = item.get("Sid")
        if sid is None:
            continue
        if not isinstance(sid, str) or not _SID.match(sid):
            return (
                f"ResourcePolicy Statement[{index}].Sid: got {sid!r}; allowed: letters and digits only (IAM's "
                "Sid rule); fix: remove the other characters"
            )
        if sid in seen:
            return (
                f"ResourcePolicy Statement[{index}].Sid: got {sid!r} twice; allowed: each Sid once; fix: give "
                "each statement its own Sid"
            )
        seen.add(sid)
    return None


def owner_mark(stack_id: str, logical_id: str) -> str:
    """The mark every statement of the resource ``logical_id`` of stack ``stack_id`` carries in its ``Sid``."""
    return MARK_PREFIX + hashlib.sha256(f"{stack_id}/{logical_id}".encode()).hexdigest()[:12]


def owned_statements(document: dict[str, Any] | str, mark: str) -> list[dict[str, Any]]:
    """The statements of ``document`` (a resource's ``ResourcePolicy``) as that resource writes them: each
    ``Sid`` followed by ``mark`` and its content's digest."""
    statements = _statements(json.loads(document) if isinstance(document, str) else document)
    owned: list[dict[str, Any]] = []
    for index, statement in enumerate(statements, start=1):
        body = {k: v for k, v in statement.items() if k != "Sid"}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]
        owned.append({"Sid": f"{statement.get('Sid') or f'Statement{index}'}{mark}{digest}", **body})
    return owned


def statement_ids(stack_id: str, logical_id: str, document: dict[str, Any] | str) -> set[str]:
    """The ``Sid`` of each statement the resource writes for ``document``."""
    return {s["Sid"] for s in owned_statements(document, owner_mark(stack_id, logical_id))}


def _statements(document: Any) -> list[dict[str, Any]]:
    """A policy's statements as a list (IAM allows one statement object in place of the list)."""
    statement = document.get("Statement") if isinstance(document, dict) else None
    if statement is None:
        return []
    return list(statement) if isinstance(statement, list) else [statement]


def _is_owned(statement: Any, mark: str) -> bool:
    sid = statement.get("Sid") if isinstance(statement, dict) else None
    return isinstance(sid, str) and re.search(re.escape(mark) + r"[0-9a-f]{8}$", sid) is not None


# ---------------------------------------------------------------------- the endpoint's policy
def _read(name: str) -> tuple[dict[str, Any] | None, str]:
    """The endpoint's policy (None when it has none, or the endpoint is gone) and its ARN (``""`` unknown)."""
    try:
        answer = _sagemaker().get_endpoint_policy(EndpointName=name)
    except ClientError as error:
        # GetEndpointPolicy answers ValidationException for an endpoint without a policy (botocore's model).
        if not_found(error) or error_code(error) == "ValidationException":
            return None, ""
        raise
    text = str(answer.get("ResourcePolicy") or "{}")
    if nesting_depth(text) > MAX_POLICY_DEPTH:
        raise EndpointPolicyError(
            f"endpoint {name} has a policy nested more than {MAX_POLICY_DEPTH} levels deep, which no IAM policy "
            "is; the policy was not changed: fix or delete it (aws sagemaker delete-endpoint-policy) and deploy again"
        )
    try:
        document = strict_json(text)
    except ValueError:
        raise EndpointPolicyError(
            f"endpoint {name} has a policy that is not JSON; the policy was not changed, "
            "so nothing of another writer is lost: fix or delete the policy "
            "(aws sagemaker delete-endpoint-policy) and deploy again"
        ) from None
    if not isinstance(document, dict):
        raise EndpointPolicyError(
            f"endpoint {name} has a policy that is not a JSON object; the policy was not "
            "changed: fix or delete it and deploy again"
        )
    return document, str(answer.get("EndpointArn") or "")


def _merged(
    current: dict[str, Any] | None, keep: Iterable[dict[str, Any]], own: list[dict[str, Any]]
) -> dict[str, Any]:
    """The policy after the change: ``current``'s other top-level fields (Version, Id), ``keep``, then ``own``."""
    merged = {k: v for k, v in (current or {}).items() if k != "Statement"}
    merged.setdefault("Version", POLICY_VERSION)
    merged["Statement"] = [*keep, *own]
    return merged


def _sync(name: str, mark: str, own: list[dict[str, Any]], legacy: list[dict[str, Any]]) -> str:
    """Make ``own`` (empty: none) this resource's only statements in endpoint ``name``'s policy, keeping every
    other statement; ``legacy`` statements (unmarked, from an earlier version) count as this resource's. Writes,
    then checks, at most ``ATTEMPTS`` times; returns the endpoint's ARN (``""`` when unknown)."""
    wanted = {s["Sid"] for s in own}
    arn = ""
    for attempt in range(1, ATTEMPTS + 1):
        current, arn = _read(name)
        if current is None and not own:
            return arn
        statements = _statements(current)
        keep = [s for s in statements if not _is_owned(s, mark) and s not in legacy]
        mine = {s.get("Sid") for s in statements if _is_owned(s, mark)}
        if mine == wanted and len(keep) + len(mine) == len(statements):
            return arn  # already as meant: a repeated delivery writes nothing
        if not keep and not own:
            _delete_policy(name)
            logger.info("Endpoint policy deleted: no statement left", extra={"endpoint": name})
        else:
            arn = _write(name, _merged(current, keep, own), others=len(keep)) or arn
            logger.info(
                "Endpoint policy statements written",
                extra={"endpoint": name, "own": sorted(wanted), "others": len(keep), "attempt": attempt},
            )
        time.sleep(SETTLE_SECONDS + random.uniform(0, SETTLE_SECONDS) * (attempt - 1))
        after, _ = _read(name)
        found = [s for s in _statements(after) if _is_owned(s, mark) or s in legacy]
        if {s.get("Sid") for s in found} == wanted and len(found) == len(wanted):
            return arn
        logger.warning(
            "Endpoint policy changed by another writer; writing again", extra={"endpoint": name, "attempt": attempt}
        )
    raise EndpointPolicyError(
        f"endpoint {name}'s policy kept changing while this resource wrote its statements ({ATTEMPTS} attempts): "
        "another writer changes it at the same time; deploy again once it is done"
    )


def _write(name: str, document: dict[str, Any], *, others: int) -> str:
    text = json.dumps(document, separators=(",", ":"))
    if len(text) > MAX_POLICY_CHARS:
        raise EndpointPolicyError(
            f"endpoint {name}'s policy would be {len(text)} characters with this resource's statements "
            f"({others} statements of other writers kept); PutEndpointPolicy allows at most {MAX_POLICY_CHARS}: "
            "route fewer routers to the endpoint, or remove statements others no longer need; the policy was not "
            "changed"
        )
    if not text.isascii():
        raise EndpointPolicyError(
            f"endpoint {name}'s policy holds statements of other writers with non-ASCII "
            "characters, which PutEndpointPolicy refuses; the policy was not changed"
        )
    try:
        answer = _sagemaker().put_endpoint_policy(EndpointName=name, ResourcePolicy=text)
    except ClientError as error:
        if not_found(error):
            raise EndpointGone(
                f"endpoint {name} does not exist in this account and region; the policy was not attached"
            ) from None
        raise
    return str(answer.get("EndpointArn") or "")


def _delete_policy(name: str) -> None:
    try:
        _sagemaker().delete_endpoint_policy(EndpointName=name)
    except ClientError as error:
        if not not_found(error):
            raise


def _legacy(raw: Any) -> list[dict[str, Any]]:
    """The statements an earlier version of this function wrote for properties ``raw`` (the document as given,
    no owner mark); none when the properties are not this function's."""
    try:
        return parse_properties(raw).statements
    except EndpointPolicyError:
        return []


@logger.inject_lambda_context(log_event=False)
def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    mark = owner_mark(request.stack_id, request.logical_resource_id)
    physical = str(request.physical_resource_id or "")
    if request.request_type == "Delete":
        try:
            props = parse_properties(request.resource_properties)
        except EndpointPolicyError:
            return {"PhysicalResourceId": physical}  # properties this function never accepted attached nothing
        if physical.lower() == props.endpoint_name.lower():
            with contextlib.suppress(EndpointGone):  # the endpoint (and its policy) went between read and write
                _sync(physical, mark, [], props.statements)
        return {"PhysicalResourceId": physical}
    props = parse_properties(request.resource_properties)
    problems = statement_breadth(props.statements, props.endpoint_name)
    if problems:
        raise EndpointPolicyError(
            "Invalid endpoint policy properties (the endpoint policy was not changed):\n- " + "\n- ".join(problems)
        )
    legacy = _legacy(request.old_resource_properties) if request.request_type == "Update" else []
    name = (
        physical
        if request.request_type == "Update" and physical.lower() == props.endpoint_name.lower()
        else props.endpoint_name
    )
    arn = _sync(name, mark, owned_statements(props.resource_policy, mark), legacy)
    return {"PhysicalResourceId": name, "Data": {"EndpointArn": arn}}
