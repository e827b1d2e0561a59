"""Who is calling: the owner of a conversation, from the SigV4-verified caller of the Function URL request.

``caller_owner`` maps ``requestContext.authorizer.iam`` to an owner under the OWNER_MODE (pure: no I/O, no
environment); ``caller`` applies it to the current request and answers 403 for a request without an IAM caller
(CallerUnknown) or with one the mode does not accept (CallerNotAllowed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import front_door_answers as answers
from aws_lambda_powertools import Logger
from front_door_answers import HttpError

if TYPE_CHECKING:
    from front_door_settings import Settings

logger = Logger()

ASSUMED_ROLE_ARN_RE = re.compile(  # the caller ARN of an STS role session
    r"^arn:(?P<partition>[a-z0-9-]+):sts::(?P<account>[0-9]{12}):assumed-role/(?P<role>[^/]+)/(?P<session>.+)$"
)
FEDERATED_USER_ARN_RE = re.compile(  # GetFederationToken: the calling IAM user names the federated user
    r"^arn:[a-z0-9-]+:sts::[0-9]{12}:federated-user/"
)


class CallerNotAllowed(Exception):
    """A verified caller whose identity the owner mode does not accept (403 CallerNotAllowed); the message says why."""


def caller_owner(
    iam: Mapping[str, Any] | None, mode: str = "session", identity_pools: tuple[str, ...] = ()
) -> str | None:
    """The owner of a conversation for the Function URL's ``requestContext.authorizer.iam``.

    - A Cognito identity (``cognitoIdentity.identityId``, set when the caller signed with credentials from
      an identity pool) -> ``cognito-identity/<identityPoolId>/<identityId>``, in every mode: all users of
      one pool share one role and even one session name (``CognitoIdentityCredentials``), so only the
      identity id tells people apart. A ``cognitoIdentity`` without an identity id -> None.
    - mode ``session`` (default): the caller ARN as is. For an assumed role that is
      ``arn:<p>:sts::<acct>:assumed-role/<Role>/<session>``: the session name is part of the owner, so
      each person signed in through one SSO permission set (session name = the user) is an owner of
      their own. Sound only when the role's trust fixes session names (docs/sessions-trust.md).
    - mode ``role``: an assumed-role session -> ``arn:<p>:iam::<acct>:role/<Role>``, for backends whose
      session names rotate (a Lambda function or ECS task per request): every session of the role is one
      owner, so the backend must keep its users apart itself.
    - mode ``cognito_identity``: only a Cognito identity of one of ``identity_pools``; any other caller
      raises CallerNotAllowed (an assumed-role session of the pool's role without a Cognito identity, as
      role chaining gives, included).
    - IAM users and the root user: their ARN as is. Federated users (``GetFederationToken``) raise
      CallerNotAllowed in every mode: the IAM user that calls it chooses the name, and no trust policy
      can fix it.
    None when there is no usable caller (no IAM authorizer). Pure: no I/O, no environment.
    """
    if not isinstance(iam, Mapping):
        return None
    cognito = iam.get("cognitoIdentity")
    if cognito is not None:
        if not isinstance(cognito, Mapping):
            return None
        identity, pool = cognito.get("identityId"), cognito.get("identityPoolId")
        if not isinstance(identity, str) or not identity.strip():
            return None
        pool_id = pool.strip() if isinstance(pool, str) and pool.strip() else "-"
        if mode == "cognito_identity" and pool_id not in identity_pools:
            raise CallerNotAllowed(
                f"the Cognito identity is of identity pool {pool_id}, which this front door "
                "does not serve (IDENTITY_POOLS)"
            )
        return f"cognito-identity/{pool_id}/{identity.strip()}"
    arn = iam.get("userArn")
    if not isinstance(arn, str) or not arn.strip():
        return None
    arn = arn.strip()
    if mode == "cognito_identity":
        raise CallerNotAllowed(
            "this front door serves only Cognito identity-pool credentials (OWNER_MODE="
            "cognito_identity); the request was signed without a Cognito identity"
        )
    if FEDERATED_USER_ARN_RE.match(arn):
        raise CallerNotAllowed(
            "federated users (GetFederationToken) are not served: the IAM user that calls it "
            "chooses the federated user's name, so it cannot own a conversation; sign in "
            "through a role"
        )
    match = ASSUMED_ROLE_ARN_RE.fullmatch(arn)
    if match is not None and mode == "role":
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return arn


def caller(raw_event: Mapping[str, Any], settings: Settings) -> str:
    """The owner (see caller_owner) of the current request; 403 when the request names no IAM caller
    (CallerUnknown) or one the owner mode does not accept (CallerNotAllowed, counted as CallersRefused)."""
    context = raw_event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    try:
        owner = caller_owner(
            authorizer.get("iam") if isinstance(authorizer, Mapping) else None,
            settings.owner_mode,
            settings.identity_pools,
        )
    except CallerNotAllowed as refused:
        answers.count("CallersRefused")
        raise HttpError(403, "CallerNotAllowed", str(refused)) from None
    if owner is None:
        raise HttpError(
            403,
            "CallerUnknown",
            "the request carries no IAM caller (requestContext.authorizer.iam."
            "userArn, or cognitoIdentity.identityId); the function URL must use auth type AWS_IAM and requests must be "
            "SigV4-signed",
        )
    logger.append_keys(owner=owner)
    return owner
