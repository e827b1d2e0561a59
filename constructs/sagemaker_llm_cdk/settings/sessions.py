"""Settings of session-aware routing (``SessionSettings``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import Problem
from ..core.settings import Settings

OWNER_MODES = ("session", "role", "cognito_identity")
"""What ``owner`` accepts; the router (``lambda/session_router/index.py``) reads the same names from OWNER_MODE."""
DEFAULT_TURN_LOG_RETENTION_DAYS = 30
"""Days a logged front-door turn is kept: as long as captured traffic (``data_capture.retention_days``)."""
MAX_CALLERS = 20

_IDENTITY_POOL_ID = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
"""A Cognito identity pool id: ``<region>:<GUID>`` (the GUID in lower case, as Cognito writes it)."""
_ORGANIZATION_ID = re.compile(r"^o-[a-z0-9]{10,32}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")


class SessionSettings(Settings):
    """Session-aware (sticky) routing for multi-turn chat, with a front door that keeps the books.

    Turns on stateful sessions in the container (LMI: OPTION_ENABLE_STATEFUL_SESSIONS,
    OPTION_SESSIONS_EXPIRATION) and adds an HTTPS front door (IAM auth) that maps a caller's
    conversation id to a SageMaker session id. Who may act as which owner under each ``owner``
    mode: docs/sessions-trust.md.
    """

    expiration_seconds: Annotated[
        int,
        Field(
            ge=60,
            le=86400,
            description=("Idle seconds after which a session expires. Default: 1200 (the LMI default)."),
        ),
    ] = 1200
    max_body_bytes: Annotated[
        int,
        Field(
            ge=1024, le=6 * 1024 * 1024, description=("Largest request body the front door accepts. Default: 1 MiB.")
        ),
    ] = 1024 * 1024
    owner: Annotated[
        Literal["session", "role", "cognito_identity"],
        Field(
            description=(
                "Who owns a conversation. session: the full signed-in caller (an assumed-role session including its "
                "session name; an IAM user; a Cognito identity by its identity id). Sound only when no caller can "
                "choose its session name: IAM Identity Center and SAML sessions (the identity provider names them), or "
                "roles whose trust policy pins the name (SessionFrontDoor.grant_invoke_pinned; preflight warns about "
                "callers whose trust does not). role: every session of an assumed role is one owner, for backends "
                "whose session names rotate (a Lambda function or ECS task per request); the backend then keeps its "
                "users apart. cognito_identity: only Cognito identity-pool credentials are served and the owner is the "
                "identity id Cognito assigned (identity_pools lists the pools); every other caller gets 403. Federated "
                "users (GetFederationToken) are refused in every mode: the IAM user that calls it names them. Default: "
                "session."
            )
        ),
    ] = "session"
    identity_pools: Annotated[
        tuple[str, ...],
        Field(
            max_length=10,
            description=(
                "owner cognito_identity: the Cognito identity pool ids (<region>:<GUID>) whose identities may own "
                "conversations; a caller from any other pool gets 403. Required with cognito_identity, refused "
                "otherwise."
            ),
        ),
    ] = ()
    callers: Annotated[
        tuple[str, ...],
        Field(
            max_length=MAX_CALLERS,
            description=(
                "ARNs of existing IAM roles in the stack's account that may call the front door (the stack grants each "
                "one lambda:InvokeFunctionUrl, and lambda:InvokeFunction only through the URL). Preflight reads each "
                "role's trust policy (iam:GetRole) and warns when it lets a caller choose the session name the owner "
                "is read from. Default: none (grant callers in code)."
            ),
        ),
    ] = ()
    organization_id: Annotated[
        str | None,
        Field(
            description=(
                "owner session: the AWS Organizations id (o-...) whose accounts' role sessions may chain into a role "
                "pinned with source_identity (SessionFrontDoor.grant_invoke_pinned, aws:PrincipalOrgID). A source "
                "identity is whatever the first AssumeRole of a chain set, so the pin trusts the accounts it admits "
                "to let only identity providers set one (preflight reports roles that let a caller set any). "
                "Default: none, only role sessions of the role's own account chain in."
            ),
        ),
    ] = None
    turn_log_retention_days: Annotated[
        int,
        Field(
            ge=1,
            le=3650,
            description=(
                "Days a turn the front door logged for EAGLE (eagle.dataset.source front_door: prompts and answers) is "
                "kept in the turn log's bucket before it expires; then 7 more days as a noncurrent version. Default: "
                f"{DEFAULT_TURN_LOG_RETENTION_DAYS}, as long as captured traffic."
            ),
        ),
    ] = DEFAULT_TURN_LOG_RETENTION_DAYS

    def _rules(self) -> list[Problem]:
        problems = []
        if self.owner == "cognito_identity" and not self.identity_pools:
            problems.append(
                Problem(
                    "identity_pools",
                    [],
                    "at least one identity pool id with owner cognito_identity",
                    "list the identity pools whose users chat, e.g. [us-east-1:0f6a8b1c-1111-4222-8333-944455556666]",
                )
            )
        if self.owner != "cognito_identity" and self.identity_pools:
            problems.append(
                Problem(
                    "identity_pools",
                    list(self.identity_pools),
                    "only with owner cognito_identity",
                    "remove identity_pools, or set owner: cognito_identity",
                )
            )
        for index, pool in enumerate(self.identity_pools):
            if not _IDENTITY_POOL_ID.fullmatch(pool):
                problems.append(
                    Problem(
                        f"identity_pools[{index}]",
                        pool,
                        "a Cognito identity pool id <region>:<GUID>",
                        "copy the id from the identity pool's console page",
                    )
                )
        if self.organization_id is not None and not _ORGANIZATION_ID.fullmatch(self.organization_id):
            problems.append(
                Problem(
                    "organization_id",
                    self.organization_id,
                    "an AWS Organizations id o- followed by 10 to 32 lower-case letters or digits",
                    "copy the id from the AWS Organizations console (Settings), or leave organization_id out",
                )
            )
        if self.organization_id is not None and self.owner != "session":
            problems.append(
                Problem(
                    "organization_id",
                    self.organization_id,
                    "only with owner session (it bounds the source_identity pin)",
                    "remove organization_id, or set owner: session",
                )
            )
        for index, arn in enumerate(self.callers):
            if not _ROLE_ARN.fullmatch(arn):
                problems.append(
                    Problem(
                        f"callers[{index}]",
                        arn,
                        "an IAM role ARN arn:aws:iam::<account>:role/<name>",
                        "write the role's ARN (users and assumed-role sessions are not granted here)",
                    )
                )
        if len(set(self.callers)) != len(self.callers):
            problems.append(Problem("callers", list(self.callers), "each role once", "remove the repeated ARNs"))
        return problems

    def container_environment(self) -> dict[str, str]:
        """The LMI variables these settings give a served model (what ``SessionFrontDoor`` sets)."""
        return {"OPTION_ENABLE_STATEFUL_SESSIONS": "true", "OPTION_SESSIONS_EXPIRATION": str(self.expiration_seconds)}
