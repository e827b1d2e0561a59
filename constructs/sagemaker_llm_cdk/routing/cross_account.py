"""The endpoint policies that let an inference router use destinations in other accounts.

The router calls each destination with its caller's credentials; a destination in another account answers only
when its owner allows the router's account in an endpoint policy (AWS: "Route requests to endpoints in other AWS
accounts"). ``endpoint_policies`` builds those documents for one account and region, for
``InferenceRouter.endpoint_policy`` and for the endpoint owner's stack (``EndpointPolicy``) alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.regions import partition_of
from .targets import RouterTarget, lower_name


def endpoint_policies(
    *,
    router_name: str,
    router_account: str,
    router_region: str,
    targets: Sequence[RouterTarget],
    account: str,
    region: str,
) -> dict[str, Any] | None:
    """``{endpoint name: policy document}`` for the destinations of ``targets`` in ``account`` and ``region``, as
    router ``router_name`` of ``router_account`` in ``router_region`` needs them, or None when there are none or
    ``account`` is the router's own. ``InferenceRouter.endpoint_policy`` and the endpoint owner's stack
    (``EndpointPolicy``) both build the document here, so the two always agree.

    An endpoint that an asynchronous target routes to allows ``sagemaker:InvokeEndpointAsync``, any other
    ``sagemaker:InvokeEndpoint`` (a target is one or the other, and its endpoints are of its kind)."""
    if account == router_account:
        return None
    here = [
        (d, t.async_inference is not None)
        for t in targets
        for d in t.destinations
        if d.account == account and d.region == region
    ]
    if not here:
        return None
    base = f"arn:{partition_of(router_region) or 'aws'}:sagemaker:{router_region}:{router_account}:inference-router/"
    router_arns = list(dict.fromkeys([base + router_name, base + router_name.lower()]))
    partition = partition_of(region) or "aws"
    return {
        name: endpoint_policy_document(
            router_account=router_account,
            router_arns=router_arns,
            endpoint_arn=f"arn:{partition}:sagemaker:{region}:{account}:endpoint/{name}",
            asynchronous=any(is_async for d, is_async in here if d.endpoint_name == name),
        )
        for name in sorted({d.endpoint_name for d, _ in here})
    }


def endpoint_policy_document(
    *, router_account: str, router_arns: Iterable[str], endpoint_arn: str, asynchronous: bool = False
) -> dict[str, Any]:
    """AWS's endpoint policy for a destination in another account: invoke only through the router, and describe.
    The endpoint's ARN is listed as written and in lowercase (SageMaker writes names in lowercase in the ARNs it
    returns; IAM compares ARNs as written), as ``Destination.iam_arns`` does; once when the two are the same."""
    forms = list(dict.fromkeys([endpoint_arn, lower_name(endpoint_arn)]))
    resource: str | list[str] = forms[0] if len(forms) == 1 else forms
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "InvokeThroughRouter",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{_partition(endpoint_arn)}:iam::{router_account}:root"},
                "Action": "sagemaker:InvokeEndpointAsync" if asynchronous else "sagemaker:InvokeEndpoint",
                "Resource": resource,
                "Condition": {"ArnEquals": {"sagemaker:SourceInferenceRouterArn": list(router_arns)}},
            },
            {
                "Sid": "DescribeForRouter",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{_partition(endpoint_arn)}:iam::{router_account}:root"},
                "Action": "sagemaker:DescribeEndpoint",
                "Resource": resource,
            },
        ],
    }


def _partition(arn: str) -> str:
    return arn.split(":", 2)[1]
