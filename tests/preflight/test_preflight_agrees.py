"""Preflight and the synth share one model of what a deploy does, so they cannot disagree: for every shipped
config, the cost lines preflight prints come from the same figures the synth's cost model computes from the
built app, and preflight's view of each plan binding (serve on demand until Active, or fail) is the one the
synthesized endpoint config encodes (a CapacityReservationConfig behind the PlanActive condition, or always)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Environment
from sagemaker_llm_cdk import load_config
from sagemaker_llm_cdk.operations.cost import cost_model
from sagemaker_llm_cdk.operations.cost_model import config_cost_model
from sagemaker_llm_cdk.preflight.context import serves_on_demand_until_active

from stacks import LlmPlatformStack

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(
    [ROOT / "config" / n for n in ("default.yaml", "dev.yaml", "prod.yaml")]
    + list((ROOT / "config" / "examples").glob("*.yaml")),
    key=str,
)
CONTEXT = {**json.loads((ROOT / "cdk.json").read_text())["context"], "aws:cdk:enable-path-metadata": True}


def figures(lines):
    return sorted(
        (line.kind, line.instance_type, line.floor_hours, line.ceiling_hours, line.plan_hours, line.prepaid_usd)
        for line in lines
    )


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT / "config")))
def test_preflight_and_synth_agree_on_cost_and_binding(path):
    config = load_config(path)
    app = App(context=dict(CONTEXT))
    LlmPlatformStack(
        app,
        config.stack_name,
        config=config,
        config_dir=path.parent,
        env=Environment(account=config.target.account, region=config.target.region),
    )
    assert figures(config_cost_model(config)) == figures(cost_model(app))
    ctx = type(
        "Ctx",
        (),
        {
            "plan_of": lambda self, e: next(
                ((i, p) for i, p in enumerate(config.capacity_plans) if p.plan_name == e.capacity_plan), None
            )
        },
    )()
    variants = {}  # endpoint config's CapacityReservationConfig per endpoint name, from every stack's template
    for artifact in app.synth().stacks:
        for resource in artifact.template.get("Resources", {}).values():
            if resource["Type"] == "AWS::SageMaker::EndpointConfig":
                variant = resource["Properties"]["ProductionVariants"][0]
                variants[resource["Metadata"]["aws:cdk:path"].split("/")[1]] = variant.get("CapacityReservationConfig")
    bound = 0
    for endpoint in config.endpoints:
        if endpoint.capacity_plan is None:
            continue
        bound += 1
        reservation = variants[endpoint.name]
        conditional = isinstance(reservation, dict) and "Fn::If" in reservation
        assert reservation is not None, endpoint.name  # a bound endpoint always carries the binding
        assert serves_on_demand_until_active(ctx, endpoint) == conditional, endpoint.name
    assert bound == sum(1 for e in config.endpoints if e.capacity_plan is not None)
