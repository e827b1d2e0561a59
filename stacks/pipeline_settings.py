"""The delivery pipeline's settings (``config/pipeline.yaml``): the source, the waves and their stages, and each
stage's app config as the stage deploys it. Settings only: the pipeline's constructs are in ``stacks.pipeline``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import Field
from sagemaker_llm_cdk import (
    AppConfig,
    ConfigurationError,
    Problem,
    Settings,
    load_config,
    load_layers,
    validated,
)

ACCOUNT = r"^\d{12}$"
REGION = r"^[a-z]{2}(-[a-z]+)+-\d$"
CONNECTION_ARN = re.compile(
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z]{2}(-[a-z]+)+-\d:\d{12}:connection/[0-9a-f-]{36}$"
)
CONTEXT_KEY = "pipeline"
"""``cdk synth -c pipeline=PATH`` attaches the pipeline described by the YAML file at PATH."""
CONNECTION_CONTEXT_KEY = "connection_arn"
"""``-c connection_arn=ARN`` overrides ``source.connection_arn`` of the pipeline config."""


class SourceSettings(Settings):
    """Where the pipeline takes the code from: a repository reached through a CodeConnections connection."""

    repository: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$",
            description=("owner/name of the repository (GitHub, GitLab or Bitbucket, as the connection allows)."),
        ),
    ]
    branch: Annotated[str, Field(min_length=1, description="Branch to deploy. Default: main.")] = "main"
    connection_arn: Annotated[
        str | None,
        Field(
            description=(
                "ARN of the CodeConnections (CodeStar) connection to the repository host, in the tools account. "
                "May come from `-c connection_arn=ARN` instead."
            )
        ),
    ] = None


class StageSettings(Settings):
    """One deployment of the app: a config file in one account and region."""

    name: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$",
            description=("Stage name; CloudFormation stack names become <name>-<stack_name>."),
        ),
    ]
    config: Annotated[
        str, Field(min_length=1, description="The app config for this stage (relative to the repository root).")
    ]
    account: Annotated[str, Field(pattern=ACCOUNT, description="12-digit AWS account id.")]
    region: Annotated[str, Field(pattern=REGION, description="AWS region, e.g. us-east-1.")]


class WaveSettings(Settings):
    """Stages deployed together, in parallel; waves deploy one after another."""

    name: Annotated[
        str,
        Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$", description="Wave name, shown in the pipeline's console view."),
    ]
    approval: Annotated[bool, Field(description="Wait for a manual approval before this wave. Default: false.")] = False
    stages: Annotated[
        tuple[StageSettings, ...],
        Field(min_length=1, max_length=20, description="The stages this wave deploys, in parallel."),
    ]


class PipelineSettings(Settings):
    """The delivery pipeline: where it runs, its source, its checks and its waves."""

    stack_name: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
            description="The pipeline's own CloudFormation stack, in the tools account. Default: SageMakerLlmPipeline.",
        ),
    ] = "SageMakerLlmPipeline"
    pipeline_name: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9.@_-]{1,100}$",
            description="The CodePipeline pipeline's name. Default: SageMakerLlmDelivery.",
        ),
    ] = "SageMakerLlmDelivery"
    account: Annotated[str, Field(pattern=ACCOUNT, description="The tools account the pipeline runs in.")]
    region: Annotated[str, Field(pattern=REGION, description="The pipeline's region.")]
    source: Annotated[
        SourceSettings, Field(description="The repository and branch the pipeline builds, through a connection.")
    ]
    check_commands: Annotated[
        tuple[str, ...],
        Field(
            min_length=1, description=("The pull-request synth check, run first on every change. Default: make check.")
        ),
    ] = ("make check",)
    synth_commands: Annotated[
        tuple[str, ...],
        Field(min_length=1, description=("Synthesize the app with this pipeline attached into cdk.out.")),
    ] = ("make synth PIPELINE=config/pipeline.yaml",)
    waves: Annotated[
        tuple[WaveSettings, ...],
        Field(min_length=1, max_length=10, description="The waves of stages, deployed one after another."),
    ]

    def _rules(self) -> list[Problem]:
        problems = []
        seen: dict[str, str] = {}
        for w, wave in enumerate(self.waves):
            for s, stage in enumerate(wave.stages):
                where = f"waves[{w}].stages[{s}]"
                if stage.name in seen:
                    problems.append(
                        Problem(
                            f"{where}.name",
                            stage.name,
                            f"a name not used by {seen[stage.name]}",
                            "rename one of the two stages",
                        )
                    )
                seen.setdefault(stage.name, where)
        names = [wave.name for wave in self.waves]
        for w, name in enumerate(names):
            if name in names[:w]:
                problems.append(Problem(f"waves[{w}].name", name, "a name no other wave uses", "rename the wave"))
        if self.source.connection_arn is not None and not CONNECTION_ARN.match(self.source.connection_arn):
            problems.append(
                Problem(
                    "source.connection_arn",
                    self.source.connection_arn,
                    "arn:aws:codeconnections:<region>:<account>:connection/<id>",
                    "copy the ARN from Developer Tools > Settings > Connections",
                )
            )
        return problems


def load_pipeline_settings(path: str | Path, *, connection_arn: str | None = None) -> PipelineSettings:
    """Read and validate the pipeline config; ``connection_arn`` (from context) overrides the file's."""
    source = str(path)
    data = load_layers(path).data
    if not isinstance(data, dict):
        raise ConfigurationError([Problem("", data, "a mapping", "start from config/pipeline.yaml")], source=source)
    if connection_arn:
        data = {**data, "source": {**(data.get("source") or {}), "connection_arn": connection_arn}}
    settings = validated(PipelineSettings, data, where=source)
    if settings.source.connection_arn is None:
        raise ConfigurationError(
            [
                Problem(
                    "source.connection_arn",
                    None,
                    "the ARN of a CodeConnections connection",
                    f"set it in {source} or pass -c {CONNECTION_CONTEXT_KEY}=ARN",
                )
            ],
            source=source,
        )
    return settings


def load_stage_config(stage: StageSettings) -> AppConfig:
    """The stage's app config (with what it extends), as ``load_config`` checks it, the JumpStart lock for the
    stage's region, and checked against the stage's account and region, every problem in one round."""

    def matches_the_stage(config: AppConfig) -> list[Problem]:
        problems = []
        for field, want in (("account", stage.account), ("region", stage.region)):
            given = getattr(config.target, field)
            if given is not None and given != want:
                problems.append(
                    Problem(
                        f"target.{field}",
                        given,
                        f"{want}, the {field} of pipeline stage {stage.name}",
                        f"remove target.{field} from {stage.config} or deploy the stage to {given}",
                    )
                )
        return problems

    return load_config(stage.config, region=stage.region, checks=matches_the_stage)
