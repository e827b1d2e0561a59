"""``EagleBenchmark``: the speedup measured on the endpoint itself, before and after a promoted head is served.

Opt-in (``eagle.benchmark.enabled``): a SageMaker AI benchmark job sends real requests (NVIDIA AIPerf) to the
endpoint: each measurement loads the copies that serve your users, can scale the endpoint out (more instances
billed), and may be billed itself (its price is not in this library's price list).

What it adds to an ``EagleOptimization`` (created by it when enabled):

* ``Workload``: an ``AWS::SageMaker::AIWorkloadConfig`` built from config: the AIPerf workload spec
  (``benchmark.type: aiperf`` plus ``parameters``) and, for workload ``s3`` / ``front_door``, a dataset channel
  on your own requests (your prefix, or the turns the session front door logs). Every property is create-only,
  so its name carries a hash of them: a change creates a new config and deletes the old one.
* ``Resource``: a Step Functions state machine, started by the EAGLE run after it promoted a head (execution
  name = the run id; input ``{"run_id", "head"}``)::

      StartBefore (benchmark.start: CreateAIBenchmarkJob on the endpoint and the model's inference component)
        -> WaitBefore (5 min) -> CheckBefore (benchmark.check: DescribeAIBenchmarkJob; at the end reads the
           output and writes benchmark_before in the run record) -> loop until finished
      -> WaitForDeploy (1 h) -> DeployCheck (benchmark.serving: does the component serve the head?)
           -> loop for deploy_wait_hours; superseded (parameter changed) or never deployed: notify, stop
      -> StartAfter -> WaitAfter -> CheckAfter (writes benchmark_after and benchmark_comparison: served
           speedup beside the optimization job's own speedup) -> slower? publish the rollback command.

  A measurement whose output gives no throughput is published to SNS (``NotifyUnreadable``) and the run
  fails; numbers not read are never recorded. Manual after-measurement (e.g. after a late deploy)::

      aws stepfunctions start-execution --state-machine-arn <Benchmark state machine ARN> \\
          --input '{"run_id": "<run>", "head": "s3://.../draft/", "phase": "after"}'

* ``SlowerAlarm``: a CloudWatch alarm on ``EagleServedSlower`` (published by the check function), to the
  loop's topic; its description holds the rollback command.
* ``JobRole``: the role SageMaker uses for the benchmark: invoke this endpoint and component, read the
  workload's dataset, write ``benchmarks/`` of the artifacts bucket.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Duration, Fn, Names, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_stepfunctions as sfn

from constructs import Construct

from ..core import grants, regions
from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE, python_function
from ..core.nag import acknowledge_resource
from ..settings.eagle import EagleBenchmarkSettings
from .benchmark_definition import DEPLOY_CHECK_INTERVAL as DEPLOY_CHECK_INTERVAL
from .benchmark_definition import LAMBDA_SERVICE_ERRORS as LAMBDA_SERVICE_ERRORS
from .benchmark_definition import POLL_INTERVAL as POLL_INTERVAL
from .benchmark_definition import benchmark_definition
from .benchmark_role import benchmark_job_role
from .layout import BENCHMARKS as BENCHMARKS

if TYPE_CHECKING:
    from .optimization import EagleOptimization

WORKLOAD_TYPE = "AWS::SageMaker::AIWorkloadConfig"
JOB_PREFIX = "eagle-"
"""Benchmark job names start with this (``lambda/eagle_job/benchmark.job_name``)."""
START_RETRY_HOURS = 8
"""Longest wait of a benchmark start's retries on ResourceLimitExceeded (30 min, doubling, 4 retries: 7.5 h)."""
DATASET_CHANNEL = "dataset"
"""Channel name of the workload's dataset (the API documents no required name)."""
RECORD_SERVICE = "eagle_job"
_WORKLOAD_NAME = re.compile(r"^[a-z0-9](-*[a-z0-9]){0,62}$")


