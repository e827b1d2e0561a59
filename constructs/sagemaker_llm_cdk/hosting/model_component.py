"""``ModelComponent``: one model on an ``LlmEndpoint``, as an inference component with its own copies."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Annotations, ArnFormat, Aws, Stack
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker

from constructs import Construct

from ..core import grants, naming
from ..core.accounts import lmi_account
from ..core.errors import ConfigurationError, Problem
from ..core.grants import depend_on_policy
from ..core.settings import _S3_URI, validated
from ..settings.adapters import lora_environment
from ..settings.hosting import _ECR_IMAGE, ModelSpec, fit_problems, requirements_on
from ..settings.images import LMI_ACCOUNT, LMI_REPOSITORY
from ..settings.model_rules import MAX_ENVIRONMENT, environment_count_problem
from ..settings.operations import MAX_ROLLBACK_ALARMS, RolloutSettings, batch_count_range, rolling_batch
from ..settings.tool_calling import tool_environment
from .component_base import InferenceComponentConstruct, name_taken_problem, weights_owner

if TYPE_CHECKING:
    from .endpoint import LlmEndpoint
    from .jumpstart import JumpStartLock, JumpStartModel
    from .speculative_decoding import SpeculativeDecoding

COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"


class ModelComponent(InferenceComponentConstruct):
    """A model hosted on an ``LlmEndpoint`` as an inference component.

    Creates a SageMaker model (weights read from S3 as they are, no repackaging), an
    inference component with its own accelerators, memory and copy count, NVMe caching of
    the weights (on by default), and copy autoscaling when ``spec.copies`` allows a range:
    target tracking on concurrent requests per copy (high-resolution metric) and, when
    ``min_copies`` is 0, a step policy that brings a copy back on the first request that
    finds none (alarm on ``NoCapacityInvocationFailures``).

    Copy count across updates: a fixed count (``min_copies == max_copies``) is written to
    ``RuntimeConfig.CopyCount``. An autoscaled component's template carries no count, so a
    CloudFormation update (new image, promoted draft head) leaves the copies autoscaling
    runs untouched; the scalable target (registered right after the component) holds it
    at ``min_copies`` or more. ``copies.pin_copy_count`` restores the old behaviour.

    The component's physical name (``component_name``) is ``<stack name>-<spec.name>``, cut
    to 63 characters with a hash when longer, so two stacks of one config in one account and
    region never collide; ``spec.physical_name`` pins an exact name instead. Clients pass it as
    ``InferenceComponentName`` and adapters refer to it. Escape hatches: ``cfn_model``,
    ``cfn_inference_component``, ``scalable_target``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: LlmEndpoint,
        settings: ModelSpec | Mapping[str, Any],
        model_data_key: kms.IKey | None = None,
        extra_environment: Mapping[str, str] | None = None,
        jumpstart_lock: JumpStartLock | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint that hosts this model.
        :param settings: what to serve and how (``ModelSpec``, or a mapping of its fields).
        :param model_data_key: the KMS key the weights are encrypted with, if any. Default:
            the weights' bucket uses S3-managed keys.
        :param extra_environment: container variables added by other features (adapters,
            sessions, speculative decoding). Default: none.
        :param jumpstart_lock: where a ``source: jumpstart`` spec is resolved (see ``jumpstart``). Default: the
            file named by the CDK context value ``sagemaker_llm_cdk:jumpstart_lock``, else
            ``config/jumpstart.lock.yaml`` in the current directory.
        """
        super().__init__(scope, id)
        self.adapter_batches: object | None = None
        """The nested adapter stacks ``adapters.add_adapters`` made for this model (None until it is first
        called); the adapters package keeps them here, hosting never reads them."""
        self.warned_lora_custom_image = False
        spec = validated(ModelSpec, settings, where=self.node.path)
        self.jumpstart: JumpStartModel | None = None
        """What the lock holds for a ``source: jumpstart`` model (image, artifacts, licence); None otherwise."""
        if spec.is_jumpstart:
            spec, self.jumpstart = _resolve_jumpstart(self, spec, jumpstart_lock, endpoint.instance_type)
        self.component_name = naming.component_name(endpoint, spec.name, spec.physical_name)
        """The inference component's physical name: ``spec.physical_name``, else ``<stack name>-<spec.name>``."""
        problems = _fit_problems(spec, self.component_name, endpoint)
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        self.spec = spec
        self.endpoint = endpoint
        stack = Stack.of(self)

        environment = {**self.default_environment(spec), **spec.environment, **(extra_environment or {})}
        if len(environment) > MAX_ENVIRONMENT:
            raise ConfigurationError(
                [environment_count_problem(len(environment), len(spec.environment))], source=self.node.path
            )
        self._environment = environment
        image, repository_arn = container_image(spec.image, scope=self)
        self.image_uri = image
        self._grant_model_access(spec, repository_arn, model_data_key)
        self._grant_container_logs()

        uri = spec.model_data_s3_uri
        compressed = uri.endswith(".tar.gz")
        self.cfn_model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=endpoint.role.role_arn,
            # No network for the container (create-only); SageMaker itself mounts the S3 data and pulls the image.
            enable_network_isolation=spec.network_isolation,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image,
                model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                    s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                        s3_uri=uri,
                        s3_data_type="S3Object" if compressed else "S3Prefix",
                        compression_type="Gzip" if compressed else "None",
                        model_access_config=sagemaker.CfnModel.ModelAccessConfigProperty(accept_eula=True)
                        if self.accepts_eula
                        else None,
                    )
                ),
                environment=environment,
            ),
            vpc_config=sagemaker.CfnModel.VpcConfigProperty(
                security_group_ids=[g.security_group_id for g in endpoint.security_groups],
                subnets=endpoint.subnet_ids,
            )
            if endpoint.vpc is not None
            else None,
        )
        depend_on_policy(self.cfn_model, endpoint.role)
        if spec.lora is not None:
            apply_lora_settings(self)

        copies = spec.copies
        ic = sagemaker.CfnInferenceComponent
        startup = ic.InferenceComponentStartupParametersProperty(
            model_data_download_timeout_in_seconds=spec.model_data_download_timeout_seconds,
            container_startup_health_check_timeout_in_seconds=spec.container_startup_timeout_seconds,
        )
        cache = ic.InferenceComponentDataCacheConfigProperty(enable_caching=spec.cache_weights)
        pools = endpoint.options.instance_pools
        self.cfn_inference_component = sagemaker.CfnInferenceComponent(
            self,
            "Resource",
            endpoint_name=endpoint.endpoint_name,
            inference_component_name=self.component_name,
            variant_name=endpoint.variant_name,
            # One instance type: the singular Specification. Instance pools: one Specifications
            # entry per pool type, each with the model's requirements on that type.
            specification=ic.InferenceComponentSpecificationProperty(
                model_name=self.cfn_model.attr_model_name,
                compute_resource_requirements=compute_requirements(spec, endpoint.instance_type),
                startup_parameters=startup,
                data_cache_config=cache,
                scheduling_config=scheduling_config(spec),
            )
            if not pools
            else None,
            specifications=[
                ic.InferenceComponentSpecificationForInstanceTypeProperty(
                    instance_type=instance_type,
                    model_name=self.cfn_model.attr_model_name,
                    compute_resource_requirements=compute_requirements(spec, instance_type),
                    startup_parameters=startup,
                    data_cache_config=cache,
                    scheduling_config=scheduling_config(spec),
                )
                for instance_type in endpoint.options.instance_types
            ]
            if pools
            else None,
            # Left out when autoscaling manages the count: see CopyScaling.template_copy_count.
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=copies.template_copy_count
            )
            if copies.template_copy_count is not None
            else None,
        )
        self.node.default_child = self.cfn_inference_component
        self.served_model_name: str = self.cfn_model.attr_model_name
        """The SageMaker model the component runs (speculative decoding may swap in another)."""
        self.component_arn = self.cfn_inference_component.attr_inference_component_arn

        self.scalable_target: appscaling.CfnScalableTarget | None = None
        self.scale_from_zero_alarm: cloudwatch.Alarm | None = None
        if copies.autoscaled:
            self._add_copy_autoscaling(stack)
        endpoint._register(self)
        self.speculative_decoding: SpeculativeDecoding | None = None
        """Serves JumpStart's pre-trained EAGLE head from day one (see ``pretrained_head``); an EAGLE loop adds its
        promotion to it. None when no pre-trained head is served."""
        if self.jumpstart is not None:
            self._serve_pretrained_head(self.jumpstart)

    def _serve_pretrained_head(self, model: JumpStartModel) -> None:
        from .pretrained_head import WARNING_ID, choose
        from .speculative_decoding import SpeculativeDecoding

        head, message = choose(self, model)
        if message is not None:
            warning = head is None and self.spec.pretrained_head is None
            if warning:
                Annotations.of(self).add_warning_v2(WARNING_ID, message)
            else:
                Annotations.of(self).add_info(message)
            print(f"{'warning' if warning else 'note'}: {self.node.path}: {message}", file=sys.stderr)
        if head is not None:
            num_tokens = self.spec.eagle.num_speculative_tokens if self.spec.eagle is not None else 5
            self.speculative_decoding = SpeculativeDecoding(
                self, "SpeculativeDecoding", component=self, pretrained_head=head, num_speculative_tokens=num_tokens
            )

    @property
    def accepts_eula(self) -> bool:
        """Whether the model is a gated JumpStart model whose licence the config accepted (``accept_eula``):
        ``ModelAccessConfig.AcceptEula`` is then set on its model and its EAGLE optimization jobs."""
        return self.jumpstart is not None and self.jumpstart.gated and self.spec.accept_eula

    # ---------------------------------------------------------------- rollout
    def configure_rollout(
        self,
        rollout: RolloutSettings | None,
        rollback_alarms: Mapping[str, cloudwatch.IAlarm],
        *,
        watched: Sequence[cloudwatch.IAlarm] = (),
    ) -> None:
        """Roll an update of this component out in steps AWS takes for its copies (``rollout_batch_size``),
        rolling back on ``rollback_alarms`` (literal name -> alarm; SageMaker reads at most ``MAX_ROLLBACK_ALARMS``).

        Every alarm in ``rollback_alarms`` and ``watched`` is created before the component (the rollback names
        them literally). ``rollout`` None: the alarms only. ``LlmMonitoring`` calls it for each model it watches.
        """
        for alarm in (*rollback_alarms.values(), *(a for a in watched if a not in rollback_alarms.values())):
            self.cfn_inference_component.node.add_dependency(alarm)
        if rollout is None:
            return
        kind, value = self.rollout_batch_size(rollout)
        size = sagemaker.CfnInferenceComponent.InferenceComponentCapacitySizeProperty
        names = list(rollback_alarms)[:MAX_ROLLBACK_ALARMS]
        self.cfn_inference_component.deployment_config = (
            sagemaker.CfnInferenceComponent.InferenceComponentDeploymentConfigProperty(
                rolling_update_policy=sagemaker.CfnInferenceComponent.InferenceComponentRollingUpdatePolicyProperty(
                    maximum_batch_size=size(type=kind, value=value),
                    wait_interval_in_seconds=rollout.wait_seconds,
                    maximum_execution_timeout_in_seconds=rollout.timeout_seconds,
                    rollback_maximum_batch_size=size(type="COPY_COUNT", value=rollout.rollback_batch_copies)
                    if rollout.rollback_batch_copies is not None
                    else None,
                ),
                auto_rollback_configuration=sagemaker.CfnInferenceComponent.AutoRollbackConfigurationProperty(
                    alarms=[sagemaker.CfnInferenceComponent.AlarmProperty(alarm_name=name) for name in names]
                )
                if names
                else None,
            )
        )

    def rollout_batch_size(self, rollout: RolloutSettings) -> tuple[str, int]:
        """``MaximumBatchSize`` (Type, Value) of this component's rolling update, within what AWS takes.

        botocore: the value "must be between 5% to 50% of the copy count of the inference component", and the
        count is anything from ``min_copies`` (1 when it is 0: nothing rolls at zero) to ``max_copies``.
        ``rollout.batch_percent``: CAPACITY_PERCENT of it (5-50, always in range). ``rollout.batch_copies`` when
        written: COPY_COUNT of it, refused unless it is in range at every count. Neither: ``rolling_batch``
        (COPY_COUNT where one count fits every copy count, else CAPACITY_PERCENT of about one copy).
        """
        copies = self.spec.copies
        if rollout.batch_percent is not None:
            return "CAPACITY_PERCENT", rollout.batch_percent
        if rollout.batch_copies_given:
            fewest, most = batch_count_range(copies.min_copies, copies.max_copies)
            if not fewest <= rollout.batch_copies <= most:
                smallest = max(1, copies.min_copies)
                allowed = (
                    f"{fewest}-{most} copies"
                    if fewest <= most
                    else f"no copy count: 50% of {smallest} cop{'y' if smallest == 1 else 'ies'} is less than one"
                )
                raise ConfigurationError(
                    [
                        Problem(
                            "monitoring.rollout.batch_copies",
                            rollout.batch_copies,
                            f"5-50% of every copy count model {self.spec.name} may run "
                            f"({smallest}-{copies.max_copies}, AWS's range for a rolling step): {allowed}",
                            "remove batch_copies (the library then picks a step AWS takes for each model), set "
                            "batch_percent (5-50) instead, or "
                            + " and ".join(
                                (
                                    [f"raise copies.min_copies to {2 * rollout.batch_copies} or more"]
                                    if rollout.batch_copies > most
                                    else []
                                )
                                + (
                                    [f"lower copies.max_copies to {20 * rollout.batch_copies} or less"]
                                    if rollout.batch_copies < fewest
                                    else []
                                )
                            ),
                        )
                    ],
                    source=self.node.path,
                )
            return "COPY_COUNT", rollout.batch_copies
        kind, value = rolling_batch(copies.min_copies, copies.max_copies)
        return ("COPY_COUNT" if kind == "count" else "CAPACITY_PERCENT"), value

    # ---------------------------------------------------------------- container
    @staticmethod
    def default_environment(spec: ModelSpec) -> dict[str, str]:
        """Variables the LMI container needs to serve weights from ``/opt/ml/model``, and its tool-calling and
        reasoning parsers when the model sets ``tools`` / ``reasoning``."""
        if not spec.is_lmi:
            return {}
        return {
            "OPTION_MODEL_ID": "/opt/ml/model",
            "OPTION_TENSOR_PARALLEL_DEGREE": str(spec.accelerators),
            **tool_environment(spec),
        }  # tools / reasoning: the vLLM parsers (settings/tool_calling.py)

    def add_environment(self, name: str, value: str) -> None:
        """Add a container variable (used by adapters, sessions and speculative decoding)."""
        if name in self.spec.environment and self.spec.environment[name] != value:
            raise ConfigurationError(
                [
                    Problem(
                        f"environment.{name}",
                        self.spec.environment[name],
                        f"{value!r}, which a feature of this model needs",
                        f"remove {name} from environment; the feature sets it",
                    )
                ],
                source=self.node.path,
            )
        if name not in self._environment and len(self._environment) >= MAX_ENVIRONMENT:
            raise ConfigurationError(
                [environment_count_problem(len(self._environment) + 1, len(self.spec.environment), adding=name)],
                source=self.node.path,
            )
        self._environment[name] = value
        self.cfn_model.add_property_override(f"PrimaryContainer.Environment.{name}", value)

    @property
    def environment(self) -> dict[str, str]:
        return dict(self._environment)

    # --------------------------------------------------------------- autoscaling
    def _add_copy_autoscaling(self, stack: Stack) -> None:
        copies = self.spec.copies
        self.scalable_target = appscaling.CfnScalableTarget(
            self,
            "CopyScaling",
            service_namespace="sagemaker",
            resource_id=f"inference-component/{self.component_name}",
            scalable_dimension=COPY_COUNT_DIMENSION,
            min_capacity=copies.min_copies,
            max_capacity=copies.max_copies,
        )
        self.scalable_target.add_resource_dependency(self.cfn_inference_component)
        appscaling.CfnScalingPolicy(
            self,
            "TrackConcurrency",
            policy_name=f"{self.component_name}-concurrency",
            policy_type="TargetTrackingScaling",
            scaling_target_id=self.scalable_target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=copies.target_concurrent_requests_per_copy,
                predefined_metric_specification=appscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                    predefined_metric_type="SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution",
                ),
                scale_in_cooldown=copies.scale_in_cooldown_seconds,
                scale_out_cooldown=copies.scale_out_cooldown_seconds,
            ),
        )
        if copies.min_copies == 0:
            step = appscaling.CfnScalingPolicy(
                self,
                "ScaleFromZero",
                policy_name=f"{self.component_name}-from-zero",
                policy_type="StepScaling",
                scaling_target_id=self.scalable_target.ref,
                step_scaling_policy_configuration=appscaling.CfnScalingPolicy.StepScalingPolicyConfigurationProperty(
                    adjustment_type="ChangeInCapacity",
                    metric_aggregation_type="Maximum",
                    cooldown=60,
                    step_adjustments=[
                        appscaling.CfnScalingPolicy.StepAdjustmentProperty(
                            metric_interval_lower_bound=0, scaling_adjustment=1
                        )
                    ],
                ),
            )
            self.scale_from_zero_alarm = cloudwatch.Alarm(
                self,
                "NoCapacityAlarm",
                alarm_description=f"A request found no copy of {self.component_name}: start one (scale from zero)",
                metric=self.metric_no_capacity_invocation_failures(statistic="Maximum"),
                threshold=1,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            self.scale_from_zero_alarm.add_alarm_action(_PolicyAction(step.attr_arn))

    # ------------------------------------------------------------------ grants
    @property
    def log_group_name(self) -> str:
        """Where this component's containers log: ``/aws/sagemaker/InferenceComponents/<component name>``.

        The endpoint's group (``/aws/sagemaker/Endpoints/<endpoint>``) keeps the instances' logs;
        a container run by an inference component writes to a group named after the component.
        """
        return f"/aws/sagemaker/InferenceComponents/{self.component_name}"

    def _grant_container_logs(self) -> None:
        stack = Stack.of(self)
        group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=self.log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        grants.grant(
            self.endpoint.role,
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[group, f"{group}:log-stream:*"],
            reason="SageMaker creates one log stream per copy of the model in the component's own log group "
            "/aws/sagemaker/InferenceComponents/<component>; the stream names are generated.",
        )

    def _grant_model_access(self, spec: ModelSpec, repository_arn: str, key: kms.IKey | None) -> None:
        role = self.endpoint.role
        match = _S3_URI.match(spec.model_data_s3_uri)
        assert match  # validated by ModelSpec
        bucket, key_path = match.group("bucket"), match.group("key") or ""
        prefix = key_path if key_path.endswith(".tar.gz") else f"{key_path}*"
        owner = weights_owner(spec)
        grants.grant(
            role,
            actions=["s3:GetObject"],
            resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}/{prefix}"],
            conditions=owner,
            reason="The model's weights are many files under one S3 prefix; read-only GetObject on that prefix only.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}"],
                conditions={"StringLike": {"s3:prefix": [prefix]}, **(owner or {})},
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"],
                resources=[repository_arn],
            )
        )
        if key is not None:
            key.grant_decrypt(role)

    # ----------------------------------------------------------------- metrics
    def metric_no_capacity_invocation_failures(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests that found no copy of this model (it was scaled to zero). Default: sum over 1 minute."""
        return self.metric("NoCapacityInvocationFailures", **kwargs)

    def metric_concurrent_requests_per_copy(self, *, statistic: str = "Maximum", **kwargs: Any) -> cloudwatch.Metric:
        """The metric the copy autoscaling tracks (10-second resolution)."""
        return self.metric("ConcurrentRequestsPerCopy", statistic=statistic, **kwargs)

    def metric_copy_count(self, *, statistic: str = "Maximum", **kwargs: Any) -> cloudwatch.Metric:
        """Copies of this model running."""
        return self.metric("CopyCount", namespace="/aws/sagemaker/InferenceComponents", statistic=statistic, **kwargs)

    def metric_gpu_utilization(self, *, statistic: str = "Average", **kwargs: Any) -> cloudwatch.Metric:
        """GPU utilization of this model's copies, percent of the GPUs they hold."""
        return self.metric(
            "GPUUtilizationNormalized", namespace="/aws/sagemaker/InferenceComponents", statistic=statistic, **kwargs
        )

    def metric_gpu_memory_utilization(self, *, statistic: str = "Average", **kwargs: Any) -> cloudwatch.Metric:
        return self.metric(
            "GPUMemoryUtilizationNormalized",
            namespace="/aws/sagemaker/InferenceComponents",
            statistic=statistic,
            **kwargs,
        )


def compute_requirements(
    spec: ModelSpec, instance_type: str
) -> sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty:
    accelerators, memory, cpus = requirements_on(spec, instance_type)
    return sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
        number_of_accelerator_devices_required=accelerators,
        min_memory_required_in_mb=memory,
        number_of_cpu_cores_required=cpus,
    )


