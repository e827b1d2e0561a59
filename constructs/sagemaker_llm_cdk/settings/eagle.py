"""Settings of the EAGLE optimization loop: its training data (``EagleDataset``) and the loop (``EagleSettings``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from ..core import service_model
from ..core.errors import Problem
from ..core.schedule_expression import schedule_problem
from ..core.settings import Settings, field_rule, instance_type_problem, s3_uri_problem

JOB_NAME_PREFIX = "eagle-"
"""Optimization job names start with this (``lambda/eagle_job`` names jobs ``eagle-<model>-<hash>``)."""

_TRAINING_PLAN = re.compile(
    r"(?:arn:aws[a-z-]*:sagemaker:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:training-plan/)?(?=.{1,64}$)[a-zA-Z0-9](?:-*[a-zA-Z0-9])*"
)
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

MAX_JOB_RUNTIME_HOURS = 28 * 24
"""The longest an optimization job may run, hours: 28 days (2,419,200 s). CreateOptimizationJob's
``StoppingCondition`` is SageMaker's ``StoppingCondition`` type, whose ``MaxRuntimeInSeconds`` AWS documents as
"The maximum value is 28 days" for every job but compilation jobs (SageMaker API Reference, StoppingCondition; the
same text in botocore's service model, which sets only the minimum, 1 s). AWS's own EAGLE sample runs its job
for 120 hours (``MaxRuntimeInSeconds: 432000``)."""


class EagleDataset(Settings):
    """Where the EAGLE head's training data comes from. Default: the endpoint's captured traffic."""

    source: Annotated[
        Literal["capture", "front_door", "s3", "builtin"],
        Field(
            description=(
                "capture (this endpoint's Data Capture), front_door (the turns the model's session front door logs "
                "through Kinesis Data Firehose: independent of Data Capture, every record names its component), s3 "
                "(your dataset), builtin (a named public dataset). Default: capture."
            )
        ),
    ] = "capture"
    s3_uri: Annotated[
        str | None,
        Field(
            description=(
                "source s3: prefix of ShareGPT / OpenAI chat / OpenAI completions JSONL. source builtin: where your "
                "copy of the named dataset is (SageMaker does not document a public location)."
            )
        ),
    ] = None
    builtin_name: Annotated[str | None, Field(description="source builtin: " + ", ".join(BUILTIN_DATASETS) + ".")] = (
        None
    )
    min_new_records: Annotated[
        int,
        Field(
            ge=1,
            le=100_000_000,
            description=(
                "source capture or front_door: start a run only when at least this many new records were converted. "
                "Default: 1000."
            ),
        ),
    ] = 1000
    records_check: Annotated[
        str | None,
        Field(
            description=(
                "source capture or front_door: EventBridge Scheduler expression of a cheap check that counts the "
                "records that arrived after the watermark (lines; nothing converted, it stops reading at "
                "min_new_records) and starts a run once min_new_records arrived and no run is in progress, e.g. "
                "'rate(1 hour)'. Default: off (runs start on the schedule or by hand)."
            )
        ),
    ] = None
    reasoning: Annotated[
        Literal["auto", "keep", "drop"],
        Field(
            description=(
                "source capture: what a captured reply's reasoning (reasoning_content, which the model's reasoning "
                "parser moved out of its content) becomes in the training set. keep: written back at the start of "
                "the content inside the model's think tags, where the model generated it (most of a reasoning "
                "model's output tokens, which the draft head must predict); needs a reasoning parser whose tags "
                "are known (deepseek_r1, qwen3, glm45). drop: left out, counted per component. auto: keep when "
                "the model runs such a parser, else drop. Default: auto."
            )
        ),
    ] = "auto"
    retention_days: Annotated[
        int,
        Field(
            ge=1,
            le=3650,
            description=(
                "source capture or front_door: days the training sets built from captured traffic or logged turns "
                "(datasets/, map-results/ of the artifacts bucket) are kept; then 7 more days as noncurrent versions. "
                "Draft heads and reports are kept. Default: 90."
            ),
        ),
    ] = 90

    def _rules(self) -> list[Problem]:
        problems = []
        if self.source in ("s3", "builtin"):
            if self.s3_uri is None:
                problems.append(
                    Problem(
                        "s3_uri",
                        None,
                        f"an s3:// prefix with source {self.source}",
                        "set s3_uri to the dataset's location",
                    )
                )
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(Problem("s3_uri", self.s3_uri, "only with source s3 or builtin", "remove s3_uri"))
        if self.source == "builtin":
            if self.builtin_name not in BUILTIN_DATASETS:
                problems.append(
                    Problem(
                        "builtin_name",
                        self.builtin_name,
                        "one of " + ", ".join(BUILTIN_DATASETS),
                        "pick a listed dataset or use source s3",
                    )
                )
        elif self.builtin_name is not None:
            problems.append(
                Problem("builtin_name", self.builtin_name, "only with source builtin", "remove builtin_name")
            )
        if self.reasoning != "auto" and self.source != "capture":
            problems.append(
                Problem(
                    "reasoning",
                    self.reasoning,
                    "only with source capture (the front door's turn log leaves the reasoning out; a dataset of "
                    "your own is written as you wrote it)",
                    "remove reasoning",
                )
            )
        if self.records_check is not None:
            if self.source not in ("capture", "front_door"):
                problems.append(
                    Problem(
                        "records_check",
                        self.records_check,
                        "only with source capture or front_door (it counts their records)",
                        "remove records_check, or use source capture",
                    )
                )
            else:  # the same EventBridge Scheduler grammar as eagle.schedule
                problem = schedule_problem("records_check", self.records_check)
                if problem:
                    problems.append(problem)
        return problems


_AIPERF_PARAMETER = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_BENCHMARK_PARAMETERS = 32


class EagleBenchmarkSettings(Settings):
    """AI benchmark jobs on the endpoint itself, before and after a promoted head is served.

    Off by default: a benchmark job sends real requests to the endpoint for as long as its workload runs: they
    compete with your users' requests, can scale the endpoint out (more instances billed), and the job itself
    may be billed (its price is not in this library's price list)."""

    enabled: Annotated[
        bool,
        Field(
            description=(
                "Measure the endpoint with a SageMaker AI benchmark job (NVIDIA AIPerf) before and after each "
                "promotion. Each job sends real traffic to the endpoint: it competes with your users' requests, can "
                "scale the endpoint out (more instances billed), and the job may be billed itself. "
                "Default: false."
            )
        ),
    ] = False
    workload: Annotated[
        Literal["inline", "s3", "front_door"],
        Field(
            description=(
                "What the benchmark sends: inline (AIPerf token distributions from parameters), s3 (your requests "
                "under s3_uri, OpenAI chat-completions JSONL) or front_door (the turns the model's session front door "
                "logs; needs dataset.source front_door). Default: inline."
            )
        ),
    ] = "inline"
    s3_uri: Annotated[
        str | None,
        Field(
            description=("workload s3: prefix of your representative requests (the workload config's dataset channel).")
        ),
    ] = None
    parameters: Annotated[
        dict[str, int | float | str],
        Field(
            description=(
                "AIPerf parameters of the workload spec (lower-case names, e.g. prompt_input_tokens_mean, "
                "output_tokens_mean, concurrency, request_count), at most 32. Default: 550 input and 150 output tokens "
                "on average."
            )
        ),
    ] = {"prompt_input_tokens_mean": 550, "output_tokens_mean": 150}
    max_hours: Annotated[
        int,
        Field(
            ge=1,
            le=48,
            description=(
                "Longest a benchmark job may run; then it is stopped (StopAIBenchmarkJob) and the measurement fails. "
                "Default: 4."
            ),
        ),
    ] = 4
    deploy_wait_hours: Annotated[
        int,
        Field(
            ge=1,
            le=2160,
            description=(
                "How long after a promotion the loop checks (hourly) that the endpoint serves the new head before it "
                "measures it; after that it notifies and stops (start the after measurement by hand). Default: 168."
            ),
        ),
    ] = 168
    slowdown_tolerance: Annotated[
        float,
        Field(
            ge=0.0,
            le=0.5,
            description=(
                "Alarm when the output-token throughput with the head is below the throughput before times "
                "(1 - slowdown_tolerance). Default: 0.05."
            ),
        ),
    ] = 0.05

    def _rules(self) -> list[Problem]:
        problems = []
        if self.workload == "s3":
            if self.s3_uri is None:
                problems.append(
                    Problem(
                        "s3_uri",
                        None,
                        "an s3:// prefix with workload s3",
                        "set s3_uri to the prefix of your representative requests",
                    )
                )
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(
                Problem("s3_uri", self.s3_uri, "only with workload s3", "remove s3_uri or set workload: s3")
            )
        if len(self.parameters) > MAX_BENCHMARK_PARAMETERS:
            problems.append(
                Problem(
                    "parameters",
                    len(self.parameters),
                    f"at most {MAX_BENCHMARK_PARAMETERS} parameters",
                    "keep the AIPerf parameters your workload needs",
                )
            )
        for name, value in self.parameters.items():
            if not _AIPERF_PARAMETER.match(name) or name == "benchmark":
                problems.append(
                    Problem(
                        f"parameters.{name}",
                        name,
                        "a lower-case AIPerf parameter name "
                        "([a-z][a-z0-9_]*, up to 64 characters; 'benchmark' is set by the library)",
                        "use AIPerf's parameter names, e.g. output_tokens_mean",
                    )
                )
            elif isinstance(value, bool) or (isinstance(value, (int, float)) and value < 0):
                problems.append(
                    Problem(f"parameters.{name}", value, "a number >= 0 or a string", "give the AIPerf value, e.g. 150")
                )
            elif isinstance(value, str) and not 1 <= len(value) <= 256:
                problems.append(
                    Problem(
                        f"parameters.{name}", value, "a string of 1-256 characters", "give a value of 1-256 characters"
                    )
                )
        return problems


class EagleSettings(Settings):
    """EAGLE speculative decoding: train a draft head on real traffic and serve it when it pays off."""

    schedule: Annotated[
        str | None,
        field_rule(lambda v: schedule_problem("", v)),
        Field(
            description=(
                "EventBridge Scheduler expression (UTC): rate(value unit) with minute/hour/day for 1 and "
                "minutes/hours/days above; cron(minutes hours day-of-month month day-of-week year), six fields, '?' in "
                "exactly one of the two day fields; or at(yyyy-mm-ddThh:mm:ss) for one run. E.g. 'rate(7 days)' or "
                "'cron(0 3 ? * SUN *)'. null: no schedule (start runs by hand). Default: weekly."
            )
        ),
    ] = "rate(7 days)"
    dataset: Annotated[EagleDataset, Field(description="Training data. Default: captured traffic.")] = EagleDataset()
    job_instance_type: Annotated[
        str | None,
        Field(
            description=(
                "Instance type the optimization job runs and benchmarks on (DeploymentInstanceType). Default: the "
                "endpoint's."
            )
        ),
    ] = None
    max_instance_count: Annotated[
        int, Field(ge=1, le=64, description=("Instances for the job (MaxInstanceCount). Default: 1."))
    ] = 1
    training_plan: Annotated[
        str | None,
        Field(
            description=(
                "A training plan meant for jobs (its target is training-job, not endpoint), by ARN or name, for the "
                "job's TrainingPlanArns; its instance type must be job_instance_type. A plan bought for endpoints "
                "cannot be given to an optimization job. Default: on-demand capacity."
            )
        ),
    ] = None
    max_runtime_hours: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_JOB_RUNTIME_HOURS,
            description=(
                "Job time limit, hours: the job's StoppingCondition.MaxRuntimeInSeconds (hours x 3600). At most "
                "672 (28 days), the maximum AWS documents for StoppingCondition.MaxRuntimeInSeconds, the type "
                "CreateOptimizationJob takes (SageMaker API Reference, StoppingCondition); AWS's EAGLE sample runs "
                "120. Default: 24."
            ),
        ),
    ] = 24
    speedup_threshold: Annotated[
        float,
        Field(
            ge=1.0,
            le=20.0,
            description=("Promote a trained head only when throughput improves at least this much. Default: 1.5."),
        ),
    ] = 1.5
    num_speculative_tokens: Annotated[
        int, Field(ge=1, le=16, description="Draft tokens per step when served. Default: 5.")
    ] = 5
    pretrained_head_speedup: Annotated[
        float | None,
        Field(
            ge=1.0,
            le=20.0,
            description=(
                "A model serving JumpStart's pre-trained EAGLE head: its speedup over no speculative decoding as you "
                "measured it. While that head is served, a trained head is promoted only when its speedup beats this "
                "and the pre-trained head's own rows in the job's benchmark results (when the job reports them). "
                "Default: unknown: only the job's figures count, and without them no trained head replaces the "
                "pre-trained one."
            ),
        ),
    ] = None
    use_capacity_plan: Annotated[
        bool,
        Field(
            description=(
                "Refused when true: the endpoint's capacity plan targets endpoints, and SageMaker accepts only a plan "
                "for jobs in TrainingPlanArns. Use training_plan. Default: false."
            )
        ),
    ] = False
    benchmark: Annotated[
        EagleBenchmarkSettings,
        Field(
            description=(
                "AI benchmark jobs on the endpoint before and after each promotion (opt-in: they send real traffic). "
                "Default: off."
            )
        ),
    ] = EagleBenchmarkSettings()

    def _rules(self) -> list[Problem]:
        problems = []
        if self.job_instance_type is not None:
            problem = instance_type_problem(
                "job_instance_type",
                self.job_instance_type,
                service_model.optimization_instance_types(),
                "optimization jobs",
            )
            if problem:
                problems.append(problem)
        if self.use_capacity_plan:
            problems.append(
                Problem(
                    "use_capacity_plan",
                    True,
                    "false: a capacity plan bought for endpoints (target endpoint) cannot be given to an optimization "
                    "job; TrainingPlanArns takes only a plan for jobs",
                    "remove use_capacity_plan; to run the job on reserved capacity, buy a training plan for training "
                    "jobs of job_instance_type and set training_plan to its ARN or name",
                )
            )
        if self.training_plan is not None and not _TRAINING_PLAN.fullmatch(self.training_plan):
            problems.append(
                Problem(
                    "training_plan",
                    self.training_plan,
                    "a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>) or "
                    "a name of 1-64 letters, digits and hyphens",
                    "copy TrainingPlanArn from `aws sagemaker describe-training-plan`",
                )
            )
        if self.benchmark.workload == "front_door" and self.dataset.source != "front_door":
            problems.append(
                Problem(
                    "benchmark.workload",
                    "front_door",
                    "front_door only with dataset.source front_door "
                    "(the workload replays the turns the front door logs)",
                    "set dataset.source: front_door, or use workload inline or s3",
                )
            )
        return problems
