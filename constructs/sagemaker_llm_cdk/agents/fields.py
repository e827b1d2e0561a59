"""The pydantic fields both connectors declare (LangChain's and LlamaIndex's), written once: each class writes
``name: fields.X = None``. Only the connector modules import this (it needs pydantic; ``options`` does not)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

EndpointName = Annotated[str | None, Field(description="The endpoint, when no transport is given.")]
ComponentName = Annotated[str | None, Field(description="The component, when no transport is given.")]
RegionName = Annotated[str | None, Field(description="The endpoint's region, for the client it builds.")]
Client = Annotated[Any, Field(exclude=True, description="A boto3/botocore sagemaker-runtime client.")]
ProfileName = Annotated[
    str | None, Field(exclude=True, description="A profile of the AWS config files, for the client it builds.")
]
EndpointKwargs = Annotated[
    dict[str, str] | None,
    Field(description="More InvokeEndpoint parameters: CustomAttributes, InferenceId, TargetVariant..."),
]
SendReasoning = Annotated[
    bool | None,
    Field(
        description=(
            "Send an assistant tool-call message's reasoning back as `reasoning` (True), never (False), or when "
            "model_family needs it (None, the default)."
        )
    ),
]
ModelFamily = Annotated[
    str | None,
    Field(
        description=(
            "The served model's family when its tool-call chains need their reasoning sent back: gpt-oss, kimi-k2 "
            "or minimax-m2 (the client cannot see the architecture). Default: none."
        )
    ),
]
