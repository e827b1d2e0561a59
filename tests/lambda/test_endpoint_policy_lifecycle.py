"""Endpoint policy custom resource through CloudFormation's own sequences (``support.lifecycle``), against a fake
SageMaker that keeps one policy per endpoint as the real one does (``PutEndpointPolicy`` replaces it whole,
``DeleteEndpointPolicy`` removes it) and checks every request against botocore's model.

Each resource owns the statements whose ``Sid`` carries its owner mark; ``live`` is every statement of every
policy (``<endpoint>/<Sid>``) and a resource ``needs`` its own, so ``check`` fails when a sequence deletes a
statement a live resource still needs, or leaves one behind that no resource holds. Two stacks (two ``Stack``
objects on one fake) route to one endpoint: each keeps the other's statements through every sequence, and the
policy is gone only when neither has a statement left in it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from conftest import FakeLambdaContext
from support.lifecycle import ACCOUNT, REGION, FakeClient, Stack, check, error

pytestmark = pytest.mark.usefixtures("replacement_rollback")
"""Every sequence under both readings of how CloudFormation rolls back a replaced custom resource."""

RESOURCE_TYPE = "Custom::SageMakerEndpointPolicy"
CHAT, CODE = "UsEast1-SageMakerLlm-Chat", "UsEast1-SageMakerLlm-Code"
FOREIGN = [
    {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::999999999999:root"},
        "Action": "sagemaker:DescribeEndpoint",
        "Resource": "*",
    },
    {
        "Sid": "AddedByHand",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::888888888888:root"},
        "Action": "sagemaker:DescribeEndpoint",
        "Resource": "*",
    },
]
"""Statements another writer put on the endpoint: one without a Sid, one with a Sid of its own."""


def document(endpoint: str, router_account: str = "111111111111", router: str = "Chat") -> str:
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/{endpoint}"
    resources = list(dict.fromkeys([arn, arn.lower()]))
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "InvokeThroughRouter",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{router_account}:root"},
                    "Action": "sagemaker:InvokeEndpoint",
                    "Resource": resources,
                    "Condition": {
                        "ArnEquals": {
                            "sagemaker:SourceInferenceRouterArn": "arn:aws:sagemaker:us-west-2:"
                            f"{router_account}:inference-router/"
                            f"{router}"
                        }
                    },
                },
                {
                    "Sid": "DescribeForRouter",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{router_account}:root"},
                    "Action": "sagemaker:DescribeEndpoint",
                    "Resource": resources,
                },
            ],
        },
        separators=(",", ":"),
    )


def props(endpoint: str = CHAT, **kwargs: Any) -> dict[str, Any]:
    return {"EndpointName": endpoint, "ResourcePolicy": document(endpoint, **kwargs)}


def expected_sids(stack_id: str, logical_id: str, policy: str) -> set[str]:
    """The Sids the handler's docstring promises: ``<Sid><Cfn + 12 hex of the owner><8 hex of the content>``."""
    mark = "Cfn" + hashlib.sha256(f"{stack_id}/{logical_id}".encode()).hexdigest()[:12]
    sids = set()
    for statement in json.loads(policy)["Statement"]:
        body = {k: v for k, v in statement.items() if k != "Sid"}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]
        sids.add(f"{statement['Sid']}{mark}{digest}")
    return sids


