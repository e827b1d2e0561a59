"""Settings of session-aware routing (``SessionSettings``)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..core.settings import Settings


class SessionSettings(Settings):
    """Session-aware (sticky) routing for multi-turn chat, with a front door that keeps the books.

    Turns on stateful sessions in the container (LMI: OPTION_ENABLE_STATEFUL_SESSIONS,
    OPTION_SESSIONS_EXPIRATION) and adds an HTTPS front door (IAM auth) that maps a caller's
    conversation id to a SageMaker session id.
    """

    expiration_seconds: Annotated[int, Field(ge=60, le=86400, description=(
        "Idle seconds after which a session expires. Default: 1200 (the LMI default)."))] = 1200
    max_body_bytes: Annotated[int, Field(ge=1024, le=6 * 1024 * 1024, description=(
        "Largest request body the front door accepts. Default: 1 MiB."))] = 1024 * 1024
    owner: Annotated[Literal["session", "role"], Field(description=(
        "Who owns a conversation. session: the full signed-in caller (an assumed-role session including its "
        "session name, so each person signed in through one SSO permission set is their own owner; a Cognito "
        "identity by its identity id). role: every session of an assumed role is one owner, for backends whose "
        "session names rotate (a Lambda function or ECS task per request); the backend then keeps its users "
        "apart. Default: session."))] = "session"

    def container_environment(self) -> dict[str, str]:
        """The LMI variables these settings give a served model (what ``SessionFrontDoor`` sets)."""
        return {"OPTION_ENABLE_STATEFUL_SESSIONS": "true", "OPTION_SESSIONS_EXPIRATION": str(self.expiration_seconds)}


