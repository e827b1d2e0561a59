"""The day-two update catalogue: what each routine change to a shipped config does when it deploys.

Usage::

    python -m tools.update_catalogue --markdown      # the table in docs/update-catalogue.md (synthesizes every row)

Each row is one change made to one shipped config (``config/default.yaml``, an example, or
``config/pipeline.yaml``): the edits in config terms (or to the synthesized templates, for a
construct id change), the stack parameter values read at deploy when the change is one of those
(a plan's status, a promoted EAGLE head), and the outcome the change must have; a row of the
``redeploy`` kind is every stack deleted and deployed again. ``analyse`` runs the change report's
lifecycle analysis on the config synthesized before and after (``tools.change_report.compare``:
CloudFormation's schemas and its order, creates first and the cleanup last; ``redeploy`` for a
stack delete). ``tests/tools/test_update_catalogue.py`` holds the analysis to each row (whether it
deploys in one step and what fails if not, the resource types it replaces and nothing else, the
write-only SageMaker properties it sends again, what it creates and deletes, no run-time value
reset, the plan headroom), and keeps ``docs/update-catalogue.md`` equal to ``markdown(results)``:
the outcome columns are printed from the analysis, so they cannot drift from what it says.

CDK is imported only when a row is synthesized (``tools.assemblies``).
"""

from __future__ import annotations

from tools.update_catalogue.analysis import Result, Synth, analyse, apply, results, synthesizer
from tools.update_catalogue.cli import main
from tools.update_catalogue.rows import (
    BUDGET,
    BUDGET_TYPE,
    DEFAULT,
    DRAFT_HEAD,
    ENDPOINT_CONFIG,
    HEAD_RUN_1,
    HEAD_RUN_2,
    IC,
    IC_RESENDS,
    MODEL,
    NEW_PLAN,
    PIPELINE,
    PLAN_STATUS,
    REDEPLOY,
    RESERVED,
    ROUTER,
    ROUTER_TYPE,
    ROWS,
    RUN_TIME,
    Edit,
    Row,
    moved,
    reword_descriptions,
)
from tools.update_catalogue.table import KEY_TYPES, markdown

__all__ = [
    "BUDGET",
    "BUDGET_TYPE",
    "DEFAULT",
    "DRAFT_HEAD",
    "ENDPOINT_CONFIG",
    "Edit",
    "HEAD_RUN_1",
    "HEAD_RUN_2",
    "IC",
    "IC_RESENDS",
    "KEY_TYPES",
    "MODEL",
    "NEW_PLAN",
    "PIPELINE",
    "PLAN_STATUS",
    "REDEPLOY",
    "RESERVED",
    "ROUTER",
    "ROUTER_TYPE",
    "ROWS",
    "RUN_TIME",
    "Result",
    "Row",
    "Synth",
    "analyse",
    "apply",
    "main",
    "markdown",
    "moved",
    "results",
    "reword_descriptions",
    "synthesizer",
]
