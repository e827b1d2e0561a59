"""Run-time parameters through CloudFormation's sequences: no deploy resets a value, no cleanup or rollback deletes
one a resource still holds, no removed parameter is left behind in ``destroy`` mode.

The handler runs against a stateful SSM (``FakeSsm``: every request checked against botocore's model) that answers
as SSM does and allows only what the function's synthesized policy allows, as CloudFormation has it at each step:
the new template's policy while resources are created and updated and at the cleanup, the old one again for a
rollback (CloudFormation rolls the policy back before the resources that depend on it).
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk import Stack as CdkStack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import checks
from sagemaker_llm_cdk.core.removal import set_removal
from sagemaker_llm_cdk.core.run_time_state import RESOURCE_TYPE, STATE_PREFIX, RunTimeParameter, parameter_arn
from support.lifecycle import ACCOUNT, REGION, FakeClient, Stack, check, error

pytestmark = [pytest.mark.synth, pytest.mark.usefixtures("replacement_rollback")]
"""Every sequence under both readings of how CloudFormation rolls back a replaced custom resource."""

WATERMARK = f"{STATE_PREFIX}/eagle/qwen3-32b/watermark"
MOVED = f"{STATE_PREFIX}/eagle/qwen3-32b-v2/watermark"
EARLIER = "/sagemaker-llm/eagle/qwen3-32b/draft-head"
HEAD = f"{STATE_PREFIX}/eagle/qwen3-32b/draft-head"
STATUS = f"{STATE_PREFIX}/capacity-plans/chat-p5e-2027q1/status"
PLAN = "chat-p5e-2027q1"
PLAN_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/{PLAN}"
EMPTY = "{}"
WRITTEN = '{"endpoint/AllTraffic": "2026/12/01/23/capture-0042.jsonl"}'
"""What the dataset function wrote at run time: every sequence but a destroy-mode stack delete keeps it."""
LEGACY_TAG = "sagemaker-llm-cdk:owner"
OWNER_PREFIX = "sagemaker-llm-cdk:owner:"


def watermark(removal: str, **changes: Any) -> dict[str, Any]:
    return {
        "ParameterName": WATERMARK,
        "InitialValue": EMPTY,
        "Removal": removal,
        "Description": "Last Data Capture object per folder already turned into EAGLE training data",
        **changes,
    }


# ---------------------------------------------------------------------- the function's policy, as synthesized
Statement = tuple[tuple[str, ...], tuple[str, ...]]


def _resolved(value: Any) -> Any:
    """A synthesized ARN as IAM sees it in the account (``Fn::Join`` and ``AWS::Partition`` resolved)."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_resolved(p)) for p in parts)
    if value == {"Ref": "AWS::Partition"}:
        return "aws"
    if isinstance(value, (dict, list)):  # another resource's ARN (the function's log group): never a parameter's
        return f"<{json.dumps(value)}>"
    return value


@functools.cache
def _policy(template_json: str) -> tuple[Statement, ...]:
    """The Allow statements of the run-time parameters' function role for ``template`` (logical id -> properties)."""
    template: dict[str, dict[str, Any]] = json.loads(template_json)
    stack = CdkStack(App(), "Policy", env=Environment(account=ACCOUNT, region=REGION))
    modes = {p["Removal"] for p in template.values()}
    set_removal(stack, modes.pop() if len(modes) == 1 else "retain")  # type: ignore[arg-type]
    for index, props in enumerate(template.values()):
        RunTimeParameter(
            stack,
            f"P{index}",
            parameter_name=props["ParameterName"],
            initial_value=props["InitialValue"],
            description=props.get("Description", "d"),
            seed_from=props.get("SeedFrom"),
            plan_name=props.get("PlanName"),
            plan_arns=[PLAN_ARN] if props.get("PlanName") else (),
        )
    role = stack.node.find_child("RunTimeState").node.find_child("FunctionRole")
    document = stack.resolve(role.node.find_child("DefaultPolicy").node.default_child.policy_document)
    statements: list[Statement] = []
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        actions, resources = statement["Action"], statement["Resource"]
        statements.append(
            (
                tuple(actions if isinstance(actions, list) else [actions]),
                tuple(_resolved(r) for r in (resources if isinstance(resources, list) else [resources])),
            )
        )
    return tuple(statements)


