"""Capacity plans, their extensions and their guards through CloudFormation's own sequences (``support.lifecycle``).

The rules of money: a plan is bought at most once and never without ``Purchase: approved``, whatever the
sequence (rollback, rename, re-create, deploy again after a stack delete); a bought plan is never deleted
(prepaid) and is not an orphan; a rollback leaves the stack holding the plan it held, and no sequence ends in
``UPDATE_ROLLBACK_FAILED``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.lifecycle import ACCOUNT, REGION, CloudFormationBackend, FakeClient, Stack, check, error

pytestmark = pytest.mark.usefixtures("replacement_rollback")  # under both readings of a replacement's rollback
UTC = UTC
NOW = datetime(2026, 1, 10, 11, 30, tzinfo=UTC)
ARN_PREFIX = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/"
PLAN = "SageMakerLlm-p5e"
PLAN_TYPE = "Custom::SageMakerCapacityPlan"
EXTENSION_TYPE = "Custom::SageMakerCapacityPlanExtension"
GUARD_TYPE = "Custom::SageMakerCapacityPlanGuard"


def plan_props(name: str = PLAN, *, purchase: str = "approved", **changes: str) -> dict[str, str]:
    return {
        "PlanName": name,
        "InstanceType": "ml.p5e.48xlarge",
        "InstanceCount": "4",
        "DurationDays": "7",
        "StartTimeAfter": "2026-01-10T00:00:00Z",
        "EndTimeBefore": "2026-02-10T00:00:00Z",
        "MaxUpfrontFeeUsd": "100000",
        "Purchase": purchase,
        "ConsentName": "p5e",
        **changes,
    }


def extension_props(until: str = "2026-01-27T11:30:00Z", *, extend: str = "approved") -> dict[str, str]:
    return {"PlanName": PLAN, "ExtendUntil": until, "MaxUpfrontFeeUsd": "50000", "Extend": extend, "ConsentName": "p5e"}


class FakeTrainingPlans:
    """SageMaker's training plans: offerings to search, plans bought by name (unique), extensions bought once.

    Statuses as botocore's model names them (``Scheduled``, ``Active``, ``Expired``...). An extension moves the
    plan's EndTime and duration, as DescribeTrainingPlan reports a plan extended.
    """

    def __init__(self) -> None:
        self.plans: dict[str, dict[str, Any]] = {}
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.bought: list[str] = []
        """The plan name of every CreateTrainingPlan request, in order."""
        self.extended: list[str] = []
        self.extension_offerings: dict[str, tuple[str, int]] = {}  # offering id -> (plan name, hours)
        start = NOW + timedelta(days=1)
        self.offerings = [self._offering("tpo-cheap", "80000.00", start), self._offering("tpo-dear", "95000.00", start)]

    @staticmethod
    def _offering(offering_id: str, fee: str, start: datetime, days: int = 7) -> dict[str, Any]:
        return {
            "TrainingPlanOfferingId": offering_id,
            "TargetResources": ["endpoint"],
            "DurationHours": days * 24,
            "DurationMinutes": 0,
            "UpfrontFee": fee,
            "CurrencyCode": "USD",
            "ReservedCapacityOfferings": [
                {
                    "InstanceType": "ml.p5e.48xlarge",
                    "InstanceCount": 4,
                    "AvailabilityZone": "us-east-1a",
                    "DurationHours": days * 24,
                    "DurationMinutes": 0,
                    "StartTime": start,
                    "EndTime": start + timedelta(days=days),
                }
            ],
        }

    def _plan(self, name: str) -> dict[str, Any]:
        found = self.plans.get(name) or next((p for p in self.plans.values() if p["TrainingPlanArn"] == name), None)
        if found is None:
            raise error("ResourceNotFound", f"Training plan {name} not found")
        return found

    def SearchTrainingPlanOfferings(self, **params: Any) -> dict[str, Any]:  # noqa: N802 - the API's names
        if "TrainingPlanArn" in params:
            plan = self._plan(params["TrainingPlanArn"])
            end, hours = plan["EndTime"], params["DurationHours"]
            offering_id = f"tpeo-{len(self.extension_offerings) + 1}"
            self.extension_offerings[offering_id] = (plan["TrainingPlanName"], hours)
            return {
                "TrainingPlanOfferings": [],
                "TrainingPlanExtensionOfferings": [
                    {
                        "TrainingPlanExtensionOfferingId": offering_id,
                        "AvailabilityZone": "us-east-1a",
                        "StartDate": end,
                        "EndDate": end + timedelta(hours=hours),
                        "DurationHours": hours,
                        "UpfrontFee": "30000.00",
                        "CurrencyCode": "USD",
                    }
                ],
            }
        return {"TrainingPlanOfferings": copy.deepcopy(self.offerings)}

    def CreateTrainingPlan(self, TrainingPlanName: str, TrainingPlanOfferingId: str, **_: Any) -> dict[str, Any]:  # noqa: N802,N803
        self.bought.append(TrainingPlanName)  # every CreateTrainingPlan request, answered or refused
        if TrainingPlanName in self.plans:
            raise error("ResourceInUse", f"Training plan {TrainingPlanName} already exists")
        offering = next(o for o in self.offerings if o["TrainingPlanOfferingId"] == TrainingPlanOfferingId)
        capacity = offering["ReservedCapacityOfferings"][0]
        arn = ARN_PREFIX + TrainingPlanName.lower()
        self.plans[TrainingPlanName] = {
            "TrainingPlanArn": arn,
            "TrainingPlanName": TrainingPlanName,
            "Status": "Scheduled",
            "DurationHours": offering["DurationHours"],
            "DurationMinutes": 0,
            "StartTime": capacity["StartTime"],
            "EndTime": capacity["EndTime"],
            "UpfrontFee": offering["UpfrontFee"],
            "CurrencyCode": "USD",
            "TotalInstanceCount": 4,
            "AvailableInstanceCount": 4,
            "InUseInstanceCount": 0,
            "TargetResources": ["endpoint"],
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/rc-1",
                    "InstanceType": capacity["InstanceType"],
                    "TotalInstanceCount": 4,
                    "Status": "Scheduled",
                }
            ],
        }
        return {"TrainingPlanArn": arn}

    def DescribeTrainingPlan(self, TrainingPlanName: str) -> dict[str, Any]:  # noqa: N802,N803
        return self._plan(TrainingPlanName)

    def DescribeTrainingPlanExtensionHistory(self, TrainingPlanArn: str, **_: Any) -> dict[str, Any]:  # noqa: N802,N803
        return {"TrainingPlanExtensions": self.history.get(TrainingPlanArn, [])}

    def ExtendTrainingPlan(self, TrainingPlanExtensionOfferingId: str) -> dict[str, Any]:  # noqa: N802,N803
        name, hours = self.extension_offerings[TrainingPlanExtensionOfferingId]
        plan = self._plan(name)
        extension = {
            "TrainingPlanExtensionOfferingId": TrainingPlanExtensionOfferingId,
            "StartDate": plan["EndTime"],
            "EndDate": plan["EndTime"] + timedelta(hours=hours),
            "Status": "Active",
            "DurationHours": hours,
            "UpfrontFee": "30000.00",
            "CurrencyCode": "USD",
        }
        self.history.setdefault(plan["TrainingPlanArn"], []).append(extension)
        plan["EndTime"] = extension["EndDate"]
        plan["DurationHours"] += hours
        self.extended.append(TrainingPlanExtensionOfferingId)
        return {"TrainingPlanExtensions": [extension]}

    def activate(self, name: str = PLAN) -> None:
        self.plans[name]["Status"] = "Active"

    def expire(self, name: str = PLAN) -> None:
        self.plans[name]["Status"] = "Expired"


class PlanSubject:
    """The purchase handler (plans, and extensions when the properties carry ExtendUntil) as the provider framework
    runs it (on_event only), against the fake plans and a CloudFormation that answers each stack's status."""

    resource_type = PLAN_TYPE

    def __init__(self, handler: Any, plans: FakeTrainingPlans, context: Any) -> None:
        self.handler, self.plans, self.context = handler, plans, context
        self.cloudformation = CloudFormationBackend()
        self.sagemaker = handler._sagemaker.inject(FakeClient("sagemaker", plans))
        handler._cloudformation.inject(FakeClient("cloudformation", self.cloudformation))

    def stack(self, **kwargs: Any) -> Stack:
        stack = Stack(self, **kwargs)
        self.cloudformation.stacks.append(stack)
        return stack

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        if "ExtendUntil" in event["ResourceProperties"]:
            event = {**event, "ResourceType": EXTENSION_TYPE}
        return self.handler.handler(copy.deepcopy(event), self.context)

    def live(self) -> set[str]:
        return set(self.plans.plans)

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return {properties["PlanName"]}

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return True  # DeletionPolicy and UpdateReplacePolicy Retain: a plan is prepaid, never deleted

    def calls(self, operation: str) -> int:
        return sum(1 for name, _ in self.sagemaker.calls if name == operation)


