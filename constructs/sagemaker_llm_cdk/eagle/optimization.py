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
    -> WaitForJob (5 min; longer for jobs over 143 h, within the execution's history limit)
    -> DescribeJob (sagemaker:describeOptimizationJob) -> terminal? else wait again
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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn

from constructs import Construct

from ..core.functions import METRICS_NAMESPACE
from ..core.metrics import metric
from ..core.run_time_state import RunTimeParameter
from ..core.storage import NONCURRENT_VERSION_DAYS, SecureBucket, restrict_reads, secure_key
from ..hosting.speculative_decoding import PARAMETER_PREFIX, SpeculativeDecoding, serving_model_prefix
from ..settings.eagle import EAGLE_ARCHITECTURES, EagleSettings
from .acknowledgements import acknowledge_eagle
from .dataset_source import add_capture_functions, add_validate_function, builds_dataset, dataset_location
from .job_functions import add_record_function, add_start_function
from .job_role import add_job_role
from .layout import DATASETS, JOB_NAME_PREFIX, JOBS, MAP_RESULTS, REPORTS
from .notifications import add_ended_badly_rule, add_topic, grant_topic_key
from .state_machine import EMPTY_WATERMARK, definition, run_timeout, start_retry_hours
from .triggers import add_records_check, add_schedule
from .validation import CheckedInputs, check_inputs

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

    # Set by the builders of this package (job_role, dataset_source, job_functions, notifications, triggers).
    job_role: iam.Role
    model_objects_arn: str
    dataset_objects_arn: str
    capture_bucket: s3.IBucket
    capture_prefix: str
    source_key: kms.IKey | None
    plan_function: lambda_.Function | None
    convert_function: lambda_.Function | None
    finalize_function: lambda_.Function | None
    validate_function: lambda_.Function | None
    start_function: lambda_.Function
    job_arn_pattern: str
    record_function: lambda_.Function
    topic: sns.ITopic
    ended_badly_rule: events.Rule
    schedule_role: iam.Role
    schedule: scheduler.Schedule | None
    check_function: lambda_.Function | None
    records_check_dead_letters_key: kms.IKey
    records_check_dead_letters: sqs.Queue
    records_check_role: iam.Role
    records_check: scheduler.Schedule | None

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
        checked = check_inputs(
            self,
            component=component,
            settings=settings,
            promotion_parameter=promotion_parameter,
            capacity_plan=capacity_plan,
            turn_log=turn_log,
        )
        self._keep_inputs(component, checked, promotion_parameter, turn_log)
        self._storage()
        built = builds_dataset(self.settings.dataset.source)  # the loop builds the training set itself
        dataset_bucket, dataset_prefix = dataset_location(self)
        add_job_role(
            self,
            built=built,
            dataset_bucket=dataset_bucket,
            dataset_prefix=dataset_prefix,
            model_data_key=model_data_key,
        )
        self._functions(checked, built=built, dataset_bucket=dataset_bucket, dataset_prefix=dataset_prefix)
        topic_key = add_topic(self, alarm_topic)
        self._state_machine(f"s3://{dataset_bucket}/{dataset_prefix}", alarm_topic, topic_key)
        add_ended_badly_rule(self)
        self._triggers(built)
        self._serving(checked.pretrained)
        acknowledge_eagle(self)

    # ================================================================ construction steps
    def _keep_inputs(
        self,
        component: ModelComponent,
        checked: CheckedInputs,
        promotion_parameter: ssm.IStringParameter | RunTimeParameter | None,
        turn_log: TurnLog | None,
    ) -> None:
        """The checked inputs as attributes; the component's stack deploys after the promotion parameter's."""
        self.component = component
        self.settings = checked.settings
        self.turn_log = turn_log
        self.model_name = component.component_name
        self.eagle_version = EAGLE_ARCHITECTURES[component.spec.architecture or ""]
        self.job_instance_type = checked.job_instance_type
        self.promotion_parameter_name = checked.promotion_name
        self.reasoning_tags = checked.reasoning_tags
        """The think tags captured replies' reasoning is written inside in the training set (None: left out)."""
        component_stack = Stack.of(component.cfn_model)
        if promotion_parameter is not None and Stack.of(promotion_parameter) is not component_stack:
            component_stack.add_stack_dependency(
                Stack.of(promotion_parameter), "the EAGLE promotion parameter must exist before this stack deploys"
            )

    def _storage(self) -> None:
        """The artifacts key and bucket, the runs table and the capture watermark."""
        dataset = self.settings.dataset
        self.key = secure_key(
            self, "Key", description=f"EAGLE datasets, draft heads and run records of {self.node.path}"
        )
        expiring = {DATASETS + "/": dataset.retention_days} if builds_dataset(dataset.source) else {}
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

    def _functions(self, checked: CheckedInputs, *, built: bool, dataset_bucket: str, dataset_prefix: str) -> None:
        """The dataset functions (built) or the user dataset's check, then the job's start and record functions."""
        self.plan_function = None
        self.convert_function = None
        self.finalize_function = None
        self.validate_function = None
        if built:
            add_capture_functions(self)
        else:
            self.validate_function = add_validate_function(self, dataset_bucket, dataset_prefix)
        add_start_function(
            self, built=built, dataset_bucket=dataset_bucket, dataset_prefix=dataset_prefix, plan_arns=checked.plan_arns
        )
        add_record_function(self, checked.pretrained_head)

    def _state_machine(
        self, dataset_prefix_uri: str, alarm_topic: sns.ITopic | None, topic_key: kms.IKey | None
    ) -> None:
        """The benchmark (when enabled), the loop's state machine (``Resource``) and its log group and policies."""
        self.benchmark: Any = None  # EagleBenchmark when settings.benchmark.enabled
        if self.settings.benchmark.enabled:  # opt-in: benchmark jobs send real traffic to the endpoint
            from .benchmark import EagleBenchmark

            self.benchmark = EagleBenchmark(
                self, "Benchmark", optimization=self, serving_model_prefix=serving_model_prefix(self.component)
            )
        self.run_timeout = run_timeout(self.settings.max_runtime_hours)
        chain = definition(self, dataset_prefix_uri=dataset_prefix_uri)
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
        grant_topic_key(self, alarm_topic, topic_key)

    def _triggers(self, built: bool) -> None:
        """The schedule, and the new-records check when the loop builds its dataset and one is asked for."""
        self.schedule = None
        if self.settings.schedule is not None:
            add_schedule(self, self.settings.schedule)
        self.check_function = None
        self.records_check = None
        dataset = self.settings.dataset
        if built and dataset.records_check is not None:
            add_records_check(self, dataset.records_check, dataset.min_new_records)

    def _serving(self, pretrained: Any) -> None:
        """Serve the promoted head: through the component's pre-trained head's serving, else a new one."""
        settings = self.settings
        if pretrained is not None:  # the model serves a pre-trained head: a promoted head replaces it
            pretrained.add_promotion(
                promotion_parameter_name=self.promotion_parameter_name,
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
                component=self.component,
                promotion_parameter_name=self.promotion_parameter_name,
                draft_bucket=self.artifacts_bucket,
                draft_prefix=JOBS,
                draft_key=self.key,
                num_speculative_tokens=settings.num_speculative_tokens,
            )
        self.served_model_name = self.speculative_decoding.served_model_name

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
