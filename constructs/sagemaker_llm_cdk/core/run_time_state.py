"""``RunTimeParameter``: an SSM String parameter that functions write at run time and that no deploy resets.

CloudFormation's ``AWS::SSM::Parameter`` update handler calls ``PutParameter`` with ``Overwrite`` and the
template's ``Value`` on every update of the resource, a tag or description change included
(aws-cloudformation-resource-providers-ssm, ``UpdateHandler`` / ``Translator.updatePutParameterRequest``).
A value written at run time (a capacity plan's status, a model's promoted EAGLE head, the dataset
watermark) kept in that type goes back to its template value on the next routine deploy: a paid plan
unbound, a promoted head withdrawn, captures trained on twice.

A ``RunTimeParameter`` is a custom resource (``lambda/run_time_state``) that creates the parameter only
when it is absent, never overwrites its value on update or replacement, and keeps or deletes it by the
stack's ``removal:`` mode (``retain`` keeps it; ``destroy`` deletes it with the stack, unless another
resource still owns it: each owner tags it, see ``lambda/run_time_state``). ``plan_name=`` makes the value
a plan's status, read at every create and update, so the first deploy knows it. One function per stack
serves every such parameter of the stack (child ``RunTimeState`` of the stack); its role may create, read and
tag exactly the parameters, seeds and plans it serves.

Cleanup grants: CloudFormation updates the role's policy before it sends the cleanup Delete of a parameter
that left the template (renamed, or its construct removed), and a failed update's rollback puts the old policy
back before it deletes what the update created; a grant naming each parameter would be gone by then, and the
Delete denied (the parameter orphaned in ``destroy`` mode). So the role may read tags of, untag and delete any
parameter under ``STATE_PREFIX`` (``CLEANUP_ACTIONS``: the only wildcard, acknowledged on exactly those three
actions); the handler deletes only a parameter whose owner tags leave no other owner. A parameter named outside
that folder gets the cleanup actions by name, which cover a stack delete but not a cleanup after it left the
template.

Parameter names are fixed (``/sagemaker-llm/state/...``): readers in other stacks resolve them by name
(``AWS::SSM::Parameter::Value<String>`` stack parameters, resolved again at every deploy).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import CfnResource, CustomResource, Duration, Stack, Token
from aws_cdk import aws_iam as iam

from constructs import Construct

from .errors import ConfigurationError, Problem
from .functions import provider_framework, python_function
from .grants import grant
from .nag import acknowledge_resource
from .removal import removal_mode
from .tree import once_per_stack

RESOURCE_TYPE = "Custom::SageMakerLlmRunTimeParameter"
"""The custom resource type (``lambda/run_time_state/index.py``'s ``RESOURCE_TYPE``; a test keeps them equal)."""
STATE_PREFIX = "/sagemaker-llm/state"
"""Where the library's run-time values live."""
SERVICE_ID = "RunTimeState"
MANAGE_ACTIONS = ("ssm:GetParameter", "ssm:PutParameter", "ssm:AddTagsToResource")
"""What Create and Update send, on each parameter by name."""
CLEANUP_ACTIONS = ("ssm:ListTagsForResource", "ssm:RemoveTagsFromResource", "ssm:DeleteParameter")
"""What Delete sends: granted on ``STATE_PREFIX`` (a parameter gone from the template has no named grant left)."""
_NAME_RE = re.compile(r"/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*")
NAME_MAX = 1011


def parameter_arn(stack: Stack, name: str) -> str:
    """The ARN of the SSM parameter ``name`` in ``stack``'s account and region (a leading '/' is not repeated)."""
    return stack.format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))


def in_state_folder(name: str) -> bool:
    """Whether ``name`` is under ``STATE_PREFIX`` (with or without the leading '/', as ``parameter_arn`` writes
    both)."""
    return name.lstrip("/").startswith(STATE_PREFIX.lstrip("/") + "/")


def name_problem(field: str, name: str) -> Problem | None:
    """A problem when ``name`` is not a literal SSM parameter name."""
    if Token.is_unresolved(name) or len(name) > NAME_MAX or not _NAME_RE.fullmatch(name):
        return Problem(
            field,
            name,
            "a fixed SSM parameter name: letters, digits, '_', '.', '-' and '/' separators, "
            f"at most {NAME_MAX} characters",
            f"give a literal name such as {STATE_PREFIX}/<what>/<name>",
        )
    return None