@pytest.fixture
def plans() -> FakeTrainingPlans:
    return FakeTrainingPlans()


@pytest.fixture
def subject(load_handler, plans, lambda_context) -> PlanSubject:
    return PlanSubject(load_handler("capacity_plan"), plans, lambda_context)


# ----------------------------------------------------------------------------- plans


def test_bought_once_updated_in_place_and_retained_on_delete(subject, plans):
    stack = subject.stack()
    assert stack.deploy({"Plan": plan_props()}) == "CREATE_COMPLETE"
    arn = stack.resources["Plan"].physical_id
    assert arn == ARN_PREFIX + PLAN.lower() and plans.bought == [PLAN]

    # the next deploy has no consent and a higher cap: an update in place, nothing bought
    assert stack.deploy({"Plan": plan_props(purchase="not-approved", MaxUpfrontFeeUsd="120000")}) == "UPDATE_COMPLETE"
    assert stack.resources["Plan"].physical_id == arn

    assert stack.delete() == "DELETE_COMPLETE"
    check(stack, status="DELETE_COMPLETE")
    assert set(plans.plans) == {PLAN} and plans.bought == [PLAN]


def test_without_consent_nothing_is_bought_nor_searched(subject, plans):
    stack = subject.stack()
    assert stack.deploy({"Plan": plan_props(purchase="not-approved")}) == "ROLLBACK_COMPLETE"
    check(stack, status="ROLLBACK_COMPLETE")
    assert "-c purchase=p5e" in stack.failures[0].error
    assert plans.bought == [] and subject.calls("SearchTrainingPlanOfferings") == 0


