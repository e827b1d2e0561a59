"""CloudFormation's own sequences, driven through a custom resource's handler against an in-memory AWS.

A handler test that sends one event at a time misses what CloudFormation does between events. This driver
sends them in CloudFormation's order:

- **deploy** (create or update): every new logical id is created first, then every changed resource is
  updated; a resource whose Update answers a new physical id is a replacement, and the old physical id is
  deleted, with its old properties, only in the cleanup after every create and update succeeded
  (``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``). A failed cleanup Delete does not fail the stack: the thing it
  should have deleted is left behind (an orphan, which the checks below count).
- **a failed update** (``fail_after=True``: another resource of the stack fails once every create and
  update of these resources succeeded; or one of them fails): the rollback sends Update with the old
  properties to each resource updated in place (``OldResourceProperties`` are the new ones, the physical id
  the one it has), the resource whose own Update failed included (it still has its old physical id: the
  provider framework answers a failed Update with the event's); a replacement (an Update that answered a
  new physical id) is a new resource, so the stack returns to the old physical id without a request and
  the new one gets Delete, with the new properties, in the rollback's cleanup
  (``UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS``), as created resources do; a physical id a rollback
  Update moves away from is deleted there too. A failed rollback Update ends in ``UPDATE_ROLLBACK_FAILED``.
- **stack delete**: Delete to every resource, last created first; a failed Delete ends in ``DELETE_FAILED``.
- **delete and deploy again**: a stack of the same name has a new stack id.

While a sequence runs, ``Stack.status`` is CloudFormation's status of that phase (``UPDATE_IN_PROGRESS``,
``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``, ``UPDATE_ROLLBACK_IN_PROGRESS``, ...), which
``CloudFormationBackend`` answers ``DescribeStacks`` with, for a handler that asks its stack's status.

A subject is one resource type: a way to invoke the handler (``Subject.invoke``: the answer's physical id
and data, or an exception for FAILED) and what exists in its fake AWS (``Subject.live``). ``check`` holds a
stack to the three rules: nothing a resource of the stack needs was deleted, nothing is left behind that no
resource holds (except what a retained resource keeps on purpose), and no sequence ended FAILED.

Fakes must check every request against botocore's service model (``support.aws_model.assert_valid_request``)
so a sequence can only pass with requests the real service accepts.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from botocore.exceptions import ClientError

from support.aws_model import assert_valid_request

REGION = "us-east-1"
ACCOUNT = "123456789012"

_stack_numbers = itertools.count(1)
REPLACEMENT_ROLLBACK = "update"
"""The default of ``Stack.replacement_rollback``; tests/conftest.py runs each lifecycle module under both readings."""


class Subject(Protocol):
    """One custom resource type, its handler and the fake AWS it talks to."""

    resource_type: str

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """The handler's answer to ``event`` (``PhysicalResourceId`` and ``Data``); raises when it answers FAILED."""

    def live(self) -> set[str]:
        """What exists in the fake AWS that resources of this type create (names or ids)."""

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        """What a resource with this physical id and these properties needs to exist, in ``live``'s terms."""

    def kept(self, properties: Mapping[str, Any]) -> bool:
        """Whether a deleted resource with these properties leaves what it made on purpose (a retain setting)."""


@dataclass
class Resource:
    logical_id: str
    physical_id: str
    properties: dict[str, Any]


@dataclass
class Failure:
    """A request that failed: which, for which resource, and the error."""

    phase: str
    request_type: str
    logical_id: str
    error: str


