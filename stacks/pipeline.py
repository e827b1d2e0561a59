"""Optional delivery pipeline (CDK Pipelines on CodePipeline): the app to several accounts and regions, in waves.

Attached to the app only when asked (``cdk synth -c pipeline=config/pipeline.yaml``). The pipeline
stack runs in a tools account and, on every push to the source branch:

1. **SynthCheck** runs the pull-request synth check (``make check``: tests, synth, cdk-nag,
   cfn-lint, checkov); nothing else starts unless it passes;
2. **Synth** synthesizes this app with the pipeline attached (``make synth PIPELINE=...``), then the
   pipeline updates itself and publishes the Lambda assets;
3. the **waves** of ``config/pipeline.yaml`` deploy in order, the stages of one wave in parallel, each
   stage being ``LlmPlatformStack`` built from that stage's config in its account and region; a wave
   with ``approval: true`` waits for a manual approval first (production).

The stage configs may ``extends:`` a shared base (``sagemaker_llm_cdk.config.layers``). The whole
pipeline synthesizes offline: account ids are plain values in the config (placeholders in the
sample), the source is a CodeConnections (CodeStar) connection given by ARN, and nothing is looked up.
Before the first deploy, bootstrap each target account trusting the tools account
(``cdk bootstrap aws://ACCOUNT/REGION --trust TOOLS_ACCOUNT --cloudformation-execution-policies ...``),
then ``cdk deploy -c pipeline=config/pipeline.yaml SageMakerLlmPipeline`` once; it updates itself after.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import (
    App,
    DefaultStackSynthesizer,
    Environment,
    Lazy,
    Stack,
    Stage,
    pipelines,
)
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_kms as kms
from sagemaker_llm_cdk import (
    AppConfig,
    ConfigurationError,
    Problem,
    RouterSpec,
    acknowledge,
    acknowledge_resource,
    checkov_skip,
    locate_problems,
)

from constructs import Construct, IConstruct

from .checks import attach_stage_checks
from .llm_platform import LlmPlatformStack
from .pipeline_policies import NamedResources
from .pipeline_settings import (
    CONNECTION_CONTEXT_KEY,
    CONTEXT_KEY,
    PipelineSettings,
    StageSettings,
    WaveSettings,
    load_pipeline_settings,
    load_stage_config,
)
from .router_homes import Deployment, RouterHome, home_of, router_homes
from .router_stage import STAGE_ID, RouterStack


class LlmPlatformStage(Stage):
    """One deployment of the app in a pipeline wave: ``LlmPlatformStack`` from one config, in one account and region."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        config_dir: Path,
        env: Environment,
        router_homes: Sequence[RouterHome] = (),
    ) -> None:
        super().__init__(scope, id, env=env)
        self.nag_warning_packs: tuple[str, ...] = tuple(config.checks.nag_warning_packs)
        """The stage config's extra cdk-nag packs; ``stacks.checks.attach_checks`` reports them as warnings."""
        # Routers of another account need this stage's endpoint policies, attached before the Routers wave runs.
        self.platform = LlmPlatformStack(
            self, config.stack_name, config=config, config_dir=config_dir, router_homes=router_homes
        )
        # Here, not only in attach_checks: build_pipeline() synthesizes the stage, and Aspects added later never run.
        attach_stage_checks(self, extra_packs=self.nag_warning_packs)


