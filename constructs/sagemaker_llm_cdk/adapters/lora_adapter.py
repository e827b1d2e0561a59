"""``LoraAdapter``: a LoRA adapter served on a base ``ModelComponent``, loaded on demand.

Each adapter is its own inference component that names the base component
(``Specification.BaseInferenceComponentName``) and points at a ``.tar.gz`` in S3
(``Specification.Container.ArtifactUrl``). It has no compute requirements, no variant name
and no copy count: it runs inside the base model's copies. The adapter stays in S3 until a
request names it (``InvokeEndpoint(InferenceComponentName=<adapter>)``); the container keeps
up to ``LoraSettings.max_gpu_adapters`` on the GPU, moves the least used to CPU memory (up to
``max_cpu_adapters``) and the rest to local disk. ``apply_lora_settings`` turns those settings
into the container's variables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import Annotations, Aws, IAnyProducer, IResolveContext, Lazy, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker

from constructs import Construct

from ..core import naming
from ..core.errors import ConfigurationError, Problem
from ..core.settings import _S3_URI, validated
from ..hosting.component_base import InferenceComponentConstruct, name_taken_problem
from ..hosting.model_component import apply_lora_settings as apply_lora_settings  # served by the base model
from ..settings.adapters import AdapterSpec, max_rank_missing
from ..settings.hosting import ModelSpec

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent

ARTIFACT_URL_MAX = 1024
"""Longest ``Container.ArtifactUrl`` SageMaker accepts (botocore shape ``Url``)."""

POLICY_CHARACTERS = 6144
"""IAM's size limit of one customer managed policy, whitespace not counted."""

POLICIES_PER_ROLE_DEFAULT = 10
"""Managed policies one IAM role may have attached by default (adjustable)."""

POLICIES_PER_ROLE_MAX = 20
"""The most managed policies IAM lets one role have, even after a quota increase."""

_POLICY_OVERHEAD = 200
"""Characters of a policy document other than its resource ARNs, with room to spare."""

_WIDEST_PARTITION = "aws-us-gov"

# --------------------------------------------------------------------- container settings


# ------------------------------------------------------------------- names per endpoint


def adapters_of(endpoint: LlmEndpoint) -> tuple[LoraAdapter, ...]:
    """The adapters created on ``endpoint`` so far, in creation order."""
    return tuple(cast("LoraAdapter", a) for a in endpoint.lora_adapters.values())


def adapter_names(endpoint: LlmEndpoint) -> frozenset[str]:
    """Inference component names the adapters on ``endpoint`` use."""
    return frozenset(endpoint.lora_adapters)


def base_problems(base: Any, field: str = "base") -> list[Problem]:
    """Problems with ``base`` as the base model of adapters."""
    # A ModelComponent (hosting imports this module, so it is recognised by its settings, not imported).
    spec = getattr(base, "spec", None)
    if not (isinstance(base, InferenceComponentConstruct) and isinstance(spec, ModelSpec)):
        return [
            Problem(
                field,
                type(base).__name__,
                "a ModelComponent (a model, not an adapter)",
                "pass the ModelComponent that endpoint.add_model returned",
            )
        ]
    if spec.lora is None:
        return [
            Problem(
                f"{field}.spec.lora",
                None,
                f"lora settings on model {spec.name}: adapters need a base that loads them",
                f"set lora on model {spec.name}, e.g. `lora: {{max_gpu_adapters: 4, "
                "max_cpu_adapters: 16, max_rank: 16}` in the config or ModelSpec(lora=LoraSettings(...))",
            )
        ]
    if spec.lora.max_rank is None:
        return [max_rank_missing(f"{field}.spec.lora.max_rank")]
    return []


# ----------------------------------------------------------------- artifact read access


def artifact_arn(artifact_s3_uri: str, *, partition: str = Aws.PARTITION) -> str:
    """The S3 object ARN of ``artifact_s3_uri``, with IAM's wildcard characters escaped."""
    match = _S3_URI.match(artifact_s3_uri)
    if not match:
        raise ValueError(f"not an S3 URI: {artifact_s3_uri!r}")
    key = match.group("key") or ""
    # In an IAM resource, * ? and $ are special: ${*} ${?} ${$} stand for the characters.
    escaped = "".join({"*": "${*}", "?": "${?}", "$": "${$}"}.get(c, c) for c in key)
    return f"arn:{partition}:s3:::{match.group('bucket')}/{escaped}"


