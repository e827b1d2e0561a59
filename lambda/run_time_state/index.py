"""CloudFormation custom resource (provider framework on_event): an SSM String parameter written at run time.

Why not ``AWS::SSM::Parameter``: CloudFormation's update handler for that type calls ``PutParameter``
with ``Overwrite`` and the template's ``Value`` on every update of the resource, a tag or description
change included. A value a function writes at run time (a capacity plan's status, a model's promoted
EAGLE head, the EAGLE dataset watermark) would be reset by the next routine deploy. This resource
creates the parameter only when it is absent and never overwrites a value on update.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).

Event (``aws_cdk.custom_resources.Provider``), checked before any AWS call
--------------------------------------------------------------------------
ResourceProperties (strict: any other key is refused):
    ParameterName   the parameter's name, e.g. ``/sagemaker-llm/state/eagle/<model>/draft-head``; its first
                    segment may not start with ``aws`` or ``ssm`` in any letter case (SSM reserves them), nor
                    may SeedFrom's
    InitialValue    the value a new parameter starts with (1-4096 characters)
    Removal         "retain" (the parameter outlives the resource) | "destroy" (deleted with it)
    Description     optional, set when the parameter is created (never changed afterwards: that needs a
                    PutParameter with the value, which could race a run-time write)
    SeedFrom        optional, the name of a parameter a new one copies its value from when that exists
                    (an earlier name of the same value), instead of InitialValue
    PlanName        optional, a training plan name or ARN: the value is the plan's status, read with
                    DescribeTrainingPlan at every Create and Update (``NotFound`` when there is no such
                    plan), so a deploy knows the status at once instead of waiting for the daily check
    ServiceToken    ignored

Create: the parameter is created with InitialValue (or SeedFrom's value, or the plan's status) unless it
exists, in which case its value is kept (a plan status is refreshed). Either way the resource adds its own owner
tag, ``sagemaker-llm-cdk:owner:<digest>`` (a SHA-256 of its stack id and logical id; the value names the stack
and logical id for whoever reads the tags), and leaves every other owner's tag alone. The value also records
how the resource came to hold the parameter, once, when it first tags it (no later request rewrites it):
``<stack>/<logical id>`` when it created the parameter or joined owners that did, ``adopted:<stack>/<logical id>``
(``ADOPTED``) when it found the parameter with no owner at all (kept by a deleted retain-mode stack, or made by
hand) while its Removal is "destroy", or joined an owner that had adopted it. Such a value existed before the
stack, and CloudFormation answers a failed first deploy, or a failed update that added the resource, with a Delete
of it: an adopter's Delete never deletes the parameter. A retain-mode resource never deletes, so what it takes over
is not recorded as adopted: a stack switched to destroy later decided so for everything it holds, and a rollback
of that switch sends Updates, never a Delete of the resource.
Update: a new ParameterName is a Create of that name (CloudFormation then deletes the old one, as its
Removal says); the same name keeps the value, re-creates a parameter deleted by hand with InitialValue,
and refreshes a plan status.
Delete: the resource removes its own owner tag; with Removal "destroy", no other owner left and a tag that does
not say adopted it deletes the parameter instead (retried Deletes find the tags as they were). Several resources
own one parameter when CloudFormation creates a new one before it deletes the old: a logical id change (a construct
moved), or a failed update whose rollback deletes the new resource. Whichever Delete comes last, the parameter stays
while a resource holds it. Parameters tagged by earlier releases carry one ``sagemaker-llm-cdk:owner`` tag whose
value is the same digest: it counts as that owner's tag, one that created the parameter.

Access: once a parameter leaves the template, CloudFormation has already taken it out of the function's named
grants when the cleanup Delete comes; the role may still read tags of, untag and delete parameters under
``/sagemaker-llm/state/`` (``STATE_PREFIX``), so only a name outside that folder can be refused then: with
Removal "retain" that costs a stale owner tag (logged), with "destroy" the Delete fails, naming the parameter.

Returns ``{"PhysicalResourceId": <ParameterName>, "Data": {"ParameterName"}}``: the value itself stays out of the
answer (a watermark can be kilobytes, CloudFormation's answer holds 4 KB); readers read the parameter.
"""

from __future__ import annotations

import functools
import hashlib
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.aws_errors import error_code, not_found
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:
    from typing import TypeAlias

    from llm_cdk_shared.custom_resource import CustomResourceEvent as StateEvent

    StateProperties: TypeAlias = Any

logger = Logger()