def policy_of(template: Mapping[str, Mapping[str, Any]]) -> tuple[Statement, ...]:
    return _policy(json.dumps(template, sort_keys=True))


def allows(policy: tuple[Statement, ...], action: str, arn: str) -> bool:
    """IAM's match: action and resource patterns with ``*`` and ``?`` (no brackets occur in these ARNs)."""
    return any(
        any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in actions)
        and any(fnmatch.fnmatchcase(arn, r) for r in resources)
        for actions, resources in policy
    )


def ssm_arn(name: str) -> str:
    return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/{name.lstrip('/')}"


# ---------------------------------------------------------------------- fake AWS
class FakeSsm:
    """Parameters, their tags and SSM's answers (error codes from botocore's model and SSM's API reference)."""

    def __init__(self, authorize: Callable[[str, str], None]) -> None:
        self.parameters: dict[str, dict[str, Any]] = {}
        self._authorize = authorize

    def _get(self, name: str, code: str = "ParameterNotFound") -> dict[str, Any]:
        if name not in self.parameters:
            raise error(code, f"Parameter {name} not found.")
        return self.parameters[name]

    def write(self, name: str, value: str) -> None:
        """A run-time writer's PutParameter with Overwrite (the dataset function, the promotion, the plan check)."""
        parameter = self._get(name)
        parameter["Value"], parameter["Version"] = value, parameter["Version"] + 1

    def GetParameter(self, Name: str, **_: Any) -> dict[str, Any]:  # noqa: N802 - the operation's name
        self._authorize("ssm:GetParameter", ssm_arn(Name))
        parameter = self._get(Name)
        return {
            "Parameter": {
                "Name": Name,
                "Type": "String",
                "Value": parameter["Value"],
                "Version": parameter["Version"],
                "ARN": ssm_arn(Name),
                "DataType": "text",
            }
        }

    def PutParameter(
        self,
        Name: str,
        Value: str,
        Type: str = "String",
        Overwrite: bool = False,  # noqa: N802
        Tags: list[dict[str, str]] | None = None,
        Description: str | None = None,
        **_: Any,
    ) -> dict:
        self._authorize("ssm:PutParameter", ssm_arn(Name))
        if Tags and Overwrite:
            raise error("ValidationException", "Invalid request: tags and overwrite can't be used together.")
        if Name in self.parameters and not Overwrite:
            raise error("ParameterAlreadyExists", "The parameter already exists.")
        if Name in self.parameters:
            self.write(Name, Value)
        else:
            self.parameters[Name] = {
                "Value": Value,
                "Version": 1,
                "Description": Description or "",
                "Tags": {t["Key"]: t["Value"] for t in Tags or []},
            }
        return {"Version": self.parameters[Name]["Version"], "Tier": "Standard"}

    def DeleteParameter(self, Name: str) -> dict:  # noqa: N802
        self._authorize("ssm:DeleteParameter", ssm_arn(Name))
        self._get(Name)
        del self.parameters[Name]
        return {}

    def AddTagsToResource(self, ResourceType: str, ResourceId: str, Tags: list[dict[str, str]]) -> dict:  # noqa: N802
        self._authorize("ssm:AddTagsToResource", ssm_arn(ResourceId))
        tags = self._get(ResourceId, "InvalidResourceId")["Tags"]
        merged = {**tags, **{t["Key"]: t["Value"] for t in Tags}}
        if len(merged) > 50:
            raise error("TooManyTagsError", "The Targets parameter includes too many tags.")
        tags.update(merged)
        return {}

    def RemoveTagsFromResource(self, ResourceType: str, ResourceId: str, TagKeys: list[str]) -> dict:  # noqa: N802
        self._authorize("ssm:RemoveTagsFromResource", ssm_arn(ResourceId))
        tags = self._get(ResourceId, "InvalidResourceId")["Tags"]
        for key in TagKeys:
            tags.pop(key, None)
        return {}

    def ListTagsForResource(self, ResourceType: str, ResourceId: str) -> dict:  # noqa: N802
        self._authorize("ssm:ListTagsForResource", ssm_arn(ResourceId))
        tags = self._get(ResourceId, "InvalidResourceId")["Tags"]
        return {"TagList": [{"Key": k, "Value": v} for k, v in tags.items()]}