def scheduling_config(spec: ModelSpec) -> sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty:
    """``SchedulingConfig`` of a model's component: placement strategy and Availability Zone balance."""
    placement = spec.placement
    return sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty(
        placement_strategy=placement.strategy,
        availability_zone_balance=sagemaker.CfnInferenceComponent.InferenceComponentAvailabilityZoneBalanceProperty(
            enforcement_mode="PERMISSIVE",
            max_imbalance=placement.max_zone_imbalance,
        ),
    )


def container_image(image: str, *, scope: Construct | None = None) -> tuple[str, str]:
    """(image URI, ECR repository ARN) for a ``ModelSpec.image`` value.

    The LMI image comes from the Deep Learning Containers registry of the stack's region
    (``images.DLC_ACCOUNTS``); without ``scope``, from ``LMI_ACCOUNT``.
    """
    if image == "lmi" or image.startswith("lmi:"):
        tag = ModelSpec.model_construct(image=image).lmi_tag
        account = lmi_account(scope) if scope is not None else LMI_ACCOUNT
        uri = f"{account}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}/{LMI_REPOSITORY}:{tag}"
        arn = f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{account}:repository/{LMI_REPOSITORY}"
        return uri, arn
    match = _ECR_IMAGE.match(image)
    assert match  # validated by ModelSpec
    arn = (
        f"arn:{Aws.PARTITION}:ecr:{match.group('region')}:{match.group('account')}:"
        f"repository/{match.group('repository')}"
    )
    return image, arn


