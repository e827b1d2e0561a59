"""``LlmEndpoint``: a SageMaker AI endpoint that hosts LLMs as inference components."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Arn, ArnFormat, Aws, Duration, Fn, IStringProducer, Lazy, Names, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker

from constructs import Construct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.grants import depend_on_policy
from ..core.metrics import SAGEMAKER_NAMESPACE, metric, one_minute
from ..core.protocols import ICapacityReservation, IPlanGuard, IServedAdapter
from ..core.settings import validated
from ..core.storage import NONCURRENT_VERSION_DAYS, SecureBucket, restrict_reads, secure_key
from ..settings.capacity import choose_update_policy
from ..settings.endpoint import argument_problems
from ..settings.hosting import (
    EndpointOptions,
    has_local_nvme,
    pools_with_plan_problem,
)
from ..settings.operations import RolloutSettings, batch_units, rolling_batch
from .model_component import ModelComponent

if TYPE_CHECKING:
    from ..settings.hosting import ModelSpec

VARIANT_NAME = "AllTraffic"
"""The single production variant every ``LlmEndpoint`` has."""
CAPACITY_METADATA = "sagemaker-llm-cdk:capacity"
"""Metadata key on a bound endpoint config: the plan, its instances, the endpoint's most instances and the
update policy's need (``capacity_plan.headroom_metadata``), for the change report."""