class PipelineStack(Stack):
    """The pipeline itself, in the tools account. ``self.pipeline`` is the ``pipelines.CodePipeline``."""

    def __init__(self, scope: Construct, id: str, *, settings: PipelineSettings, **kwargs: Any) -> None:
        kwargs.setdefault("env", Environment(account=settings.account, region=settings.region))
        super().__init__(scope, id, description="Delivery pipeline of the LLM platform (sagemaker-llm-cdk)", **kwargs)
        self.settings = settings
        assert settings.source.connection_arn is not None  # load_pipeline_settings insists
        source = pipelines.CodePipelineSource.connection(
            settings.source.repository,
            settings.source.branch,
            connection_arn=settings.source.connection_arn,
            trigger_on_push=True,
        )
        # Ubuntu with Python 3.11+ and npm: `make` installs the rest (pinned Python packages, Node 22, CDK CLI).
        # The check and the synth run the app and the test suite: 4 vCPUs, 7 GB.
        image = codebuild.BuildEnvironment(build_image=codebuild.LinuxBuildImage.STANDARD_7_0)
        build_environment = codebuild.BuildEnvironment(
            build_image=codebuild.LinuxBuildImage.STANDARD_7_0, compute_type=codebuild.ComputeType.MEDIUM
        )
        self.check = pipelines.CodeBuildStep(
            "SynthCheck",
            input=source,
            commands=list(settings.check_commands),
            primary_output_directory="cdk.out",
            build_environment=build_environment,
        )
        synth = pipelines.ShellStep(
            "Synth",
            input=source,
            # The check's output is not used: taking it as an input makes Synth start only after the check passed.
            additional_inputs={"../synth-check": self.check},
            commands=list(settings.synth_commands),
            primary_output_directory="cdk.out",
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            pipeline_name=settings.pipeline_name,
            synth=synth,
            cross_account_keys=True,
            enable_key_rotation=True,
            code_build_defaults=pipelines.CodeBuildOptions(build_environment=image),
            synth_code_build_defaults=pipelines.CodeBuildOptions(build_environment=build_environment),
        )
        self.stages: dict[str, LlmPlatformStage] = {}
        problems: list[Problem] = []
        homes = _router_homes(settings)
        for w, wave_settings in enumerate(settings.waves):
            pre = (
                [
                    pipelines.ManualApprovalStep(
                        f"Approve{wave_settings.name}",
                        comment=(
                            "Deploy to "
                            f"{', '.join(f'{s.name} ({s.account}/{s.region})' for s in wave_settings.stages)}?"
                        ),
                    )
                ]
                if wave_settings.approval
                else []
            )
            wave = self.pipeline.add_wave(wave_settings.name, pre=pre)
            for s, stage_settings in enumerate(wave_settings.stages):
                where = f"waves[{w}].stages[{s}]"
                try:
                    config = load_stage_config(stage_settings)
                except ConfigurationError as error:
                    problems.extend(_stage_config_problem(p, where, error.source) for p in error.problems)
                    continue
                try:
                    stage = LlmPlatformStage(
                        self,
                        stage_settings.name,
                        config=config,
                        config_dir=Path(stage_settings.config).parent,
                        env=Environment(account=stage_settings.account, region=stage_settings.region),
                        router_homes=homes.get(stage_settings.config, ()),
                    )
                except ConfigurationError as error:  # a construct's check the config rules did not foresee
                    problems.extend(
                        p.under(f"{where} ({stage_settings.config}, found while building {error.source})")
                        for p in locate_problems(stage_settings.config, error.problems)
                    )
                    continue
                self.stages[stage_settings.name] = stage
                wave.add_stage(stage)
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        # Inference routers (routers: in a stage config): a final wave after every regional stage
        # (stacks/router_stage.py).

        self.router_stage = add_router_stage(self)
        self.pipeline.build_pipeline()
        _role_arns_as_sub(self, self.pipeline.pipeline.node.default_child)
        _version_artifact_buckets(self.pipeline.pipeline)
        _name_pipeline_resources(self, self.pipeline)
        _acknowledge_pipeline(self.pipeline)


def _router_homes(settings: PipelineSettings) -> dict[str, list[RouterHome]]:
    """``{stage config path: its routers with their homes}``, from the settings alone: each stage is built after
    this, and a stage in another account than a router's home attaches that router's endpoint policies. A config
    that does not load is left out here; the stage loop reports it."""

    places: dict[str, list[StageSettings]] = {}
    for wave_settings in settings.waves:
        for stage_settings in wave_settings.stages:
            places.setdefault(stage_settings.config, []).append(stage_settings)
    found: dict[str, list[RouterHome]] = {}
    for path, stages in places.items():
        try:
            config = load_stage_config(stages[0])
        except ConfigurationError:
            continue
        if config.routers:
            found[path] = router_homes(config, stages)
    return found


