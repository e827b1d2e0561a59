"""``EagleOptimization``: train an EAGLE draft head on a model's own traffic, measure it, and serve it when it pays off.

The loop runs on AWS's engines; no Lambda polls or waits. One Step Functions state machine per
model (``Resource``)::

    capture source: PlanDataset (Lambda) -> ConvertCaptures (Distributed Map over the planned capture
        objects, batches to a Lambda, results to S3; up to 5% failed batches tolerated: the dataset keeps
        the rest and the watermark stays, so those objects are converted again next run)
        -> FinalizeDataset (Lambda; says where the watermark moves, writes nothing) -> enough new records?
        no  -> succeed with the reason (the watermark never moved)
    s3 / builtin source: ValidateDataset (Lambda: format checked on a sample)
    -> StartJob (Lambda: CreateOptimizationJob, and the capture watermark moved with the job in the same
       invocation; ResourceLimitExceededError retried for hours)
    -> WaitForJob (5 min) -> DescribeJob (sagemaker:describeOptimizationJob) -> terminal? else wait again
    -> RecordRun (Lambda: results, DynamoDB run record, S3 report, EMF metrics, promotion)
    -> job failed? publish the FailureReason to SNS and fail; else succeed.
    Any error on the way: publish error and cause to SNS, fail. Timed-out or aborted runs: an
    EventBridge rule publishes them too. Timeout: max_runtime_hours + 6 h (dataset) + 16 h (start
    retries) + 1 h.

Triggers
--------
* **Schedule** (``settings.schedule``, EventBridge Scheduler; default weekly).
* **Threshold**: a capture run only trains when at least ``dataset.min_new_records`` records were
  converted since the last run that trained. Below it, the run leaves the capture watermark where it
  started (so those records count again next time) and succeeds with the reason. Schedule
  plus threshold is "run when enough new records have arrived", checked at the schedule's rate.
* **New records** (``settings.dataset.records_check``, e.g. ``rate(1 hour)``; off by default): a small
  scheduled function counts the captured records after the watermark (lines, nothing converted; it stops
  reading at ``min_new_records``) and starts a run when enough arrived and none is in progress. Its
  execution names are derived from the watermark and the count, so a run that did not train is not
  started again until another ``min_new_records`` records arrived.
* **Manual**: ``aws stepfunctions start-execution --state-machine-arn <state machine ARN> --input '{}'``.
  The input is ignored; the run id is the execution name (``$$.Execution.Name``; pass ``--name`` to
  choose it: letters, digits, ``-``, ``_``, ``.``, ``=``). Re-running an execution name re-uses its
  job (job names are derived from the inputs), so a redrive never starts a second job.

Data and encryption
-------------------
One artifacts bucket (``storage.SecureBucket``, KMS key ``Key``): ``datasets/<run>/`` (plan,
converted shards, manifests, summary), ``map-results/`` (Distributed Map results), ``jobs/<job>/``
(``draft/`` head and ``results/`` benchmarks, written by the job with the same key) and
``reports/<model>/<run>.json``. Captured traffic stays in the endpoint's capture bucket under the
endpoint's key; only the dataset functions read it. The training set is written with the artifacts
key, which the job role may use: so the job never needs the endpoint's key, and its role reads only
the model's prefix and ``datasets/`` (or your dataset's prefix), and writes only ``jobs/``.
``iam:PassRole`` on that role is granted to the start function only, only to
``sagemaker.amazonaws.com``.

Serving: see ``speculative_decoding`` (promotion parameter -> ``cdk deploy`` -> endpoint).

Measured on the endpoint: with ``settings.benchmark.enabled`` (opt-in: it sends real traffic), a run that
promoted a head starts ``Benchmark`` (``eagle.benchmark.EagleBenchmark``) with ``{"run_id", "head"}``: AI
benchmark jobs before and after the head is served, recorded in the run record, an alarm when slower.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Annotations, ArnFormat, Aws, Duration, Fn, IStableStringProducer, Lazy, Names, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn

from constructs import Construct

from ..core import grants, service_model
from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE, python_function
from ..core.grants import acknowledge_wildcard_only
from ..core.metrics import metric
from ..core.nag import acknowledge, acknowledge_resource, nag_form, policy_resources
from ..core.run_time_state import RunTimeParameter
from ..core.settings import _S3_URI, instance_type_problem, validated
from ..core.storage import NONCURRENT_VERSION_DAYS, SecureBucket, restrict_reads, secure_key
from ..core.tree import at_synth
from .layout import DATASETS, JOB_NAME_PREFIX, JOBS, MAP_RESULTS, REPORTS
from ..hosting.speculative_decoding import (
    PARAMETER_PREFIX,
    SpeculativeDecoding,
    literal_parameter_name,
    serving_model_prefix,
)
from ..settings.eagle import EAGLE_ARCHITECTURES, EagleSettings
from .state_machine import EMPTY_WATERMARK, definition, run_timeout, start_retry_hours

__all__ = [
    "DATASETS",
    "JOBS",
    "JOB_NAME_PREFIX",
    "MAP_RESULTS",
    "RECORD_SERVICE",
    "REPORTS",
    "EagleOptimization",
    "run_timeout",
    "start_retry_hours",
]

if TYPE_CHECKING:
    from ..hosting.model_component import ModelComponent
    from ..sessions.turn_log import TurnLog

RECORD_SERVICE = "eagle_job"
"""Powertools service name of the record function: a dimension of the EMF metrics it publishes."""
RESULT_WRITER_V2_FLAG = "@aws-cdk/aws-stepfunctions:useDistributedMapResultWriterV2"


class EagleOptimization(Construct):
    """The EAGLE optimization loop of one model: dataset -> optimization job -> record -> promotion.

    Smallest use (``promotions`` is a stack deployed before ``component``'s stack)::

        head = PromotionParameter(promotions, "QwenHead", model_name="qwen3-32b")
        EagleOptimization(self, "QwenEagle", component=qwen, settings=EagleSettings(),
                          promotion_parameter=head.parameter)

    Must be created in the component's stack (it rewires the component's inference component and
    grants its endpoint role). See the module docstring for the state machine, triggers and
    encryption. Children: ``Resource``
    (state machine), ``Key``, ``Artifacts``, ``Runs`` (DynamoDB), ``Watermark`` (SSM), ``JobRole``,
    the functions, ``Notifications`` (unless ``alarm_topic``), ``Schedule``, ``SpeculativeDecoding``.
    Attributes: ``state_machine`` (``state_machine_arn``), ``artifacts_bucket``, ``key``, ``runs_table``,
    ``job_role``, ``topic``, ``speculative_decoding``, ``served_model_name``, ``*_function``, ``benchmark``
    (``EagleBenchmark`` or None).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        component: ModelComponent,
        settings: EagleSettings | Mapping[str, Any] | None = None,
        promotion_parameter: ssm.IStringParameter | RunTimeParameter | None = None,
        capacity_plan: Any | None = None,
        alarm_topic: sns.ITopic | None = None,
        model_data_key: kms.IKey | None = None,
        turn_log: TurnLog | None = None,
    ) -> None:
        """
        :param component: the model to optimize; its endpoint's Data Capture feeds the default dataset.
        :param settings: schedule, dataset, job and promotion settings. Default: the model's
            ``spec.eagle``, else ``EagleSettings()`` (weekly, captured traffic, 1.5x threshold).
        :param promotion_parameter: the SSM parameter that holds the approved head, in a stack deployed
            before the component's stack (see ``speculative_decoding.PromotionParameter``); the
            component's stack is made to depend on that stack. Required: without it, a ConfigurationError
            says how to create one.
        :param capacity_plan: reserved capacity the optimization job runs on: an object with
            ``training_plan_arns`` and ``instance_type`` for a plan meant for jobs (target
            training-job). A ``CapacityPlan`` (bought for endpoints) is refused: SageMaker does not
            accept an endpoint plan in ``TrainingPlanArns``. ``settings.training_plan`` does the
            same by ARN or name. Default: on-demand.
        :param alarm_topic: where failures, timeouts and aborted runs are published. If its KMS key is
            created in this app, EventBridge is allowed to use it; an imported key must already allow
            ``events.amazonaws.com``. Default: a new KMS-encrypted topic (``Notifications``).
        :param model_data_key: KMS key the model's weights are encrypted with, if any; the job role
            may decrypt with it. Default: the weights' bucket uses S3-managed keys.
        :param turn_log: with ``dataset.source: front_door``, the ``TurnLog`` the model's session front door
            writes (``front_door.log_turns(turn_log)``); its prefix is read like Data Capture. Default: none.
        """
        super().__init__(scope, id)
        # Without this flag CDK drops the Distributed Map's ResultWriterV2; set here so it holds in any app.
        self.node.set_context(RESULT_WRITER_V2_FLAG, True)
        where = self.node.path
        spec = component.spec
        problems: list[Problem] = []
        try:  # settings problems are reported together with the rest
            checked = validated(
                EagleSettings, settings if settings is not None else spec.eagle or EagleSettings(), where=where
            )
            settings_ok = True
        except ConfigurationError as error:
            problems.extend(problem.under("settings") for problem in error.problems)
            checked, settings_ok = EagleSettings(), False  # the checks below that read settings are skipped
        settings = checked
        endpoint = component.endpoint
        stack = Stack.of(self)
        component_stack = Stack.of(component.cfn_model)
        job_instance_type = settings.job_instance_type or endpoint.instance_type

        if spec.architecture not in EAGLE_ARCHITECTURES:
            problems.append(
                Problem(
                    "component.spec.architecture",
                    spec.architecture,
                    "one of " + ", ".join(f"{a} ({v})" for a, v in EAGLE_ARCHITECTURES.items()),
                    "set the model's architecture (config.json 'architectures'); SageMaker trains "
                    "EAGLE heads for these only",
                )
            )
        if settings_ok and settings.job_instance_type is None:
            problem = instance_type_problem(
                "settings.job_instance_type",
                job_instance_type,
                service_model.optimization_instance_types(),
                "optimization jobs",
            )
            if problem:
                problems.append(
                    Problem(
                        problem.path,
                        problem.value,
                        problem.allowed,
                        "the endpoint's instance type cannot run optimization jobs: set "
                        f"job_instance_type ({problem.fix})",
                    )
                )
        if stack is not component_stack:
            problems.append(
                Problem(
                    "scope",
                    stack.node.path,
                    f"a construct in the component's stack ({component_stack.node.path})",
                    "create EagleOptimization in the stack of the model it optimizes: it rewires "
                    "the model's inference component and grants its endpoint role",
                )
            )
        dataset = settings.dataset
        if settings_ok and dataset.source == "capture" and endpoint.data_capture_bucket is None:
            problems.append(
                Problem(
                    "settings.dataset.source",
                    "capture",
                    "s3 or builtin while the endpoint's data capture is off",
                    "turn data_capture on for the endpoint, or train on your own dataset "
                    "(source: s3, s3_uri: s3://bucket/prefix/)",
                )
            )
        from ..capacity.capacity_plan import CapacityPlan

        if isinstance(capacity_plan, CapacityPlan):
            problems.append(
                Problem(
                    "capacity_plan",
                    capacity_plan.plan_name,
                    "a training plan meant for jobs (target training-job); capacity plans target "
                    "endpoints and SageMaker refuses them in an optimization job's TrainingPlanArns",
                    "leave capacity_plan out (on-demand), or pass a plan bought for training jobs "
                    "(settings.training_plan: <ARN or name>)",
                )
            )
            capacity_plan = None
        if capacity_plan is not None and settings_ok and settings.training_plan is not None:
            problems.append(
                Problem(
                    "settings.training_plan",
                    settings.training_plan,
                    "either settings.training_plan or capacity_plan, not both",
                    "keep one of the two",
                )
            )
        if settings_ok and dataset.source == "front_door" and turn_log is None:
            problems.append(
                Problem(
                    "turn_log",
                    None,
                    "a TurnLog with dataset source front_door",
                    "create TurnLog(stack, 'Turns'), pass it as turn_log and call "
                    "front_door.log_turns(turn_log) on the model's SessionFrontDoor",
                )
            )
        if turn_log is not None and dataset.source != "front_door":
            problems.append(
                Problem(
                    "turn_log",
                    turn_log.node.path,
                    "only with dataset source front_door",
                    "set dataset.source to front_door or remove turn_log",
                )
            )
        plan_arns: list[str] = list(getattr(capacity_plan, "training_plan_arns", []) or []) if capacity_plan else []
        if settings_ok and settings.training_plan is not None:
            plan_arns = [
                settings.training_plan
                if settings.training_plan.startswith("arn:")
                else stack.format_arn(
                    service="sagemaker", resource="training-plan", resource_name=settings.training_plan
                )
            ]
        plan_type = getattr(capacity_plan, "instance_type", None) if capacity_plan else None
        if settings_ok and capacity_plan is not None and plan_type is not None and plan_type != job_instance_type:
            problems.append(
                Problem(
                    "capacity_plan",
                    plan_type,
                    f"a plan for {job_instance_type}, the job's instance type",
                    "set job_instance_type to the plan's instance type or pass another plan",
                )
            )
        promotion_name = self._promotion_parameter_name(promotion_parameter, component, problems)
        pretrained = getattr(component, "speculative_decoding", None)
        pretrained_head = pretrained.pretrained_head if pretrained is not None else None
        if settings_ok and settings.pretrained_head_speedup is not None and pretrained_head is None:
            problems.append(
                Problem(
                    "settings.pretrained_head_speedup",
                    settings.pretrained_head_speedup,
                    "only on a model that serves a pre-trained EAGLE head (a JumpStart model whose "
                    "lock entry has one, pretrained_head not false)",
                    "remove pretrained_head_speedup: the first promoted head is compared with the "
                    "base model and speedup_threshold",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=where)

        self.component = component
        self.settings = settings
        self.turn_log = turn_log
        built = dataset.source in ("capture", "front_door")  # the loop builds the training set itself
        self.model_name = component.component_name
        self.eagle_version = EAGLE_ARCHITECTURES[spec.architecture or ""]
        self.job_instance_type = job_instance_type
        self.promotion_parameter_name = promotion_name
        if promotion_parameter is not None and Stack.of(promotion_parameter) is not component_stack:
            component_stack.add_stack_dependency(
                Stack.of(promotion_parameter), "the EAGLE promotion parameter must exist before this stack deploys"
            )

        # ------------------------------------------------------------------ storage
        self.key = secure_key(self, "Key", description=f"EAGLE datasets, draft heads and run records of {where}")
        expiring = {DATASETS + "/": dataset.retention_days} if dataset.source in ("capture", "front_door") else {}
        self.artifacts = SecureBucket(
            self,
            "Artifacts",
            encryption_key=self.key,
            noncurrent_version_days=NONCURRENT_VERSION_DAYS,
            expire_after_days=expiring,
        )
        # Training sets are captured user text: only the loop's own roles (and the endpoint, for heads) read.
        restrict_reads(self.artifacts, self.key, what="EAGLE datasets and draft heads")
        self.artifacts.bucket.add_lifecycle_rule(
            id="ExpireMapResults", prefix=f"{MAP_RESULTS}/", expiration=Duration.days(30)
        )
        self.artifacts_bucket: s3.IBucket = self.artifacts.bucket
        self.runs_table = dynamodb.Table(
            self,
            "Runs",
            partition_key=dynamodb.Attribute(name="model_name", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="run_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self.key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.watermark_parameter = RunTimeParameter(
            self,
            "Watermark",
            parameter_name=f"{PARAMETER_PREFIX}/{self.model_name}/watermark",
            initial_value=EMPTY_WATERMARK,
            description=f"Last Data Capture object per folder already turned into EAGLE training data for "
            f"{self.model_name} (written by the dataset functions; no deploy resets it)",
        )
        bucket_uri = f"s3://{self.artifacts_bucket.bucket_name}"

        # ------------------------------------------------------------------ job role
        self.job_role = iam.Role(
            self,
            "JobRole",
            assumed_by=grants.sagemaker_principal(self),
            description=f"Role of the EAGLE optimization jobs of {where}: reads the model and the dataset, "
            "writes the job output",
        )
        model_bucket, model_prefix = _bucket_and_prefix(spec.model_data_s3_uri)
        self.model_objects_arn = self._grant_read_prefix(
            self.job_role,
            "Model",
            model_bucket,
            model_prefix,
            reason="Read-only GetObject under one prefix: the model's weights are many files under the model's S3 prefix.",
        )
        if built:
            dataset_bucket, dataset_prefix = self.artifacts_bucket.bucket_name, f"{DATASETS}/"
            self.dataset_objects_arn = self._grant_read_prefix(
                self.job_role,
                "Dataset",
                None,
                dataset_prefix,
                reason="Read-only GetObject under one prefix: the training set is many JSONL shards under the dataset prefix.",
            )
        else:
            dataset_bucket, dataset_prefix = _bucket_and_prefix(dataset.s3_uri or "")
            self.dataset_objects_arn = self._grant_read_prefix(
                self.job_role,
                "Dataset",
                dataset_bucket,
                dataset_prefix,
                reason="Read-only GetObject under one prefix: the training set is many JSONL shards under the dataset prefix.",
            )
        grants.grant(
            self.job_role,
            sid="WriteJobOutput",
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[self.artifacts_bucket.arn_for_objects(f"{JOBS}/*")],
            reason="Each optimization job writes its draft head and benchmarks under jobs/<job name>/, a "
            "name made at run time; PutObject only, only under jobs/.",
        )
        self.job_role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListJobOutput",
                actions=["s3:ListBucket"],
                resources=[self.artifacts_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{JOBS}/*"]}},
            )
        )
        self.job_role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="UseArtifactsKey", actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[self.key.key_arn]
            )
        )
        if model_data_key is not None:
            model_data_key.grant_decrypt(self.job_role)
        grants.grant(
            self.job_role,
            sid="WriteJobLogs",
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[
                stack.format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name="/aws/sagemaker/*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
            reason="SageMaker writes the job's logs to a log group under /aws/sagemaker/ whose name it chooses (not "
            "documented for optimization jobs); only that path.",
        )
        self.job_role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="PublishJobMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
            )
        )
        if endpoint.vpc is not None:
            self._grant_job_network()

        # ------------------------------------------------------------------ functions
        self.plan_function: lambda_.Function | None = None
        self.convert_function: lambda_.Function | None = None
        self.finalize_function: lambda_.Function | None = None
        self.validate_function: lambda_.Function | None = None
        if built:
            self._dataset_functions()
        else:
            self.validate_function = python_function(
                self,
                "ValidateFunction",
                folder="eagle_dataset",
                handler="index.validate_user_dataset",
                description=f"Checks the format of the EAGLE dataset of {self.model_name} on a sample",
                timeout=Duration.minutes(2),
                memory_size=512,
            )
            self._grant_read_prefix(
                self.validate_function,
                "Dataset",
                dataset_bucket,
                dataset_prefix,
                reason="The dataset's format is checked on a sample of the JSONL files under its prefix; read-only.",
            )

        start_env = {
            "ROLE_ARN": self.job_role.role_arn,
            "OUTPUT_S3_URI": f"{bucket_uri}/{JOBS}",
            "MAX_RUNTIME_SECONDS": str(settings.max_runtime_hours * 3600),
            "KMS_KEY_ARN": self.key.key_arn,
        }
        if endpoint.vpc is not None:
            start_env["SUBNET_IDS"] = Fn.join(",", list(endpoint.subnet_ids))
            start_env["SECURITY_GROUP_IDS"] = Fn.join(",", [g.security_group_id for g in endpoint.security_groups])
        if plan_arns:
            start_env["TRAINING_PLAN_ARNS"] = Fn.join(",", plan_arns)
        self.start_function = python_function(
            self,
            "StartFunction",
            folder="eagle_job",
            handler="index.start",
            description=f"Starts the EAGLE optimization job of {self.model_name}",
            environment=start_env,
            timeout=Duration.minutes(2),
        )
        self.job_arn_pattern = stack.format_arn(
            service="sagemaker", resource="optimization-job", resource_name=f"{JOB_NAME_PREFIX}*"
        )
        grants.grant(
            self.start_function,
            sid="CreateEagleJobs",
            resources=[self.job_arn_pattern],
            actions=["sagemaker:CreateOptimizationJob", "sagemaker:DescribeOptimizationJob", "sagemaker:AddTags"],
            reason="Job names are made at run time from the run's inputs (eagle-<model>-<hash>); Create/Describe/"
            "AddTags on optimization jobs named eagle-* only.",
        )
        self.start_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassJobRole",
                actions=["iam:PassRole"],
                resources=[self.job_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            )
        )
        self.start_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="FindDataset",
                actions=["s3:ListBucket"],
                resources=[_bucket_arn(dataset_bucket)],
                conditions={"StringLike": {"s3:prefix": [f"{dataset_prefix}*"]}},
            )
        )
        if built:  # captured traffic: the start moves the capture watermark with the job, nothing else writes it
            self.start_function.add_to_role_policy(
                iam.PolicyStatement(
                    sid="MoveWatermark",
                    actions=["ssm:GetParameter", "ssm:PutParameter"],
                    resources=[self.watermark_parameter.parameter_arn],
                )
            )

        self.record_function = python_function(
            self,
            "RecordFunction",
            folder="eagle_job",
            handler="index.record",
            description=f"Records the EAGLE run of {self.model_name} and promotes its head when it is fast enough",
            environment={
                "RUNS_TABLE": self.runs_table.table_name,
                "REPORT_S3_URI": f"{bucket_uri}/{REPORTS}",
                "PROMOTION_PARAMETER": promotion_name,
                "SPEEDUP_THRESHOLD": f"{settings.speedup_threshold:g}",
                # the head served while the parameter holds none: a trained head must beat it to be promoted
                **_pretrained_environment(pretrained_head, settings.pretrained_head_speedup),
            },
            timeout=Duration.minutes(5),
            memory_size=512,
        )
        self._grant_record(stack)

        # ------------------------------------------------------------------ notifications
        if alarm_topic is None:
            topic_key = secure_key(self, "NotificationsKey", description=f"Encrypts EAGLE notifications of {where}")
            topic_key.add_to_resource_policy(_events_may_use_key())
            self.topic: sns.ITopic = sns.Topic(
                self,
                "Notifications",
                master_key=topic_key,
                enforce_ssl=True,
                display_name=f"EAGLE runs of {self.model_name}"[:100],
            )
        else:
            self.topic = alarm_topic

        # ------------------------------------------------------------------ state machine
        self.benchmark: Any = None  # EagleBenchmark when settings.benchmark.enabled
        if settings.benchmark.enabled:  # opt-in: benchmark jobs send real traffic to the endpoint
            from .benchmark import EagleBenchmark

            self.benchmark = EagleBenchmark(
                self, "Benchmark", optimization=self, serving_model_prefix=serving_model_prefix(component)
            )
        self.run_timeout = run_timeout(settings.max_runtime_hours)
        chain = definition(self, dataset_prefix_uri=f"s3://{dataset_bucket}/{dataset_prefix}")
        self.log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
        )
        self.state_machine = sfn.StateMachine(
            self,
            "Resource",
            definition_body=sfn.DefinitionBody.from_chainable(chain),
            timeout=self.run_timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            comment=f"EAGLE optimization loop of {self.model_name}: dataset, optimization job, record, promotion",
        )
        self.node.default_child = self.state_machine.node.default_child
        self.state_machine_arn = self.state_machine.state_machine_arn
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                sid="UseArtifactsKey", actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[self.key.key_arn]
            )
        )
        # CDK grants the Distributed Map's ResultWriter s3:PutObject on every key of the bucket; the definition
        # writes only map-results/. Deny every other write, so the run can never touch datasets, heads or reports.
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                sid="WriteOnlyMapResults",
                effect=iam.Effect.DENY,
                actions=["s3:PutObject"],
                not_resources=[self.artifacts_bucket.arn_for_objects(f"{MAP_RESULTS}/*")],
            )
        )
        if alarm_topic is None:
            topic_key.grant(self.state_machine, "kms:Decrypt", "kms:GenerateDataKey")
        elif alarm_topic.master_key is not None:
            alarm_topic.master_key.grant(self.state_machine, "kms:Decrypt", "kms:GenerateDataKey")
            # EventBridge (timed-out/aborted runs) may only publish to an encrypted topic whose key lets it;
            # an imported key is left alone (add_to_resource_policy does nothing): grant it where the key lives.
            alarm_topic.master_key.add_to_resource_policy(_events_may_use_key())

        self.ended_badly_rule = events.Rule(
            self,
            "RunTimedOutOrAborted",
            description=f"EAGLE runs of {self.model_name} that timed out or were aborted",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"stateMachineArn": [self.state_machine_arn], "status": ["TIMED_OUT", "ABORTED"]},
            ),
        )
        # Not events_targets.SnsTopic: it adds an sns:Publish statement for events.amazonaws.com with no condition,
        # which lets any rule (of any account's events) publish. This rule alone may publish, by its ARN.
        self.ended_badly_rule.add_target(
            _SnsTarget(
                self.topic,
                events.RuleTargetInput.from_object(
                    {
                        "model_name": self.model_name,
                        "status": events.EventField.from_path("$.detail.status"),
                        "execution": events.EventField.from_path("$.detail.executionArn"),
                        "reason": "The EAGLE run did not finish: it timed out or was stopped. A running optimization job "
                        "keeps running until its own time limit; check it in SageMaker.",
                    }
                ),
            )
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"EventsPublish{Names.unique_id(self.ended_badly_rule)[-16:]}",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnEquals": {"aws:SourceArn": self.ended_badly_rule.rule_arn},
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        grants.require_source_conditions(self.topic)

        # ------------------------------------------------------------------ triggers
        self.schedule: scheduler.Schedule | None = None
        if settings.schedule is not None:
            self.schedule_role = iam.Role(
                self,
                "ScheduleRole",
                assumed_by=iam.ServicePrincipal(
                    "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
                ),
                description=f"Lets EventBridge Scheduler start the EAGLE runs of {self.model_name}",
            )
            self.schedule = scheduler.Schedule(
                self,
                "Schedule",
                schedule=scheduler.ScheduleExpression.expression(settings.schedule),
                target=scheduler_targets.StepFunctionsStartExecution(
                    self.state_machine, input=scheduler.ScheduleTargetInput.from_object({}), role=self.schedule_role
                ),
                description=f"Starts an EAGLE optimization run of {self.model_name}",
            )

        self.check_function: lambda_.Function | None = None
        self.records_check: scheduler.Schedule | None = None
        if built and dataset.records_check is not None:
            self._records_check(dataset.records_check, dataset.min_new_records)

        # ------------------------------------------------------------------ serving
        if pretrained is not None:  # the model serves a pre-trained head: a promoted head replaces it
            pretrained.add_promotion(
                promotion_parameter_name=promotion_name,
                draft_bucket=self.artifacts_bucket,
                draft_prefix=JOBS,
                draft_key=self.key,
                num_speculative_tokens=settings.num_speculative_tokens,
            )
            self.speculative_decoding: SpeculativeDecoding = pretrained
        else:
            self.speculative_decoding = SpeculativeDecoding(
                self,
                "SpeculativeDecoding",
                component=component,
                promotion_parameter_name=promotion_name,
                draft_bucket=self.artifacts_bucket,
                draft_prefix=JOBS,
                draft_key=self.key,
                num_speculative_tokens=settings.num_speculative_tokens,
            )
        self.served_model_name = self.speculative_decoding.served_model_name
        _acknowledge_eagle(self)

    # ================================================================ validation
    def _promotion_parameter_name(
        self,
        parameter: ssm.IStringParameter | RunTimeParameter | None,
        component: ModelComponent,
        problems: list[Problem],
    ) -> str:
        component_stack = Stack.of(component.cfn_model)
        if parameter is None:
            problems.append(
                Problem(
                    "promotion_parameter",
                    None,
                    "an SSM parameter in a stack deployed before "
                    + component_stack.stack_name
                    + ": CloudFormation reads "
                    "it (AWS::SSM::Parameter::Value) before it creates anything in that stack, so it cannot be created "
                    "in the same stack",
                    f"add a companion stack, e.g. promotions = Stack(app, '{component_stack.stack_name}EaglePromotion', "
                    f"env=...); head = PromotionParameter(promotions, '{self.node.id}Head', model_name="
                    f"'{component.component_name}'); then pass promotion_parameter=head.parameter",
                )
            )
            return ""
        if Stack.of(parameter) is component_stack and not _imported(parameter):
            problems.append(
                Problem(
                    "promotion_parameter",
                    parameter.node.path,
                    f"a parameter created in a stack other than {component_stack.stack_name} (the component's stack), "
                    "deployed before it",
                    "create PromotionParameter in a companion stack (Stack(app, '...EaglePromotion')) and pass its "
                    ".parameter; this stack then depends on the companion stack",
                )
            )
        name = literal_parameter_name(parameter)
        if name is None:
            problems.append(
                Problem(
                    "promotion_parameter",
                    parameter.node.path,
                    "a parameter with a fixed name (the stack reads it by name)",
                    "use PromotionParameter, or give the StringParameter a parameter_name",
                )
            )
            return ""
        return name

    # ================================================================ grants
    def _grant_read_prefix(
        self, grantee: iam.IGrantable, what: str, bucket: str | None, prefix: str, *, reason: str
    ) -> str:
        """GetObject under ``prefix`` and ListBucket limited to it; ``bucket`` None = the artifacts bucket.
        ``reason`` acknowledges the prefix's wildcard. Returns the objects ARN granted."""
        bucket_arn = self.artifacts_bucket.bucket_arn if bucket is None else _bucket_arn(bucket)
        objects = f"{prefix}*" if not prefix.endswith(".tar.gz") else prefix
        grants.grant(
            grantee, sid=f"Read{what}", actions=["s3:GetObject"], resources=[f"{bucket_arn}/{objects}"], reason=reason
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"List{what}",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [objects]}},
            )
        )
        return f"{bucket_arn}/{objects}"

    def _grant_job_network(self) -> None:
        endpoint = self.component.endpoint
        # Resource::* of the job role (these and PutMetricData) is acknowledged once, in _acknowledge_eagle.
        self.job_role.add_to_principal_policy(
            iam.PolicyStatement(sid="DescribeNetwork", resources=["*"], actions=list(grants.NETWORK_DESCRIBE_ACTIONS))
        )
        grants.grant(
            self.job_role,
            sid="ManageJobNetworkInterfaces",
            actions=grants.NETWORK_INTERFACE_ACTIONS,
            resources=grants.network_interface_resources(self, endpoint.subnet_ids, endpoint.security_groups),
            reason="SageMaker creates the job's network interfaces in the endpoint's subnets under ids it makes at "
            "run time.",
        )

    def _dataset_functions(self) -> None:
        endpoint = self.component.endpoint
        # The records the loop reads: the endpoint's Data Capture, or the front door's turn log (Firehose).
        if self.turn_log is not None:
            capture_bucket: s3.IBucket = self.turn_log.bucket
            self.capture_prefix = self.turn_log.prefix
            self.source_key: kms.IKey | None = self.turn_log.bucket.encryption_key
        else:
            assert endpoint.data_capture_bucket is not None
            capture_bucket = endpoint.data_capture_bucket
            self.capture_prefix = f"data-capture/{endpoint.endpoint_name}/"
            self.source_key = endpoint.key
        self.capture_bucket = capture_bucket
        datasets = self.artifacts_bucket.arn_for_objects(f"{DATASETS}/*")

        # The training set is written under the artifacts key, named on every write: the job role may
        # decrypt with it (UseArtifactsKey), and the job never needs the endpoint's capture key.
        written_with = {"DATASET_KMS_KEY_ARN": self.key.key_arn}
        self.plan_function = python_function(
            self,
            "PlanFunction",
            folder="eagle_dataset",
            handler="index.plan",
            description=f"Lists new Data Capture objects of {self.model_name} for its EAGLE dataset",
            environment=written_with,
            timeout=Duration.minutes(15),
            memory_size=1024,
        )
        self.convert_function = python_function(
            self,
            "ConvertFunction",
            folder="eagle_dataset",
            handler="index.convert",
            description=f"Converts captured requests of {self.model_name} into chat-completions JSONL",
            environment={
                **written_with,
                "UNNAMED_RECORDS_COMPONENT": Lazy.string(_Produce(self._unnamed_records_component)),
            },
            timeout=Duration.minutes(15),
            memory_size=1024,
        )
        if self.settings.dataset.source == "capture":  # once the endpoint's models and adapters are all in the tree
            at_synth(self, self._note_unattributed)
        self.finalize_function = python_function(
            self,
            "FinalizeFunction",
            folder="eagle_dataset",
            handler="index.finalize",
            description=f"Writes the EAGLE dataset summary and manifests of {self.model_name}",
            environment=written_with,
            timeout=Duration.minutes(10),
            memory_size=1024,
        )

        capture_objects = capture_bucket.arn_for_objects(f"{self.capture_prefix}*")
        plan_role, convert_role, finalize_role = (
            f.role for f in (self.plan_function, self.convert_function, self.finalize_function)
        )
        assert plan_role and convert_role and finalize_role
        plan_role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListCaptures",
                actions=["s3:ListBucket"],
                resources=[capture_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.capture_prefix}*"]}},
            )
        )
        grants.grant(
            convert_role,
            sid="ReadCaptures",
            actions=["s3:GetObject"],
            resources=[capture_objects],
            reason="Data Capture writes one object per capture file under data-capture/<endpoint>/; read-only "
            "GetObject under this endpoint's folder only.",
        )
        if self.source_key is not None:
            convert_role.add_to_principal_policy(
                iam.PolicyStatement(sid="DecryptCaptures", actions=["kms:Decrypt"], resources=[self.source_key.key_arn])
            )
        for role in (plan_role, convert_role, finalize_role):
            grants.grant(
                role,
                sid="WriteDataset",
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[datasets],
                reason="The dataset builder writes the plan, shards, manifests and summary of each run under "
                "datasets/<run id>/, a name made at run time; PutObject only, only under datasets/.",
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="UseArtifactsKey", actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[self.key.key_arn]
                )
            )
        grants.grant(
            finalize_role,
            sid="ReadMapResults",
            actions=["s3:GetObject"],
            resources=[self.artifacts_bucket.arn_for_objects(f"{MAP_RESULTS}/*")],
            reason="Step Functions writes the Distributed Map's result files under map-results/<map run "
            "id>/; read-only.",
        )
        self.watermark_parameter.grant_read(plan_role)

    def _records_check(self, expression: str, min_new_records: int) -> None:
        """A scheduled function that counts new captured records (no conversion) and starts a run once enough arrived.

        EventBridge Scheduler invokes it asynchronously: a check that still fails after Lambda's two retries, or an
        invocation Scheduler could not deliver within its retry policy, is kept in ``records_check_dead_letters``
        (KMS-encrypted, TLS-only, 14 days) rather than lost with only a log line."""
        self.records_check_dead_letters_key = secure_key(
            self,
            "RecordsCheckDeadLettersKey",
            description=f"Encrypts the failed new-records checks of {self.model_name}",
        )
        self.records_check_dead_letters = sqs.Queue(
            self,
            "RecordsCheckDeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=self.records_check_dead_letters_key,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        acknowledge(
            self.records_check_dead_letters,
            "AwsSolutions-SQS3",
            "This queue is the dead-letter queue of the new-records check (its function and its schedule); "
            "a dead-letter queue has none of its own.",
        )
        self.check_function = python_function(
            self,
            "CheckFunction",
            folder="eagle_dataset",
            handler="index.check",
            description=f"Starts an EAGLE run of {self.model_name} once {min_new_records} new records were captured",
            environment={
                "STATE_MACHINE_ARN": self.state_machine_arn,
                "WATERMARK_PARAMETER": self.watermark_parameter.parameter_name,
                "CAPTURE_BUCKET": self.capture_bucket.bucket_name,
                "CAPTURE_PREFIX": self.capture_prefix,
                "MIN_NEW_RECORDS": str(min_new_records),
            },
            timeout=Duration.minutes(5),
            memory_size=512,
            reserved_concurrency=1,
            dead_letter_queue=self.records_check_dead_letters,
        )
        role = self.check_function.role
        assert role is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListCaptures",
                actions=["s3:ListBucket"],
                resources=[self.capture_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.capture_prefix}*"]}},
            )
        )
        grants.grant(
            role,
            sid="ReadCaptures",
            actions=["s3:GetObject"],
            resources=[self.capture_bucket.arn_for_objects(f"{self.capture_prefix}*")],
            reason="Data Capture writes one object per capture file under data-capture/<endpoint>/; the check "
            "reads (GetObject only) this endpoint's folder to count new records.",
        )
        if self.source_key is not None:
            role.add_to_principal_policy(
                iam.PolicyStatement(sid="DecryptCaptures", actions=["kms:Decrypt"], resources=[self.source_key.key_arn])
            )
        self.watermark_parameter.grant_read(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="SeeRunningRuns", actions=["states:ListExecutions"], resources=[self.state_machine_arn]
            )
        )
        self.state_machine.grant_start_execution(role)
        self.records_check_role = iam.Role(
            self,
            "RecordsCheckRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            description=f"Lets EventBridge Scheduler run the new-records check of {self.model_name}",
        )
        self.records_check = scheduler.Schedule(
            self,
            "RecordsCheck",
            schedule=scheduler.ScheduleExpression.expression(expression),
            # One check is worth little an hour later (the next one counts afresh): a few tries within the hour.
            target=scheduler_targets.LambdaInvoke(
                self.check_function,
                role=self.records_check_role,
                input=scheduler.ScheduleTargetInput.from_object({}),
                dead_letter_queue=self.records_check_dead_letters,
                retry_attempts=3,
                max_event_age=Duration.hours(1),
            ),
            description=f"Counts new captured records of {self.model_name}; starts a run at {min_new_records}",
        )
        acknowledge(
            self.records_check_role,
            "AwsSolutions-IAM5",
            "CDK's Scheduler target grants lambda:InvokeFunction on the "
            "check function and its versions (<arn>:*); that one function only.",
            finding="Resource::" + nag_form(self.records_check_role, f"{self.check_function.function_arn}:*"),
        )

    def _note_unattributed(self) -> None:
        """Say at synth when captured records may never train this model: on an endpoint that serves other models or
        adapters, a capture record must name its inference component to be kept, and AWS does not document that
        Data Capture records of inference-component endpoints do. The front door's turn log names the model."""
        if self._unnamed_records_component():
            return
        message = (
            f"{self.model_name} trains its EAGLE head on Data Capture of an endpoint that serves other models or "
            "adapters: a record that names no inference component is kept apart, never trained on, and AWS does "
            "not document that capture records name the component, so runs may find no records to train on. "
            "Fix: set eagle.dataset.source: front_door (the session front door's turn log names the model; the "
            "model needs sessions), or serve this model on an endpoint of its own."
        )
        Annotations.of(self).add_info(message)
        print(f"warning: {self.node.path}: {message}", file=sys.stderr)

    def _unnamed_records_component(self) -> str:
        """Who a capture record that names no component belongs to: this model only when the endpoint
        serves nothing else (one model, no LoRA), read at synth so models added later count. Else ""
        and such records are kept apart (AWS does not document that IC capture records name the component)."""
        endpoint = self.component.endpoint
        alone = len(endpoint.models) == 1 and endpoint.models[0] is self.component and self.component.spec.lora is None
        return self.model_name if alone else ""

    def _grant_record(self, stack: Stack) -> None:
        role = self.record_function.role
        assert role is not None
        bucket = self.artifacts_bucket
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListJobOutput",
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{JOBS}/*"]}},
            )
        )
        grants.grant(
            role,
            sid="ReadJobResults",
            actions=["s3:GetObject"],
            resources=[bucket.arn_for_objects(f"{JOBS}/*/results/*")],
            reason="The record function reads the benchmark files a job wrote under jobs/<job name>/results/; "
            "read-only.",
        )
        grants.grant(
            role,
            sid="WriteReports",
            actions=["s3:PutObject"],
            resources=[bucket.arn_for_objects(f"{REPORTS}/*")],
            reason="One JSON report per run under reports/<model>/<run id>.json; PutObject only, only under reports/.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="RecordRuns",
                actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"],
                resources=[self.runs_table.table_arn],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="UseArtifactsKey",
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
                resources=[self.key.key_arn],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="PromoteDraftHead",
                actions=["ssm:GetParameter", "ssm:PutParameter"],
                resources=[
                    stack.format_arn(
                        service="ssm", resource="parameter", resource_name=self.promotion_parameter_name.lstrip("/")
                    )
                ],
            )
        )

    # ================================================================ metrics
    def metric(
        self, metric_name: str, *, statistic: str = "Sum", period: Duration | None = None, **kwargs: Any
    ) -> cloudwatch.Metric:
        """A metric the record function publishes for this model (dimensions ModelName and service)."""
        return metric(
            METRICS_NAMESPACE,
            metric_name,
            {"ModelName": self.model_name, "service": RECORD_SERVICE},
            statistic=statistic,
            period=period or Duration.days(1),
            **kwargs,
        )

    def metric_speedup(self, *, statistic: str = "Maximum", **kwargs: Any) -> cloudwatch.Metric:
        """Throughput of the trained head over the base model, per run (x). Default: maximum per day."""
        return self.metric("EagleSpeedup", statistic=statistic, **kwargs)

    def metric_job_failed(self, **kwargs: Any) -> cloudwatch.Metric:
        """Optimization jobs that failed or were stopped. Default: sum per day."""
        return self.metric("EagleJobFailed", **kwargs)

    def metric_results_unparsed(self, **kwargs: Any) -> cloudwatch.Metric:
        """Completed jobs whose results could not be read (never promoted). Default: sum per day."""
        return self.metric("EagleResultsUnparsed", **kwargs)

    def metric_job_succeeded(self, **kwargs: Any) -> cloudwatch.Metric:
        """Optimization jobs that completed. Default: sum per day."""
        return self.metric("EagleJobSucceeded", **kwargs)

    def metric_runs_failed(self, **kwargs: Any) -> cloudwatch.Metric:
        """Runs of the state machine that failed (any step). Default: sum per day."""
        return self.state_machine.metric_failed(period=kwargs.pop("period", Duration.days(1)), **kwargs)

    # ================================================================ grants
    def grant_start_run(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to start runs (``states:StartExecution`` on this state machine only)."""
        return self.state_machine.grant_start_execution(grantee)


@jsii.implements(events.IRuleTarget)
class _SnsTarget:
    """An SNS topic as a rule target, without CDK's unconditioned topic policy grant (the caller adds its own)."""

    def __init__(self, topic: sns.ITopic, message: events.RuleTargetInput) -> None:
        self._topic = topic
        self._message = message

    def bind(self, rule: Any, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._topic.topic_arn, input=self._message)


@jsii.implements(IStableStringProducer)
class _Produce:
    """A string CDK asks for at synth (``Lazy.string``), after every construct of the app exists."""

    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()


def _events_may_use_key() -> iam.PolicyStatement:
    """Key policy statement letting EventBridge rules of this account publish to a topic encrypted with the key."""
    return iam.PolicyStatement(
        principals=[iam.ServicePrincipal("events.amazonaws.com")],
        actions=["kms:Decrypt", "kms:GenerateDataKey*"],
        resources=["*"],
        conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
    )


def _pretrained_environment(head: Any, configured: float | None) -> dict[str, str]:
    """The record function's view of the pre-trained head served before any promotion (none: {})."""
    if head is None:
        return {}
    speedup = configured if configured is not None else head.speedup
    return {
        "PRETRAINED_HEAD_S3_URI": head.s3_uri,
        **({"PRETRAINED_HEAD_SPEEDUP": f"{speedup:g}"} if speedup is not None else {}),
    }


def _bucket_and_prefix(uri: str) -> tuple[str, str]:
    match = _S3_URI.match(uri)
    assert match, uri  # validated by the settings models
    return match.group("bucket"), match.group("key") or ""


def _bucket_arn(bucket: str) -> str:
    return f"arn:{Aws.PARTITION}:s3:::{bucket}"


def _imported(parameter: ssm.IStringParameter | RunTimeParameter) -> bool:
    """True for ``StringParameter.from_*`` references (no resource of their own in any stack)."""
    return not isinstance(parameter, RunTimeParameter) and not isinstance(
        parameter.node.default_child, ssm.CfnParameter
    )


def _acknowledge_eagle(eagle: Any) -> None:
    """What ``grants.grant`` cannot acknowledge at the grant: the job role's actions that have no resource type
    (one ``Resource::*`` finding for the metrics and, in a VPC, the network descriptions), and the statements CDK
    writes for the state machine (Lambda tasks, the Distributed Map, X-Ray and log delivery)."""
    stack = Stack.of(eagle)
    bucket = eagle.artifacts_bucket
    acknowledge_wildcard_only(
        eagle.job_role,
        "cloudwatch:PutMetricData has no resource type (limited by a "
        "cloudwatch:namespace condition to SageMaker's namespaces); in a VPC, the ec2:Describe* "
        "calls SageMaker makes before attaching the job's network interfaces have none either.",
    )
    machine = eagle.state_machine
    role = machine.role
    acknowledge_wildcard_only(
        role,
        "X-Ray tracing (PutTraceSegments, GetSamplingRules, ...) and the CloudWatch Logs log-delivery "
        "actions Step Functions uses for its execution log have no resource-level permissions.",
    )
    acknowledge_resource(
        role,
        eagle.job_arn_pattern,
        "The wait loop describes the run's optimization job, whose name is made at run time (eagle-*); "
        "DescribeOptimizationJob only.",
    )
    for function in (
        eagle.plan_function,
        eagle.convert_function,
        eagle.finalize_function,
        eagle.validate_function,
        eagle.start_function,
        eagle.record_function,
    ):
        if function is not None:
            acknowledge_resource(
                role,
                f"{function.function_arn}:*",
                "CDK's Lambda task grants lambda:InvokeFunction on the function and its versions (':*'); the "
                "state machine invokes only this loop's own functions.",
            )
    if eagle.convert_function is not None:
        why = (
            "CDK's Distributed Map grants its ItemReader (GetObject) and ResultWriter (PutObject, multipart) on "
            "every key of the artifacts bucket; the definition reads only datasets/<run>/plan/items.json and "
            "writes only map-results/, and an explicit Deny refuses PutObject anywhere else."
        )
        # Read from the policy CDK wrote, as cdk-nag reads it: in a stack bound to a region but not an account the
        # partition there is <AWS::Partition> while Stack.partition is already "aws".
        default_policy = role.node.try_find_child("DefaultPolicy")
        bucket_id = f"<{stack.get_logical_id(bucket.node.default_child)}>"
        forms = [
            f
            for f in (policy_resources(default_policy, bucket_id, "/*") if default_policy is not None else [])
            if ":s3:::" in f and f.endswith(f"{bucket_id}/*")
        ]
        if forms:
            for form in forms:
                acknowledge(role, "AwsSolutions-IAM5", why, finding=f"Resource::{form}")
        else:
            acknowledge_resource(role, f"arn:{stack.partition}:s3:::{bucket.bucket_name}/*", why)
        # The execution ARNs are read from the policy CDK wrote, as cdk-nag reads them, so the finding ids
        # match in an environment-agnostic stack (<AWS::Region>) and in a bound one (us-east-1) alike.
        policy = machine.node.find_child("DistributedMapPolicy")
        for resource in policy_resources(policy, ":execution:", ":*"):
            why = (
                "redrive the Distributed Map's child executions"
                if resource.endswith("/ConvertCaptures:*")
                else "describe and stop the child executions of this state machine"
            )
            acknowledge(
                policy,
                "AwsSolutions-IAM5",
                f"A Distributed Map runs its batches as child executions named at run time; CDK grants "
                f"the state machine to {why}, only under its own name.",
                finding=f"Resource::{resource}",
            )