class FakeSageMaker:
    def __init__(self, authorize: Callable[[str, str], None]) -> None:
        self.plans: dict[str, str] = {}
        self._authorize = authorize

    def DescribeTrainingPlan(self, TrainingPlanName: str) -> dict:  # noqa: N802
        arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/{TrainingPlanName}"
        self._authorize("sagemaker:DescribeTrainingPlan", arn)
        if TrainingPlanName not in self.plans:
            raise error("ResourceNotFound", f"Training plan {TrainingPlanName} does not exist.")
        return {"TrainingPlanArn": arn, "TrainingPlanName": TrainingPlanName, "Status": self.plans[TrainingPlanName]}


class RunTimeParameters:
    """The ``Subject`` of ``support.lifecycle``: the handler, and SSM allowing what the policy of the moment allows."""

    resource_type = RESOURCE_TYPE

    def __init__(self, state: Any, context: Any) -> None:
        self._state = state
        self._context = context
        self.ssm = FakeSsm(self._authorize)
        self.sagemaker = FakeSageMaker(self._authorize)
        state._ssm.inject(FakeClient("ssm", self.ssm))
        state._sagemaker.inject(FakeClient("sagemaker", self.sagemaker))
        self.stack: Stack | None = None
        self.policy: tuple[Statement, ...] | None = None
        self.old_policy: tuple[Statement, ...] | None = None
        self.denied: list[str] = []
        self.before: set[str] = set()
        """Parameters that existed before the stack (``ownerless``): a destroy-mode Delete keeps them on purpose."""

    def _authorize(self, action: str, arn: str) -> None:
        assert self.stack is not None and self.policy is not None
        phase = self.stack.log[-1].split()[0]
        policy = self.old_policy if phase.startswith("rollback") and self.old_policy is not None else self.policy
        if not allows(policy, action, arn):
            self.denied.append(f"{self.stack.log[-1]}: {action} {arn}")
            raise error(
                "AccessDeniedException",
                f"User: arn:aws:sts::{ACCOUNT}:assumed-role/RunTimeState/f is not "
                f"authorized to perform: {action} on resource: {arn} because no "
                "identity-based policy allows the action",
            )

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._state.handler(event, self._context)

    def live(self) -> set[str]:
        return set(self.ssm.parameters)

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return {physical_id} if physical_id == properties.get("ParameterName") else set()

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return properties.get("Removal") == "retain" or properties.get("ParameterName") in self.before

    # ------------------------------------------------------------------ as the tests read it
    def value(self, name: str = WATERMARK) -> str | None:
        parameter = self.ssm.parameters.get(name)
        return None if parameter is None else parameter["Value"]

    def owners(self, name: str = WATERMARK) -> set[str]:
        """The owner tags' values (``<stack name>/<logical id>``, ``adopted:`` first for an adopter); the earlier
        releases' tag as ``legacy``."""
        tags = self.ssm.parameters[name]["Tags"]
        return {v for k, v in tags.items() if k.startswith(OWNER_PREFIX)} | (
            {"legacy"} if LEGACY_TAG in tags else set()
        )


def ownerless(subject: RunTimeParameters, name: str, value: str) -> None:
    """A parameter that exists before the stack and no resource owns: made by hand, or kept by a deleted retain-mode
    stack (whose Delete removed its owner tag)."""
    subject.ssm.parameters[name] = {"Value": value, "Version": 7, "Description": "", "Tags": {}}
    subject.before.add(name)


@pytest.fixture
def subject(load_handler, lambda_context) -> RunTimeParameters:
    return RunTimeParameters(load_handler("run_time_state"), lambda_context)


def new_stack(subject: RunTimeParameters) -> Stack:
    stack = Stack(subject)
    subject.stack = stack
    return stack


