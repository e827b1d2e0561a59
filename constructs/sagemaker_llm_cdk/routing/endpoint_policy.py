"""``EndpointPolicy``: the statements of an endpoint's resource policy that let a router in another account use it.

An inference router calls each destination with its caller's credentials; a destination in another account
answers only when its owner allows the router's account in an endpoint policy (AWS: "Route requests to endpoints
in other AWS accounts"). CloudFormation has no resource type for that policy, so it is a custom resource
(handler ``lambda/endpoint_policy``). It lives in the endpoint owner's stack, which is the only place allowed to
attach it; the document is the one ``InferenceRouter.endpoint_policy`` returns (``endpoint_policies``).

An endpoint has one policy, which ``PutEndpointPolicy`` replaces whole and ``DeleteEndpointPolicy`` removes, and
several stacks (or several resources of one stack) may route to one endpoint. So the resource owns only its own
statements: the handler writes each with a ``Sid`` that carries a mark made of the stack id and the logical id,
reads the policy (``GetEndpointPolicy``) and replaces only those statements on create and update, keeps every other
statement, removes its own on delete, and deletes the policy only when nothing is left. The document's own
``Sid`` values must therefore be letters and digits only (IAM's rule), each once.

One function and provider serve every endpoint policy of a stack (``EndpointPolicyService.of``); each policy lets
that function read and change the policy of its own endpoint only (the endpoint's ARN exactly, as written and in
lowercase, the form SageMaker writes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CustomResource, Duration, Stack, Token

from constructs import Construct, IConstruct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.functions import provider_framework, python_function
from ..core.nag import acknowledge_resource
from ..core.settings import name_problem
from ..core.tree import once_per_stack

RESOURCE_TYPE = "Custom::SageMakerEndpointPolicy"
HANDLER_FOLDER = "endpoint_policy"
SERVICE_ID = "EndpointPolicyService"
POLICY_ACTIONS = ("sagemaker:GetEndpointPolicy", "sagemaker:PutEndpointPolicy", "sagemaker:DeleteEndpointPolicy")
"""Read the policy to merge into it, write it, delete it when no statement is left."""
MAX_POLICY_CHARS = 20480
"""botocore's ``EndpointPolicyDocument`` length limit (the handler checks it again for the merged policy)."""
_SID = re.compile(r"^[A-Za-z0-9]+$")


class EndpointPolicyService(Construct):
    """The function and custom resource framework behind every ``EndpointPolicy`` of one stack.

    Use ``EndpointPolicyService.of(stack)``; attributes ``function``, ``provider``, ``provider_role``.
    """

    def __init__(self, scope: Stack, id: str = SERVICE_ID) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            folder=HANDLER_FOLDER,
            handler="index.on_event",
            description="keeps this stack's statements in the endpoint policies that let inference routers of other "
            "accounts use its endpoints (custom resource)",
            timeout=Duration.minutes(1),
        )
        self.provider, self.provider_role = provider_framework(
            self, on_event=self.function, description="Custom resource framework of the stack's endpoint policies"
        )
        acknowledge_resource(
            self.provider_role,
            f"{self.function.function_arn}:*",
            "The custom resource framework invokes the endpoint policies' own function: "
            "lambda:InvokeFunction on that one function and its versions (the ':*' qualifier).",
            actions=["lambda:InvokeFunction"],
        )

    @classmethod
    def of(cls, scope: IConstruct) -> EndpointPolicyService:
        """The stack's one ``EndpointPolicyService``, made on first use."""
        return once_per_stack(cls, scope, SERVICE_ID)