JUMPSTART_LOCK_CONTEXT = "sagemaker_llm_cdk:jumpstart_lock"


def refuse_deploy_of(scope: Construct, model: JumpStartModel) -> str | None:
    """While ``model``'s lock entry is not read from JumpStart, add a template rule to ``scope``'s stack that fails
    every deploy of it (CloudFormation checks rules before it changes anything) with what to do; the reason, or None.

    Synth, tests and ``cdk diff`` are unaffected: a rule is checked only when a change set is made.
    """
    reason = model.deploy_refusal()
    if reason is None:
        return None
    from aws_cdk import CfnRule, CfnRuleAssertion, Fn

    from .jumpstart import DEPLOY_RULE_PREFIX, FROM_JUMPSTART

    stack = Stack.of(scope)
    rule_id = DEPLOY_RULE_PREFIX + re.sub(r"[^A-Za-z0-9]", "", f"{model.model_id}{model.version}".title())[:180]
    if stack.node.try_find_child(rule_id) is None:
        CfnRule(
            stack,
            rule_id,
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_equals(model.source.kind, FROM_JUMPSTART), assert_description=reason
                )
            ],
        )
    message = f"{reason} Until then CloudFormation refuses every deploy of {stack.stack_name}."
    Annotations.of(scope).add_info(message)
    print(f"note: {scope.node.path}: {message}", file=sys.stderr)  # synth works: a note, not a warning to acknowledge
    return reason


