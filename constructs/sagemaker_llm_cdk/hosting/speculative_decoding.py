"""Serve an approved EAGLE draft head: the promotion parameter, and the wiring that rolls it out on ``cdk deploy``.

How a head reaches the endpoint
-------------------------------
1. The EAGLE loop's record function writes the approved head's S3 URI
   (``s3://<artifacts>/jobs/<job name>/draft/``) to an SSM String parameter, the *promotion
   parameter*. It is created by ``PromotionParameter`` with the value ``none``.
2. The component's stack reads it through a stack parameter of type
   ``AWS::SSM::Parameter::Value<String>`` whose default is the promotion parameter's *name*.
   CloudFormation resolves such parameters again on every stack update, and the CDK CLI never
   skips deploying a stack that has one (it cannot know whether the value changed), so the next
   ``cdk deploy`` picks up a new head with no change to code or config.
3. A condition ``head promoted`` (value != ``none``) switches the inference component's
   ``Specification.ModelName`` from the component's own model to a *serving model*: the same
   container, weights, role and network, plus the draft head as an additional model data source
   (channel ``eagle``, mounted at ``/opt/ml/additional-model-data-sources/eagle``) and
   ``OPTION_SPECULATIVE_CONFIG={"method": "eagle3"|"eagle", "model": <that folder>,
   "num_speculative_tokens": N}`` for the LMI container (vLLM's method names: ``eagle3`` for
   EAGLE-3 heads, ``eagle`` for EAGLE-1/2 heads). SageMaker then rolls the copies over to it.
4. A model that serves a pre-trained head (``pretrained_head``: JumpStart's, from the lock) has the
   serving model from day one; ``none`` then means "the pre-trained head", and the channel is
   ``Fn::If [HeadPromoted, <promoted head>, <pre-trained head>]``.
5. A promoted head is served only if this stack can serve it: the serving model's ``PromotedHead``
   property gives its handler the parameter's value and the prefix the endpoint role may read
   (``s3://<artifacts bucket>/jobs/``). A head elsewhere (a parameter kept when the stack was deleted,
   pointing at the old stack's bucket) or trained on other weights than the model serves now (its
   optimization job's ``ModelSource``: a head is bound to the weights it was trained on) is left out,
   with a warning in the function's log: the pre-trained head is served instead, or no draft head.

Why a custom resource for the serving model
-------------------------------------------
``AWS::SageMaker::Model`` has no ``AdditionalModelDataSources`` property (CloudFormation's
schema stops at ``ModelDataSource``; cfn-lint rejects the key and so would the deployment), so
an override on ``ModelComponent.cfn_model`` cannot carry the head. The serving model is made by
a small custom resource (``lambda/eagle_serving_model``) that calls ``CreateModel`` with exactly
the properties the template gives it and exists only while the condition holds. It is still part
of the stack: it changes only on a deployment, and it is deleted when the head is withdrawn
(parameter back to ``none``) or the stack is deleted.

Why the promotion parameter lives in another stack
--------------------------------------------------
CloudFormation resolves ``AWS::SSM::Parameter::Value`` parameters before it creates anything, so
the SSM parameter must exist before the component's stack is deployed the first time. Put
``PromotionParameter`` in a small companion stack that the component's stack depends on
(``EagleOptimization`` adds that dependency). The parameter is a ``RunTimeParameter``
(``core.run_time_state``): created once with the value ``none``, never written back by a deploy
(CloudFormation's ``AWS::SSM::Parameter`` would write ``none`` again on any update of the resource,
a tag change included, and withdraw the promoted head).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import (
    Aws,
    CfnCondition,
    CfnParameter,
    CustomResource,
    Duration,
    Fn,
    IStableAnyProducer,
    Lazy,
    Stack,
    Token,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm

from constructs import Construct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.functions import python_function
from ..core.run_time_state import STATE_PREFIX, RunTimeParameter
from ..core.settings import _S3_URI, name_problem
from ..settings.eagle import EAGLE_ARCHITECTURES, JOB_NAME_PREFIX
from ..settings.images import lora_with_speculative_problem

if TYPE_CHECKING:
    from .model_component import ModelComponent
    from .pretrained_head import PretrainedHead

NO_HEAD = "none"
"""Promotion parameter value meaning "no approved draft head": the component serves its own model (or its
pre-trained head, when it has one)."""
CHANNEL = "eagle"
"""Additional model data channel of the draft head."""
DRAFT_PATH = f"/opt/ml/additional-model-data-sources/{CHANNEL}"
"""Where SageMaker mounts the draft head in the container."""
VLLM_METHOD = {"EAGLE3": "eagle3", "EAGLE2": "eagle"}
"""vLLM ``speculative_config.method`` per EAGLE version (EAGLE-1/2 heads load with ``eagle``)."""
PARAMETER_PREFIX = f"{STATE_PREFIX}/eagle"
"""Where a model's run-time EAGLE values live (``<prefix>/<model>/draft-head``, ``<prefix>/<model>/watermark``)."""
EARLIER_PARAMETER_PREFIX = "/sagemaker-llm/eagle"
"""Where earlier versions kept the promotion parameter (a new one starts with the value found there)."""
SERVING_MODEL_TYPE = "Custom::EagleServingModel"