# ---------------------------------------------------------------------- fake SageMaker
class FakeSageMaker:
    """Endpoints (names ignore case, as SageMaker's do) and at most one policy each."""

    def __init__(self, *endpoints: str) -> None:
        self.endpoints = {name.lower() for name in endpoints}
        self.policies: dict[str, str] = {}
        self.after_put: list[Callable[[str], None]] = []
        """Another writer's writes, each run once right after one of the handler's puts lands."""

    def _endpoint(self, name: str) -> str:
        if name.lower() not in self.endpoints:
            raise error("ResourceNotFound", f'Could not find endpoint "{name}".')
        return name.lower()

    def _arn(self, key: str) -> str:
        return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/{key}"

    def GetEndpointPolicy(self, EndpointName: str) -> dict[str, Any]:
        key = self._endpoint(EndpointName)
        if key not in self.policies:
            raise error("ValidationException", f"Endpoint {EndpointName} does not have a resource policy.")
        return {"EndpointName": EndpointName, "EndpointArn": self._arn(key), "ResourcePolicy": self.policies[key]}

    def PutEndpointPolicy(self, EndpointName: str, ResourcePolicy: str) -> dict[str, Any]:
        key = self._endpoint(EndpointName)
        statements = json.loads(ResourcePolicy)["Statement"]
        sids = [s["Sid"] for s in statements if "Sid" in s]
        if len(sids) != len(set(sids)) or not all(sid.isalnum() and sid.isascii() for sid in sids):
            raise error("MalformedPolicyDocument", f"Statement ids must be unique and alphanumeric: {sids}")
        self.policies[key] = ResourcePolicy
        if self.after_put:
            self.after_put.pop(0)(key)
        return {"EndpointArn": self._arn(key)}

    def DeleteEndpointPolicy(self, EndpointName: str) -> dict[str, Any]:
        self.policies.pop(self._endpoint(EndpointName), None)
        return {}

    # what the tests read
    def statements(self, endpoint: str) -> list[dict[str, Any]]:
        text = self.policies.get(endpoint.lower())
        return json.loads(text)["Statement"] if text else []

    def sids(self, endpoint: str) -> set[str]:
        return {s["Sid"] for s in self.statements(endpoint) if "Sid" in s}


class PolicySubject:
    """``Custom::SageMakerEndpointPolicy``: the handler, one fake SageMaker (shared by every stack on it)."""

    resource_type = RESOURCE_TYPE

    def __init__(self, handler: Any, sagemaker: FakeSageMaker) -> None:
        self.handler = handler
        self.sagemaker = sagemaker
        self.client = FakeClient("sagemaker", sagemaker)
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        self.handler._sagemaker.inject(self.client)
        answer = self.handler.on_event(copy.deepcopy(event), FakeLambdaContext())
        key = (answer["PhysicalResourceId"], _key(event["ResourceProperties"]))
        self._owners[key] = (event["StackId"], event["LogicalResourceId"])  # the latest writer of these properties
        return answer

    def live(self) -> set[str]:
        return {
            f"{endpoint}/{s['Sid']}"
            for endpoint, text in self.sagemaker.policies.items()
            for s in json.loads(text)["Statement"]
            if "Sid" in s
        }

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        """The statements (``<endpoint>/<Sid>``) the resource of this physical id and these properties wrote."""
        owner = self._owners.get((physical_id, _key(properties)))
        if owner is None:
            return set()
        return {f"{physical_id.lower()}/{sid}" for sid in expected_sids(*owner, properties["ResourcePolicy"])}

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return False


def _key(properties: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in properties.items() if k != "ServiceToken"}, sort_keys=True)


@pytest.fixture
def handler(load_handler):
    module = load_handler("endpoint_policy")
    module.SETTLE_SECONDS = 0.0
    return module


@pytest.fixture
def sagemaker() -> FakeSageMaker:
    return FakeSageMaker(CHAT, CODE)


def stack_on(handler: Any, sagemaker: FakeSageMaker, name: str = "SageMakerLlm") -> Stack:
    return Stack(PolicySubject(handler, sagemaker), name=name)


def owned(stack: Stack, logical_id: str = "ChatPolicy") -> set[str]:
    resource = stack.resources[logical_id]
    return expected_sids(stack.stack_id, logical_id, resource.properties["ResourcePolicy"])


