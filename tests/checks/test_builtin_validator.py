"""CDK's built-in template validator runs in a test exactly when its findings can fail the synth (conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import App, CfnResource, Stack
from conftest import VALIDATION_FLAGS

pytestmark = pytest.mark.synth

REPORT = "validation-report.json"

BROKEN = {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": "not-a-number", "NoSuchProperty": 1}}


def broken_app(**props: object) -> App:
    app = App(**props)
    CfnResource(Stack(app, "Broken"), "Queue", type=BROKEN["Type"], properties=BROKEN["Properties"])
    return app


@pytest.mark.parametrize("flag", VALIDATION_FLAGS)
def test_an_app_whose_context_makes_findings_errors_is_validated(flag):
    with pytest.raises(Exception, match=r"(?s)NoSuchProperty|VisibilityTimeout"):
        broken_app(context={flag: True}).synth()


def test_an_app_whose_findings_would_be_warnings_skips_the_validator():
    assembly = broken_app().synth()
    assert assembly.get_stack_by_name("Broken").template["Resources"]["Queue"] == BROKEN
    assert not (Path(assembly.directory) / REPORT).exists()  # the validator writes it whenever it finds anything


def test_a_test_can_still_ask_for_the_validator():
    assembly = broken_app(builtin_cloud_formation_validation=True).synth()  # findings are warnings: reported only
    assert "NoSuchProperty" in (Path(assembly.directory) / REPORT).read_text(encoding="utf-8")
