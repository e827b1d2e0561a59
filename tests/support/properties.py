"""How many examples a property test draws: its full count in `make test`, a tenth of it (at least 10) in the fast
loop (`make test-fast` sets SAGEMAKER_LLM_CDK_TEST_FAST=1), which keeps each property exercised in seconds."""

from __future__ import annotations

import os

FAST = os.environ.get("SAGEMAKER_LLM_CDK_TEST_FAST") == "1"


def examples(count: int) -> int:
    return max(10, count // 10) if FAST else count