class RunTimeState(Construct):
    """The function (and custom resource framework) behind every ``RunTimeParameter`` of one stack.

    Use ``RunTimeState.of(stack)``; attributes ``function``, ``provider``, ``provider_role``.
    """

    def __init__(self, scope: Stack, id: str = SERVICE_ID) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            folder="run_time_state",
            description="custom resource that creates run-time SSM parameters once and never resets their values",
            timeout=Duration.minutes(1),
        )
        self.provider, self.provider_role = provider_framework(
            self, on_event=self.function, description="Custom resource framework of the stack's run-time parameters"
        )
        acknowledge_resource(
            self.provider_role,
            f"{self.function.function_arn}:*",
            "The custom resource framework invokes the run-time parameters' own function: "
            "lambda:InvokeFunction on that one function and its versions (the ':*' qualifier).",
            actions=["lambda:InvokeFunction"],
        )
        grant(
            self.function,
            sid="CleanUpRunTimeState",
            actions=list(CLEANUP_ACTIONS),
            resources=[parameter_arn(Stack.of(self), f"{STATE_PREFIX}/*")],
            reason=f"Cleanup of run-time parameters under {STATE_PREFIX}/ that left the template: CloudFormation "
            "removes a parameter's named grant before its cleanup Delete (and a rollback before it deletes "
            "what the update created), so tags are read and removed, and the parameter deleted, on the "
            "library's state folder; the handler deletes only a parameter no other owner tag holds.",
        )

    @classmethod
    def of(cls, scope: Construct) -> RunTimeState:
        """The stack's one ``RunTimeState``, made on first use."""
        return once_per_stack(cls, scope, SERVICE_ID)

    def serve(
        self,
        sid: str,
        *,
        parameters: Sequence[str],
        seeds: Sequence[str] = (),
        plan_arns: Sequence[str] = (),
        outside_folder: bool = False,
    ) -> None:
        """Let the function manage ``parameters`` (ARNs), read ``seeds`` and describe ``plan_arns``;
        ``outside_folder``: the parameters are not under ``STATE_PREFIX``, so the cleanup actions are named too."""
        role = self.function.role
        assert role is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"Manage{sid}",
                actions=list(MANAGE_ACTIONS + (CLEANUP_ACTIONS if outside_folder else ())),
                resources=list(parameters),
            )
        )
        if seeds:
            role.add_to_principal_policy(
                iam.PolicyStatement(sid=f"Seed{sid}", actions=["ssm:GetParameter"], resources=list(seeds))
            )
        if plan_arns:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid=f"Describe{sid}", actions=["sagemaker:DescribeTrainingPlan"], resources=list(plan_arns)
                )
            )


class RunTimeParameter(Construct):
    """An SSM String parameter written at run time, created once and never reset by a deploy.

    Child ``Resource`` (``Custom::SageMakerLlmRunTimeParameter``). Attributes: ``parameter_name`` (a
    literal), ``parameter_arn``, ``custom_resource``, ``removal``. ``grant_read`` / ``grant_write`` give a
    function exactly this parameter, as ``ssm.StringParameter``'s grants do.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        parameter_name: str,
        initial_value: str,
        description: str,
        seed_from: str | None = None,
        plan_name: str | None = None,
        plan_arns: Sequence[str] = (),
    ) -> None:
        """
        :param parameter_name: the parameter's fixed name (readers resolve it by name).
        :param initial_value: the value a new parameter starts with (never written again by a deploy).
        :param description: set when the parameter is created.
        :param seed_from: a parameter (an earlier name of the same value) whose value a new parameter copies,
            when it exists. Default: none.
        :param plan_name: make the value this training plan's status, read at every create and update;
            ``plan_arns`` are the exact ARNs the function may describe. Default: a plain value.
        """
        super().__init__(scope, id)
        problems = [
            p
            for p in (
                name_problem("parameter_name", parameter_name),
                name_problem("seed_from", seed_from) if seed_from else None,
            )
            if p is not None
        ]
        if not 1 <= len(initial_value) <= 4096:
            problems.append(Problem("initial_value", initial_value, "1-4096 characters", "give a non-empty value"))
        if plan_name is not None and not plan_arns:
            problems.append(
                Problem(
                    "plan_arns",
                    list(plan_arns),
                    "the plan's exact ARNs (the function describes it)",
                    "pass plan_arns with plan_name",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        stack = Stack.of(self)
        self.parameter_name = parameter_name
        self.parameter_arn = parameter_arn(stack, parameter_name)
        self.removal = removal_mode(self)
        service = RunTimeState.of(self)
        sid = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", self.node.path) if part)[-60:]
        service.serve(
            sid,
            parameters=[self.parameter_arn],
            seeds=[parameter_arn(stack, seed_from)] if seed_from else (),
            plan_arns=plan_arns,
            outside_folder=not in_state_folder(parameter_name),
        )
        properties = {
            "ParameterName": parameter_name,
            "InitialValue": initial_value,
            "Removal": self.removal,
            "Description": description[:1024],
        }
        if seed_from:
            properties["SeedFrom"] = seed_from
        if plan_name is not None:
            properties["PlanName"] = plan_name
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=service.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
        )
        # The function's grants exist before it is asked to create the parameter.
        role = service.function.role
        policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
        if policy is not None:
            self.custom_resource.node.add_dependency(policy)
        self.node.default_child = self.custom_resource.node.default_child
        resource = self.custom_resource.node.default_child
        assert isinstance(resource, CfnResource)
        resource.add_metadata("sagemaker-llm-cdk:run-time-state", parameter_name)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """``ssm:GetParameter`` (and the other reads ``StringParameter.grant_read`` gives) on this parameter."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            resource_arns=[self.parameter_arn],
            actions=["ssm:DescribeParameters", "ssm:GetParameters", "ssm:GetParameter", "ssm:GetParameterHistory"],
        )

    def grant_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """``ssm:PutParameter`` on this parameter (a run-time writer: the daily check, the promotion, the builder)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, resource_arns=[self.parameter_arn], actions=["ssm:PutParameter"]
        )