def _stage_config_problem(problem: Problem, where: str, source: str) -> Problem:
    """A stage config's problem in the pipeline's terms: one about the file itself (missing, unreadable, not YAML:
    it has no path in the config) is the stage's ``config`` field, with a fix for the pipeline file (``-c config``
    does not choose a stage's config); any other is the config's field under the stage."""
    if problem.path:
        return problem.under(f"{where} ({source})")
    fix = problem.fix.replace("; pass another with `cdk synth -c config=PATH`", "")
    return Problem(
        f"{where}.config",
        problem.value,
        problem.allowed,
        f"{fix}; or correct {where}.config in the pipeline file (paths start at the repository root)",
        problem.where,
    )


def _role_arns_as_sub(stack: Stack, cfn_pipeline: Any) -> None:
    """Write each action's ``Configuration.RoleArn`` (the target account's CloudFormation execution role) as
    ``Fn::Sub``: CDK writes ``Fn::Join`` with an empty delimiter, which cfn-lint (E3703) refuses there."""
    for s, stage in enumerate(stack.resolve(cfn_pipeline.stages)):
        for a, action in enumerate(stage.get("actions", [])):
            arn = (action.get("configuration") or {}).get("RoleArn")
            if isinstance(arn, dict) and list(arn) == ["Fn::Join"] and arn["Fn::Join"][0] == "":
                text = "".join(_sub_part(part) for part in arn["Fn::Join"][1])
                cfn_pipeline.add_property_override(f"Stages.{s}.Actions.{a}.Configuration.RoleArn", {"Fn::Sub": text})


ARTIFACT_NONCURRENT_DAYS = 30
"""Replaced artifacts (a rerun overwrites its outputs) are kept this long, for investigating a past run."""


def _version_artifact_buckets(inner: Any) -> None:
    """Versioning on the artifact bucket and each cross-region replication bucket (checkov CKV_AWS_21).

    CDK Pipelines creates them unversioned. A version keeps what a run wrote when a later one overwrites
    it; replaced versions expire after ``ARTIFACT_NONCURRENT_DAYS`` and unfinished uploads after 7 days,
    so versioning adds no lasting storage.
    """
    buckets = [inner.artifact_bucket] + [support.replication_bucket for support in inner.cross_region_support.values()]
    for bucket in buckets:
        cfn = bucket.node.default_child
        cfn.versioning_configuration = {"status": "Enabled"}
        cfn.lifecycle_configuration = {
            "rules": [
                {
                    "id": "ExpireReplacedArtifacts",
                    "status": "Enabled",
                    "noncurrentVersionExpiration": {"noncurrentDays": ARTIFACT_NONCURRENT_DAYS},
                    "abortIncompleteMultipartUpload": {"daysAfterInitiation": 7},
                }
            ]
        }


def _sub_part(part: Any) -> str:
    if isinstance(part, str):
        return part.replace("${", "${!")
    if isinstance(part, dict) and list(part) == ["Ref"]:
        return "${" + part["Ref"] + "}"
    if isinstance(part, dict) and list(part) == ["Fn::GetAtt"]:
        return "${" + ".".join(part["Fn::GetAtt"]) + "}"
    raise ValueError(f"cannot write {part!r} in Fn::Sub")


def attach_pipeline(app: App, path: str | Path) -> PipelineStack:
    """Add the pipeline described by the YAML file at ``path`` to ``app``; ``-c connection_arn=`` overrides the
    source."""
    settings = load_pipeline_settings(path, connection_arn=app.node.try_get_context(CONNECTION_CONTEXT_KEY))
    return PipelineStack(app, settings.stack_name, settings=settings)