RESOURCE_TYPE = "Custom::SageMakerLlmRunTimeParameter"
OWNER_TAG = "sagemaker-llm-cdk:owner"
"""Earlier releases' single owner tag (value: the owner's digest); read, never written."""
OWNER_TAG_PREFIX = f"{OWNER_TAG}:"
"""One tag per owner: ``<prefix><digest>`` (24 + 64 characters; SSM takes keys of up to 128)."""
ADOPTED = "adopted:"
"""The owner tag value's prefix of a resource that did not create the parameter it holds (stack names have no ':')."""
TAG_VALUE_MAX = 256
TAG_LIMIT = 50
"""Tags one SSM parameter may hold (AddTagsToResource's documentation)."""
STATE_PREFIX = "/sagemaker-llm/state"
"""The folder whose parameters the role may clean up after they left the template (``core/run_time_state.py``)."""
_DENIED = frozenset({"AccessDeniedException", "AccessDenied"})
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/=+\-@]")
PLAN_NOT_FOUND = "NotFound"
_NAME_RE = re.compile(r"/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*")
_PLAN_RE = re.compile(
    r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/)?(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63})"
)
NAME_MAX = 1011
RESERVED_PREFIXES = ("aws", "ssm")
"""What no parameter name's first segment may start with, in any letter case (SSM PutParameter: reserved)."""
VALUE_MAX = 4096

_ssm = clients.client_getter("ssm", retries={"mode": "standard", "max_attempts": 5})
_sagemaker = clients.client_getter("sagemaker", retries={"mode": "standard", "max_attempts": 5})


class StateError(Exception):
    """What CloudFormation shows as the reason the request failed."""