def serving_model_prefix(component: ModelComponent) -> str:
    """Names of the models that serve ``component`` with a head start with this and a hyphen."""
    return f"{component.component_name[:40].rstrip('-')}-eagle"


def speculative_config(eagle_version: str, num_speculative_tokens: int) -> str:
    """The LMI ``OPTION_SPECULATIVE_CONFIG`` value for a head of ``eagle_version`` ("EAGLE3"/"EAGLE2")."""
    return json.dumps(
        {"method": VLLM_METHOD[eagle_version], "model": DRAFT_PATH, "num_speculative_tokens": num_speculative_tokens},
        separators=(",", ":"),
    )


class PromotionParameter(Construct):
    """The SSM String parameter that holds a model's approved EAGLE draft head (created as ``none``).

    Place it in a stack that is deployed before the model's stack (a small companion stack): the
    model's stack reads it at deploy time as an ``AWS::SSM::Parameter::Value<String>`` parameter,
    which must exist before that stack deploys. Its name is fixed, so the reading stack refers to
    it by name and not by a cross-stack export. Child ``Resource`` is the ``RunTimeParameter`` (also
    ``parameter``): no update of the stack writes ``none`` back over a promoted head. It is kept or deleted with
    its stack by that stack's removal mode: call ``set_removal(promotions, ...)`` as for the model's stack, so that
    ``destroy`` deletes it with the bucket whose head it names.
    """

    def __init__(self, scope: Construct, id: str, *, model_name: str, parameter_name: str | None = None) -> None:
        """
        :param model_name: the inference component name of the model the head is for.
        :param parameter_name: the SSM parameter's name. Default:
            ``/sagemaker-llm/state/eagle/<model_name>/draft-head``; a new default-named parameter starts with the
            value of ``/sagemaker-llm/eagle/<model_name>/draft-head`` (the name earlier versions used) when that exists.
        """
        super().__init__(scope, id)
        problems = []
        problem = name_problem("model_name", model_name)
        if problem:
            problems.append(problem)
        name = parameter_name or f"{PARAMETER_PREFIX}/{model_name}/draft-head"
        earlier = None if parameter_name else f"{EARLIER_PARAMETER_PREFIX}/{model_name}/draft-head"
        if Token.is_unresolved(name) or not _parameter_name_ok(name):
            problems.append(
                Problem(
                    "parameter_name",
                    name,
                    "a fixed SSM parameter name: letters, digits, '_', '.', "
                    "'-' and '/' separators, at most 1011 characters",
                    "give a literal name such as /sagemaker-llm/state/eagle/<model>/draft-head",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        self.model_name = model_name
        self.parameter_name = name
        """The parameter's name, a plain string (no token)."""
        self.parameter = RunTimeParameter(
            self,
            "Resource",
            parameter_name=name,
            initial_value=NO_HEAD,
            seed_from=earlier,
            description=f"Approved EAGLE draft head of {model_name}: an s3:// prefix, or '{NO_HEAD}'. Written by the "
            "EAGLE record function; read by CloudFormation when the model's stack deploys.",
        )
        self.node.default_child = self.parameter.node.default_child


def _parameter_name_ok(name: str) -> bool:
    import re

    return len(name) <= 1011 and re.fullmatch(r"/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*", name) is not None


def literal_parameter_name(parameter: ssm.IStringParameter | RunTimeParameter) -> str | None:
    """The plain name of ``parameter``, or None when only a token (e.g. a generated name) is known."""
    if not Token.is_unresolved(parameter.parameter_name):
        return parameter.parameter_name
    child = parameter.node.default_child
    name = getattr(child, "name", None) if isinstance(child, ssm.CfnParameter) else None
    return name if isinstance(name, str) and not Token.is_unresolved(name) else None


class SpeculativeDecoding(Construct):
    """Serves ``component`` with an EAGLE draft head: a promoted one (named by a promotion parameter), a
    pre-trained one (served from day one), or both (the pre-trained head until a promotion).

    With a promotion parameter it adds to the component's stack: the stack parameter ``DraftHead`` (type
    ``AWS::SSM::Parameter::Value<String>``, default = the promotion parameter's name), the condition
    ``HeadPromoted`` (value != ``none``), and read access for the endpoint role to heads under
    ``draft_prefix`` of ``draft_bucket`` (and ``draft_key``). Always: the serving model (``ServingModel``, a
    ``Custom::EagleServingModel``) and an override of the inference component's ``Specification.ModelName``.
    Without a pre-trained head the serving model exists only under ``HeadPromoted`` and the component runs
    ``Fn::If [HeadPromoted, <serving model>, <component model>]``; with one, the serving model always exists
    and its ``eagle`` channel is ``Fn::If [HeadPromoted, <promoted head>, <pre-trained head>]`` (the
    pre-trained head's ``ModelAccessConfig`` only on its own branch).

    Must be created in the component's stack. Escape hatches: ``draft_head_parameter``,
    ``promoted_condition`` (None without a promotion parameter), ``serving_model``, ``function``;
    ``served_model_name`` is what the inference component runs (for deployment checks).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        component: ModelComponent,
        promotion_parameter_name: str | None = None,
        draft_bucket: s3.IBucket | None = None,
        draft_prefix: str = "jobs",
        draft_key: kms.IKey | None = None,
        num_speculative_tokens: int = 5,
        pretrained_head: PretrainedHead | None = None,
    ) -> None:
        """
        :param component: the model to serve with speculative decoding (LMI container).
        :param promotion_parameter_name: the promotion parameter's name (a literal, see ``PromotionParameter``).
            Default: none (only ``pretrained_head`` is served; ``add_promotion`` can add it later).
        :param draft_bucket: the bucket the optimization jobs write draft heads to (with a promotion parameter).
        :param draft_prefix: key prefix under which heads are (``jobs/`` -> ``jobs/<job>/draft/``). Default: jobs.
        :param draft_key: KMS key the heads are encrypted with. Default: none (S3-managed keys).
        :param num_speculative_tokens: draft tokens per step, 1-16. Default: 5.
        :param pretrained_head: a head to serve while no head is promoted (see ``pretrained_head``). Default: none.
        """
        super().__init__(scope, id)
        spec = component.spec
        problems = []
        if Stack.of(self) is not Stack.of(component.cfn_model):
            problems.append(
                Problem(
                    "scope",
                    Stack.of(self).node.path,
                    f"a construct in the component's stack ({Stack.of(component.cfn_model).node.path})",
                    "create the speculative-decoding wiring next to the model component",
                )
            )
        if spec.architecture not in EAGLE_ARCHITECTURES:
            problems.append(
                Problem(
                    "component.spec.architecture",
                    spec.architecture,
                    "one of " + ", ".join(EAGLE_ARCHITECTURES),
                    "set the model's architecture",
                )
            )
        if not spec.is_lmi:
            problems.append(
                Problem(
                    "component.spec.image",
                    spec.image,
                    "an LMI image ('lmi', 'lmi:<tag>' or a "
                    "djl-inference image): the head is served through OPTION_SPECULATIVE_CONFIG",
                    "serve the model with the LMI container",
                )
            )
        if promotion_parameter_name is None and pretrained_head is None:
            problems.append(
                Problem(
                    "promotion_parameter_name",
                    None,
                    "a promotion parameter name, a pretrained_head, or both",
                    "pass PromotionParameter(...).parameter_name",
                )
            )
        if pretrained_head is not None:
            problems.extend(pretrained_head.problems())
        if promotion_parameter_name is not None:
            problems.extend(_promotion_problems(promotion_parameter_name, draft_bucket))
        lora_problem = lora_with_speculative_problem(spec)  # vLLM cannot serve LoRA and a draft head together
        if lora_problem is not None:
            problems.append(lora_problem)
        if not 1 <= num_speculative_tokens <= 16:
            problems.append(Problem("num_speculative_tokens", num_speculative_tokens, "1-16", "use e.g. 5"))
        if problems:
            raise ConfigurationError(problems, source=self.node.path)

        endpoint = component.endpoint
        self.component = component
        self.pretrained_head = pretrained_head
        """The head served while none is promoted (None: the component's own model is served then)."""
        self.eagle_version = EAGLE_ARCHITECTURES[spec.architecture or ""]
        self.speculative_config = speculative_config(self.eagle_version, num_speculative_tokens)
        self.draft_head_parameter: CfnParameter | None = None
        self.promoted_condition: CfnCondition | None = None
        role = endpoint.role

        model_prefix = serving_model_prefix(component)
        self.function = python_function(
            self,
            "ServingModelFunction",
            folder="eagle_serving_model",
            handler="index.handler",
            description=f"Creates the model that serves {component.component_name} with its EAGLE draft head "
            "(CloudFormation custom resource)",
            timeout=Duration.minutes(2),
        )
        stack = Stack.of(self)
        self.model_arn_pattern = stack.format_arn(
            service="sagemaker", resource="model", resource_name=f"{model_prefix}-*"
        )
        grants.grant(
            self.function,
            sid="ManageServingModels",
            actions=["sagemaker:CreateModel", "sagemaker:DescribeModel", "sagemaker:DeleteModel"],
            resources=[self.model_arn_pattern],
            reason="Serving models are named <model>-eagle-<hash of their properties> when the stack deploys; "
            "create, describe and delete only models with this component's prefix.",
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassEndpointRole",
                actions=["iam:PassRole"],
                resources=[role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            )
        )
        if pretrained_head is not None:
            _grant_head_read(role, pretrained_head)

        properties: dict[str, Any] = {
            "ModelNamePrefix": model_prefix,
            "ExecutionRoleArn": role.role_arn,
            "PrimaryContainer": {
                "Image": component.image_uri,
                "ModelDataSource": {
                    "S3DataSource": {
                        **_weights_source(spec.model_data_s3_uri),
                        # a gated JumpStart model: its licence accepted in config, as on the component's model
                        **({"ModelAccessConfig": {"AcceptEula": True}} if component.accepts_eula else {}),
                    }
                },
                "AdditionalModelDataSources": [
                    {
                        "ChannelName": CHANNEL,
                        "S3DataSource": Lazy.any(_Produce(self._channel_source)),
                    }
                ],
                "Environment": Lazy.any(_ServingEnvironment(component, self)),
            },
        }
        if spec.network_isolation:
            properties["EnableNetworkIsolation"] = "true"  # as the base model; the head is mounted, not downloaded
        if endpoint.vpc is not None:
            properties["VpcConfig"] = {
                "SecurityGroupIds": [g.security_group_id for g in endpoint.security_groups],
                "Subnets": endpoint.subnet_ids,
            }
        self.serving_model = CustomResource(
            self,
            "ServingModel",
            service_token=self.function.function_arn,
            resource_type=SERVING_MODEL_TYPE,
            properties=properties,
        )
        policy = role.node.try_find_child("DefaultPolicy")
        self.serving_model.node.add_dependency(policy if policy is not None else role)
        self.serving_model.node.add_dependency(self.function)
        self.served_model_name: str = self.serving_model.get_att_string("ModelName")
        """The model the inference component runs: the serving model while a head is served."""
        self._serve(self.served_model_name)
        if promotion_parameter_name is not None:
            self.add_promotion(
                promotion_parameter_name=promotion_parameter_name,
                draft_bucket=draft_bucket,
                draft_prefix=draft_prefix,
                draft_key=draft_key,
            )

    def add_promotion(
        self,
        *,
        promotion_parameter_name: str,
        draft_bucket: s3.IBucket | None,
        draft_prefix: str = "jobs",
        draft_key: kms.IKey | None = None,
        num_speculative_tokens: int | None = None,
    ) -> None:
        """Serve the head a promotion parameter names once one is promoted (``EagleOptimization`` calls this on a
        component that already serves a pre-trained head). ``num_speculative_tokens`` replaces the draft length."""
        problems = _promotion_problems(promotion_parameter_name, draft_bucket)
        if self.draft_head_parameter is not None:
            problems.append(
                Problem(
                    "promotion_parameter_name",
                    promotion_parameter_name,
                    "one promotion parameter per model",
                    "create one EagleOptimization per model",
                )
            )
        if num_speculative_tokens is not None and not 1 <= num_speculative_tokens <= 16:
            problems.append(Problem("num_speculative_tokens", num_speculative_tokens, "1-16", "use e.g. 5"))
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        assert draft_bucket is not None
        if num_speculative_tokens is not None:
            self.speculative_config = speculative_config(self.eagle_version, num_speculative_tokens)
        component = self.component
        self.draft_head_parameter = CfnParameter(
            self,
            "DraftHead",
            type="AWS::SSM::Parameter::Value<String>",
            default=promotion_parameter_name,
            description=f"SSM parameter holding the approved EAGLE draft head of {component.component_name} "
            f"(an s3:// prefix, or '{NO_HEAD}'). Resolved again on every deployment.",
        )
        self.promoted_condition = CfnCondition(
            self,
            "HeadPromoted",
            expression=Fn.condition_not(Fn.condition_equals(self.draft_head_parameter.value_as_string, NO_HEAD)),
        )
        # The endpoint role reads draft heads (weights of the serving model) and decrypts them.
        prefix = draft_prefix.strip("/")
        role = component.endpoint.role
        grants.grant(
            role,
            sid="ReadEagleDraftHeads",
            actions=["s3:GetObject"],
            resources=[draft_bucket.arn_for_objects(f"{prefix}/*/draft/*")],
            reason="A promoted draft head is many files under jobs/<job name>/draft/ (the job name is made at "
            "run time); the endpoint reads heads read-only, only draft/ folders.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListEagleDraftHeads",
                actions=["s3:ListBucket"],
                resources=[draft_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}/*"]}},
            )
        )
        if draft_key is not None:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="DecryptEagleDraftHeads", actions=["kms:Decrypt"], resources=[draft_key.key_arn]
                )
            )
        # The serving model serves the promoted head only when the role above may read it and it was trained on
        # the weights served now (the handler asks the head's optimization job); else the pre-trained head or none.
        promoted_head: dict[str, Any] = {
            "S3Uri": self.draft_head_parameter.value_as_string,
            "ReadablePrefix": f"s3://{draft_bucket.bucket_name}/{prefix}/",
        }
        if self.pretrained_head is not None:
            promoted_head["Fallback"] = self.pretrained_head.s3_data_source()
        cfn_model: Any = self.serving_model.node.default_child
        cfn_model.add_property_override("PromotedHead", promoted_head)
        grants.grant(
            self.function,
            sid="DescribeEagleJobs",
            actions=["sagemaker:DescribeOptimizationJob"],
            resources=[
                Stack.of(self).format_arn(
                    service="sagemaker", resource="optimization-job", resource_name=f"{JOB_NAME_PREFIX}*"
                )
            ],
            reason="A promoted head is the output of an optimization job named at run time "
            f"({JOB_NAME_PREFIX}<model>-<hash>); DescribeOptimizationJob only, to learn which weights "
            "it was trained on.",
        )
        if self.pretrained_head is None:
            # No head before a promotion: the serving model exists only once one is promoted.
            cfn_serving = self.serving_model.node.default_child
            cfn_serving.cfn_options.condition = self.promoted_condition  # type: ignore[union-attr]
            self.served_model_name = Token.as_string(
                Fn.condition_if(
                    self.promoted_condition.logical_id,
                    self.serving_model.get_att_string("ModelName"),
                    component.cfn_model.attr_model_name,
                )
            )
            self._serve(self.served_model_name)

    def _serve(self, model_name: str) -> None:
        component = self.component
        component.cfn_inference_component.add_property_override("Specification.ModelName", model_name)
        # Checks that compare what the component runs with the template (DeploymentCheck) read this.
        component.served_model_name = model_name

    def _channel_source(self) -> Any:
        """The ``eagle`` channel's S3DataSource: the promoted head, the pre-trained one, or one per condition."""
        promoted = None
        if self.draft_head_parameter is not None:
            promoted = {
                "S3Uri": self.draft_head_parameter.value_as_string,
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
            }
        pretrained = self.pretrained_head.s3_data_source() if self.pretrained_head is not None else None
        if promoted is not None and pretrained is not None:
            assert self.promoted_condition is not None
            return Fn.condition_if(self.promoted_condition.logical_id, promoted, pretrained)
        return promoted or pretrained


def _promotion_problems(name: str, draft_bucket: Any) -> list[Problem]:
    problems = []
    if Token.is_unresolved(name) or not _parameter_name_ok(name):
        problems.append(
            Problem(
                "promotion_parameter_name",
                name,
                "a literal SSM parameter name",
                "pass PromotionParameter(...).parameter_name",
            )
        )
    if draft_bucket is None:
        problems.append(
            Problem(
                "draft_bucket",
                None,
                "the bucket the optimization jobs write heads to, with a promotion parameter",
                "pass the EAGLE artifacts bucket",
            )
        )
    return problems


def _grant_head_read(role: iam.IRole, head: PretrainedHead) -> None:
    """The endpoint role reads the pre-trained head (SageMaker mounts it with that role, like the weights)."""
    match = _S3_URI.match(head.s3_uri)
    assert match  # checked by PretrainedHead.problems
    bucket, key = match.group("bucket"), match.group("key") or ""
    objects = key if head.s3_data_type == "S3Object" else f"{key}*"
    grants.grant(
        role,
        sid="ReadPretrainedEagleHead",
        actions=["s3:GetObject"],
        resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}/{objects}"],
        reason="The pre-trained EAGLE head is many files under one S3 prefix; read-only GetObject on that prefix only.",
    )
    grants.grant(
        role,
        sid="ListPretrainedEagleHead",
        actions=["s3:ListBucket"],
        resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}"],
        conditions={"StringLike": {"s3:prefix": [objects]}},
    )


@jsii.implements(IStableAnyProducer)
class _Produce:
    def __init__(self, produce: Any) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


def _weights_source(uri: str) -> dict[str, str]:
    compressed = uri.endswith(".tar.gz")
    assert _S3_URI.match(uri)  # validated by ModelSpec
    return {
        "S3Uri": uri,
        "S3DataType": "S3Object" if compressed else "S3Prefix",
        "CompressionType": "Gzip" if compressed else "None",
    }


@jsii.implements(IStableAnyProducer)
class _ServingEnvironment:
    """The component's container environment at synth time (after every feature added its variables),
    plus ``OPTION_SPECULATIVE_CONFIG``."""

    def __init__(self, component: ModelComponent, wiring: SpeculativeDecoding) -> None:
        self._component = component
        self._wiring = wiring

    def produce(self) -> dict[str, str]:
        return {**self._component.environment, "OPTION_SPECULATIVE_CONFIG": self._wiring.speculative_config}