def add_router_stage(pipeline: PipelineStack) -> Stage | None:
    """In the pipeline: a final wave with the routers of every stage config that declares some (None: no routers)."""
    groups: dict[str, tuple[AppConfig, list[Deployment]]] = {}
    for wave in pipeline.settings.waves:
        for stage_settings in wave.stages:
            built = pipeline.stages.get(stage_settings.name)
            if built is None:
                continue
            if stage_settings.config not in groups:
                groups[stage_settings.config] = (load_stage_config(stage_settings), [])
            groups[stage_settings.config][1].append(
                Deployment(built.platform, stage_settings.account, stage_settings.region)
            )
    homes: dict[tuple[str, str, str], list[tuple[int, RouterSpec]]] = {}
    for path, (config, deployments) in groups.items():
        for index, spec in enumerate(config.routers):
            account, region = home_of(spec, deployments)
            homes.setdefault((path, account, region), []).append((index, spec))
    if not homes:
        return None
    stage = Stage(pipeline, STAGE_ID)
    problems: list[Problem] = []
    for (path, account, region), routers in homes.items():
        config, deployments = groups[path]
        try:
            RouterStack(
                stage,
                f"{config.stack_name}Routers-{region}",
                config=config,
                routers=routers,
                deployments=deployments,
                env=Environment(account=account, region=region),
            )
        except ConfigurationError as error:
            problems.extend(p.under(f"{path} (found while building the routers)") for p in error.problems)
    if problems:
        raise ConfigurationError(problems, source=pipeline.node.path)
    attach_stage_checks(stage)
    pipeline.pipeline.add_wave(STAGE_ID).add_stage(stage)
    return stage


__all__ = [
    "CONTEXT_KEY",
    "LlmPlatformStage",
    "PipelineSettings",
    "PipelineStack",
    "StageSettings",
    "WaveSettings",
    "add_router_stage",
    "attach_pipeline",
    "load_pipeline_settings",
    "load_stage_config",
]


# The pipeline's own findings: what CDK Pipelines creates, acknowledged here, by the code that creates it.
_PIPELINE_ACTION_WILDCARDS = {
    "s3:GetObject*": "read the pipeline's artifacts",
    "s3:GetBucket*": "read the artifact bucket's location and versioning",
    "s3:List*": "list the artifact bucket",
    "s3:DeleteObject*": "replace artifacts of a rerun",
    "s3:Abort*": "abort multipart uploads of large artifacts",
    "kms:ReEncrypt*": "re-encrypt artifacts under the pipeline's key",
    "kms:GenerateDataKey*": "encrypt new artifacts under the pipeline's key",
}


PIPELINE_WILDCARDS = {
    "kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:ReEncrypt*, kms:GenerateDataKey* on "
    "arn:<partition>:kms:<region>:<tools account>:key/*": (
        "the pipeline role encrypts and decrypts artifacts with each cross-region replication key; the key lives in "
        "CDK's support stack and its id is generated at deploy time, so only the alias is known at synth: the "
        "statement is limited to keys carrying that alias (condition kms:ResourceAliases, "
        "https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-resource-aliases)"
    ),
    "cloudformation:DescribeStacks on arn:<partition>:cloudformation:<region>:<account>:stack/<name>/*": (
        "the self-mutation step reads the pipeline's own stacks (and CDKToolkit) in the tools account and each "
        "stage's stacks; a stack ARN ends in an id CloudFormation makes at creation "
        "(https://docs.aws.amazon.com/service-authorization/latest/reference/list_awscloudformation.html: stack)"
    ),
    "s3:ListBucket on arn:<partition>:s3:::cdk-*-assets-<account>-<region>": (
        "the self-mutation step finds the CDK bootstrap bucket of each environment, whose name carries the "
        "bootstrap qualifier (cdk-<qualifier>-assets-<account>-<region>, "
        "https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping-env.html); any qualifier, those accounts and regions"
    ),
}
"""What CDK Pipelines still allows on a wildcard in the pipeline stack after ``_name_pipeline_resources``, with AWS's
reason (nothing is left on '*'); every other wildcard of the pipeline stack is its artifact bucket's objects."""
_CROSS_REGION_KEY_ACTIONS = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*")


def _environments(pipeline_stack: PipelineStack) -> list[tuple[str, str]]:
    """(account, region) of the tools account's regions (the pipeline's and each replication region) and every stage."""
    settings = pipeline_stack.settings
    inner = pipeline_stack.pipeline.pipeline
    found = [(settings.account, settings.region)]
    found += [(settings.account, region) for region in inner.cross_region_support]
    found += [(stage.account, stage.region) for wave in settings.waves for stage in wave.stages]
    return list(dict.fromkeys(found))