@dataclass
class Stack:
    """One stack's custom resources of one subject, as CloudFormation tracks them."""

    subject: Subject
    name: str = "SageMakerLlm"
    stack_id: str = ""
    resources: dict[str, Resource] = field(default_factory=dict)
    status: str = "NONE"
    failures: list[Failure] = field(default_factory=list)
    left_behind: set[str] = field(default_factory=set)
    """Physical things a resource made that a Delete did not remove and no resource holds any more."""
    log: list[str] = field(default_factory=list)
    """Each request as ``<phase> <RequestType> <LogicalId> <PhysicalId>``, in order."""
    replacement_rollback: str = ""
    """How a rollback treats a custom resource that an Update replaced (answered a new physical id): ``update``,
    CloudFormation sends it Update with the old properties on the new physical id (the brief's reading) and deletes
    in the rollback's cleanup the id the answer moves away from; ``restore``, the old physical id is the resource
    again with no request and the new one gets Delete. AWS's documentation does not settle which; a handler must
    survive both, so every ``*_lifecycle.py`` module runs under each (``tests/conftest.py``). Empty: the module's
    ``REPLACEMENT_ROLLBACK``."""

    def __post_init__(self) -> None:
        if not self.replacement_rollback:
            self.replacement_rollback = REPLACEMENT_ROLLBACK
        assert self.replacement_rollback in ("update", "restore"), self.replacement_rollback
        if not self.stack_id:
            self.stack_id = _new_stack_id(self.name)

    # ------------------------------------------------------------------ requests
    def _event(
        self,
        request_type: str,
        logical_id: str,
        properties: Mapping[str, Any],
        *,
        physical_id: str | None = None,
        old: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "RequestType": request_type,
            "ServiceToken": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:provider",
            "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/response",
            "StackId": self.stack_id,
            "RequestId": f"request-{len(self.log) + 1}",
            "LogicalResourceId": logical_id,
            "ResourceType": self.subject.resource_type,
            "ResourceProperties": {
                "ServiceToken": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:provider",
                **copy.deepcopy(dict(properties)),
            },
        }
        if physical_id is not None:
            event["PhysicalResourceId"] = physical_id
        if old is not None:
            event["OldResourceProperties"] = {"ServiceToken": event["ServiceToken"], **copy.deepcopy(dict(old))}
        return event

    def _send(
        self,
        phase: str,
        request_type: str,
        logical_id: str,
        properties: Mapping[str, Any],
        *,
        physical_id: str | None = None,
        old: Mapping[str, Any] | None = None,
    ) -> str | None:
        """The physical id the handler answers, or None (recorded in ``failures``) when it failed."""
        self.log.append(f"{phase} {request_type} {logical_id} {physical_id or '-'}")
        event = self._event(request_type, logical_id, properties, physical_id=physical_id, old=old)
        try:
            answer = self.subject.invoke(event)
        except Exception as error:  # noqa: BLE001 - a FAILED answer, whatever raised it
            self.failures.append(Failure(phase, request_type, logical_id, f"{type(error).__name__}: {error}"))
            return None
        new_id = answer.get("PhysicalResourceId") or physical_id
        assert isinstance(new_id, str) and new_id, f"{request_type} {logical_id} answered no physical id: {answer}"
        return new_id

    def _delete(self, phase: str, logical_id: str, physical_id: str, properties: Mapping[str, Any]) -> bool:
        before = self.subject.live()
        needed = self.subject.needs(physical_id, properties)
        if self._send(phase, "Delete", logical_id, properties, physical_id=physical_id) is None:
            # A failed delete leaves the thing; nothing in the stack holds it any more (unless another resource
            # needs it, which ``check`` counts against the stack instead).
            self.left_behind |= needed & before
            return False
        if self.subject.kept(properties):
            return True
        self.left_behind |= needed & self.subject.live() - self._held()
        return True

    def _held(self) -> set[str]:
        held: set[str] = set()
        for resource in self.resources.values():
            held |= self.subject.needs(resource.physical_id, resource.properties)
        return held

    # ------------------------------------------------------------------ sequences
    def deploy(self, template: Mapping[str, Mapping[str, Any]], *, fail_after: bool = False) -> str:
        """Create or update the stack to ``template`` (logical id -> properties); the stack's status after."""
        assert self.status != "ROLLBACK_COMPLETE", (
            "CloudFormation refuses to update a stack in ROLLBACK_COMPLETE "
            "(its first create failed): delete it, then deploy"
        )
        creating = self.status in ("NONE", "DELETE_COMPLETE")
        if self.status == "DELETE_COMPLETE":
            self.stack_id = _new_stack_id(self.name)
        old = {k: copy.deepcopy(v) for k, v in self.resources.items()}
        created: list[str] = []
        updated: list[tuple[str, str]] = []  # (logical id, physical id before)
        failed_update: tuple[str, dict[str, Any]] | None = None  # (logical id, the properties it refused)
        failed = False
        self.status = "CREATE_IN_PROGRESS" if creating else "UPDATE_IN_PROGRESS"
        for logical_id, properties in template.items():
            if logical_id in self.resources:
                continue
            physical_id = self._send("create", "Create", logical_id, properties)
            if physical_id is None:
                failed = True
                break
            self.resources[logical_id] = Resource(logical_id, physical_id, copy.deepcopy(dict(properties)))
            created.append(logical_id)
        if not failed:
            for logical_id, properties in template.items():
                resource = self.resources[logical_id]
                if logical_id in created or resource.properties == dict(properties):
                    continue
                physical_id = self._send(
                    "update",
                    "Update",
                    logical_id,
                    properties,
                    physical_id=resource.physical_id,
                    old=resource.properties,
                )
                if physical_id is None:
                    failed = True
                    failed_update = (logical_id, copy.deepcopy(dict(properties)))
                    break
                updated.append((logical_id, resource.physical_id))
                self.resources[logical_id] = Resource(logical_id, physical_id, copy.deepcopy(dict(properties)))
        if failed or fail_after:
            return self._roll_back(old, created, updated, creating, failed_update)
        # Cleanup: replaced physical ids, then removed logical ids.
        self.status = "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"
        for logical_id, physical_before in updated:
            if self.resources[logical_id].physical_id != physical_before:
                self._delete("cleanup", logical_id, physical_before, old[logical_id].properties)
        for logical_id in [k for k in self.resources if k not in template]:
            gone = self.resources.pop(logical_id)
            self._delete("cleanup", logical_id, gone.physical_id, gone.properties)
        self.status = "CREATE_COMPLETE" if creating else "UPDATE_COMPLETE"
        return self.status

    def _roll_back(
        self,
        old: dict[str, Resource],
        created: list[str],
        updated: list[tuple[str, str]],
        creating: bool,
        failed_update: tuple[str, dict[str, Any]] | None = None,
    ) -> str:
        if creating:
            self.status = "ROLLBACK_IN_PROGRESS"
            for logical_id in reversed(created):
                gone = self.resources.pop(logical_id)
                self._delete("rollback", logical_id, gone.physical_id, gone.properties)
            self.status = "ROLLBACK_COMPLETE"
            return self.status
        status = "UPDATE_ROLLBACK_COMPLETE"
        self.status = "UPDATE_ROLLBACK_IN_PROGRESS"
        moved: list[tuple[str, str, dict[str, Any]]] = []
        in_place: list[tuple[str, str, dict[str, Any]]] = []  # (logical id, physical id, the properties it has now)
        replaced: list[tuple[str, str]] = []  # (logical id, physical id before) of replacements sent Update
        if failed_update is not None:
            logical_id, refused = failed_update
            in_place.append((logical_id, self.resources[logical_id].physical_id, refused))
        for logical_id, physical_before in reversed(updated):
            resource = self.resources[logical_id]
            if resource.physical_id != physical_before and self.replacement_rollback == "restore":
                # A replacement: the old physical id is the resource again, the new one is deleted in the cleanup.
                moved.append((logical_id, resource.physical_id, resource.properties))
                self.resources[logical_id] = Resource(
                    logical_id, physical_before, copy.deepcopy(old[logical_id].properties)
                )
                continue
            if resource.physical_id != physical_before:
                # The other reading: the replacement gets Update with the old properties on its new physical id; the
                # old physical id is the resource again only if the handler answers it (else nothing holds it).
                replaced.append((logical_id, physical_before))
            in_place.append((logical_id, resource.physical_id, resource.properties))
        for logical_id, current_id, current_properties in in_place:
            previous = old[logical_id]
            physical_id = self._send(
                "rollback", "Update", logical_id, previous.properties, physical_id=current_id, old=current_properties
            )
            if physical_id is None:
                status = "UPDATE_ROLLBACK_FAILED"
                continue
            if physical_id != current_id:
                moved.append((logical_id, current_id, current_properties))
            self.resources[logical_id] = Resource(logical_id, physical_id, copy.deepcopy(previous.properties))
        for logical_id, physical_before in replaced:
            resource = self.resources[logical_id]
            if resource.physical_id != physical_before:
                self.left_behind |= (
                    self.subject.needs(physical_before, old[logical_id].properties) & self.subject.live()
                ) - self._held()
        self.status = "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"
        for logical_id in reversed(created):
            gone = self.resources.pop(logical_id)
            self._delete("rollback-cleanup", logical_id, gone.physical_id, gone.properties)
        for logical_id, physical_id, properties in moved:
            self._delete("rollback-cleanup", logical_id, physical_id, properties)
        self.status = status
        return self.status

    def delete(self) -> str:
        """Delete the stack: Delete to every resource, last created first."""
        status = "DELETE_COMPLETE"
        self.status = "DELETE_IN_PROGRESS"
        for logical_id in reversed(list(self.resources)):
            resource = self.resources[logical_id]
            if not self._delete("delete", logical_id, resource.physical_id, resource.properties):
                status = "DELETE_FAILED"
                continue
            del self.resources[logical_id]
        self.status = status
        return self.status

    # ------------------------------------------------------------------ the rules
    def problems(self) -> list[str]:
        """Every broken rule, as lines: a FAILED status, something needed but gone, something left behind."""
        found: list[str] = []
        if self.status.endswith("FAILED"):
            found.append(
                f"the stack ended {self.status}: "
                + "; ".join(f"{f.phase} {f.request_type} {f.logical_id}: {f.error}" for f in self.failures)
            )
        live = self.subject.live()
        for resource in self.resources.values():
            missing = self.subject.needs(resource.physical_id, resource.properties) - live
            if missing:
                found.append(f"{resource.logical_id} ({resource.physical_id}) needs {sorted(missing)}, which is gone")
        orphans = (self.left_behind & live) - self._held()
        if orphans:
            found.append(f"left behind with nothing holding it: {sorted(orphans)}")
        return found


