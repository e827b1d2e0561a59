"""Settings of the EAGLE optimization loop: its training data (``EagleDataset``) and the loop (``EagleSettings``)."""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from ..core import service_model
from ..core.errors import Problem
from ..core.schedule_expression import schedule_problem
from ..core.settings import Settings, field_rule, instance_type_problem, s3_uri_problem


_TRAINING_PLAN = re.compile(
    r"(?:arn:aws[a-z-]*:sagemaker:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:training-plan/)?(?=.{1,64}$)[a-zA-Z0-9](?:-*[a-zA-Z0-9])*")
EAGLE_ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "EAGLE3",
    "Qwen3ForCausalLM": "EAGLE3",
    "Qwen3MoeForCausalLM": "EAGLE3",
    "Qwen2ForCausalLM": "EAGLE3",
    "GptOssForCausalLM": "EAGLE3",
    "Qwen3NextForCausalLM": "EAGLE2",
}
"""Architectures SageMaker's EAGLE optimization supports, and the EAGLE version each uses."""

BUILTIN_DATASETS = ("gsm8k", "magicoder", "opencodeinstruct")


"""EventBridge Scheduler expressions the EAGLE triggers accept."""


class EagleDataset(Settings):
    """Where the EAGLE head's training data comes from. Default: the endpoint's captured traffic."""

    source: Annotated[Literal["capture", "front_door", "s3", "builtin"], Field(description=(
        "capture (this endpoint's Data Capture), front_door (the turns the model's session front door logs through "
        "Kinesis Data Firehose: independent of Data Capture, every record names its component), s3 (your dataset), "
        "builtin (a named public dataset). Default: capture."))] = "capture"
    s3_uri: Annotated[str | None, Field(description=(
        "source s3: prefix of ShareGPT / OpenAI chat / OpenAI completions JSONL. source builtin: where your copy "
        "of the named dataset is (SageMaker does not document a public location)."))] = None
    builtin_name: Annotated[str | None, Field(description="source builtin: " + ", ".join(BUILTIN_DATASETS) + ".")] = None
    min_new_records: Annotated[int, Field(ge=1, le=100_000_000, description=(
        "source capture or front_door: start a run only when at least this many new records were converted. "
        "Default: 1000."))] = 1000
    records_check: Annotated[str | None, Field(description=(
        "source capture or front_door: EventBridge Scheduler expression of a cheap check that counts the records that "
        "arrived after the watermark (lines; nothing converted, it stops reading at min_new_records) and starts a "
        "run once min_new_records arrived and no run is in progress, e.g. 'rate(1 hour)'. Default: off (runs "
        "start on the schedule or by hand)."))] = None
    retention_days: Annotated[int, Field(ge=1, le=3650, description=(
        "source capture: days the training sets built from captured traffic (datasets/, map-results/ of the "
        "artifacts bucket) are kept; then 7 more days as noncurrent versions. Draft heads and reports are kept. "
        "Default: 90."))] = 90

    def _rules(self) -> list[Problem]:
        problems = []
        if self.source in ("s3", "builtin"):
            if self.s3_uri is None:
                problems.append(Problem("s3_uri", None, f"an s3:// prefix with source {self.source}",
                                        "set s3_uri to the dataset's location"))
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(Problem("s3_uri", self.s3_uri, "only with source s3 or builtin", "remove s3_uri"))
        if self.source == "builtin":
            if self.builtin_name not in BUILTIN_DATASETS:
                problems.append(Problem("builtin_name", self.builtin_name, "one of " + ", ".join(BUILTIN_DATASETS),
                                        "pick a listed dataset or use source s3"))
        elif self.builtin_name is not None:
            problems.append(Problem("builtin_name", self.builtin_name, "only with source builtin", "remove builtin_name"))
        if self.records_check is not None:
            if self.source not in ("capture", "front_door"):
                problems.append(Problem("records_check", self.records_check, "only with source capture or front_door "
                                        "(it counts their records)", "remove records_check, or use source capture"))
            else:  # the same EventBridge Scheduler grammar as eagle.schedule
                problem = schedule_problem("records_check", self.records_check)
                if problem:
                    problems.append(problem)
        return problems