class EndpointReference(Construct):
    """An endpoint defined elsewhere, imported by name or ARN: grant and metric methods only."""

    def __init__(self, scope: Construct, id: str, *, endpoint_name: str, endpoint_arn: str) -> None:
        super().__init__(scope, id)
        self.endpoint_name = endpoint_name
        self.endpoint_arn = endpoint_arn
        self.variant_name = VARIANT_NAME
        self.lora_adapters: dict[str, IServedAdapter] = {}
        """The LoRA adapters served on this endpoint so far, by inference component name, in creation order."""
        self.adapter_artifact_access: object | None = None
        """The managed policies that let the role read the adapters' artifacts (made with the first adapter;
        the adapters package keeps them here)."""

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke this endpoint (any of its inference components)."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            resource_arns=[self.endpoint_arn],
        )

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = SAGEMAKER_NAMESPACE,
        statistic: str = "Sum",
        period: Duration | None = None,
        **kwargs: Any,
    ) -> cloudwatch.Metric:
        """A metric of this endpoint's variant (dimensions EndpointName and VariantName)."""
        return metric(
            namespace,
            metric_name,
            {"EndpointName": self.endpoint_name, "VariantName": self.variant_name},
            statistic=statistic,
            period=period,
            **kwargs,
        )

    def metric_invocations(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests sent to the endpoint. Default: sum over 1 minute."""
        return self.metric("Invocations", **kwargs)

    def metric_model_latency(self, *, statistic: str = "p90", **kwargs: Any) -> cloudwatch.Metric:
        """Time the model took to answer, microseconds. Default: p90 over 1 minute."""
        return self.metric("ModelLatency", statistic=statistic, **kwargs)

    def metric_overhead_latency(self, *, statistic: str = "p90", **kwargs: Any) -> cloudwatch.Metric:
        """Time SageMaker added around the model, microseconds. Default: p90 over 1 minute."""
        return self.metric("OverheadLatency", statistic=statistic, **kwargs)

    def metric_invocation_4xx_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests the model answered with a 4xx status. Default: sum over 1 minute."""
        return self.metric("Invocation4XXErrors", **kwargs)

    def metric_invocation_5xx_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests the model answered with a 5xx status. Default: sum over 1 minute."""
        return self.metric("Invocation5XXErrors", **kwargs)

    def metric_gpu_utilization(self, *, statistic: str = "Average", **kwargs: Any) -> cloudwatch.Metric:
        """GPU utilization of the instances, percent (sum over GPUs). Default: average over 1 minute."""
        return self.metric("GPUUtilization", namespace="/aws/sagemaker/Endpoints", statistic=statistic, **kwargs)

    def metric_gpu_memory_utilization(self, *, statistic: str = "Average", **kwargs: Any) -> cloudwatch.Metric:
        """GPU memory utilization of the instances, percent. Default: average over 1 minute."""
        return self.metric("GPUMemoryUtilization", namespace="/aws/sagemaker/Endpoints", statistic=statistic, **kwargs)


class LlmEndpoint(EndpointReference):
    """A SageMaker AI endpoint that hosts large language models as inference components.

    The endpoint config's production variant names no model: models are added with
    ``add_model`` and each becomes an inference component with its own copies, autoscaling
    and NVMe weight cache. Instances scale with SageMaker managed instance scaling (down to
    zero when ``scaling.min_instances`` is 0). The endpoint config has no fixed name, so a
    change that replaces it deploys cleanly.

    Smallest use::

        endpoint = LlmEndpoint(self, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
        endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://bucket/qwen3-8b/"))
        endpoint.grant_invoke(my_function)

    Escape hatches: ``cfn_endpoint_config``, ``cfn_endpoint``, ``role``, ``key``,
    ``data_capture_bucket``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: EndpointOptions | Mapping[str, Any] | None = None,
        endpoint_name: str | None = None,
        role: iam.IRole | None = None,
        key: kms.IKey | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        data_capture_bucket: s3.IBucket | None = None,
        capacity_plan: ICapacityReservation | None = None,
        **unknown: Any,
    ) -> None:
        """
        :param settings: every setting of the endpoint (``EndpointOptions``, or a mapping of its fields, as a
            config's endpoint is): ``instance_type`` (required), ``scaling`` (default: exactly one instance),
            ``routing`` (default: least outstanding requests), ``data_capture`` (default: on, 10% of requests),
            ``inference_ami_version``, ``volume_size_gb``, ``instance_provision_timeout_seconds`` and
            ``instance_pools`` (2-5 instance types with priorities; refused with ``capacity_plan``).
        :param endpoint_name: physical endpoint name. Default: derived from the construct path
            (stable across deployments, unique per stack), so alarms and the rollback
            configuration can name the endpoint before it exists.
        :param role: execution role for the endpoint and its models. Default: a new role with no
            permissions beyond what each model needs (its S3 prefix, image repository, KMS key).
        :param key: KMS key for captured data and (where the instance has no local NVMe) the
            instance volume. Default: a new key with rotation.
        :param vpc: run instances in this VPC. Default: SageMaker's network.
        :param vpc_subnets: subnets in ``vpc``. Default: private subnets.
        :param security_groups: Default: a new group that allows outbound traffic only.
        :param data_capture_bucket: where captured traffic goes. Default: a new secure bucket.
        :param capacity_plan: a reserved capacity plan the endpoint runs on. Default: on-demand.
        """
        where = f"{scope.node.path}/{id}"
        arguments = argument_problems(settings, unknown)
        if arguments or settings is None:
            raise ConfigurationError(arguments, source=where)
        options = validated(EndpointOptions, settings, where=where)
        self.options = options
        self._models: list[ModelComponent] = []
        self.capacity_plan = capacity_plan
        name_for_refs = endpoint_name  # set below once the endpoint exists
        super().__init__(scope, id, endpoint_name=name_for_refs or "", endpoint_arn="")

        problems: list[Problem] = []
        if capacity_plan is not None:
            problems.extend(capacity_plan.binding_problems(options, endpoint_scope=scope))
            if options.instance_pools:
                problems.append(pools_with_plan_problem())
        if vpc_subnets is not None and vpc is None:
            problems.append(Problem("vpc_subnets", "given", "only together with vpc", "pass vpc too"))
        if security_groups and vpc is None:
            problems.append(Problem("security_groups", "given", "only together with vpc", "pass vpc too"))
        if problems:
            raise ConfigurationError([p.under("") for p in problems], source=self.node.path)

        self.key: kms.IKey = key or secure_key(self, "Key", description=f"SageMaker LLM endpoint {self.node.path}")
        self.role: iam.IRole = role or iam.Role(
            self,
            "ExecutionRole",
            assumed_by=grants.sagemaker_principal(self),
            description=f"Execution role of the SageMaker endpoint {self.node.path}",
        )
        self.physical_name: str = endpoint_name or default_endpoint_name(self)
        """The endpoint's name, known at synth (it names the endpoint's log group in the role's policy)."""
        self._grant_runtime_basics()

        self.vpc = vpc
        self.security_groups: list[ec2.ISecurityGroup] = []
        vpc_config = None
        if vpc is not None:
            self.security_groups = list(
                security_groups
                or [
                    ec2.SecurityGroup(
                        self,
                        "SecurityGroup",
                        vpc=vpc,
                        allow_all_outbound=True,
                        description=f"SageMaker endpoint {self.node.path}",
                    )
                ]
            )
            self.subnet_ids = _subnet_ids(vpc, vpc_subnets)
            vpc_config = sagemaker.CfnEndpointConfig.VpcConfigProperty(
                security_group_ids=[g.security_group_id for g in self.security_groups],
                subnets=self.subnet_ids,
            )
            self._grant_vpc_access()
        else:
            self.subnet_ids = []

        self.data_capture_bucket: s3.IBucket | None = None
        self.data_capture: SecureBucket | None = None
        """The capture bucket this endpoint made (``add_reader`` lets a role of another stack read it)."""
        data_capture_config = None
        if options.data_capture.enabled:
            if data_capture_bucket is None:
                secure = SecureBucket(
                    self,
                    "DataCapture",
                    encryption_key=self.key,
                    noncurrent_version_days=NONCURRENT_VERSION_DAYS,
                    expire_after_days={"": options.data_capture.retention_days},
                )
                # Prompts and completions: only roles granted to read them may (and decrypt them through S3).
                restrict_reads(secure, self.key if isinstance(self.key, kms.Key) else None, what="captured traffic")
                self.data_capture = secure
                data_capture_bucket = secure.bucket
            self.data_capture_bucket = data_capture_bucket
            grants.grant(
                self.role,
                sid="WriteCapturedData",
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[data_capture_bucket.arn_for_objects("data-capture/*")],
                reason="Data Capture writes one object per capture file under the data-capture/ prefix; only that "
                "prefix, and only PutObject/AbortMultipartUpload.",
            )
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="EncryptCapturedData",
                    actions=["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt"],
                    resources=[self.key.key_arn],
                )
            )
            capture = options.data_capture
            data_capture_config = sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
                enable_capture=True,
                initial_sampling_percentage=capture.sampling_percentage,
                destination_s3_uri=data_capture_bucket.s3_url_for_object("data-capture"),
                kms_key_id=self.key.key_arn,
                capture_options=[
                    sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode=mode)
                    for mode, on in (("Input", capture.capture_input), ("Output", capture.capture_output))
                    if on
                ],
                capture_content_type_header=sagemaker.CfnEndpointConfig.CaptureContentTypeHeaderProperty(
                    json_content_types=list(capture.json_content_types),
                )
                if capture.json_content_types
                else None,
            )

        self.capacity_guard: IPlanGuard | None = None
        reservation = None
        if capacity_plan is not None:
            self.capacity_guard = capacity_plan.bind(
                self, instance_type=options.instance_type, max_instances=options.scaling.max_instances
            )
            reservation = sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty(
                capacity_reservation_preference="capacity-reservations-only",
                ml_reservation_arn=self.capacity_guard.ml_reservation_arn,
            )

        variant = sagemaker.CfnEndpointConfig.ProductionVariantProperty(
            variant_name=VARIANT_NAME,
            # With pools, InstancePools replaces InstanceType (AWS: "replace the InstanceType parameter ...
            # with the InstancePools list").
            instance_type=None if options.instance_pools else options.instance_type,
            instance_pools=[
                sagemaker.CfnEndpointConfig.InstancePoolProperty(instance_type=p.instance_type, priority=p.priority)
                for p in options.instance_pools
            ]
            or None,
            initial_instance_count=options.scaling.initial,
            managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                status="ENABLED",
                min_instance_count=options.scaling.min_instances,
                max_instance_count=options.scaling.max_instances,
            ),
            routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                routing_strategy=options.routing.strategy,
                prefix_aware_routing_config=sagemaker.CfnEndpointConfig.PrefixAwareRoutingConfigProperty(
                    prefix_length=options.routing.prefix_length,
                    concurrency_threshold=options.routing.concurrency_threshold,
                )
                if options.routing.strategy == "PREFIX_AWARE"
                else None,
            ),
            # Default: the AMI the hosted models' images need (a CUDA 13 LMI image needs its driver), else SageMaker's.
            inference_ami_version=options.inference_ami_version or Lazy.uncached_string(_RequiredAmi(self)),
            volume_size_in_gb=options.volume_size_gb,
            variant_instance_provision_timeout_in_seconds=options.instance_provision_timeout_seconds,
            capacity_reservation_config=reservation,
        )
        # No ModelName on the variant: models come as inference components. No fixed name:
        # every EndpointConfig property is create-only, so CloudFormation must be free to
        # create a new config under a new name when anything changes.
        self.cfn_endpoint_config = _EndpointConfig(
            self,
            "Config",
            production_variants=[variant],
            execution_role_arn=self.role.role_arn,
            kms_key_id=None if has_local_nvme(options.instance_type) else self.key.key_arn,
            data_capture_config=data_capture_config,
            vpc_config=vpc_config,
        )
        depend_on_policy(self.cfn_endpoint_config, self.role)
        if self.capacity_guard is not None:
            # The guard runs again whenever the config as rendered changes (its models' AMI and any override too).
            self.capacity_guard.watch(self.cfn_endpoint_config.rendered_properties)
        if self.capacity_guard is not None and self.capacity_guard.bound is not None:
            # when_not_active on_demand: bind only while the plan's status parameter says Active.
            self.cfn_endpoint_config.add_property_override(
                "ProductionVariants.0.CapacityReservationConfig",
                Fn.condition_if(
                    self.capacity_guard.bound.logical_id,
                    {
                        "CapacityReservationPreference": "capacity-reservations-only",
                        "MlReservationArn": self.capacity_guard.ml_reservation_arn,
                    },
                    Aws.NO_VALUE,
                ),
            )
        if capacity_plan is not None:
            policy, batch = self._fitting_update_policy()  # a rolling step may be more than one instance
            self.cfn_endpoint_config.add_metadata(
                CAPACITY_METADATA,
                {
                    **capacity_plan.headroom_metadata(options),
                    "RollingNeedsInstances": options.scaling.max_instances + batch,
                    "UpdatePolicy": policy or "NONE_FITS",
                    "UpdateFits": policy is not None,
                },
            )
        self.cfn_endpoint = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_config_name=self.cfn_endpoint_config.attr_endpoint_config_name,
            endpoint_name=self.physical_name,
        )
        self.node.default_child = self.cfn_endpoint
        self.endpoint_name = self.cfn_endpoint.attr_endpoint_name
        self.endpoint_arn = self.cfn_endpoint.ref
        self.instance_type = options.instance_type

    @property
    def log_group_name(self) -> str:
        """Where SageMaker writes the containers' logs: ``/aws/sagemaker/Endpoints/<endpoint name>``."""
        name = self.physical_name if not Token.is_unresolved(self.physical_name) else "*"
        return f"/aws/sagemaker/Endpoints/{name}"

    # ----------------------------------------------------------------- imports
    @classmethod
    def from_endpoint_name(cls, scope: Construct, id: str, endpoint_name: str) -> EndpointReference:
        """Import an existing endpoint by name."""
        arn = Stack.of(scope).format_arn(service="sagemaker", resource="endpoint", resource_name=endpoint_name.lower())
        return EndpointReference(scope, id, endpoint_name=endpoint_name, endpoint_arn=arn)

    @classmethod
    def from_endpoint_arn(cls, scope: Construct, id: str, endpoint_arn: str) -> EndpointReference:
        """Import an existing endpoint by ARN (``arn:aws:sagemaker:<region>:<account>:endpoint/<name>``)."""
        if not Token.is_unresolved(endpoint_arn):
            parts = Arn.split(endpoint_arn, ArnFormat.SLASH_RESOURCE_NAME)
            if parts.service != "sagemaker" or parts.resource != "endpoint" or not parts.resource_name:
                raise ConfigurationError(
                    [
                        Problem(
                            "endpoint_arn",
                            endpoint_arn,
                            "arn:<partition>:sagemaker:<region>:<account>:endpoint/<name>",
                            "copy the ARN from DescribeEndpoint",
                        )
                    ],
                    source=f"{scope.node.path}/{id}",
                )
            name = parts.resource_name
        else:
            name = Arn.split(endpoint_arn, ArnFormat.SLASH_RESOURCE_NAME).resource_name or ""
        return EndpointReference(scope, id, endpoint_name=name, endpoint_arn=endpoint_arn)

    # ------------------------------------------------------------------ models
    # ---------------------------------------------------------------- rollout
    def update_policy(self) -> str | None:
        """The endpoint update policy its capacity plan has room for (``capacity_plan.choose_update_policy``).

        On-demand endpoints: blue/green. A bound endpoint whose plan cannot hold a second fleet gets a
        rolling update (``rolling_batch_size``) and a synth warning saying so; one whose plan cannot hold even
        one more batch keeps blue/green and a warning that endpoint-config changes will not deploy.
        """
        plan = self.capacity_plan
        if plan is None:
            return "BLUE_GREEN"
        from aws_cdk import Annotations

        most = self.options.scaling.max_instances
        policy, batch = self._fitting_update_policy()
        kind, value = self.rolling_batch_size()
        guard = self.capacity_guard
        if guard is not None:
            # the guard checks the plan's free instances for it (a rolling step: its batch size)
            guard.set_update_policy(
                policy or "NONE_FITS",
                rolling_batch={"Type": kind, "Value": str(value)} if policy == "ROLLING" else None,
            )
        step = "one instance" if batch == 1 else f"{batch} instances"
        if policy == "ROLLING":
            Annotations.of(self).add_warning_v2(
                "sagemaker-llm-cdk:rollingUpdateChosen",
                f"Capacity plan {plan.plan_name} holds {plan.instance_count} instances: too few for a blue/green "
                f"update of up to {most} (needs {2 * most}), so endpoint updates roll {step} at a time (needs "
                f"{most + batch}).",
            )
        elif policy is None:
            rolling_most = self._most_instances_rolling_fits(plan.instance_count)
            Annotations.of(self).add_warning_v2(
                "sagemaker-llm-cdk:noUpdateHeadroom",
                f"Capacity plan {plan.plan_name} holds {plan.instance_count} instances and the endpoint may run "
                f"{most}: no update policy fits (blue/green needs "
                f"{2 * most}, rolling {most + batch}), so a change that replaces the endpoint config cannot get "
                "instances and rolls back. "
                + (
                    f"Lower scaling.max_instances to {plan.instance_count // 2} (blue/green) or "
                    f"{rolling_most} (rolling), or bind a larger plan."
                    if rolling_most > 0
                    else "Bind a plan of 2 or more instances (rolling) or 2 x max_instances (blue/green)."
                ),
            )
        return policy

    def rolling_batch_size(self) -> tuple[str, int]:
        """``MaximumBatchSize`` (Type, Value) of the endpoint's rolling update, within what AWS takes.

        botocore: the value "must be between 5% to 50% of the variant's total instance count", and the variant
        runs anything from ``min_instances`` (1 when it is 0: nothing rolls at zero) to ``max_instances``
        (managed instance scaling). ``operations.settings.rolling_batch``: INSTANCE_COUNT where one count fits
        every instance count, else CAPACITY_PERCENT of about one instance.
        """
        scaling = self.options.scaling
        kind, value = rolling_batch(scaling.min_instances, scaling.max_instances)
        return ("INSTANCE_COUNT" if kind == "count" else "CAPACITY_PERCENT"), value

    @property
    def rolling_batch_instances(self) -> int:
        """Instances one rolling step starts at ``max_instances`` (a percent rounded up: ``batch_units``)."""
        kind, value = self.rolling_batch_size()
        return batch_units(
            "count" if kind == "INSTANCE_COUNT" else "percent", value, self.options.scaling.max_instances
        )

    def _fitting_update_policy(self) -> tuple[str | None, int]:
        """(policy, instances of one rolling step): ``choose_update_policy``, and ROLLING only when the plan also
        holds one step of ``rolling_batch_size`` beside ``max_instances`` (more than one instance above 20)."""
        assert self.capacity_plan is not None
        count, most = self.capacity_plan.instance_count, self.options.scaling.max_instances
        batch = self.rolling_batch_instances
        policy = choose_update_policy(count, most)
        if policy == "ROLLING" and count < most + batch:
            policy = None
        return policy, batch

    def _most_instances_rolling_fits(self, plan_instances: int) -> int:
        """The largest ``max_instances`` whose rolling update (``rolling_batch``) a plan of ``plan_instances``
        holds; 0 when none does."""
        fewest = self.options.scaling.min_instances
        for most in range(min(plan_instances - 1, self.options.scaling.max_instances), 0, -1):
            kind, value = rolling_batch(min(fewest, most), most)
            if most + batch_units(kind, value, most) <= plan_instances:
                return most
        return 0

    def configure_rollout(self, rollout: RolloutSettings, rollback_alarms: Mapping[str, cloudwatch.IAlarm]) -> None:
        """Give the endpoint a ``DeploymentConfig`` that rolls back on ``rollback_alarms`` (literal name -> alarm).

        Blue/green (all at once, ``rollout.wait_seconds`` of baking) unless the capacity plan only has room for a
        rolling update (``update_policy``), then in steps of ``rolling_batch_size``. ``LlmMonitoring`` calls it
        with the endpoint-level alarms.
        """
        rollback = (
            sagemaker.CfnEndpoint.AutoRollbackConfigProperty(
                alarms=[sagemaker.CfnEndpoint.AlarmProperty(alarm_name=name) for name in rollback_alarms]
            )
            if rollback_alarms
            else None
        )
        if self.update_policy() == "ROLLING":
            # A bound plan without room for a second fleet: roll a step AWS takes at every instance count, and
            # roll back in the same steps (the plan has no room for the old fleet at once either).
            kind, value = self.rolling_batch_size()
            size = sagemaker.CfnEndpoint.CapacitySizeProperty(type=kind, value=value)
            self.cfn_endpoint.deployment_config = sagemaker.CfnEndpoint.DeploymentConfigProperty(
                rolling_update_policy=sagemaker.CfnEndpoint.RollingUpdatePolicyProperty(
                    maximum_batch_size=size,
                    rollback_maximum_batch_size=size,
                    wait_interval_in_seconds=rollout.wait_seconds,
                    maximum_execution_timeout_in_seconds=rollout.timeout_seconds,
                ),
                auto_rollback_configuration=rollback,
            )
            return
        self.cfn_endpoint.deployment_config = sagemaker.CfnEndpoint.DeploymentConfigProperty(
            blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(type="ALL_AT_ONCE"),
                termination_wait_in_seconds=rollout.wait_seconds,
                maximum_execution_timeout_in_seconds=rollout.timeout_seconds,
            ),
            auto_rollback_configuration=rollback,
        )

    def add_model(self, id: str, settings: ModelSpec | Mapping[str, Any], **kwargs: Any) -> ModelComponent:
        """Host the model ``settings`` describe on this endpoint as an inference component; see ``ModelComponent``."""
        return ModelComponent(self, id, endpoint=self, settings=settings, **kwargs)

    @property
    def models(self) -> tuple[ModelComponent, ...]:
        return tuple(self._models)

    def _register(self, component: ModelComponent) -> None:
        self._models.append(component)

    # ----------------------------------------------------------------- metrics
    def metric_no_capacity_invocation_failures(self, **kwargs: Any) -> cloudwatch.IMetric:
        """Requests that found no model copy to serve them (scaled to zero), over all models."""
        if not self._models:
            raise ConfigurationError(
                [Problem("models", [], "at least one model", "call add_model before asking for this metric")],
                source=self.node.path,
            )
        using = {f"m{i}": m.metric_no_capacity_invocation_failures(**kwargs) for i, m in enumerate(self._models)}
        return cloudwatch.MathExpression(
            expression="+".join(using) if len(using) > 1 else next(iter(using)),
            using_metrics=using,
            label="NoCapacityInvocationFailures",
            period=kwargs.get("period") or one_minute(),
        )

    # ------------------------------------------------------------- permissions
    def _grant_runtime_basics(self) -> None:
        stack = Stack.of(self)
        grants.grant(
            self.role,
            sid="WriteEndpointLogs",
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[
                stack.format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=self.log_group_name,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                ),
                stack.format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=f"{self.log_group_name}:log-stream:*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                ),
            ],
            reason="SageMaker creates one log stream per instance and container in the endpoint's own log group "
            "/aws/sagemaker/Endpoints/<name>; the stream names are generated (and when the endpoint's name is "
            "only known at deploy time, a token was passed, the group cannot be named here either).",
        )
        grants.grant(
            self.role,
            sid="PublishSageMakerMetrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
            reason="cloudwatch:PutMetricData has no resource type; a cloudwatch:namespace condition limits it to "
            "SageMaker's namespaces.",
        )
        grants.grant(
            self.role,
            sid="AuthenticateToEcr",
            actions=["ecr:GetAuthorizationToken"],
            resources=["*"],
            reason="ecr:GetAuthorizationToken has no resource type; pulling layers is limited to the model's image "
            "repository by the model's own statement.",
        )

    def _grant_vpc_access(self) -> None:
        grants.grant(
            self.role,
            sid="DescribeNetwork",
            actions=grants.NETWORK_DESCRIBE_ACTIONS,
            resources=["*"],
            reason="SageMaker describes the VPC, subnets and security groups before attaching the endpoint's network "
            "interfaces; ec2:Describe* actions have no resource type.",
        )
        grants.grant(
            self.role,
            sid="ManageEndpointNetworkInterfaces",
            actions=grants.NETWORK_INTERFACE_ACTIONS,
            resources=grants.network_interface_resources(self, self.subnet_ids, self.security_groups),
            reason="SageMaker creates the endpoint's network interfaces at deploy time under generated ids; creation "
            "is limited to this endpoint's subnets and security groups, which are named.",
        )


