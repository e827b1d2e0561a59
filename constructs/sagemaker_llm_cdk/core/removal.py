"""What ``cdk destroy`` leaves behind, and a setting to leave less of it in non-production environments.

By default (``retain``) everything that holds data or evidence outlives its stack: KMS keys (data
encrypted with them stays readable), S3 buckets (captured traffic, EAGLE artifacts, access logs),
CloudWatch log groups (function, framework and state machine logs) and the EAGLE runs table. A
deleted stack would otherwise take the audit trail and the training data with it, silently.

``destroy`` (for dev and test environments) makes them go with the stack: buckets are emptied first
(``autoDeleteObjects``) and deleted, log groups and tables are deleted, keys are scheduled for deletion
after ``KEY_PENDING_DAYS`` (KMS never deletes a key at once; ``CancelKeyDeletion`` undoes it in that
window), and run-time SSM parameters (plan status, promoted head, watermark) are deleted. Never deleted, in any
mode: a bought capacity plan (prepaid, not refundable: its custom resource is always retained) and what SageMaker
creates itself, outside CloudFormation (the endpoint's ``/aws/sagemaker/Endpoints/<name>`` log group, optimization
jobs' logs and records).

Use: ``set_removal(stack, "destroy")`` before adding constructs to ``stack`` (the app's
``LlmPlatformStack`` does it from ``removal:`` in the config); ``removal_note(scope)`` says what stays.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from aws_cdk import CfnDeletionPolicy, CfnResource, RemovalPolicy, Stack

from constructs import IConstruct

from .errors import ConfigurationError, Problem
from .tree import at_synth, constructs_in, key, library_made, resource_type

Removal = Literal["retain", "destroy"]
REMOVAL_CONTEXT = "sagemaker-llm-cdk:removal"
"""Context key read by the library's constructs: ``retain`` (default) or ``destroy``."""
KEY_PENDING_DAYS = 7
"""Waiting period of a key scheduled for deletion in ``destroy`` mode (KMS allows 7-30 days)."""
_REMOVABLE = {
    "AWS::S3::Bucket": "S3 bucket",
    "AWS::Logs::LogGroup": "log group",
    "AWS::KMS::Key": "KMS key",
    "AWS::DynamoDB::Table": "DynamoDB table",
}
_NEVER = {"Custom::SageMakerCapacityPlan": "capacity plan (prepaid, never deleted)"}
_BY_MODE = {"Custom::SageMakerLlmRunTimeParameter": "run-time SSM parameter"}
"""Kept or deleted by the stack's mode itself (``run_time_state``: its handler reads ``Removal``)."""


def removal_mode(scope: IConstruct) -> Removal:
    """The removal mode in effect at ``scope`` (its context), ``retain`` when unset."""
    value = scope.node.try_get_context(REMOVAL_CONTEXT)
    if value in (None, "retain"):
        return "retain"
    if value == "destroy":
        return "destroy"
    raise ConfigurationError(
        [Problem(REMOVAL_CONTEXT, value, "retain or destroy", f"set -c {REMOVAL_CONTEXT}=retain (default) or destroy")],
        source=scope.node.path,
    )


def destroying(scope: IConstruct) -> bool:
    """True when the library's data resources under ``scope`` go with the stack (``destroy`` mode)."""
    return removal_mode(scope) == "destroy"


def set_removal(stack: Stack, mode: Removal) -> None:
    """Make ``mode`` apply to the library's constructs in ``stack``. Call before adding any construct to it.

    ``destroy``: buckets made afterwards empty themselves on delete, and a pass at synth (in the Aspects
    phase, ``tree.at_synth``) sets ``RemovalPolicy.DESTROY`` on the library's buckets, log groups, tables
    and keys (keys with a ``KEY_PENDING_DAYS`` waiting period). Capacity plans are never touched.
    """
    if mode not in ("retain", "destroy"):
        raise ConfigurationError(
            [Problem("removal", mode, "retain or destroy", "set removal: retain (default) or destroy")],
            source=stack.node.path,
        )
    if mode == "retain" and stack.node.try_get_context(REMOVAL_CONTEXT) is None:
        return
    stack.node.set_context(REMOVAL_CONTEXT, mode)
    if mode == "destroy":
        at_synth(stack, lambda: _destroy(stack))


def _destroy(stack: Stack) -> None:
    """``RemovalPolicy.DESTROY`` on the library's data resources in ``stack``: one pass at synth (``tree.at_synth``)."""
    nodes = constructs_in(stack)
    made: set[str] | None = None
    for node in nodes:
        if not isinstance(node, CfnResource):
            continue
        resource: Any = node
        kind = resource_type(resource)
        if kind not in _REMOVABLE:
            continue
        if made is None:
            made = library_made(stack, nodes)
        if key(node) not in made:
            continue
        resource.apply_removal_policy(RemovalPolicy.DESTROY)
        if kind == "AWS::KMS::Key":
            resource.pending_window_in_days = KEY_PENDING_DAYS


def removal_note(scope: IConstruct) -> str:
    """One paragraph per stack under ``scope``: what ``cdk destroy`` leaves behind, and why."""
    lines = []
    # isinstance on the jsii proxies: no round trip to the Node kernel per construct (is_stack/is_cfn_resource do)
    for stack in [c for c in scope.node.find_all() if isinstance(c, Stack)]:
        kept: Counter[str] = Counter()
        gone: Counter[str] = Counter()
        nodes = stack.node.find_all()
        made: set[str] | None = None
        for construct in nodes:
            if not isinstance(construct, CfnResource):
                continue
            node: Any = construct
            kind = resource_type(node)  # from the L1 class: no round trip per resource
            if (kind not in _NEVER and kind not in _REMOVABLE and kind not in _BY_MODE) or Stack.of(
                construct
            ) is not stack:
                continue  # the kind first: Stack.of (a round trip) only for what is counted
            if kind in _NEVER:
                kept[_NEVER[kind]] += 1
                continue
            if kind in _BY_MODE:
                (gone if destroying(node) else kept)[_BY_MODE[kind]] += 1
                continue
            if made is None:
                made = library_made(stack, nodes)  # every construct of the stack at once, not its ancestors each
            if kind in _REMOVABLE and key(construct) in made:
                policy = node.cfn_options.deletion_policy
                retained = policy is not None and policy != CfnDeletionPolicy.DELETE and not destroying(node)
                (kept if retained else gone)[_REMOVABLE[kind]] += 1
        if not kept and not gone:
            continue
        mode = removal_mode(stack)
        head = f"{stack.node.path} (removal: {mode}): cdk destroy"
        if kept:
            lines.append(
                f"{head} keeps "
                + ", ".join(f"{n} x {what}" for what, n in sorted(kept.items()))
                + (
                    " so data, keys and logs outlive the stack; set removal: destroy for non-production"
                    if mode == "retain"
                    else ""
                )
            )
        if gone:
            lines.append(
                f"{head} deletes "
                + ", ".join(f"{n} x {what}" for what, n in sorted(gone.items()))
                + (
                    f" (buckets emptied first; keys scheduled for deletion in {KEY_PENDING_DAYS} days)"
                    if mode == "destroy"
                    else " (made to be deleted: e.g. the front door's session table)"
                )
            )
        lines.append(
            f"{stack.node.path}: SageMaker's own log groups (/aws/sagemaker/...) and job records are never "
            "part of the stack and stay."
        )
    return "\n".join(lines)
