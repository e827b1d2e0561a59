"""Live preflight checks: read-only AWS calls, run only when credentials resolve and not ``--offline``.

Each AWS service the checks read has its own module (``live_sagemaker``, ``live_quotas``, ``live_s3``,
``live_layers``, ``live_iam``); this one checks the credentials' account and registers every live check,
in the order they run.
"""

from __future__ import annotations

from collections.abc import Iterable

from .context import PreflightContext, _live
from .findings import Finding, blocker, info
from .live_errors import _error_code as _error_code
from .live_iam import TRUST_FIX as TRUST_FIX
from .live_iam import check_front_door_callers, check_source_identity_chains
from .live_layers import check_layers_live
from .live_quotas import ENDPOINT_QUOTA_NAME as ENDPOINT_QUOTA_NAME
from .live_quotas import SAGEMAKER_QUOTA_SERVICE as SAGEMAKER_QUOTA_SERVICE
from .live_quotas import check_quotas
from .live_s3 import MAX_S3_CHECKED as MAX_S3_CHECKED
from .live_s3 import check_s3
from .live_sagemaker import MAX_NAMES_CHECKED as MAX_NAMES_CHECKED
from .live_sagemaker import check_names_free, check_plans_live


def check_account(ctx: PreflightContext) -> Iterable[Finding]:
    target = ctx.config.target.account
    if target is not None and ctx.account is not None and ctx.account != target:
        yield blocker(
            "credentials.account",
            f"credentials are for account {ctx.account}, target.account is {target}",
            "the stacks are bound to target.account; CloudFormation refuses to deploy them elsewhere, and "
            "the live checks looked at the wrong account",
            f"use credentials for account {target}",
        )
    elif ctx.account is not None:
        yield info("credentials.account", f"live checks ran as account {ctx.account}")


for _check in (
    check_account,
    check_plans_live,
    check_names_free,
    check_quotas,
    check_s3,
    check_layers_live,
    check_front_door_callers,
    check_source_identity_chains,
):
    _live(_check)

__all__ = [
    "ENDPOINT_QUOTA_NAME",
    "MAX_NAMES_CHECKED",
    "MAX_S3_CHECKED",
    "SAGEMAKER_QUOTA_SERVICE",
    "TRUST_FIX",
    "check_account",
    "check_front_door_callers",
    "check_layers_live",
    "check_names_free",
    "check_plans_live",
    "check_quotas",
    "check_s3",
    "check_source_identity_chains",
]