def workload_document(settings: EagleBenchmarkSettings) -> str:
    """The workload spec (``AIWorkloadConfigs.WorkloadSpec.Inline``): AIPerf plus the configured parameters."""
    return json.dumps(
        {"benchmark": {"type": "aiperf"}, "parameters": dict(settings.parameters)},
        sort_keys=True,
        separators=(",", ":"),
    )


def workload_name(model_name: str, *parts: str) -> str:
    """``eagle-<model>-<hash>``, lower case (CloudFormation refuses upper case: DeleteAIWorkloadConfig lowercases)."""
    digest = hashlib.sha256(json.dumps(list(parts)).encode()).hexdigest()[:10]
    stem = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", model_name.lower())).strip("-")[:44].rstrip("-") or "model"
    name = f"eagle-{stem}-{digest}"
    assert _WORKLOAD_NAME.match(name), name
    return name


def benchmark_region_problem(region: str) -> Problem | None:
    """A problem when ``region`` (literal) has no ``AWS::SageMaker::AIWorkloadConfig`` in CloudFormation."""
    types = regions.resource_types(region)
    if types is None or WORKLOAD_TYPE in types:
        return None
    return Problem(
        "settings.benchmark.enabled",
        True,
        f"regions whose CloudFormation has {WORKLOAD_TYPE}: " + ", ".join(regions.regions_with(WORKLOAD_TYPE)),
        f"set eagle.benchmark.enabled: false in {region} (measure by hand there), or deploy to a listed region",
    )