def test_a_rename_adopts_the_plan_and_its_rollback_keeps_the_old_resource(subject, plans):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props()})
    arn = stack.resources["Plan"].physical_id

    assert stack.deploy({"Renamed": plan_props(purchase="not-approved")}, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert {k: r.physical_id for k, r in stack.resources.items()} == {"Plan": arn}

    assert stack.deploy({"Renamed": plan_props(purchase="approved")}) == "UPDATE_COMPLETE"
    check(stack, status="UPDATE_COMPLETE")
    assert {k: r.physical_id for k, r in stack.resources.items()} == {"Renamed": arn}
    assert "cleanup Delete Plan " + arn in stack.log
    assert plans.bought == [PLAN]


@pytest.mark.parametrize(
    "change", [{"InstanceCount": "8"}, {"PlanName": "SageMakerLlm-p5e-2"}, {"EndTimeBefore": "2026-03-01T00:00:00Z"}]
)
def test_a_refused_change_rolls_back_to_the_plan_it_holds(subject, plans, change):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props()})
    arn = stack.resources["Plan"].physical_id

    assert stack.deploy({"Plan": plan_props(**change)}) == "UPDATE_ROLLBACK_COMPLETE"

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert [(f.phase, f.request_type) for f in stack.failures] == [("update", "Update")]
    assert "is reserved and paid; it cannot be changed" in stack.failures[0].error
    assert stack.log[-1] == f"rollback Update Plan {arn}"
    assert stack.resources["Plan"].physical_id == arn and stack.resources["Plan"].properties == plan_props()
    assert plans.bought == [PLAN] and set(plans.plans) == {PLAN}


def test_a_new_plan_name_under_a_new_id_buys_the_new_plan_once_and_keeps_the_old(subject, plans):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props()})

    template = {"Next": plan_props("SageMakerLlm-p5e-next")}
    assert stack.deploy(template, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert set(stack.resources) == {"Plan"}
    assert plans.bought == [PLAN, "SageMakerLlm-p5e-next"]  # bought with consent; a rollback cannot refund it

    assert stack.deploy(template) == "UPDATE_COMPLETE"  # the retry adopts what the rolled-back deploy bought
    check(stack, status="UPDATE_COMPLETE")
    assert plans.bought == [PLAN, "SageMakerLlm-p5e-next"]
    assert set(plans.plans) == {PLAN, "SageMakerLlm-p5e-next"}


def test_a_failed_stack_create_keeps_the_plan_and_the_next_create_adopts_it(subject, plans):
    stack = subject.stack()
    assert stack.deploy({"Plan": plan_props()}, fail_after=True) == "ROLLBACK_COMPLETE"
    check(stack, status="ROLLBACK_COMPLETE")
    assert stack.resources == {} and plans.bought == [PLAN]

    assert stack.delete() == "DELETE_COMPLETE"
    assert stack.deploy({"Plan": plan_props(purchase="not-approved")}) == "CREATE_COMPLETE"
    check(stack, status="CREATE_COMPLETE")
    assert stack.resources["Plan"].physical_id == ARN_PREFIX + PLAN.lower() and plans.bought == [PLAN]


def test_deleted_and_deployed_again_the_stack_adopts_and_buys_nothing(subject, plans):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props()})
    first = stack.stack_id
    stack.delete()

    assert stack.deploy({"Plan": plan_props()}) == "CREATE_COMPLETE"
    check(stack, status="CREATE_COMPLETE")
    assert stack.stack_id != first and plans.bought == [PLAN]