def _name_pipeline_resources(stack: PipelineStack, pipeline: Any) -> None:
    """Name the resources of the statements CDK Pipelines writes on '*' (``PIPELINE_WILDCARDS`` lists what remains).

    * the pipeline role's KMS use of the cross-region replication keys: the keys of the tools account's replication
      regions that carry the support stacks' aliases;
    * the asset role's ``codebuild:StartBuild/StopBuild/BatchGetBuilds``: the asset-publishing projects;
    * the self-mutation role's ``cloudformation:DescribeStacks``: the stacks of the tools account and the stages;
      its ``s3:ListBucket``: the bootstrap buckets of those environments.
    """
    partition = stack.partition
    inner = pipeline.pipeline
    environments = _environments(stack)
    aliases = [
        alias.alias_name
        for support in inner.cross_region_support.values()
        for alias in support.stack.node.find_all()
        if isinstance(alias, kms.Alias)
    ]
    kms_keys = [f"arn:{partition}:kms:{region}:{stack.settings.account}:key/*" for region in inner.cross_region_support]
    named: dict[Any, dict[frozenset[str], dict[str, Any]]] = {}
    if kms_keys:
        named[inner.role] = {
            frozenset(_CROSS_REGION_KEY_ACTIONS): {
                "Resource": kms_keys,
                "Condition": {"ForAnyValue:StringEquals": {"kms:ResourceAliases": aliases}},
            }
        }
    projects = [c for c in pipeline.node.find_all() if isinstance(c, codebuild.Project) and "/Assets/" in c.node.path]
    file_role = _child(pipeline, "Assets", "FileRole")
    if file_role is not None and projects:
        named[file_role] = {
            frozenset({"codebuild:BatchGetBuilds", "codebuild:StartBuild", "codebuild:StopBuild"}): {
                "Resource": [p.project_arn for p in projects]
            }
        }
    stacks = [
        (stack.settings.account, stack.region, stack.stack_name),
        (stack.settings.account, stack.region, "CDKToolkit"),
    ]
    stacks += [
        (stack.settings.account, region, support.stack.stack_name)
        for region, support in inner.cross_region_support.items()
    ]
    stacks += [(stack.settings.account, region, "CDKToolkit") for region in inner.cross_region_support]
    stacks += [
        (s.account, s.region, s.stack_name)
        for stage in stack.stages.values()
        for s in stage.node.children
        if isinstance(s, Stack)
    ]
    self_mutation = _child(pipeline, "UpdatePipeline", "SelfMutation", "Role")
    qualifier = (
        stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or DefaultStackSynthesizer.DEFAULT_QUALIFIER
    )
    if self_mutation is not None:
        named[self_mutation] = {
            frozenset({"cloudformation:DescribeStacks"}): {
                "Resource": [
                    f"arn:{partition}:cloudformation:{region}:{account}:stack/{name}/*"
                    for account, region, name in stacks
                ]
            },
            frozenset({"s3:ListBucket"}): {
                "Resource": [
                    f"arn:{partition}:s3:::cdk-*-assets-{account}-{region}" for account, region in environments
                ]
            },
            # CDK assumes the bootstrap roles it finds by tag on any role of the account; they have fixed names.
            frozenset({"sts:AssumeRole"}): {
                "Resource": [
                    f"arn:{partition}:iam::{account}:role/cdk-{qualifier}-{kind}-role-{account}-{region}"
                    for account, region in environments
                    for kind in ("deploy", "file-publishing", "image-publishing")
                ]
            },
        }
    for role, rewrite in named.items():
        policy = role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            policy.node.default_child.policy_document = Lazy.uncached_any(NamedResources(policy, rewrite))
    stack.named_wildcards = {  # type: ignore[attr-defined]
        "kms": (inner.role, kms_keys, _CROSS_REGION_KEY_ACTIONS),
        "stacks": (
            self_mutation,
            named.get(self_mutation, {}).get(frozenset({"cloudformation:DescribeStacks"}), {}).get("Resource", []),
            ("cloudformation:DescribeStacks",),
        ),
        "buckets": (
            self_mutation,
            named.get(self_mutation, {}).get(frozenset({"s3:ListBucket"}), {}).get("Resource", []),
            ("s3:ListBucket",),
        ),
    }