class _EndpointConfig(sagemaker.CfnEndpointConfig):
    """``CfnEndpointConfig`` that keeps the overrides it is given (escape hatches included), so
    ``rendered_properties`` can give its properties as the template will have them."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        self._overrides: list[tuple[str, Any]] = []
        super().__init__(scope, id, **kwargs)

    def add_override(self, path: str, value: Any) -> None:
        self._overrides.append((path, value))
        super().add_override(path, value)

    def rendered_properties(self) -> dict[str, Any]:
        """The resolved ``Properties`` of this resource in the template: its properties, then each override
        (``Properties.*`` paths) as ``CfnResource`` merges it (objects merged key by key, an intrinsic or any
        other value replacing what was there, None deleting, numeric segments indexing lists)."""
        stack = Stack.of(self)
        rendered = stack.resolve(self._render_properties(self._cfn_properties)) or {}
        for path, value in self._overrides:
            parts = _override_parts(path)
            if parts[:1] == ["Properties"] and len(parts) > 1:
                _merge_at(rendered, parts[1:], stack.resolve(value))
        return dict(rendered)


def _override_parts(path: str) -> list[str]:
    """``add_override``'s path split on periods (``\\.`` is a period inside a key)."""
    return [part.replace("\0", ".") for part in path.replace("\\.", "\0").split(".")]


