"""Which AWS account publishes an image or a layer, per region or partition, at synth or deploy time."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Aws, CfnMapping, Stack, Token

from constructs import IConstruct

from .errors import ConfigurationError, Problem
from .regions import DLC_ACCOUNTS, POWERTOOLS_ACCOUNTS, partition_of


def partition_of_region(region: str) -> str:
    """The partition of ``region``: ``Aws.PARTITION`` for a token, else botocore's answer (``regions.partition_of``,
    cached per region), else from the prefix."""
    if Token.is_unresolved(region):
        return Aws.PARTITION
    known = partition_of(region)
    if known is not None:
        return known
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def account_for(
    scope: IConstruct, mapping_id: str, table: Mapping[str, str], key_name: str, key: str, allowed: str, fix: str
) -> str:
    """The account ``table`` gives ``key``: a string for a known key (an unknown one is a ConfigurationError naming
    ``key_name``), else a ``Fn::FindInMap`` over a ``CfnMapping`` of the whole table added to the stack once."""
    if not Token.is_unresolved(key):
        account = table.get(key)
        if account is None:
            raise ConfigurationError([Problem(key_name, key, allowed, fix)], source=scope.node.path)
        return account
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(mapping_id)
    mapping = (
        existing
        if isinstance(existing, CfnMapping)
        else CfnMapping(stack, mapping_id, mapping={k: {"account": v} for k, v in table.items()})
    )
    return str(mapping.find_in_map(key, "account"))


def powertools_account(scope: IConstruct) -> str:
    """The Powertools layer account for ``scope``'s partition, like ``lmi_account``."""
    stack = Stack.of(scope)
    partition = stack.partition if not Token.is_unresolved(stack.partition) else partition_of_region(stack.region)
    return account_for(
        scope,
        "PowertoolsLayerAccounts",
        POWERTOOLS_ACCOUNTS,
        "partition",
        partition,
        "a partition where the Powertools layer is published: " + ", ".join(POWERTOOLS_ACCOUNTS),
        "deploy to the aws partition; for aws-cn or aws-us-gov publish the layer in your account first",
    )


def lmi_account(scope: IConstruct) -> str:
    """The LMI image's registry account for ``scope``'s region: a literal in a region-bound stack (an unknown
    region is a ConfigurationError), else a ``Fn::FindInMap`` over ``DLC_ACCOUNTS`` (deploying to a region not
    in the map then fails before anything is created)."""
    return account_for(
        scope,
        "LmiImageAccounts",
        DLC_ACCOUNTS,
        "region",
        Stack.of(scope).region,
        "a region where AWS publishes the LMI image: " + ", ".join(sorted(DLC_ACCOUNTS)),
        "deploy to a listed region, or push the image to your own ECR repository and give its full URI",
    )
