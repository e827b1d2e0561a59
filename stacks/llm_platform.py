"""The LLM platform stack: every endpoint and model a deployment config declares."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, Duration, Fn, Stack, Tags, Token
from aws_cdk import aws_ec2 as ec2
from sagemaker_llm_cdk import (
    RECORD_SERVICE,
    AppConfig,
    CapacityPlan,
    CostBudget,
    DeploymentCheck,
    EagleOptimization,
    EndpointSpec,
    JumpStartLock,
    LlmEndpoint,
    LlmMonitoring,
    ModelComponent,
    ModelSpec,
    PromotionParameter,
    SessionFrontDoor,
    TurnLog,
    adapters_of,
    add_adapters,
    config_item,
    encrypted_alarm_topic,
    find_lock,
    load_adapter_manifest,
    set_removal,
)

from constructs import Construct

if TYPE_CHECKING:
    from .router_stage import RouterHome


class LlmPlatformStack(Stack):
    """One stack per config: endpoints, their models, and outputs a reviewer can read.

    Capacity plans live in a companion stack ``<id>Capacity`` (``self.capacity``), deployable on
    its own and deployed before this one; this stack never buys. A plan is bought only by a
    deploy of that stack with ``-c purchase=<plan name>`` (extended with ``-c extend=<plan name>``).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        config_dir: Path | None = None,
        router_homes: Sequence[RouterHome] = (),
        **kwargs: Any,
    ) -> None:
        """
        :param config: the validated deployment config.
        :param router_homes: where the pipeline runs the config's routers (``stacks.router_stage.router_homes``):
            a router in another account than this stack's gets the endpoint policies it needs here. Default: none
            (without the pipeline, routers run in this stack's account).
        :param config_dir: folder that relative paths in the config (adapter manifests) start from.
            Default: the current directory.
        """
        self.config_dir = config_dir or Path.cwd()
        super().__init__(scope, id, description="LLM endpoints on Amazon SageMaker AI (sagemaker-llm-cdk)", **kwargs)
        set_removal(self, config.removal)  # before any construct: buckets read it when they are made
        for key, value in config.tags.items():
            Tags.of(self).add(key, value)
        # One alarm topic (KMS-encrypted) for everything this stack watches.
        self.monitoring = LlmMonitoring(self, "Monitoring", settings=config.monitoring)
        self.capacity: Stack | None = None
        self.capacity_plans: dict[str, CapacityPlan] = {}
        if config.capacity_plans:
            self.capacity = Stack(
                scope,
                f"{id}Capacity",
                env=kwargs.get("env"),
                description=f"Capacity plans of {id}: bought only with -c purchase=<plan name> (sagemaker-llm-cdk)",
            )
            set_removal(self.capacity, config.removal)  # its log groups and keys follow; a bought plan never goes
            for key, value in config.tags.items():
                Tags.of(self.capacity).add(key, value)
            topic = encrypted_alarm_topic(self.capacity, "AlarmTopic", description=f"capacity plan alarms of {id}")
            if config.monitoring.email:
                from aws_cdk import aws_sns_subscriptions as subscriptions

                topic.add_subscription(subscriptions.EmailSubscription(config.monitoring.email))
            for p_index, plan in enumerate(config.capacity_plans):
                # A plan bought here is named after this (serving) stack, <id>-<plan name>, not the
                # companion's: dev and prod stacks of one config never share a plan.
                with config_item(f"capacity_plans[{p_index}]", plan):  # a construct's problems in config terms
                    self.capacity_plans[plan.plan_name] = CapacityPlan(
                        self.capacity,
                        f"CapacityPlan-{plan.plan_name}",
                        settings=plan,
                        alarm_topic=topic,
                        name_prefix=self.stack_name,
                    )

        # EAGLE: each model's promotion parameter lives in a companion stack deployed before this one
        # (CloudFormation reads it as an AWS::SSM::Parameter::Value parameter; see speculative_decoding).
        self.promotions: Stack | None = None
        if any(model.eagle is not None for spec in config.endpoints for model in spec.models):
            self.promotions = Stack(
                scope,
                f"{id}EaglePromotion",
                env=kwargs.get("env"),
                description=f"EAGLE promotion parameters of {id} (sagemaker-llm-cdk)",
            )
            # removal: destroy deletes the promoted heads' parameters with the stack, as it deletes the bucket they name
            set_removal(self.promotions, config.removal)
            for key, value in config.tags.items():
                Tags.of(self.promotions).add(key, value)
            self.add_stack_dependency(
                self.promotions, reason="EAGLE promotion parameters must exist before this stack reads them"
            )
        # JumpStart models resolve from the lock file next to the config (or in a folder above it), never the network.
        self.jumpstart_lock = JumpStartLock.load(find_lock(self.config_dir))
        self.eagle: dict[str, EagleOptimization] = {}
        self.endpoints: dict[str, LlmEndpoint] = {}
        for e_index, spec in enumerate(config.endpoints):
            with config_item(f"endpoints[{e_index}]", spec):  # a construct's problems in config terms
                self.endpoints[spec.name] = self._endpoint(spec, e_index)
        for e_index, (name, endpoint) in enumerate(self.endpoints.items()):
            with config_item(f"endpoints[{e_index}]", config.endpoints[e_index]):
                self.monitoring.monitor_endpoint(endpoint)
                self.monitoring.monitor_adapters(
                    adapters_of(endpoint), endpoint=endpoint
                )  # a graph's lines in one call
                # Fails the deployment when SageMaker silently rolled back to the previous config.
                DeploymentCheck(self, f"{name}DeploymentCheck", endpoint=endpoint)
        self.budget = self._budget(config)
        self.endpoint_policies: dict[str, Any] = {}
        if router_homes and not Token.is_unresolved(self.account):
            from .router_stage import attach_endpoint_policies

            self.endpoint_policies = attach_endpoint_policies(
                self, router_homes, account=self.account, region=self.region
            )

    def _budget(self, config: AppConfig) -> CostBudget | None:
        """The config's monthly budget on this deployment's tag (the first of ``tags`` unless ``budget.tag``)."""
        if config.budget is None:
            return None
        key = config.budget.tag or next(iter(config.tags), None)
        return CostBudget(
            self,
            "Budget",
            max_usd_per_month=config.budget.max_usd_per_month,
            emails=[config.budget.email] if config.budget.email else [],
            topic=self.monitoring.alarm_topic if config.budget.notify_alarm_topic else None,
            actual_percent=config.budget.actual_percent,
            forecasted_percent=config.budget.forecasted_percent,
            tag_key=key,
            tag_value=config.tags[key] if key else None,
        )

    def _endpoint(self, spec: EndpointSpec, e_index: int = 0) -> LlmEndpoint:
        vpc_kwargs: dict[str, Any] = {}
        if spec.vpc is not None:
            # Only the VPC id matters: the subnets and security groups are given by id (no lookup).
            zones = spec.vpc.subnet_availability_zones
            vpc = ec2.Vpc.from_vpc_attributes(
                self,
                f"{spec.name}Vpc",
                vpc_id=spec.vpc.vpc_id,
                availability_zones=sorted(set(zones)) if zones else Fn.get_azs(),
            )
            vpc_kwargs = {
                "vpc": vpc,
                "vpc_subnets": ec2.SubnetSelection(
                    subnets=[
                        ec2.Subnet.from_subnet_attributes(
                            self, f"{spec.name}Subnet{i}", subnet_id=s, availability_zone=zones[i] if zones else None
                        )
                        for i, s in enumerate(spec.vpc.subnet_ids)
                    ]
                ),
                "security_groups": [
                    ec2.SecurityGroup.from_security_group_id(self, f"{spec.name}Sg{i}", g)
                    for i, g in enumerate(spec.vpc.security_group_ids)
                ],
            }
        endpoint = LlmEndpoint(
            self,
            spec.name,
            settings=spec,  # the config's endpoint is an EndpointOptions, validated with the whole config
            endpoint_name=spec.endpoint_name,
            capacity_plan=self.capacity_plans[spec.capacity_plan] if spec.capacity_plan else None,
            **vpc_kwargs,
        )
        for index, model in enumerate(spec.models):
            with config_item(f"endpoints[{e_index}].models[{index}]", model):
                self._model(spec, endpoint, model, e_index, index)
        CfnOutput(
            self,
            f"{spec.name}EndpointName",
            value=endpoint.endpoint_name,
            description=f"SageMaker endpoint of {spec.name}",
        )
        return endpoint

    def _model(self, spec: EndpointSpec, endpoint: LlmEndpoint, model: ModelSpec, e_index: int, index: int) -> None:
        """One model of the endpoint, with its adapters, sessions and EAGLE loop."""
        component = endpoint.add_model(model.name, model, jumpstart_lock=self.jumpstart_lock)
        if model.adapters:
            add_adapters(component, model.adapters, field=f"endpoints[{e_index}].models[{index}].adapters")
        if model.adapters_manifest:
            add_adapters(
                component,
                load_adapter_manifest(model.adapters_manifest, base_dir=self.config_dir),
                field=f"endpoints[{e_index}].models[{index}].adapters_manifest",
            )
        turn_log = None
        if model.sessions is not None:
            front_door = self._front_door(spec.name, endpoint, component)
            if model.eagle is not None and model.eagle.dataset.source == "front_door":
                # EAGLE's second source: the front door logs every completed turn through Firehose.
                turn_log = TurnLog(self, f"{spec.name}{_id(component.component_name)}Turns")
                front_door.log_turns(turn_log)
        if model.eagle is not None:
            self._eagle(spec.name, endpoint, component, turn_log)
        CfnOutput(
            self,
            f"{spec.name}{_id(model.name)}ComponentName",
            value=component.component_name,
            description=f"InferenceComponentName of model {model.name} (pass it to InvokeEndpoint)",
        )

    def _eagle(
        self, endpoint_id: str, endpoint: LlmEndpoint, component: ModelComponent, turn_log: TurnLog | None = None
    ) -> EagleOptimization:
        """The EAGLE loop of ``component``: dataset, optimization job, record, promotion on the next deploy."""
        assert self.promotions is not None
        model_id = f"{endpoint_id}{_id(component.spec.name)}"  # construct ids from the config name: stable
        head = PromotionParameter(self.promotions, f"{model_id}DraftHead", model_name=component.component_name)
        eagle = EagleOptimization(
            self,
            f"{model_id}Eagle",
            component=component,
            settings=component.spec.eagle,
            promotion_parameter=head.parameter,
            alarm_topic=self.monitoring.alarm_topic,
            turn_log=turn_log,
        )
        self.eagle[component.component_name] = eagle
        self.monitoring.monitor_eagle(
            component.component_name, endpoint=endpoint, extra_dimensions={"service": RECORD_SERVICE}
        )
        CfnOutput(
            self,
            f"{model_id}EagleStateMachine",
            value=eagle.state_machine_arn,
            description=f"EAGLE loop of {component.component_name}: aws stepfunctions start-execution "
            "--state-machine-arn <this> --input '{}'",
        )
        CfnOutput(
            self,
            f"{model_id}EagleArtifacts",
            value=eagle.artifacts_bucket.bucket_name,
            description=f"EAGLE datasets, job outputs (jobs/) and run reports (reports/) of {component.component_name}",
        )
        CfnOutput(
            self,
            f"{model_id}EagleRuns",
            value=eagle.runs_table.table_name,
            description=f"EAGLE run records of {component.component_name} (DynamoDB)",
        )
        return eagle

    def _front_door(self, endpoint_id: str, endpoint: LlmEndpoint, component: ModelComponent) -> SessionFrontDoor:
        """Session-aware routing for multi-turn chat on ``component`` and its adapters."""
        front_door = SessionFrontDoor(
            self,
            f"{endpoint_id}{_id(component.spec.name)}FrontDoor",
            endpoint=endpoint,
            default_component=component,
            components=[a for a in adapters_of(endpoint) if a.base is component],
        )
        CfnOutput(
            self,
            f"{endpoint_id}{_id(component.spec.name)}FrontDoorUrl",
            value=front_door.url,
            description=f"Session-aware front door of {component.component_name} (IAM auth, SigV4 service 'lambda')",
        )
        self.monitoring.monitor_front_door(
            front_door.function,
            f"{component.spec.name}-sessions",
            endpoint=endpoint,
            extra_error_metrics=[front_door.metric_server_errors(period=Duration.minutes(5))],
        )
        return front_door


def _id(name: str) -> str:
    """A construct id part from a SageMaker name: qwen3-32b -> Qwen332b."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))