def deploy(subject: RunTimeParameters, stack: Stack, template: Mapping[str, Mapping[str, Any]], **options: Any) -> str:
    """``stack.deploy`` with the function's policy as CloudFormation updates it first (and rolls it back)."""
    subject.old_policy = subject.policy if stack.status not in ("NONE", "DELETE_COMPLETE") else None
    subject.policy = policy_of(template)
    status = stack.deploy(template, **options)
    if status.startswith("UPDATE_ROLLBACK") and subject.old_policy is not None:
        subject.policy = subject.old_policy
    return status


def deployed_with_a_value(subject: RunTimeParameters, removal: str, template: dict | None = None) -> Stack:
    stack = new_stack(subject)
    check_status(stack, deploy(subject, stack, template or {"Watermark": watermark(removal)}), "CREATE_COMPLETE")
    assert subject.value() == EMPTY
    subject.ssm.write(WATERMARK, WRITTEN)
    return stack


def check_status(stack: Stack, status: str, expected: str) -> None:
    """The status, ``check``'s rules, and no request the function's policy of the moment refused."""
    assert status == expected
    check(stack, status=expected)
    assert not stack.subject.denied  # type: ignore[attr-defined]


REMOVALS = ["retain", "destroy"]


# ---------------------------------------------------------------------- updates in place
@pytest.mark.parametrize("removal", REMOVALS)
@pytest.mark.parametrize(
    "change",
    [{"Description": "a new description"}, {"InitialValue": '{"reset": true}'}],
    ids=["description", "initial value"],
)
def test_an_update_in_place_never_resets_the_value(subject, removal, change):
    stack = deployed_with_a_value(subject, removal)

    check_status(stack, deploy(subject, stack, {"Watermark": watermark(removal, **change)}), "UPDATE_COMPLETE")

    assert subject.value() == WRITTEN
    assert [line.split()[:2] for line in stack.log] == [["create", "Create"], ["update", "Update"]]


@pytest.mark.parametrize("removal", REMOVALS)
def test_a_failed_update_in_place_rolls_back_without_touching_the_value(subject, removal):
    stack = deployed_with_a_value(subject, removal)

    status = deploy(subject, stack, {"Watermark": watermark(removal, Description="new")}, fail_after=True)

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE")
    assert subject.value() == WRITTEN


# ---------------------------------------------------------------------- a new ParameterName: a new physical id
@pytest.mark.parametrize("removal", REMOVALS)
def test_a_renamed_parameter_is_created_and_the_old_one_cleaned_up_by_removal(subject, removal):
    stack = deployed_with_a_value(subject, removal)

    status = deploy(subject, stack, {"Watermark": watermark(removal, ParameterName=MOVED, SeedFrom=WATERMARK)})

    check_status(stack, status, "UPDATE_COMPLETE")
    assert subject.value(MOVED) == WRITTEN  # seeded from the old name: captures are not trained on twice
    assert subject.value(WATERMARK) == (WRITTEN if removal == "retain" else None)
    assert [line.split()[:3] for line in stack.log[1:]] == [
        ["update", "Update", "Watermark"],
        ["cleanup", "Delete", "Watermark"],
    ]


@pytest.mark.parametrize("removal", REMOVALS)
def test_a_failed_rename_rolls_back_to_the_old_parameter_and_its_value(subject, removal):
    stack = deployed_with_a_value(subject, removal)

    status = deploy(
        subject, stack, {"Watermark": watermark(removal, ParameterName=MOVED, SeedFrom=WATERMARK)}, fail_after=True
    )

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE")
    assert subject.value() == WRITTEN
    assert subject.owners() == {"SageMakerLlm/Watermark"}
    # The new name, created by the update, is deleted by the rollback's cleanup only when the stack destroys.
    assert subject.value(MOVED) == (WRITTEN if removal == "retain" else None)


