"""What a change will do when it deploys: compare two synthesized cloud assemblies, no AWS credentials needed.

Usage::

    python -m tools.change_report BASE_DIR HEAD_DIR [--markdown]     # two cdk.out folders
    python -m tools.change_report --git-base origin/main [--markdown] [--config PATH] [--head-dir cdk.out]

The second form synthesizes the base branch (exported with ``git archive`` into a temporary
folder, so the repository's own state is never touched) and the working tree (or reads
``--head-dir``), both with this checkout's ``node_modules`` and ``.venv``, then compares.

The report opens with what the change costs per 30 days: per endpoint, EAGLE loop and benchmark schedule (matched
by subject; one on one side only is a whole line added or removed) and in total, the delta of the floor and the
ceiling in instance-hours and in USD ("+720 ml.p5e.48xlarge instance-hours per 30 days (+USD ...)"; an unknown price
makes it "USD unknown", never 0), and the prepaid plan fees the change would commit. The figures come from the
``cost-model.json`` the synth writes into each assembly (``cost.cost_model(app)``); when the base has none (an older
base), both sides are read from their templates (endpoint configs' instance counts and capacity binding, capacity
plans' fees), and the report says which. USD is what each synth priced, or ``--prices FILE`` (a table in
``prices.json``'s shape) for both sides.

Per stack (nested stacks included, matched by stack and logical id) it lists resources
added, removed and modified, with the changed property paths. A modification is a
**REPLACEMENT** when a changed property is create-only in the CloudFormation resource schema
that cfn-lint ships, when it reaches a create-only property through a reference to a replaced
resource, when the resource type changes, and when a resource leaves under one logical id and
comes back under another (same type and same physical name, or same properties).

A long string value is compared by what changed inside it: JSON text (dashboard bodies, state
machine definitions) is parsed and each changed path is shown as ``Property::path``, lists aligned
item by item; other text, and a long string inside such JSON (a dashboard's Markdown), shows the changed part with
context. Two values too long to show whole are each cut around their first difference, so the excerpts always show
where they part. Stack Outputs are compared as well.
The head is named by its commit (``HEAD (<branch> <sha>)`` when the working tree is clean), or by
``--head-label``. ``--output FILE`` also writes the report; ``--step-summary`` appends the Markdown
report to ``$GITHUB_STEP_SUMMARY`` when that is set.

What will fail to deploy comes first, before the cost (``DOES NOT DEPLOY IN ONE STEP``), each reason with the
two-step way: the ways a one-resource-at-a-time view misses, found from CloudFormation's order (every Create
first, then the Updates, the cleanup's Deletes last): a create-only change of a resource whose name is fixed
(CloudFormation cannot replace it); a name re-taken before cleanup (a new or replacing resource takes a name,
unique per account and region, ``UNIQUE_NAMES``, that a resource deleted or replaced in the same deploy holds until
the cleanup: an endpoint renamed, whose components keep their ``<stack>-<model>`` names); the same across stacks of
one assembly that do not deploy one after the other (``name_clashes``); and a changed custom resource
ServiceToken, an in-place component rename. The headline then calls out what costs money or capacity: an
``AWS::SageMaker::EndpointConfig`` replacement (it redeploys the endpoint: new instances are provisioned),
endpoints created or deleted, and any change to a capacity plan. ``redeploy(assembly)`` says what a stack delete
and a deploy again keeps (retain policies, run-time parameters with Removal retain) and what comes back fresh.

Every resource of the pair is also classified (``classify(base, head) -> list[Outcome]``, which the
tests use and the report prints per resource): unchanged, updated in place, replaced, added or removed, with the
step CloudFormation takes (``Outcome.step``: created first, deleted in cleanup, a custom resource's handler);
the write-only properties (from the schema) an in-place update sends again with the template's value,
and which of them overwrite what a service set at run time (``RuntimeConfig.CopyCount`` of an autoscaled
inference component); the run-time values it resets ("resets /sagemaker-llm/.../status": an
``AWS::SSM::Parameter`` that a function's or state machine's role may ``ssm:PutParameter``, which any
update or replacement of the resource puts back to the template's ``Value``) or keeps (a
``Custom::SageMakerLlmRunTimeParameter``, whose update never writes the value; a new ``ParameterName``
is a new parameter); and, for a replaced endpoint config bound to a capacity plan, the free plan
instances the move needs ("replaces the endpoint config: needs N free plan instances": the fleet in
use for blue/green, one batch for a rolling update). Values read at deploy (a plan's status, a
promoted EAGLE head) can be given per side (``at_deploy``), so a change that only flips one of them
is compared too. Run-time value resets and short plan headroom are in the headline.

Ignored as noise: ``AWS::CDK::Metadata``, asset hashes (Lambda code S3 keys, nested template
URLs, container asset tags), ``aws:cdk:*``/``aws:asset:*`` metadata, checkov/cdk-nag metadata
and ``DependsOn``. Exit status 0 whatever changes (the report informs; the pull-request check
decides), 2 when the inputs are not cloud assemblies or a synth fails.
"""