def _policy_characters(arn_for_size: str) -> int:
    """Characters one ARN adds to a policy: quoted, JSON-escaped, plus a comma."""
    return len(json.dumps(arn_for_size)) + 1


class ArtifactAccess:
    """Managed policies that let one endpoint's role read adapter artifacts, object by object.

    The ARNs are packed into as few policies as IAM's 6,144-character limit allows, all in the
    endpoint's stack (they hold no cross-stack references), attached to the role by the policy
    itself (``Roles``), so a role defined in any stack works.
    """

    def __init__(self, endpoint: LlmEndpoint) -> None:
        self.endpoint = endpoint
        self.policies: list[iam.ManagedPolicy] = []
        self._arns: list[list[str]] = []  # each policy's ARNs, rendered at synth by its statement (_Resources)
        self._room = 0
        self._granted: dict[str, iam.ManagedPolicy] = {}

    def grant(self, arn: str, arn_for_size: str, requester: Construct) -> iam.ManagedPolicy:
        """The policy that grants ``s3:GetObject`` on ``arn``, creating room for it if needed."""
        existing = self._granted.get(arn_for_size)
        if existing is not None:
            return existing
        size = _policy_characters(arn_for_size)
        if not self.policies or size > self._room:
            self._new_policy(requester)
        self._arns[-1].append(arn)  # no add_resources round trip per adapter: the statement reads the list at synth
        self._room -= size
        self._granted[arn_for_size] = self.policies[-1]
        return self.policies[-1]

    def _new_policy(self, requester: Construct) -> None:
        count = len(self.policies) + 1
        if count > POLICIES_PER_ROLE_MAX:
            raise ConfigurationError(
                [
                    Problem(
                        "settings.artifact_s3_uri",
                        len(self._granted),
                        f"artifact ARNs that fit in {POLICIES_PER_ROLE_MAX} managed policies of {POLICY_CHARACTERS} "
                        "characters (the most IAM attaches to one role)",
                        "serve fewer adapters on this endpoint, spread them over more endpoints, or shorten the "
                        "artifacts' S3 keys",
                    )
                ],
                source=requester.node.path,
            )
        arns: list[str] = []
        # One resource, a token CDK resolves at each rendering to the ARNs (one: a string, as PolicyStatement
        # renders a single resource): the same document, one round trip per policy and rendering.
        # Only from buckets the deploying account owns: bucket names are global (s3:ResourceAccount).
        statement = iam.PolicyStatement(
            actions=["s3:GetObject"],
            resources=[Token.as_string(Lazy.uncached_any(_Resources(arns)))],
            conditions={"StringEquals": {"s3:ResourceAccount": Aws.ACCOUNT_ID}},
        )
        policy = iam.ManagedPolicy(
            self.endpoint,
            f"AdapterArtifacts{count}",
            description=f"Read LoRA adapter artifacts of {self.endpoint.node.path} ({count})",
            roles=[self.endpoint.role],
            statements=[statement],
        )
        self.policies.append(policy)
        self._arns.append(arns)
        self._room = POLICY_CHARACTERS - _POLICY_OVERHEAD
        if count == POLICIES_PER_ROLE_DEFAULT + 1:
            Annotations.of(self.endpoint).add_warning_v2(
                "sagemaker-llm-cdk:adapterPolicies",
                f"Adapter artifacts need more than {POLICIES_PER_ROLE_DEFAULT} managed policies on the endpoint's "
                f"role: request the IAM quota 'Managed policies per role' (up to {POLICIES_PER_ROLE_MAX}) before "
                "deploying.",
            )


@jsii.implements(IAnyProducer)
class _Resources:
    """The ARNs of one adapter artifact policy, as they are when CDK renders it (adapters added later count)."""

    def __init__(self, arns: list[str]) -> None:
        self._arns = arns

    def produce(self, context: IResolveContext) -> str | list[str]:
        # One ARN is a string, as PolicyStatement renders a single resource (whatever the minimizePolicies flag).
        return self._arns[0] if len(self._arns) == 1 else list(self._arns)


def _access_for(endpoint: LlmEndpoint) -> ArtifactAccess:
    access = cast("ArtifactAccess | None", endpoint.adapter_artifact_access)
    if access is None:
        access = ArtifactAccess(endpoint)
        endpoint.adapter_artifact_access = access
    return access


def artifact_policies(endpoint: LlmEndpoint) -> tuple[iam.ManagedPolicy, ...]:
    """The managed policies that let ``endpoint``'s role read its adapters' artifacts."""
    access = cast("ArtifactAccess | None", endpoint.adapter_artifact_access)
    return tuple(access.policies) if access else ()


