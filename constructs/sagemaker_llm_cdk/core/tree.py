"""Synth-time passes over the construct tree, run from Python with a few jsii round trips instead of one per construct.

An Aspect written in Python costs a call from the Node kernel back into Python for *every* construct it is
added above (two round trips each, before it does anything), and reading anything of a construct from Python
costs one more. ``at_synth`` runs a function once per synth, in the Aspects phase (after the app is built,
before the templates are written), by adding a single Aspect to a leaf construct made for it; the function then
walks the tree itself (``constructs_in``: one round trip for the whole scope) and reads only what it needs.

``library_made`` answers "was this made inside one of the library's constructs?" for a whole scope with one round
trip per outermost library construct, and ``resource_type`` reads a resource's CloudFormation type from its L1
class (one round trip per class, not per resource).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import jsii
from aws_cdk import Aspects, CfnResource, IAspect, Stage

from constructs import Construct, IConstruct

_C = TypeVar("_C", bound=Construct)

_LIBRARY = __name__.split(".")[0]
PASS_ID = "SageMakerLlmCdkSynthPass"
"""Id of the leaf construct (no resources, nothing in any template) that ``at_synth`` adds to a scope."""
_ACTIONS = "_sagemaker_llm_cdk_synth_pass"


@jsii.implements(IAspect)
class _Pass:
    def __init__(self, actions: list[Callable[[], None]]) -> None:
        self._actions = actions

    def visit(self, node: IConstruct) -> None:  # the leaf only: one call per synth
        for action in list(self._actions):
            action()


def at_synth(scope: IConstruct, action: Callable[[], None]) -> None:
    """Run ``action()`` at every synth of ``scope``'s app, in the Aspects phase (as an Aspect on ``scope`` runs).

    It runs once per synth, not once per construct: ``action`` finds what it works on itself (``constructs_in``).
    Everything in the tree before the Aspects phase is there; a construct that another Aspect creates after this
    pass ran is not seen (an Aspect on ``scope`` would have visited it).
    """
    actions: list[Callable[[], None]] | None = getattr(scope, _ACTIONS, None)
    if actions is None:
        actions = []
        setattr(scope, _ACTIONS, actions)
        Aspects.of(Construct(scope, PASS_ID)).add(_Pass(actions))  # type: ignore[arg-type]
    actions.append(action)


def constructs_in(scope: IConstruct) -> list[IConstruct]:
    """Every construct under ``scope``, ``scope`` first (pre-order), without entering nested Stages, as Aspects do.

    One round trip for the tree (``find_all``), one more per nested Stage.
    """
    nodes: list[IConstruct] = list(scope.node.find_all())
    inner = [n for n in nodes[1:] if isinstance(n, Stage)]
    if inner:
        skip: set[str] = set()
        for stage in inner:
            if key(stage) not in skip:
                skip.update(key(n) for n in stage.node.find_all())
        nodes = [n for n in nodes if key(n) not in skip]
    return nodes


def key(node: Any) -> str:
    """A construct's identity across round trips: its jsii reference (the kernel hands a new Python proxy for a
    construct made in the Node kernel each time it returns one, so ``id()`` does not identify it)."""
    return str(node.__jsii_ref__.ref)


def is_library_construct(node: Any) -> bool:
    """Whether ``node`` is an instance of one of the library's classes (no round trip: its Python class)."""
    return type(node).__module__.startswith(_LIBRARY + ".")


def library_made(scope: IConstruct, nodes: list[IConstruct] | None = None) -> set[str]:
    """``key()`` of every construct in ``nodes`` (default ``constructs_in(scope)``) made inside one of the library's
    constructs: one that has an ancestor of a library class (``checkov.made_by_library`` for each, in one pass).

    Round trips: one for ``scope``'s ancestors, one per outermost library construct (its subtree).
    """
    if nodes is None:
        nodes = constructs_in(scope)
    if any(is_library_construct(s) for s in scope.node.scopes[:-1]):
        return {key(n) for n in nodes}  # scope itself is inside a library construct, and so is all below it
    if is_library_construct(scope):
        return {key(n) for n in nodes if key(n) != key(scope)}
    inside: set[str] = set()
    for node in nodes:
        if key(node) == key(scope) or key(node) in inside or not is_library_construct(node):
            continue
        inside.update(key(n) for n in node.node.find_all()[1:])  # pre-order: the node itself first
    return inside


_TYPES: dict[type, str] = {}


def resource_type(resource: CfnResource) -> str:
    """``resource.cfn_resource_type``, read once per L1 class (``CFN_RESOURCE_TYPE_NAME``) instead of per resource.

    A plain ``CfnResource`` (or a class that is not an L1 of one type) is asked each time.
    """
    cls = type(resource)
    known = _TYPES.get(cls)
    if known is not None:
        return known
    if "CFN_RESOURCE_TYPE_NAME" in vars(cls):  # an L1 class of aws_cdk (generated per resource type)
        name = str(cast(Any, cls).CFN_RESOURCE_TYPE_NAME)  # a jsii class property: read through the class
        _TYPES[cls] = name
        return name
    return str(resource.cfn_resource_type)


def once_per_stack(cls: type[_C], scope: IConstruct, id: str) -> _C:
    """The stack's one ``cls(stack, id)`` (a construct every resource of a kind in the stack shares, such as the
    function behind its run-time parameters), made on first use."""
    from aws_cdk import Stack

    stack = Stack.of(scope)
    existing = stack.node.try_find_child(id)
    if isinstance(existing, cls):
        return existing
    return cls(stack, id)
