"""The pipeline's policies with CDK Pipelines' wildcard resources replaced by the resources they stand for."""

from __future__ import annotations

import re
from typing import Any

import jsii
from aws_cdk import IAnyProducer, IResolveContext, Stack


def _is_replaced(resource: Any) -> bool:
    """The wildcards ``NamedResources`` replaces: '*', and ``arn:*:iam::<account>:role/*``, the resource CDK Pipelines'
    self-mutation writes for the bootstrap roles it finds by tag."""
    return resource == "*" or (
        isinstance(resource, str) and bool(re.fullmatch(r"arn:\*:iam::\d{12}:role/\*", resource))
    )


@jsii.implements(IAnyProducer)
class NamedResources:
    """A CDK Pipelines policy document with its statements on '*' replaced by ``rewrite`` (action set -> new fields)."""

    def __init__(self, policy: Any, rewrite: dict[frozenset[str], dict[str, Any]]) -> None:
        self._policy = policy
        self._rewrite = rewrite

    def produce(self, context: IResolveContext) -> Any:
        stack = Stack.of(self._policy)
        document = stack.resolve(self._policy.document)
        group_of = {action: group for group in self._rewrite for action in group}
        statements = []
        for statement in document.get("Statement", []):
            actions = statement.get("Action")
            actions = [actions] if isinstance(actions, str) else list(actions or [])
            resources = statement.get("Resource")
            resources = resources if isinstance(resources, list) else [resources]
            wild = next((r for r in resources if _is_replaced(r)), None)
            if wild is None or not any(a in group_of for a in actions):
                statements.append(statement)
                continue
            # The minimizePolicies flag merges statements (DescribeStacks with ListBucket on '*', the replication keys'
            # '*' with the artifact key): split them again, each named resource keeping its actions.
            named = [r for r in resources if r != wild]
            if named:
                statements.append({**statement, "Resource": named if len(named) > 1 else named[0]})
            kept = [a for a in actions if a not in group_of]
            if kept:
                statements.append({**statement, "Action": kept if len(kept) > 1 else kept[0], "Resource": wild})
            for group in dict.fromkeys(group_of[a] for a in actions if a in group_of):
                mine = [a for a in actions if group_of.get(a) == group]
                statements.append(
                    {**statement, "Action": mine if len(mine) > 1 else mine[0], **stack.resolve(self._rewrite[group])}
                )
        document["Statement"] = statements
        return document
