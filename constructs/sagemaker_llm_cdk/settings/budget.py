"""The deployment's cost budget (``BudgetSettings``): an AWS Budgets budget on its tagged resources, its limit,
who hears the ACTUAL and FORECASTED alerts, and the tag its cost filter selects.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from ..core.errors import Problem
from ..core.settings import Settings

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")


class BudgetSettings(Settings):
    """An AWS Budgets cost budget on this deployment's tagged resources, with ACTUAL and FORECASTED alerts.

    The synth refuses a config whose monthly ceiling (``operations.cost_model``: every endpoint at
    ``max_instances`` and every counted EAGLE run, on demand, priced from the shipped table) is above
    ``max_usd_per_month``; a config whose known ceiling is above USD 10,000 must declare one.
    """

    max_usd_per_month: Annotated[
        int,
        Field(
            ge=1,
            le=100_000_000,
            description=(
                "Budget limit, USD per month (AWS Budgets, COST, MONTHLY). The synth refuses a config whose monthly "
                "ceiling is above it."
            ),
        ),
    ]
    email: Annotated[
        str | None,
        Field(
            description=(
                "Address the budget's alerts are e-mailed to (AWS Budgets subscriber EMAIL). Default: none (then "
                "notify_alarm_topic must be true)."
            )
        ),
    ] = None
    notify_alarm_topic: Annotated[
        bool,
        Field(
            description=(
                "Also publish the alerts to the stack's alarm SNS topic (its policy lets budgets.amazonaws.com publish "
                "only for this account's budget). Default: false."
            )
        ),
    ] = False
    actual_percent: Annotated[
        tuple[Annotated[int, Field(ge=1, le=1000)], ...],
        Field(
            min_length=1,
            max_length=5,
            description=("Percents of the limit at which ACTUAL spend alerts. Default: 80 and 100."),
        ),
    ] = (80, 100)
    forecasted_percent: Annotated[
        tuple[Annotated[int, Field(ge=1, le=1000)], ...],
        Field(max_length=5, description=("Percents of the limit at which FORECASTED spend alerts. Default: 100.")),
    ] = (100,)
    tag: Annotated[
        str | None,
        Field(
            description=(
                "Key of tags the budget's cost filter selects (its value as in tags; activate it as a cost allocation "
                "tag in Billing). Default: the first key of tags; with no tags, the aws:cloudformation:stack-name tag "
                "CloudFormation puts on this stack's resources."
            )
        ),
    ] = None

    def _rules(self) -> list[Problem]:
        problems = []
        if self.email is None and not self.notify_alarm_topic:
            problems.append(
                Problem(
                    "email",
                    None,
                    "an e-mail address, or notify_alarm_topic: true",
                    "set email to the address that should hear about the spend",
                )
            )
        if self.email is not None and (not _EMAIL.match(self.email) or len(self.email) > 254):
            problems.append(
                Problem(
                    "email", self.email, "an email address like ops@example.com", "write the address as name@domain"
                )
            )
        for field in ("actual_percent", "forecasted_percent"):
            values = getattr(self, field)
            if len(set(values)) != len(values):
                problems.append(Problem(field, list(values), "distinct percents", "list each percent once"))
        if len(self.actual_percent) + len(self.forecasted_percent) > 10:
            problems.append(
                Problem(
                    "forecasted_percent",
                    list(self.forecasted_percent),
                    "at most 10 notifications in all (AWS Budgets' limit per budget)",
                    "drop some thresholds",
                )
            )
        return problems