def _child(scope: IConstruct, *names: str) -> Any:
    for name in names:
        scope = scope.node.try_find_child(name) if scope is not None else None  # type: ignore[assignment]
    return scope


def _acknowledge_pipeline(pipeline: Any) -> None:
    """The app's delivery pipeline: a ``pipelines.CodePipeline`` after ``build_pipeline()`` (``stacks/pipeline.py``).

    Every finding here is in what CDK Pipelines generates (its roles' grants on the artifact bucket and
    key, CodeBuild's own log groups and report groups, the self-mutation and asset roles); none is on
    the app's endpoints, which are acknowledged by the library's constructs as everywhere else.
    """

    stack = Stack.of(pipeline)
    inner = pipeline.pipeline
    s1 = (
        "A CodePipeline artifact bucket, created and used only by the pipeline: it holds the source zip and cloud "
        "assemblies of each run, encrypted with the pipeline's KMS key, TLS-only and not public. Access is "
        "through the pipeline's roles only and recorded by CloudTrail; server access logs would add no signal."
    )
    acknowledge(inner.artifact_bucket, "AwsSolutions-S1", s1)
    checkov_skip(inner.artifact_bucket, "CKV_AWS_18", s1)
    for support in inner.cross_region_support.values():
        replication = s1.replace(
            "A CodePipeline artifact bucket",
            "The cross-region replication bucket of the pipeline (one per target region)",
        )
        acknowledge(support.replication_bucket, "AwsSolutions-S1", replication)
        checkov_skip(support.replication_bucket, "CKV_AWS_18", replication)
        acknowledge_resource(
            pipeline,
            support.replication_bucket.arn_for_objects("*"),
            "The pipeline copies each run's artifacts into the replication bucket of a target region; artifacts are "
            "many objects with generated keys.",
        )
    for action, why in _PIPELINE_ACTION_WILDCARDS.items():
        acknowledge(
            pipeline,
            "AwsSolutions-IAM5",
            f"CDK Pipelines grants its roles '{action}' to {why}, on the pipeline's own artifact bucket and key only.",
            finding=f"Action::{action}",
        )
    acknowledge_resource(
        pipeline,
        inner.artifact_bucket.arn_for_objects("*"),
        "Pipeline steps read and write run artifacts (generated keys) in the pipeline's own artifact bucket.",
    )

    reasons = dict(zip(("kms", "stacks", "buckets"), PIPELINE_WILDCARDS.values(), strict=True))
    for what, (role, resources, actions) in getattr(stack, "named_wildcards", {}).items():
        for resource in resources if role is not None else []:
            acknowledge_resource(role, resource, f"CDK Pipelines: {reasons[what]}.", actions=list(actions))
    for project in (c for c in pipeline.node.find_all() if isinstance(c, codebuild.Project)):
        if project.role is None:
            continue
        acknowledge_resource(
            project.role,
            f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:/aws/codebuild/"
            f"{project.project_name}:*",
            "CodeBuild writes each build's logs to streams it names per build, in the project's own log group.",
        )
        acknowledge_resource(
            project.role,
            f"arn:{stack.partition}:codebuild:{stack.region}:{stack.account}:report-group/{project.project_name}-*",
            "CodeBuild test reports go to report groups named after the project.",
        )
    for resource in (
        f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:/aws/codebuild/*",
        f"arn:{stack.partition}:codebuild:{stack.region}:{stack.account}:report-group/*",
    ):
        acknowledge_resource(
            pipeline,
            resource,
            "The asset-publishing projects share one role; CDK Pipelines creates a project per "
            "asset, so the role names CodeBuild's log groups and report groups of this account and region.",
        )
