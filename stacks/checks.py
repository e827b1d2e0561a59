"""Synth-time checks attached to the app: cdk-nag rule packs and the library's checkov acknowledgements."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import jsii
from aws_cdk import (
    App,
    Stage,
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Validations,
)
from cdk_nag import AwsSolutionsChecks, NagPack, NIST80053R5Checks, ServerlessChecks

from sagemaker_llm_cdk.acknowledgements import checkov_defaults
from sagemaker_llm_cdk.grants import guard_app

WARNING_PACKS: Mapping[str, Callable[..., NagPack]] = {
    "nist-800-53-r5": NIST80053R5Checks,
    "serverless": ServerlessChecks,
}
"""cdk-nag packs that may be added on top of AwsSolutions; they report warnings and never fail the synth."""


@jsii.implements(IPolicyValidationPlugin)
class WarningsOnly:
    """A cdk-nag pack whose findings are all reported as warnings; the synth never fails on them.

    cdk-nag 3 packs are CDK validation plugins, and CDK fails the synth when a plugin's report
    is not ``success`` (a NagPack reports success only when it found nothing, whatever the rule
    levels). This wrapper runs the pack and returns the same findings with severity
    ``warning`` and ``success: true``. The plugin name stays the pack's, so findings are
    acknowledged the usual way (``Validations.of(x).acknowledge`` with ``<pack>::<rule>``).
    """

    def __init__(self, pack: NagPack) -> None:
        self._pack = pack

    @property
    def name(self) -> str:
        return self._pack.name

    @property
    def version(self) -> str | None:
        return self._pack.version

    @property
    def rule_ids(self) -> list[str] | None:
        return self._pack.rule_ids

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        report = self._pack.validate(context)
        return PolicyValidationPluginReport(
            success=True,
            violations=[_as_warning(v) for v in report.violations],
            metadata=report.metadata,
            plugin_version=report.plugin_version,
        )


def _as_warning(violation: Any) -> PolicyViolation:
    return PolicyViolation(
        rule_name=violation.rule_name,
        description=violation.description,
        violating_resources=[
            PolicyViolatingResource(locations=list(r.locations), construct_path=r.construct_path,
                                    resource_logical_id=r.resource_logical_id, template_path=r.template_path)
            for r in violation.violating_resources
        ],
        fix=violation.fix,
        rule_metadata=violation.rule_metadata,
        severity="warning",
    )


def attach_checks(app: App, *, extra_packs: Sequence[str] = ()) -> None:
    """Run the AwsSolutions pack on every stack (findings fail the synth unless acknowledged),
    each pack in ``extra_packs`` as warnings only, the library's checkov acknowledgements and the
    wildcard guard (``sagemaker_llm_cdk.grants``), on the app and on every Stage in it.

    Aspects do not cross Stage boundaries, so the checkov acknowledgements and the guard are added to
    each Stage (a pipeline's deployment stages) as well as to the app. A Stage with a
    ``nag_warning_packs`` attribute (``stacks.pipeline.LlmPlatformStage``, from its config) also gets
    those packs as warnings; validation plugins of the app already run on every stage.

    :param extra_packs: names from ``WARNING_PACKS``: ``nist-800-53-r5``, ``serverless``.
    """
    stages = [c for c in app.node.find_all() if Stage.is_stage(c) and c is not app]
    requested = {"app": tuple(extra_packs)}
    requested.update({s.node.path: tuple(getattr(s, "nag_warning_packs", ())) for s in stages})
    unknown = sorted({p for packs in requested.values() for p in packs if p not in WARNING_PACKS})
    if unknown:
        raise ValueError(f"unknown cdk-nag pack(s) {', '.join(unknown)}; allowed: {', '.join(WARNING_PACKS)}")
    plugins: list[IPolicyValidationPlugin] = [AwsSolutionsChecks(app, verbose=True)]
    plugins += [WarningsOnly(WARNING_PACKS[name](app, verbose=True)) for name in dict.fromkeys(extra_packs)]
    Validations.of(app).add_plugins(*plugins)
    checkov_defaults(app)
    guard_app(app)
    for stage in stages:
        attach_stage_checks(stage, extra_packs=[p for p in getattr(stage, "nag_warning_packs", ()) if p not in extra_packs])


def attach_stage_checks(stage: Stage, *, extra_packs: Sequence[str] = ()) -> None:
    """The checks of one Stage: its ``extra_packs`` as warnings, checkov acknowledgements, wildcard guard.

    Call it in the Stage's constructor when something synthesizes the stage early: CDK Pipelines'
    ``build_pipeline()`` synthesizes each stage's assembly, after which Aspects added to it no longer run
    (``stacks.pipeline.LlmPlatformStage`` does). Calling it twice on a stage adds nothing.
    """
    if getattr(stage, "_checks_attached", False):
        return
    unknown = [p for p in extra_packs if p not in WARNING_PACKS]
    if unknown:
        raise ValueError(f"unknown cdk-nag pack(s) {', '.join(unknown)}; allowed: {', '.join(WARNING_PACKS)}")
    stage._checks_attached = True  # type: ignore[attr-defined]
    packs = list(dict.fromkeys(extra_packs))
    if packs:
        Validations.of(stage).add_plugins(*[WarningsOnly(WARNING_PACKS[name](stage, verbose=True)) for name in packs])
    checkov_defaults(stage)
    guard_app(stage)