def _resolve_jumpstart(
    component: ModelComponent, spec: ModelSpec, lock: JumpStartLock | None, instance_type: str
) -> tuple[ModelSpec, JumpStartModel]:
    from pathlib import Path

    from aws_cdk import Annotations, Token

    from .jumpstart import LOCK_FILE_NAME, JumpStartLock, resolve

    if lock is None:
        path = component.node.try_get_context(JUMPSTART_LOCK_CONTEXT) or str(Path("config") / LOCK_FILE_NAME)
        lock = JumpStartLock.load(path)
    region = Stack.of(component).region
    resolved, model = resolve(spec, lock, None if Token.is_unresolved(region) else region, where=component.node.path)
    refuse_deploy_of(component, model)  # a lock entry not read from JumpStart serves synth, never a deploy
    types = model.supported_instance_types
    if types and instance_type not in types:
        Annotations.of(component).add_warning_v2(
            "sagemaker-llm-cdk:jumpstart-instance-type",
            f"JumpStart lists {', '.join(types)} for {model.model_id} {model.version}, not "
            f"{instance_type}: the model may not fit or start; choose a listed type",
        )
    if model.licence is not None:
        message = (
            f"JumpStart model {model.model_id} {model.version} is gated: licence {model.licence.name} "
            f"({model.licence.url}) accepted by accept_eula: true"
        )
        Annotations.of(component).add_info(message)
        import sys

        print(f"note: {component.node.path}: {message}", file=sys.stderr)
    return resolved, model