def _merge_at(target: Any, parts: list[str], value: Any) -> None:
    key, rest = parts[0], parts[1:]
    if isinstance(target, list) and key.isdigit():
        index = int(key)
        while len(target) <= index:
            target.append({})
        if rest:
            if not isinstance(target[index], (dict, list)):
                target[index] = {}
            _merge_at(target[index], rest, value)
        else:
            target[index] = _merged(target[index], value)
        return
    if not isinstance(target, dict):
        return
    if rest:
        if not isinstance(target.get(key), (dict, list)):
            target[key] = {}
        _merge_at(target[key], rest, value)
        if target[key] == {}:
            del target[key]
    elif value is None:
        target.pop(key, None)
    else:
        target[key] = _merged(target.get(key), value)


def _merged(old: Any, new: Any) -> Any:
    intrinsic = isinstance(new, dict) and len(new) == 1 and any(k == "Ref" or k.startswith("Fn::") for k in new)
    if isinstance(old, dict) and isinstance(new, dict) and not intrinsic:
        merged = dict(old)
        for key, item in new.items():
            if item is None:
                merged.pop(key, None)
            else:
                merged[key] = _merged(merged.get(key), item)
        return merged
    return new


def _subnet_ids(vpc: ec2.IVpc, selection: ec2.SubnetSelection | None) -> list[str]:
    """Subnet ids of ``selection`` in ``vpc``.

    Subnets given one by one are read by id only: ``select_subnets`` returns a struct whose
    ``availability_zones`` jsii reads eagerly, which fails for subnets imported by id without
    their zone (``Subnet.from_subnet_id``), as a config's ``subnet_ids`` are.
    """
    if selection is not None and selection.subnets:
        return [subnet.subnet_id for subnet in selection.subnets]
    return list(vpc.select_subnets(**_subnet_kwargs(selection)).subnet_ids)