# ---------------------------------------------------------------------- one stack
def test_create_update_replace_and_delete(handler, sagemaker):
    stack = stack_on(handler, sagemaker)

    stack.deploy({"ChatPolicy": props()})
    check(stack, status="CREATE_COMPLETE")
    first = owned(stack)
    assert sagemaker.sids(CHAT) == first and len(first) == 2

    stack.deploy({"ChatPolicy": props(router_account="333333333333")})  # in place: the statements change
    check(stack, status="UPDATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack) and not owned(stack) & first
    assert stack.resources["ChatPolicy"].physical_id == CHAT

    stack.deploy({"ChatPolicy": props(CODE)})  # another endpoint: a new physical id, the old one's cleanup
    check(stack, status="UPDATE_COMPLETE")
    assert stack.resources["ChatPolicy"].physical_id == CODE
    assert sagemaker.sids(CODE) == owned(stack)
    assert CHAT.lower() not in sagemaker.policies, "the cleanup deletes the policy it left empty"
    assert [line.split()[:2] for line in stack.log if line.startswith("cleanup")] == [["cleanup", "Delete"]]

    stack.delete()
    check(stack, status="DELETE_COMPLETE")
    assert sagemaker.policies == {}


def test_a_failed_update_and_a_failed_replacement_roll_back(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props()})
    before = owned(stack)

    stack.deploy({"ChatPolicy": props(router_account="333333333333")}, fail_after=True)
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert sagemaker.sids(CHAT) == before

    stack.deploy({"ChatPolicy": props(CODE)}, fail_after=True)
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.resources["ChatPolicy"].physical_id == CHAT
    assert sagemaker.sids(CHAT) == before
    assert CODE.lower() not in sagemaker.policies, "the rollback's cleanup removes what the update wrote there"

    stack.deploy({"ChatPolicy": props(), "CodePolicy": props(CODE)}, fail_after=True)  # a new resource rolled back
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert CODE.lower() not in sagemaker.policies


def test_a_failed_first_create_rolls_back_to_nothing(handler, sagemaker):
    stack = stack_on(handler, sagemaker)

    stack.deploy({"ChatPolicy": props(), "CodePolicy": props(CODE)}, fail_after=True)

    check(stack, status="ROLLBACK_COMPLETE")
    assert sagemaker.policies == {}


def test_deleted_and_deployed_again_the_stack_owns_none_of_the_old_statements(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props()})
    old_id, old = stack.stack_id, owned(stack)
    stack.delete()
    check(stack, status="DELETE_COMPLETE")

    stack.deploy({"ChatPolicy": props()})

    check(stack, status="CREATE_COMPLETE")
    assert stack.stack_id != old_id
    assert sagemaker.sids(CHAT) == owned(stack) and not owned(stack) & old


def test_two_resources_of_one_stack_on_one_endpoint_keep_each_others_statements(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props(), "OtherPolicy": props(router="Other")})
    check(stack, status="CREATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack) | owned(stack, "OtherPolicy")

    stack.deploy({"ChatPolicy": props()})  # the other resource is removed: its cleanup takes its statements only
    check(stack, status="UPDATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack)


def test_the_same_endpoint_in_other_letters_keeps_its_physical_id_and_its_statements(handler, sagemaker):
    """SageMaker's endpoint names ignore case: a new physical id would make CloudFormation's cleanup delete, from
    the same endpoint, the statements the update just wrote."""
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props()})

    stack.deploy({"ChatPolicy": {**props(), "EndpointName": CHAT.lower()}})

    check(stack, status="UPDATE_COMPLETE")
    assert stack.resources["ChatPolicy"].physical_id == CHAT
    assert sagemaker.sids(CHAT) == owned(stack)
    assert not [line for line in stack.log if line.startswith("cleanup")]