# ---------------------------------------------------------------------- a new logical id, the same name
@pytest.mark.parametrize("removal", REMOVALS)
def test_a_moved_construct_takes_the_parameter_over_and_the_old_resources_cleanup_keeps_it(subject, removal):
    stack = deployed_with_a_value(subject, removal)

    check_status(stack, deploy(subject, stack, {"MovedWatermark": watermark(removal)}), "UPDATE_COMPLETE")

    assert subject.value() == WRITTEN
    assert subject.owners() == {"SageMakerLlm/MovedWatermark"}
    assert [line.split()[:3] for line in stack.log[1:]] == [
        ["create", "Create", "MovedWatermark"],
        ["cleanup", "Delete", "Watermark"],
    ]
    # And the new owner alone decides at the stack's delete.
    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value() == (WRITTEN if removal == "retain" else None)


@pytest.mark.parametrize("removal", REMOVALS)
def test_a_failed_move_rolls_back_and_the_old_resource_keeps_its_parameter(subject, removal):
    """The rollback deletes the new resource, which had added itself as an owner: the old one still holds it."""
    stack = deployed_with_a_value(subject, removal)

    status = deploy(subject, stack, {"MovedWatermark": watermark(removal)}, fail_after=True)

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE")
    assert subject.value() == WRITTEN
    assert subject.owners() == {"SageMakerLlm/Watermark"}
    assert [line.split()[:3] for line in stack.log[1:]] == [
        ["create", "Create", "MovedWatermark"],
        ["rollback-cleanup", "Delete", "MovedWatermark"],
    ]


@pytest.mark.parametrize("fail_after", [False, True], ids=["moved", "move rolled back"])
def test_a_parameter_tagged_by_an_earlier_release_survives_a_move(subject, fail_after):
    """Deployed parameters keep the single owner tag of earlier releases until their resource is deleted."""
    stack = deployed_with_a_value(subject, "destroy")
    tags = subject.ssm.parameters[WATERMARK]["Tags"]
    ((key, _),) = tags.items()
    tags.clear()
    tags[LEGACY_TAG] = key[len(OWNER_PREFIX) :]  # what the earlier release wrote: the same digest as the value

    status = deploy(subject, stack, {"MovedWatermark": watermark("destroy")}, fail_after=fail_after)

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE" if fail_after else "UPDATE_COMPLETE")
    assert subject.value() == WRITTEN
    assert subject.owners() == ({"legacy"} if fail_after else {"SageMakerLlm/MovedWatermark"})


# ---------------------------------------------------------------------- a parameter removed from the template
def test_a_removed_parameter_is_deleted_in_destroy_mode_though_its_named_grant_is_gone(subject):
    """CloudFormation updates the policy (the parameter's statement gone) before the cleanup Delete."""
    stack = deployed_with_a_value(
        subject, "destroy", {"Watermark": watermark("destroy"), "Head": watermark("destroy", ParameterName=HEAD)}
    )
    assert not allows(policy_of({"Watermark": watermark("destroy")}), "ssm:PutParameter", ssm_arn(HEAD))

    check_status(stack, deploy(subject, stack, {"Watermark": watermark("destroy")}), "UPDATE_COMPLETE")

    assert subject.value(HEAD) is None and subject.value() == WRITTEN


def test_a_removed_parameter_named_outside_the_state_folder_is_left_and_its_delete_says_so(subject):
    """Its only grant named it, and left the template with it: the cleanup Delete is refused, the stack completes."""
    outside = "/team/values/watermark"
    stack = deployed_with_a_value(
        subject, "destroy", {"Watermark": watermark("destroy"), "Team": watermark("destroy", ParameterName=outside)}
    )

    status = deploy(subject, stack, {"Watermark": watermark("destroy")})

    assert status == "UPDATE_COMPLETE" and subject.value(outside) == EMPTY
    assert stack.problems() == [f"left behind with nothing holding it: ['{outside}']"]
    (failure,) = stack.failures
    assert (failure.phase, failure.logical_id) == ("cleanup", "Team")
    assert f"aws ssm delete-parameter --name {outside}" in failure.error
    assert subject.denied == [f"cleanup Delete Team {outside}: ssm:ListTagsForResource {ssm_arn(outside)}"]