class EndpointPolicy(Construct):
    """The endpoint policy of endpoint ``endpoint_name`` in this stack's account and region.

    Attributes: ``endpoint_name``, ``endpoint_arn``, ``document``, ``custom_resource``, ``service``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        document: Mapping[str, Any],
        endpoint: IConstruct | None = None,
    ) -> None:
        """
        :param endpoint_name: the endpoint's name (literal: the policy's IAM grant names its ARN).
        :param document: the policy, e.g. a value of ``InferenceRouter.endpoint_policy(account, region)``.
        :param endpoint: the construct that creates the endpoint, when this stack does: the policy is attached after
            it exists and deleted before it goes.
        """
        super().__init__(scope, id)
        stack = Stack.of(self)
        problems: list[Problem] = []
        problem = name_problem("endpoint_name", endpoint_name, "EndpointName")
        if problem:
            problems.append(problem)
        text = stack.to_json_string(dict(document))
        if not document.get("Statement"):
            problems.append(
                Problem(
                    "document",
                    dict(document),
                    "a policy document with a Statement",
                    "pass the document InferenceRouter.endpoint_policy returns",
                )
            )
        problems.extend(_sid_problems(document.get("Statement")))
        resolved = stack.resolve(text)  # a plain string unless the document holds deploy-time values
        if isinstance(resolved, str) and not resolved.isascii():
            problems.append(
                Problem(
                    "document",
                    "non-ASCII text",
                    "ASCII characters only (PutEndpointPolicy)",
                    "remove the other characters from the policy",
                )
            )
        if isinstance(resolved, str) and len(resolved) > MAX_POLICY_CHARS:
            problems.append(
                Problem(
                    "document",
                    f"{len(resolved)} characters",
                    f"at most {MAX_POLICY_CHARS} characters (PutEndpointPolicy)",
                    "route fewer routers to the endpoint",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        self.endpoint_name = endpoint_name
        self.document = dict(document)
        self.endpoint_arn = stack.format_arn(service="sagemaker", resource="endpoint", resource_name=endpoint_name)
        arns = list(
            dict.fromkeys(
                [
                    self.endpoint_arn,
                    stack.format_arn(service="sagemaker", resource="endpoint", resource_name=endpoint_name.lower()),
                ]
            )
        )
        self.service = EndpointPolicyService.of(self)
        grants.grant(
            self.service.function,
            sid=f"ManagePolicyOf{_sid(endpoint_name)}",
            actions=list(POLICY_ACTIONS),
            resources=arns,
        )
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=self.service.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={"EndpointName": endpoint_name, "ResourcePolicy": text},
        )
        self.node.default_child = self.custom_resource
        if endpoint is not None:
            self.custom_resource.node.add_dependency(endpoint)


def merged_policy(documents: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One resource's statements from the documents of several routers (``(router name, document)``) that route to
    one endpoint of the stack. One document is returned as it is; several keep every statement, each ``Sid``
    followed by its router's name so they stay unique."""
    if len(documents) == 1:
        return dict(documents[0][1])
    statements = [
        {**statement, "Sid": f"{statement.get('Sid', 'Statement')}{_sid(router)}"}
        for router, document in documents
        for statement in document["Statement"]
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def _sid_problems(statement: Any) -> list[Problem]:
    """Each statement's ``Sid``: letters and digits only (IAM's rule; the handler appends its owner mark), each once."""
    statements = statement if isinstance(statement, (list, tuple)) else [statement] if statement else []
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, item in enumerate(statements):
        sid = item.get("Sid") if isinstance(item, Mapping) else None
        if sid is None or (isinstance(sid, str) and Token.is_unresolved(sid)):
            continue
        if not isinstance(sid, str) or not _SID.match(sid):
            problems.append(
                Problem(
                    f"document.Statement[{index}].Sid",
                    sid,
                    "letters and digits only (IAM's Sid rule)",
                    "remove the other characters from the Sid",
                )
            )
        elif sid in seen:
            problems.append(
                Problem(
                    f"document.Statement[{index}].Sid",
                    sid,
                    "each Sid once in the document",
                    "give each statement its own Sid",
                )
            )
        else:
            seen.add(sid)
    return problems


def _sid(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-") if part)


__all__ = ["EndpointPolicy", "EndpointPolicyService", "merged_policy"]