# ----------------------------------------------------------------------------- extensions


def test_an_extension_is_bought_once_through_replacement_rollback_and_redeploy(subject, plans):
    stack = subject.stack()
    plans_and_extension = {"Plan": plan_props(), "Extension": extension_props()}
    assert stack.deploy(plans_and_extension) == "CREATE_COMPLETE"
    assert len(plans.extended) == 1
    first = stack.resources["Extension"].physical_id

    # a later ExtendUntil is a new physical id: bought once, and its rollback deletes the new id (no call)
    later = {"Plan": plan_props(purchase="not-approved"), "Extension": extension_props("2026-02-03T11:30:00Z")}
    assert stack.deploy(later, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.resources["Extension"].physical_id == first
    assert len(plans.extended) == 2  # prepaid: the rollback cannot take it back
    assert stack.deploy(later) == "UPDATE_COMPLETE"  # the retry finds it in the plan's history
    check(stack, status="UPDATE_COMPLETE")
    assert len(plans.extended) == 2

    # without the consent nothing more is bought; the rollback back to an earlier date buys nothing either
    assert (
        stack.deploy({"Plan": plan_props(purchase="not-approved"), "Extension": extension_props(extend="not-approved")})
        == "UPDATE_COMPLETE"
    )
    assert len(plans.extended) == 2 and plans.bought == [PLAN]

    # a later date without the consent is refused; its rollback, back to the date bought, completes
    held = stack.resources["Extension"].physical_id
    assert (
        stack.deploy(
            {
                "Plan": plan_props(purchase="not-approved"),
                "Extension": extension_props("2026-03-01T11:30:00Z", extend="not-approved"),
            }
        )
        == "UPDATE_ROLLBACK_COMPLETE"
    )
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert "-c extend=p5e" in stack.failures[-1].error
    assert stack.log[-1] == f"rollback Update Extension {held}" and stack.resources["Extension"].physical_id == held
    assert len(plans.extended) == 2 and plans.bought == [PLAN]


def test_a_rollback_never_buys_an_extension_it_no_longer_finds(subject, plans):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props(), "Extension": extension_props()})
    plan = plans.plans[PLAN]
    (bought,) = plans.history[plan["TrainingPlanArn"]]
    bought["Status"] = "Failed"  # SageMaker could not extend the plan after all
    plan["EndTime"], plan["DurationHours"] = bought["StartDate"], plan["DurationHours"] - bought["DurationHours"]

    # the next deploy, without consent, asks a later date and is refused; its rollback returns to the
    # approved properties of the first deploy, whose extension failed
    assert (
        stack.deploy(
            {
                "Plan": plan_props(purchase="not-approved"),
                "Extension": extension_props("2026-02-03T11:30:00Z", extend="not-approved"),
            }
        )
        == "UPDATE_ROLLBACK_COMPLETE"
    )

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.log[-2].startswith("rollback Update Extension ")
    assert len(plans.extended) == 1 and plans.bought == [PLAN]


def test_an_extended_plan_is_adopted_again_after_a_delete_and_under_a_new_id(subject, plans):
    stack = subject.stack()
    stack.deploy({"Plan": plan_props(), "Extension": extension_props()})

    # a rename of the extended plan adopts it
    assert (
        stack.deploy(
            {"Renamed": plan_props(purchase="not-approved"), "Extension": extension_props(extend="not-approved")}
        )
        == "UPDATE_COMPLETE"
    )
    check(stack, status="UPDATE_COMPLETE")

    stack.delete()
    assert (
        stack.deploy({"Plan": plan_props(purchase="not-approved"), "Extension": extension_props(extend="not-approved")})
        == "CREATE_COMPLETE"
    )
    check(stack, status="CREATE_COMPLETE")
    assert plans.bought == [PLAN] and len(plans.extended) == 1


# ----------------------------------------------------------------------------- guards