def _fit_problems(spec: ModelSpec, physical: str, endpoint: LlmEndpoint) -> list[Problem]:
    """The model's name on this endpoint, and ``fit_problems`` (the rules a config also checks, with every other
    problem, before anything is built)."""
    problems = []
    field = "physical_name" if spec.physical_name is not None else "name"
    for name in dict.fromkeys((spec.name, physical)):
        if name_taken_problem(field, name, endpoint) is not None:
            problems.append(
                Problem(
                    field,
                    name,
                    "a name no other model or adapter on this endpoint uses",
                    "give this model another name",
                )
            )
            break
    problems.extend(fit_problems(spec, endpoint.options))
    return problems


@jsii.implements(cloudwatch.IAlarmAction)
class _PolicyAction:
    """Alarm action that fires an Application Auto Scaling policy."""

    def __init__(self, policy_arn: str) -> None:
        self._arn = policy_arn

    def bind(self, scope: Construct, alarm: cloudwatch.IAlarm) -> cloudwatch.AlarmActionConfig:
        return cloudwatch.AlarmActionConfig(alarm_action_arn=self._arn)


def apply_lora_settings(component: ModelComponent) -> dict[str, str]:
    """Set the base model's container up for dynamic adapter loading; returns the variables set.

    For the LMI container: ``OPTION_ENABLE_LORA=true``, ``OPTION_MAX_LORAS`` (adapters on the
    GPU), ``OPTION_MAX_CPU_LORAS`` (adapters in CPU memory; the rest wait on local disk) and,
    when ``max_rank`` is set, ``OPTION_MAX_LORA_RANK``. A custom image gets no variables and a
    synth warning: its own server must load adapters. Nothing happens when ``spec.lora`` is
    not set. Safe to call more than once. A variable the user set to another value in
    ``spec.environment`` is an error, never silently replaced.
    """
    settings = component.spec.lora
    if settings is None:
        return {}
    if not component.spec.is_lmi:
        if not component.warned_lora_custom_image:
            component.warned_lora_custom_image = True
            Annotations.of(component).add_warning_v2(
                "sagemaker-llm-cdk:loraCustomImage",
                f"lora is set on {component.component_name}, whose image {component.spec.image} is not the LMI "
                "container: no LoRA variables were set, so the image must load adapters itself.",
            )
        return {}
    environment = lora_environment(settings)
    user = component.spec.environment
    conflicts = [
        Problem(
            f"environment.{name}",
            user[name],
            f"{value!r}, which the lora settings give",
            f"remove {name} from environment and set it through lora",
        )
        for name, value in environment.items()
        if name in user and user[name] != value
    ]
    if conflicts:
        raise ConfigurationError(conflicts, source=component.node.path)
    for name, value in environment.items():
        if component.environment.get(name) != value:
            component.add_environment(name, value)
    return environment