# --------------------------------------------------------------------------- construct


class LoraAdapter(InferenceComponentConstruct):
    """A LoRA adapter on a base model, as an adapter inference component.

    The base must have ``spec.lora`` set. The adapter's name is its inference component name:
    clients pass it as ``InferenceComponentName``, so it must be unique on the endpoint (and
    in the account and region). The endpoint's execution role may read exactly the adapter's
    artifact object (``s3:GetObject`` on its ARN); the component is created after its base and
    after that permission exists. It may live in another stack than its base: CloudFormation
    then gets a cross-stack reference to the endpoint name and a stack dependency.

    Escape hatch: ``cfn_inference_component``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        base: ModelComponent,
        settings: AdapterSpec | Mapping[str, Any],
        artifact_key: kms.IKey | None = None,
    ) -> None:
        """
        :param base: the model the adapter runs on; it needs ``spec.lora``.
        :param settings: the adapter's name and ``s3://.../adapter.tar.gz`` (files at the archive root):
            ``AdapterSpec``, or a mapping of its fields.
        :param artifact_key: the KMS key the artifact is encrypted with. Default: the bucket uses
            S3-managed keys, no KMS permission is granted.
        """
        super().__init__(scope, id)
        problems: list[Problem] = []
        checked: AdapterSpec | None = None
        try:
            # The problems are re-raised below under this construct's path; ``where`` goes unused, and
            # self.node.path would cost two jsii calls per adapter.
            checked = validated(AdapterSpec, settings, where=id)
        except ConfigurationError as error:
            problems.extend(p.under("settings") for p in error.problems)
        problems.extend(base_problems(base))
        physical = None
        if checked is not None and not problems:
            physical = naming.component_name(base.endpoint, checked.name, checked.physical_name, field="settings.name")
            for field, name in (("settings.name", checked.name), ("settings.physical_name", physical)):
                taken = name_taken_problem(field, name, base.endpoint)
                if taken is not None:
                    problems.append(taken)
                    break
        if checked is not None and len(checked.artifact_s3_uri) > ARTIFACT_URL_MAX:
            problems.append(
                Problem(
                    "settings.artifact_s3_uri",
                    checked.artifact_s3_uri,
                    f"at most {ARTIFACT_URL_MAX} characters",
                    "use a shorter S3 key",
                )
            )
        if problems or checked is None:
            raise ConfigurationError(problems, source=self.node.path)
        spec = checked

        self.spec = spec
        self.base = base
        self.endpoint = base.endpoint
        assert physical is not None
        self.component_name = physical
        """The adapter's inference component name: ``spec.physical_name``, else ``<stack name>-<spec.name>``."""
        apply_lora_settings(base)

        self.artifact_arn = artifact_arn(spec.artifact_s3_uri)
        self.artifact_policy = _access_for(self.endpoint).grant(
            self.artifact_arn, artifact_arn(spec.artifact_s3_uri, partition=_WIDEST_PARTITION), self
        )
        if artifact_key is not None:
            artifact_key.grant_decrypt(self.endpoint.role)

        self.cfn_inference_component = sagemaker.CfnInferenceComponent(
            self,
            "Resource",
            endpoint_name=self.endpoint.endpoint_name,
            inference_component_name=self.component_name,
            specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
                base_inference_component_name=base.component_name,
                container=sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty(
                    artifact_url=spec.artifact_s3_uri,
                ),
            ),
        )
        # The base's name is a fixed string, so CloudFormation sees no reference: say it.
        # One add_dependency call with both (the same dependencies, in the same order): fewer jsii calls.
        self.cfn_inference_component.node.add_dependency(base.cfn_inference_component, self.artifact_policy)
        # No ``self.node.default_child = ...``: a child with id "Resource" is the default child already
        # (Node.defaultChild looks it up), and setting it again costs two jsii calls per adapter.
        self._component_arn: str | None = None  # read on first use (component_arn): a round trip many apps never need
        self.endpoint.lora_adapters[self.component_name] = self

    @property
    def component_arn(self) -> str:
        """The adapter's inference component ARN (``Fn::GetAtt``)."""
        if self._component_arn is None:
            self._component_arn = self.cfn_inference_component.attr_inference_component_arn
        return self._component_arn

    @component_arn.setter
    def component_arn(self, value: str) -> None:
        self._component_arn = value