# ---------------------------------------------------------------------- stack delete, and deployed again
@pytest.mark.parametrize("removal", REMOVALS)
def test_a_stack_delete_keeps_or_deletes_by_removal(subject, removal):
    stack = deployed_with_a_value(subject, removal)

    check_status(stack, stack.delete(), "DELETE_COMPLETE")

    assert subject.value() == (WRITTEN if removal == "retain" else None)
    if removal == "retain":
        assert subject.owners() == set()  # nobody holds it: a later stack's destroy mode is its only owner


@pytest.mark.parametrize("removal", REMOVALS)
def test_a_stack_deployed_again_owns_what_is_there_or_starts_afresh(subject, removal):
    stack = deployed_with_a_value(subject, removal)
    first_id = stack.stack_id
    check_status(stack, stack.delete(), "DELETE_COMPLETE")

    check_status(stack, deploy(subject, stack, {"Watermark": watermark(removal)}), "CREATE_COMPLETE")

    assert stack.stack_id != first_id
    assert subject.value() == (WRITTEN if removal == "retain" else EMPTY)
    ((key, label),) = subject.ssm.parameters[WATERMARK]["Tags"].items()
    assert key == OWNER_PREFIX + subject._state.owner({"StackId": stack.stack_id, "LogicalResourceId": "Watermark"})
    assert label == "SageMakerLlm/Watermark"
    # The new stack is the owner: switched to destroy, its delete deletes the retained value.
    check_status(stack, deploy(subject, stack, {"Watermark": watermark("destroy")}), "UPDATE_COMPLETE")
    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value() is None


# ---------------------------------------------------------------------- a parameter that existed before the stack
PROMOTED = "s3://artifacts/jobs/qwen-eagle-1/draft/"
"""A head promoted before the stack existed (by an earlier stack kept with removal retain, or by hand)."""
EARLIER_MARK = '{"endpoint/AllTraffic": "2026/11/02/10/capture-0001.jsonl"}'


@pytest.mark.parametrize("origin", ["kept by a deleted stack", "made by hand", "absent"])
def test_a_destroy_mode_first_deploy_that_adopts_a_value_and_fails_keeps_it(subject, origin):
    """The rollback deletes the new resource, the only owner tag on the parameter: the value existed before it (and
    one the resource created is deleted with it, as the stack's removal says)."""
    if origin == "kept by a deleted stack":
        earlier = deployed_with_a_value(subject, "retain")
        check_status(earlier, earlier.delete(), "DELETE_COMPLETE")
        assert subject.owners() == set()
        subject.before.add(WATERMARK)
    elif origin == "made by hand":
        ownerless(subject, WATERMARK, WRITTEN)
    stack = new_stack(subject)

    status = deploy(subject, stack, {"Watermark": watermark("destroy")}, fail_after=True)

    check_status(stack, status, "ROLLBACK_COMPLETE")
    assert [line.split()[:3] for line in stack.log] == [
        ["create", "Create", "Watermark"],
        ["rollback", "Delete", "Watermark"],
    ]
    if origin == "absent":
        assert subject.value() is None
        return
    assert subject.value() == WRITTEN
    assert subject.owners() == set()


@pytest.mark.parametrize("change", ["a new resource", "a new name"])
def test_an_update_that_adopts_a_value_and_rolls_back_keeps_it(subject, change):
    """A new resource's rollback Delete, or the rollback cleanup of the name a renamed resource moved to."""
    stack = deployed_with_a_value(subject, "destroy")
    if change == "a new resource":
        name, value = HEAD, PROMOTED
        template = {"Watermark": watermark("destroy"), "Head": watermark("destroy", ParameterName=HEAD)}
    else:
        name, value = MOVED, EARLIER_MARK
        template = {"Watermark": watermark("destroy", ParameterName=MOVED, SeedFrom=WATERMARK)}
    ownerless(subject, name, value)

    status = deploy(subject, stack, template, fail_after=True)

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE")
    assert subject.value(name) == value and subject.owners(name) == set()
    assert subject.value() == WRITTEN and subject.owners() == {"SageMakerLlm/Watermark"}