@functools.cache
def _models() -> SimpleNamespace:
    """The properties model, built on the first event: pydantic is not imported on a cold start."""
    from llm_cdk_shared import custom_resource
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    def _name(value: Any, field: str) -> str:
        if not isinstance(value, str) or len(value) > NAME_MAX or not _NAME_RE.fullmatch(value):
            raise ValueError(
                f"{field} {_shown(value)} is not an SSM parameter name (letters, digits, '_', '.', '-' "
                f"and '/' separators, at most {NAME_MAX} characters)"
            )
        first = value.lstrip("/").split("/", 1)[0]
        reserved = next((p for p in RESERVED_PREFIXES if first.lower().startswith(p)), None)
        if reserved is not None:
            raise ValueError(
                f"{field} {_shown(value)}: its first segment {_shown(first)} starts with {reserved!r} (any letter "
                f"case), which SSM reserves; allowed: a first segment that starts with neither 'aws' nor 'ssm'; "
                f"fix: name the parameter under {STATE_PREFIX}/"
            )
        return value

    class StateProperties(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

        parameter_name: str = Field(alias="ParameterName")
        initial_value: str = Field(alias="InitialValue", min_length=1, max_length=VALUE_MAX)
        removal: Literal["retain", "destroy"] = Field(alias="Removal")
        description: str = Field(default="", alias="Description", max_length=1024)
        seed_from: str | None = Field(default=None, alias="SeedFrom")
        plan_name: str | None = Field(default=None, alias="PlanName")

        @field_validator("parameter_name", mode="before")
        @classmethod
        def _parameter(cls, value: Any) -> str:
            return _name(value, "ParameterName")

        @field_validator("seed_from", mode="before")
        @classmethod
        def _seed(cls, value: Any) -> str | None:
            return None if value in (None, "") else _name(value, "SeedFrom")

        @field_validator("plan_name", mode="before")
        @classmethod
        def _plan(cls, value: Any) -> str | None:
            if value in (None, ""):
                return None
            match = _PLAN_RE.fullmatch(value) if isinstance(value, str) else None
            if not match:
                raise ValueError(
                    f"PlanName {_shown(value)} is not a training plan name (1-64 letters, digits and hyphens) or ARN"
                )
            return str(value)

    return SimpleNamespace(StateProperties=StateProperties, StateEvent=custom_resource.CustomResourceEvent)


def __getattr__(name: str) -> Any:
    """``StateProperties`` and ``StateEvent`` as module attributes (PEP 562), built on first access."""
    if name in ("StateProperties", "StateEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> StateEvent:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(event, error=StateError, not_done="no parameter was read or written")


def parse_properties(raw: Any) -> StateProperties:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().StateProperties,
        raw,
        error=StateError,
        what="run-time parameter",
        not_done="no parameter was read or written",
    )


def owner(event: dict[str, Any]) -> str:
    """The owner's digest: a SHA-256 of the stack id and logical id (a stack deployed again has a new stack id, so
    it is a new owner)."""
    text = f"{event.get('StackId', '')}|{event.get('LogicalResourceId', '')}"
    return hashlib.sha256(text.encode()).hexdigest()


def owner_tag(event: dict[str, Any]) -> dict[str, str]:
    """This resource's own tag: key ``sagemaker-llm-cdk:owner:<digest>``, value ``<stack name>/<logical id>``."""
    stack_id = str(event.get("StackId", ""))
    stack_name = stack_id.split("/")[1] if stack_id.count("/") >= 2 else stack_id
    label = _LABEL_UNSAFE.sub("-", f"{stack_name}/{event.get('LogicalResourceId', '')}")[:TAG_VALUE_MAX]
    return {"Key": OWNER_TAG_PREFIX + owner(event), "Value": label}


def adopter_tag(tag: dict[str, str]) -> dict[str, str]:
    """The owner tag of a resource that holds a parameter it did not create: the label cut to fit SSM's 256."""
    return {"Key": tag["Key"], "Value": ADOPTED + tag["Value"][: TAG_VALUE_MAX - len(ADOPTED)]}


def adopted(tag: dict[str, Any]) -> bool:
    """Whether an owner tag says its resource adopted the parameter (earlier releases' single tag never does)."""
    return str(tag.get("Key", "")).startswith(OWNER_TAG_PREFIX) and str(tag.get("Value", "")).startswith(ADOPTED)


def owners(tags: list[dict[str, Any]]) -> set[str]:
    """The digests of every owner the tags name: one tag per owner, and the single tag of earlier releases."""
    found = {str(t["Key"])[len(OWNER_TAG_PREFIX) :] for t in tags if str(t.get("Key", "")).startswith(OWNER_TAG_PREFIX)}
    found |= {str(t.get("Value", "")) for t in tags if t.get("Key") == OWNER_TAG and t.get("Value")}
    return found


def _value(name: str) -> str | None:
    try:
        return str(_ssm().get_parameter(Name=name)["Parameter"]["Value"])
    except ClientError as error:
        if not_found(error, "ssm"):
            return None
        raise


def plan_status(plan_name: str) -> str:
    """The plan's status as SageMaker reports it now; ``NotFound`` when there is no such plan."""
    try:
        plan = _sagemaker().describe_training_plan(TrainingPlanName=plan_name)
    except ClientError as error:
        if not_found(error):
            return PLAN_NOT_FOUND
        raise
    return str(plan.get("Status") or "Unknown")


def _claim(name: str, tag: dict[str, str], removal: str) -> None:
    """Add this resource's owner tag to a parameter that exists (other owners' tags are other keys: nothing of theirs
    is overwritten), as an adopter's when the parameter existed before any owner that created it.

    A tag the resource already has is left as it is: it says what the resource found at its Create, which an Update
    or a rollback's Update must not rewrite (a rewrite to a creator's tag would let a later Delete destroy a value
    that existed before the stack)."""
    tags = _tags(name) or []
    if any(t.get("Key") == tag["Key"] for t in tags):
        return
    digest = tag["Key"][len(OWNER_TAG_PREFIX) :]
    legacy_mine = any(t.get("Key") == OWNER_TAG and t.get("Value") == digest for t in tags)
    others = owners(tags) - {digest}
    if not legacy_mine and (any(adopted(t) for t in tags) or (not others and removal == "destroy")):
        tag = adopter_tag(tag)
        logger.info(
            "Run-time parameter adopted: no Delete of this resource deletes it",
            extra={"parameter": name, "other_owners": len(others)},
        )
    try:
        _ssm().add_tags_to_resource(ResourceType="Parameter", ResourceId=name, Tags=[tag])
    except ClientError as error:
        if error_code(error) != "TooManyTagsError":
            raise
        raise StateError(
            f"ParameterName {name}: AddTagsToResource refused its owner tag {tag['Key']} ({tag['Value']}): the "
            f"parameter holds SSM's limit of {TAG_LIMIT} tags. Remove the {OWNER_TAG_PREFIX}* tags whose values name "
            "stacks or resources that no longer exist (aws ssm remove-tags-from-resource --resource-type Parameter "
            f"--resource-id {name} --tag-keys <key>), then deploy again"
        ) from error


def _tags(name: str) -> list[dict[str, Any]] | None:
    """The parameter's tags; None when there is no such parameter."""
    try:
        return list(_ssm().list_tags_for_resource(ResourceType="Parameter", ResourceId=name)["TagList"])
    except ClientError as error:
        if not_found(error, "ssm") or error_code(error) == "InvalidResourceId":
            return None
        raise


def ensure(props: StateProperties, tag: dict[str, str]) -> str:
    """Create the parameter unless it exists (never overwriting a value), refresh a plan status; the value after."""
    name = props.parameter_name
    current = _value(name)
    if props.plan_name is not None:
        status = plan_status(props.plan_name)
        if current is None:
            _create(props, status, tag)
        elif current != status:
            # The plan's real status, as the daily check would write it: a refresh, never a reset to a default.
            _ssm().put_parameter(Name=name, Value=status, Type="String", Overwrite=True)
            _claim(name, tag, props.removal)
        else:
            _claim(name, tag, props.removal)
        logger.info("Plan status recorded", extra={"parameter": name, "from": current, "to": status})
        return status
    if current is not None:
        _claim(name, tag, props.removal)
        logger.info("Run-time parameter kept", extra={"parameter": name})
        return current
    seeded = _value(props.seed_from) if props.seed_from else None
    value = seeded if seeded is not None else props.initial_value
    created = _create(props, value, tag)
    logger.info(
        "Run-time parameter created",
        extra={
            "parameter": name,
            "seeded_from": props.seed_from if seeded is not None else None,
            "kept_concurrent_value": created is not None,
        },
    )
    return value if created is None else created


def _create(props: StateProperties, value: str, tag: dict[str, str]) -> str | None:
    """PutParameter without Overwrite; None when created, else the value a concurrent writer put there first."""
    request: dict[str, Any] = {
        "Name": props.parameter_name,
        "Value": value,
        "Type": "String",
        "Overwrite": False,
        "Tier": "Standard",
        "Tags": [tag],
    }
    if props.description:
        request["Description"] = props.description
    try:
        _ssm().put_parameter(**request)
    except ClientError as error:
        if error_code(error) != "ParameterAlreadyExists":
            raise
        _claim(props.parameter_name, tag, props.removal)
        return _value(props.parameter_name) or value
    return None


def delete(physical_id: str, raw: Any, tag: dict[str, str]) -> None:
    """Give up this resource's ownership; with Removal destroy, the last owner deletes the parameter."""
    try:
        props = parse_properties(raw)
    except StateError:
        logger.warning("Delete of a resource with unreadable properties: nothing deleted", extra={"id": physical_id})
        return
    if physical_id != props.parameter_name:  # a failed create's id: no parameter of ours
        return
    try:
        _release(physical_id, props.removal, tag)
    except ClientError as error:
        if error_code(error) not in _DENIED:
            raise
        if props.removal != "destroy":
            logger.warning(
                "Run-time parameter retained; its owner tag could not be removed",
                extra={"parameter": physical_id, "tag": tag["Key"], "error": error_code(error)},
            )
            return
        raise StateError(
            f"ParameterName {physical_id} (Removal destroy): {error_code(error)}: the function's role may clean up "
            f"only parameters under {STATE_PREFIX}/ once they left the template, and this one is outside it. The "
            f"parameter is still there: delete it by hand (aws ssm delete-parameter --name {physical_id}) or give "
            f"run-time parameters names under {STATE_PREFIX}/"
        ) from error


def _release(name: str, removal: str, tag: dict[str, str]) -> None:
    """Delete the parameter when this is its last owner, did not adopt it and Removal is destroy, else remove only
    this owner's tags.

    The parameter is deleted with its tags (not untagged first), so a Delete CloudFormation sends again after a
    failure still finds itself the owner."""
    tags = _tags(name)
    if tags is None:
        logger.info("Run-time parameter already gone", extra={"parameter": name})
        return
    digest = tag["Key"][len(OWNER_TAG_PREFIX) :]
    mine = [
        str(t["Key"])
        for t in tags
        if t.get("Key") == tag["Key"] or (t.get("Key") == OWNER_TAG and t.get("Value") == digest)
    ]
    others = owners(tags) - {digest}
    adopter = any(t.get("Key") == tag["Key"] and adopted(t) for t in tags)
    if removal == "destroy" and mine and not others and not adopter:
        try:
            _ssm().delete_parameter(Name=name)
        except ClientError as error:
            if not not_found(error, "ssm"):
                raise
        logger.info("Run-time parameter deleted", extra={"parameter": name})
        return
    if mine:
        _ssm().remove_tags_from_resource(ResourceType="Parameter", ResourceId=name, TagKeys=mine)
    logger.info(
        "Run-time parameter kept",
        extra={
            "parameter": name,
            "removal": removal,
            "other_owners": len(others),
            "was_owner": bool(mine),
            "adopted": adopter,
        },
    )


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    tag = owner_tag(event)
    if request.request_type == "Delete":
        assert request.physical_resource_id is not None
        delete(request.physical_resource_id, request.resource_properties, tag)
        return {"PhysicalResourceId": request.physical_resource_id}
    props = parse_properties(request.resource_properties)
    ensure(props, tag)
    return {"PhysicalResourceId": props.parameter_name, "Data": {"ParameterName": props.parameter_name}}
