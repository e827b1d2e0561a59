"""Who the tests' own roles trust: the people of one IAM Identity Center permission set, never the whole account.

A role that trusts its account's root with no condition is an ``OwnRootTrust`` finding of the policy guard (every
principal allowed ``sts:AssumeRole`` on ``*`` could assume it), so a test role that is not the subject of a trust
test trusts what a consumer's would: the account, limited by ``aws:PrincipalArn`` to a permission set's roles.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from constructs import IConstruct


def people(scope: IConstruct, permission_set: str = "ChatUsers") -> iam.IPrincipal:
    """The roles IAM Identity Center creates for ``permission_set`` in ``scope``'s account (any region's path)."""
    stack = Stack.of(scope)
    roles = f"arn:{stack.partition}:iam::{stack.account}:role/aws-reserved/sso.amazonaws.com"
    return iam.AccountRootPrincipal().with_conditions(
        {"ArnLike": {"aws:PrincipalArn": f"{roles}/*AWSReservedSSO_{permission_set}_*"}}
    )
