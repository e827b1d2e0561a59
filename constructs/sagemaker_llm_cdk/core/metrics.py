"""CloudWatch metrics of the library's resources: one helper behind every construct's ``metric_*`` methods."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

SAGEMAKER_NAMESPACE = "AWS/SageMaker"


@functools.cache
def one_minute() -> Duration:
    """``Duration.minutes(1)``, made once: a Duration is an immutable value, and each new one is a jsii call."""
    return Duration.minutes(1)


def metric(
    namespace: str,
    metric_name: str,
    dimensions: Mapping[str, str],
    *,
    statistic: str = "Sum",
    period: Duration | None = None,
    **kwargs: Any,
) -> cloudwatch.Metric:
    """``metric_name`` in ``namespace`` with exactly ``dimensions``: ``statistic`` over ``period`` (default one
    minute). ``kwargs`` go to ``cloudwatch.Metric`` (``label``, ``color``, ``unit``, ``account``, ``region``)."""
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=metric_name,
        dimensions_map=dict(dimensions),
        statistic=statistic,
        period=period or one_minute(),
        **kwargs,
    )
