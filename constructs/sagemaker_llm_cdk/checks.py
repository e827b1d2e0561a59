"""The library's checks for your app, in one call: ``sagemaker_llm_cdk.apply_checks(app)``.

.. code-block:: python

    from sagemaker_llm_cdk import apply_checks

    app = App()
    ...  # your stacks, with the library's constructs
    apply_checks(app)                                   # AwsSolutions (errors), the policy guard, checkov reasons
    apply_checks(app, warning_packs=["serverless"])     # and a cdk-nag pack whose findings only warn
    app.synth()

What it attaches, to the app and to every Stage in it (a pipeline's stages included):

* the cdk-nag packs in ``packs`` (default ``aws-solutions``): their findings fail the synth unless acknowledged
  with a reason; the library acknowledges its own, finding by finding, where it makes the grant;
* the packs in ``warning_packs``: reported as warnings, never failing the synth (``WarningsOnly``);
* the policy guard (``core/policy_guard.py``): reads every template as synthesized and fails on an ``Allow``
  whose wildcard no acknowledgement names with that action, ``NotAction``/``NotResource``, a managed policy it
  cannot read, a resource policy open to every principal. Its findings are fatal: no acknowledgement hides them;
* the checkov reasons of the library's own resources (``core/checkov.py`` ``CHECKOV_REASONS``), written as
  ``Metadata.checkov.skip`` on exactly the resources the library made. Your resources get none, even when you
  place them inside a library construct: checkov judges them as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Stage,
    Validations,
)
from cdk_nag import (
    AwsSolutionsChecks,
    HIPAASecurityChecks,
    NagPack,
    NIST80053R5Checks,
    PCIDSS321Checks,
    ServerlessChecks,
)

from .core.checkov import checkov_defaults
from .core.policy_guard import guard

PACKS: Mapping[str, Callable[..., NagPack]] = {
    "aws-solutions": AwsSolutionsChecks,
    "nist-800-53-r5": NIST80053R5Checks,
    "serverless": ServerlessChecks,
    "hipaa-security": HIPAASecurityChecks,
    "pci-dss-3.2.1": PCIDSS321Checks,
}
"""cdk-nag packs by name. The library acknowledges its findings of ``aws-solutions``; the others, as errors, would
also fail on the library's resources, so add them as ``warning_packs``."""
FAIL_SYNTH_CONTEXT = "@aws-cdk/core:failSynthOnValidationErrors"
"""CDK context: when false, the app (not CDK) reports validation results after ``app.synth()``."""
_APPLIED = "_sagemaker_llm_cdk_checks"


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
            PolicyViolatingResource(
                locations=list(r.locations),
                construct_path=r.construct_path,
                resource_logical_id=r.resource_logical_id,
                template_path=r.template_path,
            )
            for r in violation.violating_resources
        ],
        fix=violation.fix,
        rule_metadata=violation.rule_metadata,
        severity="warning",
    )


def _known(names: Sequence[str]) -> list[str]:
    unknown = sorted({n for n in names if n not in PACKS})
    if unknown:
        raise ValueError(f"unknown cdk-nag pack(s) {', '.join(unknown)}; allowed: {', '.join(PACKS)}")
    return list(dict.fromkeys(names))


def apply(
    app: Stage,
    *,
    packs: Sequence[str] = ("aws-solutions",),
    warning_packs: Sequence[str] = (),
    wrap_warnings: bool | None = None,
) -> None:
    """Attach the library's checks to ``app`` (an ``App``, or a ``Stage`` synthesized on its own) and every Stage
    in it: ``packs`` fail the synth, ``warning_packs`` warn, the policy guard, the library's checkov reasons.

    Aspects do not cross Stage boundaries, so the checkov reasons are attached to each Stage found now; a Stage
    made later, or one that something synthesizes early (CDK Pipelines' ``build_pipeline()``), calls
    ``apply_to_stage`` in its constructor. Calling ``apply`` twice adds nothing the second time.

    :param wrap_warnings: wrap ``warning_packs`` in ``WarningsOnly`` (default: unless the app reports validation
        results itself, ``FAIL_SYNTH_CONTEXT`` false, and so decides what fails).
    """
    errors, warnings = _known(packs), [p for p in _known(warning_packs) if p not in packs]
    if getattr(app, _APPLIED, False):
        return
    setattr(app, _APPLIED, True)
    if wrap_warnings is None:
        value = app.node.try_get_context(FAIL_SYNTH_CONTEXT)
        wrap_warnings = not (value is False or value == "false")
    wrap: Callable[[NagPack], IPolicyValidationPlugin] = WarningsOnly if wrap_warnings else (lambda pack: pack)
    plugins: list[IPolicyValidationPlugin] = [PACKS[name](app, verbose=True) for name in errors]
    plugins += [wrap(PACKS[name](app, verbose=True)) for name in warnings]
    if plugins:
        Validations.of(app).add_plugins(*plugins)
    guard(app)
    checkov_defaults(app)
    for stage in [c for c in app.node.find_all()[1:] if isinstance(c, Stage)]:  # no round trip per construct
        apply_to_stage(stage)


def apply_to_stage(stage: Stage, *, warning_packs: Sequence[str] = ()) -> None:
    """The checks of one Stage inside an app that has (or will get) ``apply``: ``warning_packs`` as warnings and the
    library's checkov reasons (the app's packs and the policy guard already cover every stage's templates).

    Call it in the Stage's constructor when something synthesizes the stage early: CDK Pipelines'
    ``build_pipeline()`` synthesizes each stage's assembly, after which Aspects added to it no longer run.
    Calling it twice on a stage adds nothing.
    """
    packs = _known(warning_packs)
    if getattr(stage, _APPLIED, False):
        return
    setattr(stage, _APPLIED, True)
    if packs:
        Validations.of(stage).add_plugins(*[WarningsOnly(PACKS[name](stage, verbose=True)) for name in packs])
    guard(stage)
    checkov_defaults(stage)


apply_checks = apply
apply_checks_to_stage = apply_to_stage
"""``apply``, under the name the package exports (``from sagemaker_llm_cdk import apply_checks``)."""

__all__ = [
    "FAIL_SYNTH_CONTEXT",
    "PACKS",
    "WarningsOnly",
    "apply",
    "apply_checks",
    "apply_checks_to_stage",
    "apply_to_stage",
]