# ---------------------------------------------------------------------- two stacks, one endpoint
def test_two_stacks_on_one_endpoint_keep_each_others_statements_through_every_sequence(handler, sagemaker):
    a = stack_on(handler, sagemaker, "Platform")
    b = stack_on(handler, sagemaker, "Platform")  # the same name in another account's pipeline, or another copy
    stacks = (a, b)

    def both(expect_a: str, expect_b: str) -> None:
        check(a, status=expect_a)
        check(b, status=expect_b)
        held = set().union(*(owned(s, k) for s in stacks for k in s.resources if s.resources[k].physical_id == CHAT))
        assert sagemaker.sids(CHAT) == held

    a.deploy({"ChatPolicy": props()})
    b.deploy({"ChatPolicy": props(router_account="222222222222", router="Code")})
    both("CREATE_COMPLETE", "CREATE_COMPLETE")
    assert len(sagemaker.sids(CHAT)) == 4
    assert {s["Principal"]["AWS"] for s in sagemaker.statements(CHAT)} == {
        "arn:aws:iam::111111111111:root",
        "arn:aws:iam::222222222222:root",
    }, "b's put kept a's statements"

    a.deploy({"ChatPolicy": props(router_account="333333333333")})
    both("UPDATE_COMPLETE", "CREATE_COMPLETE")
    b.deploy({"ChatPolicy": props(router_account="444444444444", router="Code")}, fail_after=True)
    both("UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    a.deploy({"ChatPolicy": props(CODE)})  # a moves away; b stays
    both("UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    a.deploy({"ChatPolicy": props(router_account="333333333333")})  # and back
    both("UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    assert CODE.lower() not in sagemaker.policies
    a.deploy({"ChatPolicy": props(CODE)}, fail_after=True)
    both("UPDATE_ROLLBACK_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")

    a.delete()
    both("DELETE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(b)
    a.deploy({"ChatPolicy": props()})  # deployed again: a new stack id
    both("CREATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
    b.delete()
    both("CREATE_COMPLETE", "DELETE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(a)
    a.delete()
    both("DELETE_COMPLETE", "DELETE_COMPLETE")
    assert sagemaker.policies == {}, "the policy goes when neither stack has a statement in it"


def test_statements_of_other_writers_stay_as_they_are(handler, sagemaker):
    """A statement without a Sid and one with a Sid of its own, and the policy's Id, outlive every sequence."""
    sagemaker.policies[CHAT.lower()] = json.dumps({"Version": "2012-10-17", "Id": "Shared", "Statement": FOREIGN})
    stack = stack_on(handler, sagemaker)

    stack.deploy({"ChatPolicy": props()})
    stack.deploy({"ChatPolicy": props(router_account="333333333333")})
    stack.deploy({"ChatPolicy": props(router_account="444444444444")}, fail_after=True)
    stack.deploy({"ChatPolicy": props(CODE)})
    stack.deploy({"ChatPolicy": props()})
    check(stack, status="UPDATE_COMPLETE")
    assert sagemaker.statements(CHAT)[:2] == FOREIGN
    assert json.loads(sagemaker.policies[CHAT.lower()])["Id"] == "Shared"

    stack.delete()

    check(stack, status="DELETE_COMPLETE")
    assert json.loads(sagemaker.policies[CHAT.lower()]) == {
        "Version": "2012-10-17",
        "Id": "Shared",
        "Statement": FOREIGN,
    }


# ---------------------------------------------------------------------- concurrent writers
def stale_write(sagemaker: FakeSageMaker, extra: dict[str, Any]) -> Callable[[str], None]:
    """Another writer that read the policy before this put and writes its own change on what it read."""
    before = dict(sagemaker.policies)

    def write(key: str) -> None:
        document = json.loads(before.get(key) or '{"Version": "2012-10-17", "Statement": []}')
        document["Statement"].append(extra)
        sagemaker.policies[key] = json.dumps(document)

    return write


def test_a_concurrent_write_that_drops_the_statements_is_written_again(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    theirs = {"Sid": "OtherStackCfn000000000000aaaaaaaa", **FOREIGN[0]}
    sagemaker.after_put.append(stale_write(sagemaker, theirs))

    stack.deploy({"ChatPolicy": props()})

    check(stack, status="CREATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack) | {theirs["Sid"]}
    assert [op for op, _ in stack.subject.client.calls] == [  # type: ignore[attr-defined]
        "GetEndpointPolicy",
        "PutEndpointPolicy",
        "GetEndpointPolicy",
        "GetEndpointPolicy",
        "PutEndpointPolicy",
        "GetEndpointPolicy",
    ]


def test_a_concurrent_write_that_brings_deleted_statements_back_is_undone(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props(), "OtherPolicy": props(router="Other")})
    sagemaker.after_put.append(stale_write(sagemaker, FOREIGN[1]))  # read while ChatPolicy's statements were there

    stack.deploy({"OtherPolicy": props(router="Other")})

    check(stack, status="UPDATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack, "OtherPolicy") | {"AddedByHand"}


def test_a_policy_that_keeps_changing_fails_the_request_and_says_why(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    for _ in range(handler.ATTEMPTS):
        sagemaker.after_put.append(
            lambda key: sagemaker.policies.__setitem__(key, json.dumps({"Version": "2012-10-17", "Statement": FOREIGN}))
        )

    stack.deploy({"ChatPolicy": props()})

    assert stack.status == "ROLLBACK_COMPLETE"
    (failure,) = stack.failures
    assert failure.request_type == "Create"
    assert f"endpoint {CHAT}'s policy kept changing" in failure.error and "4 attempts" in failure.error
    assert sagemaker.statements(CHAT) == FOREIGN


# ---------------------------------------------------------------------- what cannot be written
def test_a_merged_policy_over_the_limit_fails_and_changes_nothing(handler, sagemaker):
    big = [{**FOREIGN[0], "Sid": f"Other{i}", "Resource": "x" * 200} for i in range(85)]
    sagemaker.policies[CHAT.lower()] = json.dumps({"Version": "2012-10-17", "Statement": big})
    stack = stack_on(handler, sagemaker)

    stack.deploy({"ChatPolicy": props()})

    assert stack.status == "ROLLBACK_COMPLETE"
    assert (
        "policy would be" in stack.failures[0].error
        and "85 statements of other writers kept" in stack.failures[0].error
        and "at most 20480" in stack.failures[0].error
    )
    assert sagemaker.statements(CHAT) == big


def test_a_missing_endpoint_fails_the_create_and_a_gone_one_needs_no_delete(handler, sagemaker):
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": props("Absent")})
    assert stack.status == "ROLLBACK_COMPLETE"
    assert "endpoint Absent does not exist in this account and region" in stack.failures[0].error

    again = stack_on(handler, sagemaker, "Again")
    again.deploy({"ChatPolicy": props()})
    sagemaker.endpoints.discard(CHAT.lower())  # the endpoint was deleted: its policy went with it
    sagemaker.policies.pop(CHAT.lower())
    again.delete()
    check(again, status="DELETE_COMPLETE")


def test_statements_an_earlier_version_wrote_unmarked_are_replaced(handler, sagemaker):
    """Before statements carried an owner mark, the resource put its document as given: the first update takes
    those statements (equal to the old properties' ones) as its own, so no stale grant is left."""
    old = props()
    stack = stack_on(handler, sagemaker)
    stack.deploy({"ChatPolicy": old})
    sagemaker.policies[CHAT.lower()] = json.dumps(  # as the earlier version left it, plus another writer's statement
        {"Version": "2012-10-17", "Statement": [*json.loads(old["ResourcePolicy"])["Statement"], FOREIGN[1]]}
    )

    stack.deploy({"ChatPolicy": props(router_account="333333333333")})

    check(stack, status="UPDATE_COMPLETE")
    assert sagemaker.sids(CHAT) == owned(stack) | {"AddedByHand"}