from __future__ import annotations

from tools.change_report.assembly import ReportError, StackTemplate, load_assembly
from tools.change_report.cli import main
from tools.change_report.comparing import classify, compare
from tools.change_report.cost import (
    COST_FILE,
    HOSTING,
    HOURS_PER_30_DAYS,
    CostChange,
    CostDelta,
    CostItem,
    CostSide,
    cost_delta,
    load_cost,
    template_cost,
)
from tools.change_report.cost_text import COST_TITLE, cost_lines
from tools.change_report.deploy_values import at_deploy
from tools.change_report.headlines import FAILS_BY
from tools.change_report.headroom import Headroom
from tools.change_report.outcomes import (
    COPY_COUNT_DIMENSION,
    HANDLER_UPDATES,
    RUN_TIME_WRITTEN,
    Outcome,
    deploy_step,
    write_only_in_template,
)
from tools.change_report.prices import PRICE_TABLE, REPO, PriceBook
from tools.change_report.property_changes import INSIDE, LONG, json_changes, leaf_changes
from tools.change_report.records import Headline, ItemDelta, OutputChange, PropertyChange, Report, ResourceChange
from tools.change_report.rendering import BLOCKED_TITLE, blocked_lines, render_markdown, render_text
from tools.change_report.rendering import _property_text as _property_text
from tools.change_report.rendering import _verdict as _verdict
from tools.change_report.resource_changes import FIXED_NAME_STEPS
from tools.change_report.resource_types import (
    CAPACITY_PLAN_TYPES,
    CUSTOM_RESOURCE,
    ENDPOINT,
    ENDPOINT_CONFIG,
    IGNORED_TYPES,
    NESTED_STACK,
    PLAN_IDENTITY,
    PLAN_TYPE,
    RETAINED,
    ROUTER_TYPE,
    RUN_TIME_PARAMETER_TYPE,
    SCHEMA_REGION,
    SSM_PARAMETER,
    SSM_VALUE_TYPE,
    create_only_properties,
    is_capacity_plan,
    is_create_only,
    is_custom,
    write_only_properties,
)
from tools.change_report.retaken_names import deploys_after, name_clashes
from tools.change_report.run_time import RunTimeValue, run_time_values
from tools.change_report.stack_redeploy import Redeploy, redeploy
from tools.change_report.synthesizing import export_ref, report_against_git, synthesize, working_tree_label
from tools.change_report.templates import ATTRIBUTES, IGNORED_METADATA, MISSING, normalize, references, render_path
from tools.change_report.unique_names import UNIQUE_NAMES, UniqueName, name_entry, physical_name, unique_name
from tools.change_report.value_text import TextDelta, excerpts, first_difference, text_change

__all__ = [
    "ATTRIBUTES",
    "BLOCKED_TITLE",
    "CAPACITY_PLAN_TYPES",
    "COPY_COUNT_DIMENSION",
    "COST_FILE",
    "COST_TITLE",
    "CUSTOM_RESOURCE",
    "CostChange",
    "CostDelta",
    "CostItem",
    "CostSide",
    "ENDPOINT",
    "ENDPOINT_CONFIG",
    "FAILS_BY",
    "FIXED_NAME_STEPS",
    "HANDLER_UPDATES",
    "HOSTING",
    "HOURS_PER_30_DAYS",
    "Headline",
    "Headroom",
    "IGNORED_METADATA",
    "IGNORED_TYPES",
    "INSIDE",
    "ItemDelta",
    "LONG",
    "MISSING",
    "NESTED_STACK",
    "Outcome",
    "OutputChange",
    "PLAN_IDENTITY",
    "PLAN_TYPE",
    "PRICE_TABLE",
    "PriceBook",
    "PropertyChange",
    "REPO",
    "RETAINED",
    "ROUTER_TYPE",
    "RUN_TIME_PARAMETER_TYPE",
    "RUN_TIME_WRITTEN",
    "Redeploy",
    "Report",
    "ReportError",
    "ResourceChange",
    "RunTimeValue",
    "SCHEMA_REGION",
    "SSM_PARAMETER",
    "SSM_VALUE_TYPE",
    "StackTemplate",
    "TextDelta",
    "UNIQUE_NAMES",
    "UniqueName",
    "at_deploy",
    "blocked_lines",
    "classify",
    "compare",
    "cost_delta",
    "cost_lines",
    "create_only_properties",
    "deploy_step",
    "deploys_after",
    "excerpts",
    "export_ref",
    "first_difference",
    "is_capacity_plan",
    "is_create_only",
    "is_custom",
    "json_changes",
    "leaf_changes",
    "load_assembly",
    "load_cost",
    "main",
    "name_clashes",
    "name_entry",
    "normalize",
    "physical_name",
    "redeploy",
    "references",
    "render_markdown",
    "render_path",
    "render_text",
    "report_against_git",
    "run_time_values",
    "synthesize",
    "template_cost",
    "text_change",
    "unique_name",
    "working_tree_label",
    "write_only_in_template",
    "write_only_properties",
]