def guard_props(*, inputs: str = "digest-1", bound: str = "true") -> dict[str, Any]:
    return {
        "PlanName": PLAN,
        "InstanceType": "ml.p5e.48xlarge",
        "MaxInstances": "2",
        "WhenNotActive": "fail",
        "Bound": bound,
        "EndpointConfigInputs": [inputs],
        "UpdatePolicy": "BLUE_GREEN",
    }


class GuardSubject:
    resource_type = GUARD_TYPE

    def __init__(self, handler: Any, plans: FakeTrainingPlans, context: Any) -> None:
        self.handler, self.plans, self.context = handler, plans, context
        self.sagemaker = handler._sagemaker.inject(FakeClient("sagemaker", plans))
        self.cloudformation = CloudFormationBackend()
        handler._cloudformation.inject(FakeClient("cloudformation", self.cloudformation))
        self.on_rollback: Callable[[], None] | None = None

    def stack(self, **kwargs: Any) -> Stack:
        stack = Stack(self, **kwargs)
        self.cloudformation.stacks.append(stack)
        return stack

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.on_rollback is not None and any(
            s.stack_id == event["StackId"] and s.status == "UPDATE_ROLLBACK_IN_PROGRESS"
            for s in self.cloudformation.stacks
        ):
            self.on_rollback()  # what happened to the plan since the forward update
        return self.handler.handler(copy.deepcopy(event), self.context)

    def live(self) -> set[str]:
        return set(self.plans.plans)

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return {properties["PlanName"]} if properties.get("Bound") == "true" else set()

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return False


@pytest.fixture
def guard(load_handler, plans, lambda_context, subject) -> GuardSubject:
    subject.stack().deploy({"Plan": plan_props()})
    plans.activate()
    handler = load_handler("capacity_plan_guard")
    handler._now = lambda: NOW + timedelta(days=2)  # within the plan
    return GuardSubject(handler, plans, lambda_context)


def test_a_guard_is_replaced_on_every_change_and_its_rollback_checks_nothing(guard, plans, replacement_rollback):
    stack = guard.stack(name="Serving")
    assert stack.deploy({"Guard": guard_props()}) == "CREATE_COMPLETE"
    first = stack.resources["Guard"].physical_id
    assert stack.resources["Guard"].physical_id.startswith(PLAN + "/")

    calls = len(guard.sagemaker.calls)
    assert stack.deploy({"Guard": guard_props(inputs="digest-2")}, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.resources["Guard"].physical_id == first
    # the forward check; under the reading that sends the replacement its old properties, a describe of the plan
    # for its data too (not a check: the plan could have expired since)
    assert len(guard.sagemaker.calls) == calls + (2 if replacement_rollback == "update" else 1)
    assert stack.log[-1].startswith("rollback-cleanup Delete Guard " + PLAN + "/")

    assert stack.deploy({"Guard": guard_props(inputs="digest-2")}) == "UPDATE_COMPLETE"
    assert stack.log[-1] == f"cleanup Delete Guard {first}"
    assert stack.deploy({"Renamed": guard_props(inputs="digest-2")}) == "UPDATE_COMPLETE"
    assert stack.delete() == "DELETE_COMPLETE"
    check(stack, status="DELETE_COMPLETE")
    assert stack.deploy({"Guard": guard_props()}) == "CREATE_COMPLETE"
    check(stack, status="CREATE_COMPLETE")


def test_a_guard_that_refuses_an_update_lets_its_rollback_complete(guard, plans):
    stack = guard.stack(name="Serving")
    stack.deploy({"Guard": guard_props()})
    first = stack.resources["Guard"].physical_id
    plans.expire()  # the plan ended; the next endpoint config change is refused

    assert stack.deploy({"Guard": guard_props(inputs="digest-2")}) == "UPDATE_ROLLBACK_COMPLETE"

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert [(f.phase, f.request_type) for f in stack.failures] == [("update", "Update")]
    assert "its status is Expired, not Active" in stack.failures[0].error
    assert stack.log[-1] == f"rollback Update Guard {first}"
    assert stack.resources["Guard"].physical_id == first


def test_a_replaced_guard_is_not_checked_again_by_the_rollback(guard, plans):
    stack = guard.stack(name="Serving")
    stack.deploy({"Guard": guard_props()})
    first = stack.resources["Guard"].physical_id
    guard.on_rollback = plans.expire  # the plan ended while the endpoint update (which failed) ran

    assert stack.deploy({"Guard": guard_props(inputs="digest-2")}, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.resources["Guard"].physical_id == first and not stack.failures