def check(stack: Stack, *, status: str | Iterable[str] | None = None) -> None:
    """Assert the rules (and ``status``, when given), naming every request sent when they are broken."""
    problems = stack.problems()
    if status is not None:
        allowed = {status} if isinstance(status, str) else set(status)
        if stack.status not in allowed:
            problems.insert(0, f"status {stack.status}, expected {sorted(allowed)}")
    assert not problems, "\n".join(problems + ["requests:", *stack.log])


def _new_stack_id(name: str) -> str:
    return (
        f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{name}/{next(_stack_numbers):08d}-0000-0000-0000-000000000000"
    )


# ---------------------------------------------------------------------- fake AWS services
_CREATED = datetime(2026, 1, 1, tzinfo=UTC)


class CloudFormationBackend:
    """CloudFormation's ``DescribeStacks`` for the stacks given (``FakeClient("cloudformation", backend)``): each
    stack's status as the driver has it at that moment (``UPDATE_ROLLBACK_IN_PROGRESS`` while a rollback runs)."""

    def __init__(self, *stacks: Stack) -> None:
        self.stacks = list(stacks)

    def DescribeStacks(self, StackName: str = "", NextToken: str | None = None) -> dict[str, Any]:  # noqa: N802
        del NextToken
        for stack in self.stacks:
            if StackName in (stack.stack_id, stack.name):
                return {
                    "Stacks": [
                        {
                            "StackId": stack.stack_id,
                            "StackName": stack.name,
                            "CreationTime": _CREATED,
                            "StackStatus": stack.status,
                        }
                    ]
                }
        raise error("ValidationError", f"Stack with id {StackName} does not exist")


class FakeClient:
    """A boto3 client stand-in: each call is checked against botocore's model for ``service``, then answered by
    ``backend.<OperationName>(**params)``; a backend raises ``error(code, message)`` for an AWS error."""

    def __init__(self, service: str, backend: Any) -> None:
        self._service = service
        self._backend = backend
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        operation = "".join(part.capitalize() for part in name.split("_"))
        implementation = getattr(self._backend, operation, None)
        if implementation is None:
            raise AttributeError(f"the fake {self._service} has no {operation}")

        def call(**params: Any) -> Any:
            assert_valid_request(self._service, _model_name(self._service, operation), params)
            self.calls.append((operation, copy.deepcopy(params)))
            return copy.deepcopy(implementation(**params))

        return call


def _model_name(service: str, operation: str) -> str:
    """The operation's name in botocore's model (``ListTagsForResource``; handles acronyms by lookup)."""
    from support.aws_model import _service_model

    names = _service_model(service).operation_names
    if operation in names:
        return operation
    folded = {n.lower(): n for n in names}
    return folded.get(operation.lower(), operation)


def error(code: str, message: str = "", status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message or code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Operation",
    )
