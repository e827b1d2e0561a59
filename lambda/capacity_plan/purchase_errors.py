"""The errors the capacity plan handler raises: one class per reason a plan or an extension was not bought.

CloudFormation shows the message of the raised error as the resource's status reason, so every class keeps it
short (``ShortError``, cut to ``MAX_MESSAGE_CHARS``), and each message says what was (not) bought and how to go on.
"""

from __future__ import annotations

from llm_cdk_shared.problems import ShortError

MAX_MESSAGE_CHARS = 3500  # CloudFormation's whole response must stay under 4096 bytes


class CapacityPlanError(ShortError):
    """Base class; the message is what CloudFormation shows, so it is kept short."""

    max_chars = MAX_MESSAGE_CHARS


class CapacityPlanPropertiesError(CapacityPlanError):
    """ResourceProperties are missing or invalid (nothing was bought)."""


class CapacityPlanConflictError(CapacityPlanError):
    """A plan with this name exists but differs from the declaration or cannot be used."""


class NoCapacityOfferingError(CapacityPlanError):
    """No offering fits the fee cap, window and shape (nothing was bought)."""


class CapacityPlanCurrencyError(CapacityPlanError):
    """Offerings are priced in a currency other than USD (nothing was bought)."""


class CapacityPlanImmutableError(CapacityPlanError):
    """An update tried to change what a bought plan is."""


class CapacityPlanNotFoundError(CapacityPlanError):
    """An update or a post-conflict read found no plan of that name."""


class CapacityPlanConsentError(CapacityPlanError):
    """The purchase or extension was not approved on the deploy command (nothing was bought)."""


class CapacityPlanEventError(CapacityPlanError):
    """The event is not a custom resource event this handler can act on (no AWS call was made)."""