def test_a_destroy_mode_stack_keeps_a_value_it_adopted_when_it_is_deleted(subject):
    """Adopted means not made by the stack: a destroy-mode stack deletes only what it created."""
    ownerless(subject, HEAD, PROMOTED)
    stack = new_stack(subject)
    head = watermark("destroy", ParameterName=HEAD, InitialValue="none", Description="head")

    check_status(stack, deploy(subject, stack, {"Head": head}), "CREATE_COMPLETE")
    assert subject.value(HEAD) == PROMOTED and subject.owners(HEAD) == {"adopted:SageMakerLlm/Head"}
    check_status(stack, deploy(subject, stack, {"Head": {**head, "Description": "new"}}), "UPDATE_COMPLETE")
    assert subject.owners(HEAD) == {"adopted:SageMakerLlm/Head"}  # an update keeps what Create recorded

    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value(HEAD) == PROMOTED and subject.owners(HEAD) == set()


@pytest.mark.parametrize("fail_after", [False, True], ids=["moved", "move rolled back"])
def test_an_adopted_value_stays_adopted_when_its_construct_moves(subject, fail_after):
    """The new resource joins an adopter, so it adopts too: the move does not turn a kept value into a deleted one."""
    ownerless(subject, WATERMARK, WRITTEN)
    stack = new_stack(subject)
    check_status(stack, deploy(subject, stack, {"Watermark": watermark("destroy")}), "CREATE_COMPLETE")

    status = deploy(subject, stack, {"MovedWatermark": watermark("destroy")}, fail_after=fail_after)

    check_status(stack, status, "UPDATE_ROLLBACK_COMPLETE" if fail_after else "UPDATE_COMPLETE")
    assert subject.owners() == {f"adopted:SageMakerLlm/{'Watermark' if fail_after else 'MovedWatermark'}"}
    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value() == WRITTEN and subject.owners() == set()


def test_a_retain_mode_stack_that_took_a_value_over_deletes_it_once_switched_to_destroy(subject):
    """Retain mode never deletes, so taking a value over there is not an adoption: switching the stack to destroy
    later is a decision about everything it holds (a rollback of that switch deletes nothing)."""
    ownerless(subject, WATERMARK, WRITTEN)
    stack = new_stack(subject)
    check_status(stack, deploy(subject, stack, {"Watermark": watermark("retain")}), "CREATE_COMPLETE")
    check_status(
        stack, deploy(subject, stack, {"Watermark": watermark("destroy")}, fail_after=True), "UPDATE_ROLLBACK_COMPLETE"
    )
    assert subject.value() == WRITTEN and subject.owners() == {"SageMakerLlm/Watermark"}

    check_status(stack, deploy(subject, stack, {"Watermark": watermark("destroy")}), "UPDATE_COMPLETE")
    subject.before.discard(WATERMARK)  # the stack holds it now, as its own
    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value() is None


# ---------------------------------------------------------------------- SeedFrom and a plan's status
def test_a_new_head_parameter_starts_from_the_earlier_name_and_keeps_it(subject):
    stack = new_stack(subject)
    subject.ssm.parameters[EARLIER] = {
        "Value": "s3://artifacts/jobs/qwen-eagle-1/draft/",
        "Version": 4,
        "Description": "",
        "Tags": {},
    }
    head = {
        "ParameterName": HEAD,
        "InitialValue": "none",
        "Removal": "destroy",
        "Description": "head",
        "SeedFrom": EARLIER,
    }

    check_status(stack, deploy(subject, stack, {"Head": head}), "CREATE_COMPLETE")
    subject.ssm.write(HEAD, "s3://artifacts/jobs/qwen-eagle-2/draft/")
    check_status(stack, deploy(subject, stack, {"Head": {**head, "Description": "new"}}), "UPDATE_COMPLETE")

    assert subject.value(HEAD) == "s3://artifacts/jobs/qwen-eagle-2/draft/"  # seeded once, never again
    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value(HEAD) is None and subject.value(EARLIER) == "s3://artifacts/jobs/qwen-eagle-1/draft/"