class EagleSettings(Settings):
    """EAGLE speculative decoding: train a draft head on real traffic and serve it when it pays off."""

    schedule: Annotated[str | None, field_rule(lambda v: schedule_problem("", v)), Field(description=(
        "EventBridge Scheduler expression (UTC): rate(value unit) with minute/hour/day for 1 and "
        "minutes/hours/days above; cron(minutes hours day-of-month month day-of-week year), six fields, '?' in "
        "exactly one of the two day fields; or at(yyyy-mm-ddThh:mm:ss) for one run. E.g. 'rate(7 days)' or "
        "'cron(0 3 ? * SUN *)'. null: no schedule (start runs by hand). Default: weekly."))] = "rate(7 days)"
    dataset: Annotated[EagleDataset, Field(description="Training data. Default: captured traffic.")] = EagleDataset()
    job_instance_type: Annotated[str | None, Field(description=(
        "Instance type the optimization job runs and benchmarks on (DeploymentInstanceType). Default: the "
        "endpoint's."))] = None
    max_instance_count: Annotated[int, Field(ge=1, le=64, description=(
        "Instances for the job (MaxInstanceCount). Default: 1."))] = 1
    training_plan: Annotated[str | None, Field(description=(
        "A training plan meant for jobs (its target is training-job, not endpoint), by ARN or name, for the job's "
        "TrainingPlanArns; its instance type must be job_instance_type. A plan bought for endpoints cannot be given "
        "to an optimization job. Default: on-demand capacity."))] = None
    max_runtime_hours: Annotated[int, Field(ge=1, le=72, description="Job time limit. Default: 24.")] = 24
    speedup_threshold: Annotated[float, Field(ge=1.0, le=20.0, description=(
        "Promote a trained head only when throughput improves at least this much. Default: 1.5.")) ] = 1.5
    num_speculative_tokens: Annotated[int, Field(ge=1, le=16, description="Draft tokens per step when served. Default: 5.")] = 5
    pretrained_head_speedup: Annotated[float | None, Field(ge=1.0, le=20.0, description=(
        "A model serving JumpStart's pre-trained EAGLE head: its speedup over no speculative decoding as you measured "
        "it. While that head is served, a trained head is promoted only when its speedup beats this and the "
        "pre-trained head's own rows in the job's benchmark results (when the job reports them). Default: unknown: "
        "only the job's figures count, and without them no trained head replaces the pre-trained one."))] = None
    use_capacity_plan: Annotated[bool, Field(description=(
        "Refused when true: the endpoint's capacity plan targets endpoints, and SageMaker accepts only a plan for "
        "jobs in TrainingPlanArns. Use training_plan. Default: false."))] = False

    def _rules(self) -> list[Problem]:
        problems = []
        if self.job_instance_type is not None:
            problem = instance_type_problem("job_instance_type", self.job_instance_type,
                                            service_model.optimization_instance_types(), "optimization jobs")
            if problem:
                problems.append(problem)
        if self.use_capacity_plan:
            problems.append(Problem(
                "use_capacity_plan", True,
                "false: a capacity plan bought for endpoints (target endpoint) cannot be given to an optimization job; "
                "TrainingPlanArns takes only a plan for jobs",
                "remove use_capacity_plan; to run the job on reserved capacity, buy a training plan for training jobs "
                "of job_instance_type and set training_plan to its ARN or name"))
        if self.training_plan is not None and not _TRAINING_PLAN.fullmatch(self.training_plan):
            problems.append(Problem("training_plan", self.training_plan,
                                    "a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>) or "
                                    "a name of 1-64 letters, digits and hyphens",
                                    "copy TrainingPlanArn from `aws sagemaker describe-training-plan`"))
        return problems


