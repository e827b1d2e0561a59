"""Whether the custom resource's own stack is rolling an update back, read once from CloudFormation.

A handler cannot tell from the event alone whether an Update is a new change or the rollback of one: a
rollback sends Update with the old properties, which look like any other change. Three handlers act on the
difference (a capacity plan accepts the return to the plan it holds and buys nothing, a guard answers without
checking again, the deployment check does not wait on an endpoint the rollback itself moves), so they ask
``DescribeStacks`` for their stack id (their role may read only that stack). A status that cannot be read counts
as not rolling back: each caller's safe default applies, and the log says which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

ROLLING_BACK = "UPDATE_ROLLBACK_IN_PROGRESS"


def rolling_back(cloudformation: Callable[[], Any], stack_id: Any, *, logger: Any, otherwise: str) -> bool:
    """Whether stack ``stack_id`` is ``UPDATE_ROLLBACK_IN_PROGRESS``; False when unknown (``otherwise`` says, for
    the log, what the caller then does). ``cloudformation`` is the handler's client getter, called only when there
    is a stack id to ask about."""
    if not isinstance(stack_id, str) or not stack_id:
        return False
    try:
        stacks = cloudformation().describe_stacks(StackName=stack_id).get("Stacks") or []
    except (ClientError, BotoCoreError) as error:
        logger.warning(f"Stack status not readable; {otherwise}", extra={"error": str(error)})
        return False
    return bool(stacks) and stacks[0].get("StackStatus") == ROLLING_BACK