@pytest.mark.parametrize("removal", REMOVALS)
def test_a_plan_status_is_read_at_every_deploy_and_survives_a_rollback(subject, removal):
    stack = new_stack(subject)
    status = {
        "ParameterName": STATUS,
        "InitialValue": "Unknown",
        "Removal": removal,
        "Description": "plan",
        "PlanName": PLAN,
    }

    check_status(stack, deploy(subject, stack, {"Status": status}), "CREATE_COMPLETE")
    assert subject.value(STATUS) == "NotFound"  # not bought yet
    subject.sagemaker.plans[PLAN] = "Active"
    check_status(stack, deploy(subject, stack, {"Status": {**status, "Description": "p"}}), "UPDATE_COMPLETE")
    assert subject.value(STATUS) == "Active"
    check_status(stack, deploy(subject, stack, {"MovedStatus": status}, fail_after=True), "UPDATE_ROLLBACK_COMPLETE")
    assert subject.value(STATUS) == "Active" and subject.owners(STATUS) == {"SageMakerLlm/Status"}

    check_status(stack, stack.delete(), "DELETE_COMPLETE")
    assert subject.value(STATUS) == ("Active" if removal == "retain" else None)


# ---------------------------------------------------------------------- the policy in the template
def test_the_policy_lets_the_cleanup_delete_a_parameter_the_template_no_longer_names():
    """Read from the synthesized policy: the cleanup actions cover a removed name, create and update do not."""
    before = {"Watermark": watermark("destroy"), "Head": watermark("destroy", ParameterName=HEAD)}
    after = policy_of({"Watermark": watermark("destroy")})

    assert all(
        allows(policy_of(before), action, ssm_arn(HEAD))
        for action in ("ssm:GetParameter", "ssm:PutParameter", "ssm:AddTagsToResource")
    )
    for action in ("ssm:ListTagsForResource", "ssm:RemoveTagsFromResource", "ssm:DeleteParameter"):
        assert allows(after, action, ssm_arn(HEAD)), action
        assert not allows(after, action, ssm_arn("/team/other/value")), action
    for action in ("ssm:GetParameter", "ssm:PutParameter", "ssm:AddTagsToResource", "ssm:GetParametersByPath"):
        assert not allows(after, action, ssm_arn(HEAD)), action
    wildcards = [
        (actions, r)
        for actions, resources in after
        for r in resources
        if "*" in r and any(a.startswith("ssm:") for a in actions)
    ]
    assert wildcards == [
        (("ssm:ListTagsForResource", "ssm:RemoveTagsFromResource", "ssm:DeleteParameter"), ssm_arn(f"{STATE_PREFIX}/*"))
    ]


def test_a_parameter_named_outside_the_state_folder_gets_the_cleanup_actions_by_name():
    policy = policy_of({"Team": watermark("destroy", ParameterName="/team/values/watermark")})

    assert all(
        allows(policy, action, ssm_arn("/team/values/watermark"))
        for action in ("ssm:PutParameter", "ssm:ListTagsForResource", "ssm:DeleteParameter")
    )
    assert not allows(policy, "ssm:DeleteParameter", ssm_arn("/team/values/other"))


@pytest.mark.parametrize("env", [None, Environment(account=ACCOUNT, region=REGION)], ids=["agnostic", "bound"])
def test_the_checks_acknowledge_exactly_the_cleanup_statement(env):
    """cdk-nag and the policy guard pass the folder wildcard for its three actions, and refuse a fourth on it."""
    app = App()
    checks.apply(app)
    stack = CdkStack(app, "S", env=env)
    RunTimeParameter(stack, "Value", parameter_name=WATERMARK, initial_value=EMPTY, description="d")
    app.synth()  # raises on any unacknowledged finding

    app = App()
    checks.apply(app)
    stack = CdkStack(app, "S", env=env)
    parameter = RunTimeParameter(stack, "Value", parameter_name=WATERMARK, initial_value=EMPTY, description="d")
    role = parameter.node.scope.node.find_child("RunTimeState").function.role  # type: ignore[union-attr]
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["ssm:PutParameter"], resources=[parameter_arn(stack, f"{STATE_PREFIX}/*")])
    )
    with pytest.raises(RuntimeError, match=r"ssm:PutParameter"):
        app.synth()
