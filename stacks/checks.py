"""Synth-time checks attached to the app: cdk-nag rule packs."""
from __future__ import annotations

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks


def attach_checks(app: App) -> None:
    """Run the AwsSolutions pack on every stack; findings fail the synth unless acknowledged."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
