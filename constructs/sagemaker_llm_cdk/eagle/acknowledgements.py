"""The cdk-nag findings of an EAGLE loop acknowledged once it is built, each with the reason it is kept.

``grants.grant`` acknowledges a wildcard at the grant that makes it. What it cannot are acknowledged here, after
every child exists: the job role's actions that have no resource type, and the statements CDK itself writes for
the state machine (its Lambda tasks, the Distributed Map's reader, writer and child executions, X-Ray and log
delivery). Where the finding's id depends on how CDK rendered the policy, it is read from that policy, as cdk-nag
reads it.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack

from ..core.grants import acknowledge_wildcard_only
from ..core.nag import acknowledge, acknowledge_resource, policy_resources


def acknowledge_eagle(eagle: Any) -> None:
    """What ``grants.grant`` cannot acknowledge at the grant: the job role's actions that have no resource type
    (one ``Resource::*`` finding for the metrics and, in a VPC, the network descriptions), and the statements CDK
    writes for the state machine (Lambda tasks, the Distributed Map, X-Ray and log delivery)."""
    stack = Stack.of(eagle)
    bucket = eagle.artifacts_bucket
    acknowledge_wildcard_only(
        eagle.job_role,
        "cloudwatch:PutMetricData has no resource type (limited by a "
        "cloudwatch:namespace condition to SageMaker's namespaces); in a VPC, the ec2:Describe* "
        "calls SageMaker makes before attaching the job's network interfaces have none either.",
    )
    machine = eagle.state_machine
    role = machine.role
    acknowledge_wildcard_only(
        role,
        "X-Ray tracing (PutTraceSegments, GetSamplingRules, ...) and the CloudWatch Logs log-delivery "
        "actions Step Functions uses for its execution log have no resource-level permissions.",
    )
    acknowledge_resource(
        role,
        eagle.job_arn_pattern,
        "The wait loop describes the run's optimization job, whose name is made at run time (eagle-*); "
        "DescribeOptimizationJob only.",
    )
    for function in (
        eagle.plan_function,
        eagle.convert_function,
        eagle.finalize_function,
        eagle.validate_function,
        eagle.start_function,
        eagle.record_function,
    ):
        if function is not None:
            acknowledge_resource(
                role,
                f"{function.function_arn}:*",
                "CDK's Lambda task grants lambda:InvokeFunction on the function and its versions (':*'); the "
                "state machine invokes only this loop's own functions.",
            )
    if eagle.convert_function is not None:
        why = (
            "CDK's Distributed Map grants its ItemReader (GetObject) and ResultWriter (PutObject, multipart) on "
            "every key of the artifacts bucket; the definition reads only datasets/<run>/plan/items.json and "
            "writes only map-results/, and an explicit Deny refuses PutObject anywhere else."
        )
        # Read from the policy CDK wrote, as cdk-nag reads it: in a stack bound to a region but not an account the
        # partition there is <AWS::Partition> while Stack.partition is already "aws".
        default_policy = role.node.try_find_child("DefaultPolicy")
        bucket_id = f"<{stack.get_logical_id(bucket.node.default_child)}>"
        forms = [
            f
            for f in (policy_resources(default_policy, bucket_id, "/*") if default_policy is not None else [])
            if ":s3:::" in f and f.endswith(f"{bucket_id}/*")
        ]
        if forms:
            for form in forms:
                acknowledge(role, "AwsSolutions-IAM5", why, finding=f"Resource::{form}")
        else:
            acknowledge_resource(role, f"arn:{stack.partition}:s3:::{bucket.bucket_name}/*", why)
        # The execution ARNs are read from the policy CDK wrote, as cdk-nag reads them, so the finding ids
        # match in an environment-agnostic stack (<AWS::Region>) and in a bound one (us-east-1) alike.
        policy = machine.node.find_child("DistributedMapPolicy")
        for resource in policy_resources(policy, ":execution:", ":*"):
            why = (
                "redrive the Distributed Map's child executions"
                if resource.endswith("/ConvertCaptures:*")
                else "describe and stop the child executions of this state machine"
            )
            acknowledge(
                policy,
                "AwsSolutions-IAM5",
                f"A Distributed Map runs its batches as child executions named at run time; CDK grants "
                f"the state machine to {why}, only under its own name.",
                finding=f"Resource::{resource}",
            )