class EagleBenchmark(Construct):
    """AI benchmark jobs on ``optimization``'s endpoint before and after each promoted head is served.

    Created by ``EagleOptimization`` when ``settings.benchmark.enabled``; see the module docstring.
    Attributes: ``state_machine``, ``workload`` (the ``CfnAIWorkloadConfig``), ``workload_name``, ``job_role``,
    ``start_function``, ``check_function``, ``serving_function``, ``slower_alarm``, ``rollback_command``.
    """

    def __init__(
        self, scope: Construct, id: str, *, optimization: EagleOptimization, serving_model_prefix: str
    ) -> None:
        super().__init__(scope, id)
        # Any: EagleOptimization's attributes are set in its __init__, which creates this construct (an import cycle
        # mypy cannot type through); the attributes read here are documented on EagleOptimization.
        eagle: Any = optimization
        settings = eagle.settings.benchmark
        stack = Stack.of(self)
        if not Token.is_unresolved(stack.region):
            problem = benchmark_region_problem(stack.region)
            if problem:
                raise ConfigurationError([problem], source=eagle.node.path)
        self.settings = settings
        dataset_grant, dataset_key = self._workload(eagle)
        component_arn = stack.format_arn(
            service="sagemaker", resource="inference-component", resource_name=eagle.component.component_name
        )
        self.job_role = benchmark_job_role(
            self, eagle, component_arn=component_arn, dataset_grant=dataset_grant, dataset_key=dataset_key
        )
        self._functions(eagle, component_arn, serving_model_prefix)
        self._slower_alarm(eagle)
        self._state_machine(eagle)

    # ================================================================ construction steps
    def _workload(self, eagle: Any) -> tuple[tuple[str, str] | None, kms.IKey | None]:
        """``Workload``: the AIPerf spec and the dataset channel, named by a hash of them (every property is
        create-only). Returns the dataset the job role reads, (bucket ARN, key prefix), and its key, if any."""
        settings = self.settings
        document = workload_document(settings)
        dataset_uri: str | None = None
        dataset_grant: tuple[str, str] | None = None  # (bucket ARN, key prefix) the job role reads
        dataset_key: kms.IKey | None = None
        if settings.workload == "s3":
            assert settings.s3_uri is not None
            dataset_uri = settings.s3_uri
            match = re.match(r"^s3://([^/]+)/?(.*)$", settings.s3_uri)
            assert match
            dataset_grant = (f"arn:{Aws.PARTITION}:s3:::{match.group(1)}", match.group(2))
        elif settings.workload == "front_door":
            turn_log = eagle.turn_log
            assert turn_log is not None  # EagleOptimization refuses front_door without a turn log
            dataset_uri = f"s3://{turn_log.bucket.bucket_name}/{turn_log.prefix}"
            dataset_grant = (turn_log.bucket.bucket_arn, turn_log.prefix)
            dataset_key = turn_log.bucket.encryption_key
        identity = [
            settings.workload,
            document,
            settings.s3_uri or "",
            Names.unique_id(eagle.turn_log) if settings.workload == "front_door" and eagle.turn_log else "",
        ]
        self.workload_name = workload_name(eagle.model_name, *identity)
        self.workload = sagemaker.CfnAIWorkloadConfig(
            self,
            "Workload",
            ai_workload_config_name=self.workload_name,
            ai_workload_configs=sagemaker.CfnAIWorkloadConfig.AIWorkloadConfigsProperty(
                workload_spec=sagemaker.CfnAIWorkloadConfig.WorkloadSpecProperty(inline=document)
            ),
            dataset_config=sagemaker.CfnAIWorkloadConfig.AIDatasetConfigProperty(
                input_data_config=[
                    sagemaker.CfnAIWorkloadConfig.AIWorkloadInputDataConfigProperty(
                        channel_name=DATASET_CHANNEL,
                        data_source=sagemaker.CfnAIWorkloadConfig.AIWorkloadDataSourceProperty(
                            s3_data_source=sagemaker.CfnAIWorkloadConfig.AIWorkloadS3DataSourceProperty(
                                s3_uri=dataset_uri
                            )
                        ),
                    )
                ]
            )
            if dataset_uri is not None
            else None,
        )
        self.workload_arn = Stack.of(self).format_arn(
            service="sagemaker", resource="ai-workload-config", resource_name=self.workload_name
        )
        return dataset_grant, dataset_key

    def _functions(self, eagle: Any, component_arn: str, serving_model_prefix: str) -> None:
        """The start, check and serving functions the state machine invokes, with their grants."""
        stack = Stack.of(self)
        job_pattern = stack.format_arn(service="sagemaker", resource="ai-benchmark-job", resource_name=f"{JOB_PREFIX}*")
        model_pattern = stack.format_arn(
            service="sagemaker", resource="model", resource_name=f"{serving_model_prefix}-*"
        )
        self._start_function(eagle, component_arn, serving_model_prefix, job_pattern, model_pattern)
        self._check_function(eagle, job_pattern)
        self._serving_function(eagle, component_arn, serving_model_prefix, model_pattern)

    def _start_function(
        self, eagle: Any, component_arn: str, serving_model_prefix: str, job_pattern: str, model_pattern: str
    ) -> None:
        """``StartFunction``: creates a benchmark job on the endpoint and the component, passing the job role."""
        endpoint = eagle.component.endpoint
        start_env = {
            "ENDPOINT_NAME": endpoint.endpoint_name,
            "COMPONENT_NAME": eagle.component.component_name,
            "WORKLOAD_CONFIG_NAME": self.workload_name,
            "ROLE_ARN": self.job_role.role_arn,
            "OUTPUT_S3_URI": f"s3://{eagle.artifacts_bucket.bucket_name}/{BENCHMARKS}",
            "SERVING_MODEL_PREFIX": serving_model_prefix,
        }
        if endpoint.vpc is not None:
            start_env["SUBNET_IDS"] = Fn.join(",", list(endpoint.subnet_ids))
            start_env["SECURITY_GROUP_IDS"] = Fn.join(",", [g.security_group_id for g in endpoint.security_groups])
        self.start_function = python_function(
            self,
            "StartFunction",
            folder="eagle_job",
            handler="benchmark.start",
            description=f"Starts AI benchmark jobs on the endpoint of {eagle.model_name}",
            environment=start_env,
            timeout=Duration.minutes(2),
        )
        grants.grant(
            self.start_function,
            sid="StartBenchmarks",
            actions=["sagemaker:CreateAIBenchmarkJob", "sagemaker:DescribeAIBenchmarkJob", "sagemaker:AddTags"],
            resources=[job_pattern],
            reason=_JOB_NAMES,
        )
        grants.grant(
            self.start_function,
            sid="UseWorkloadAndTarget",
            actions=["sagemaker:CreateAIBenchmarkJob"],
            resources=[self.workload_arn, endpoint.endpoint_arn, component_arn],
        )
        grants.grant(
            self.start_function,
            sid="PassBenchmarkRole",
            actions=["iam:PassRole"],
            resources=[self.job_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        )
        self._grant_served(self.start_function, component_arn, model_pattern, _SERVED)

    def _check_function(self, eagle: Any, job_pattern: str) -> None:
        """``CheckFunction``: watches a benchmark job and writes what it measured into the run record."""
        settings = self.settings
        bucket = eagle.artifacts_bucket
        self.check_function = python_function(
            self,
            "CheckFunction",
            folder="eagle_job",
            handler="benchmark.check",
            description=f"Reads the AI benchmark jobs of {eagle.model_name} into its EAGLE run records",
            environment={
                "RUNS_TABLE": eagle.runs_table.table_name,
                "MODEL_NAME": eagle.model_name,
                "MAX_SECONDS": str(settings.max_hours * 3600),
                "SLOWDOWN_TOLERANCE": f"{settings.slowdown_tolerance:g}",
                "PROMOTION_PARAMETER": eagle.promotion_parameter_name,
                "STACK_NAME": Aws.STACK_NAME,
            },
            timeout=Duration.minutes(5),
            memory_size=512,
        )
        grants.grant(
            self.check_function,
            sid="WatchBenchmarks",
            actions=["sagemaker:DescribeAIBenchmarkJob", "sagemaker:StopAIBenchmarkJob"],
            resources=[job_pattern],
            reason=_JOB_NAMES,
        )
        grants.grant(
            self.check_function,
            sid="ListBenchmarks",
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{BENCHMARKS}/*"]}},
        )
        grants.grant(
            self.check_function,
            sid="ReadBenchmarks",
            actions=["s3:GetObject"],
            resources=[bucket.arn_for_objects(f"{BENCHMARKS}/*")],
            reason="The check reads the results a benchmark job wrote under benchmarks/<job name>/.",
        )
        grants.grant(
            self.check_function,
            sid="UseArtifactsKey",
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=[eagle.key.key_arn],
        )
        grants.grant(
            self.check_function,
            sid="RecordBenchmarks",
            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
            resources=[eagle.runs_table.table_arn],
        )

    def _serving_function(self, eagle: Any, component_arn: str, serving_model_prefix: str, model_pattern: str) -> None:
        """``ServingFunction``: whether the component serves the promoted head yet (the deploy check)."""
        parameter_arn = Stack.of(self).format_arn(
            service="ssm", resource="parameter", resource_name=eagle.promotion_parameter_name.lstrip("/")
        )
        self.serving_function = python_function(
            self,
            "ServingFunction",
            folder="eagle_job",
            handler="benchmark.serving",
            description=f"Checks whether the endpoint serves the promoted EAGLE head of {eagle.model_name}",
            environment={
                "COMPONENT_NAME": eagle.component.component_name,
                "SERVING_MODEL_PREFIX": serving_model_prefix,
                "PROMOTION_PARAMETER": eagle.promotion_parameter_name,
                "DEPLOY_CHECKS": str(
                    max(1, int(self.settings.deploy_wait_hours * 3600 // DEPLOY_CHECK_INTERVAL.to_seconds()))
                ),
            },
            timeout=Duration.minutes(1),
        )
        self._grant_served(self.serving_function, component_arn, model_pattern, _SERVED)
        grants.grant(
            self.serving_function, sid="ReadPromotion", actions=["ssm:GetParameter"], resources=[parameter_arn]
        )

    def _slower_alarm(self, eagle: Any) -> None:
        """The rollback command, and ``SlowerAlarm`` (to the loop's topic) when the served head is slower."""
        settings = self.settings
        self.rollback_command: str = Fn.join(
            "",
            [
                f"python -m tools.eagle_rollback --parameter {eagle.promotion_parameter_name} --table ",
                eagle.runs_table.table_name,
                " --region ",
                Aws.REGION,
                " && cdk deploy ",
                Aws.STACK_NAME,
            ],
        )
        """The documented rollback (``tools/eagle_rollback.py``), then the deploy that serves without the head."""
        self.slower_alarm = cloudwatch.Alarm(
            self,
            "SlowerAlarm",
            metric=cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name="EagleServedSlower",
                dimensions_map={"ModelName": eagle.model_name, "service": RECORD_SERVICE},
                statistic="Maximum",
                period=Duration.hours(1),
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=Fn.join(
                "",
                [
                    f"The endpoint of {eagle.model_name} is slower serving its promoted EAGLE head than before it (AI "
                    f"benchmark job, tolerance {settings.slowdown_tolerance:g}). Roll the head back: ",
                    self.rollback_command,
                ],
            ),
        )
        self.slower_alarm.add_alarm_action(cloudwatch_actions.SnsAction(eagle.topic))
        if eagle.topic.master_key is not None:
            # CloudWatch alarms publish to an encrypted topic only when its key lets CloudWatch use it. A key made
            # in this app gets the statement; an imported key (add_to_resource_policy does nothing) must have it.
            eagle.topic.master_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="CloudWatchAlarmsPublish",
                    principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                )
            )

    def _state_machine(self, eagle: Any) -> None:
        """``Resource``: the benchmark's state machine, its log group and the findings CDK's grants raise."""
        settings = self.settings
        definition = benchmark_definition(self, eagle)
        self.log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
        )
        # two measurements (each: its limit plus up to START_RETRY_HOURS of quota retries), the deploy wait, 2 h
        wait_hours = 2 * (settings.max_hours + START_RETRY_HOURS) + settings.deploy_wait_hours + 2
        self.state_machine = sfn.StateMachine(
            self,
            "Resource",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            timeout=Duration.hours(wait_hours),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            comment=f"AI benchmark jobs on the endpoint of {eagle.model_name} before and after a promoted EAGLE head",
        )
        self.node.default_child = self.state_machine.node.default_child
        if eagle.topic.master_key is not None:
            eagle.topic.master_key.grant(self.state_machine, "kms:Decrypt", "kms:GenerateDataKey")
        role = self.state_machine.role
        grants.acknowledge_wildcard_only(
            role,
            "X-Ray tracing and the CloudWatch Logs log-delivery actions Step "
            "Functions uses for its execution log have no resource-level permissions.",
        )
        for function in (self.start_function, self.check_function, self.serving_function):
            acknowledge_resource(
                role,
                f"{function.function_arn}:*",
                "CDK's Lambda task grants lambda:InvokeFunction on the function and "
                "its versions (':*'); the state machine invokes only this benchmark's own functions.",
            )

    def _grant_served(self, function: lambda_.IFunction, component_arn: str, model_pattern: str, why: str) -> None:
        grants.grant(
            function, sid="SeeComponent", actions=["sagemaker:DescribeInferenceComponent"], resources=[component_arn]
        )
        grants.grant(
            function, sid="SeeServingModel", actions=["sagemaker:DescribeModel"], resources=[model_pattern], reason=why
        )


_JOB_NAMES = "Benchmark job names are made at run time from the run (eagle-<model>-<phase>-<hash>)."
_SERVED = "The serving models of a promoted head are named <component>-eagle-<suffix> by their custom resource."