def _subnet_kwargs(selection: ec2.SubnetSelection | None) -> dict[str, Any]:
    if selection is None:
        return {"subnet_type": ec2.SubnetType.PRIVATE_WITH_EGRESS}
    keys = ("availability_zones", "one_per_az", "subnet_filters", "subnet_group_name", "subnets", "subnet_type")
    return {k: getattr(selection, k) for k in keys if getattr(selection, k, None) is not None}


def default_endpoint_name(endpoint: Construct) -> str:
    """A stable endpoint name from the construct path: at most 63 letters, digits and hyphens.

    The endpoint's name is create-only; a stable name only changes when the construct
    moves, which replaces the endpoint anyway. The endpoint config keeps a generated name,
    because every one of its properties is create-only.
    """
    name = Names.unique_resource_name(endpoint, max_length=63, separator="-")
    name = re.sub(r"[^A-Za-z0-9-]", "-", name)
    name = re.sub(r"-+", "-", name).strip("-")
    return name[:63].rstrip("-")


@jsii.implements(IStringProducer)
class _RequiredAmi:
    """The InferenceAmiVersion the endpoint's models need (``images.required_ami``), read at synth."""

    def __init__(self, endpoint: LlmEndpoint) -> None:
        self._endpoint = endpoint

    def produce(self, context: Any) -> str | None:
        from ..settings.images import required_ami

        return required_ami([model.spec.image for model in self._endpoint.models])
