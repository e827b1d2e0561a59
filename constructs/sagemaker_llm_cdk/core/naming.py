"""Physical names derived from the stack, so two stacks of one config never collide.

SageMaker names (inference components, among others) are unique in an account and region,
and so are CloudFormation stack names. A name made of the stack name and the config's name
(``<stack>-<name>``) is therefore unique wherever the stack deploys, stable across
deployments, and only changes when the stack or the config name changes.
"""

from __future__ import annotations

import contextlib

from aws_cdk import Stack, Token

from constructs import IConstruct

from .errors import ConfigurationError, Problem
from .name_rules import MAX_LENGTH, as_prefix, prefixed_name

__all__ = ["MAX_LENGTH", "as_prefix", "component_name", "prefixed_name", "stack_prefix", "top_level_stack"]

_PREFIX = "_sagemaker_llm_cdk_stack_prefix"


def top_level_stack(scope: IConstruct) -> Stack:
    """The deployable stack ``scope`` is in (a nested stack's parent, up to the top)."""
    stack = Stack.of(scope)
    while stack.nested_stack_parent is not None:
        stack = stack.nested_stack_parent
    return stack


def stack_prefix(
    scope: IConstruct,
    *,
    field: str,
    what: str = "the inference component's name",
    pin: str = "pin the component's name with physical_name",
) -> str:
    """The top-level stack's name as a name prefix: letters, digits and single hyphens."""
    known: str | None = getattr(scope, _PREFIX, None)
    if known is not None:
        return known  # a construct's stack, and its name, never change: four round trips once per scope
    stack = top_level_stack(scope)
    name = stack.stack_name
    if Token.is_unresolved(name):
        raise ConfigurationError(
            [
                Problem(
                    field,
                    "a stack whose name is only known at deploy time",
                    f"a stack name known at synth (it prefixes {what})",
                    f"give the stack a literal name, or {pin}",
                )
            ],
            source=scope.node.path,
        )
    prefix = as_prefix(name)
    with contextlib.suppress(AttributeError):  # a jsii proxy of several interfaces takes no new attribute
        setattr(scope, _PREFIX, prefix)
    return prefix


def component_name(scope: IConstruct, name: str, physical_name: str | None, *, field: str = "name") -> str:
    """The inference component name for config name ``name``: ``physical_name`` if pinned, else stack-prefixed."""
    if physical_name is not None:
        return physical_name
    return prefixed_name(stack_prefix(scope, field=field), name)
