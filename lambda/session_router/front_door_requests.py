"""What a request may be: the Function URL event, its JSON body and the request models it must match.

A body is decoded (base64 when Lambda marked it so), limited to MAX_BODY_BYTES, parsed as a JSON object whose
nesting, numbers (finite: no NaN, Infinity or ``1e999999``, which Python reads as infinity) and strings the rest of
the path can carry, then validated against the route's pydantic model (strict, unknown fields refused); every
refusal is a 400/413 HttpError naming the field. The models are built on the first request with a body
(``_models``): pydantic is not imported on a cold start.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from front_door_answers import HttpError
from front_door_settings import INVOKE_BODY_MAX_BYTES

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from front_door_settings import Settings
    from pydantic import BaseModel

    # the class that _models() builds on first use: Any for annotations
    InvokeRequest: TypeAlias = Any

CONVERSATION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"
SESSION_ID_RE = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"  # SageMaker's SessionId pattern, at most 256 characters
SHOWN_COMPONENTS = 20  # component names an UnknownComponent message lists
MAX_JSON_DEPTH = 64  # nesting levels a request body may have (chat payloads need a handful)
RESERVED_BODY_KEYS = ("requestType",)  # session control keys the container intercepts


@functools.cache
def _models() -> SimpleNamespace:
    """The request models, built on the first request that has a body to check (pydantic is not imported on a
    cold start)."""
    from pydantic import BaseModel, ConfigDict, Field, StringConstraints

    ConversationId = Annotated[str, StringConstraints(pattern=CONVERSATION_ID_RE)]

    class InvokeRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        conversation_id: ConversationId | None = None
        component: str | None = None
        body: dict[str, Any]
        content_type: Literal["application/json"] = "application/json"

    class OpenRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        component: str | None = None

    class CloseRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        conversation_id: ConversationId = Field(...)

    class LogRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        conversation_id: ConversationId = Field(...)
        session_id: Annotated[str, StringConstraints(pattern=SESSION_ID_RE, max_length=256)] = Field(...)
        body: dict[str, Any]
        reply: dict[str, Any]

    return SimpleNamespace(
        ConversationId=ConversationId,
        InvokeRequest=InvokeRequest,
        OpenRequest=OpenRequest,
        CloseRequest=CloseRequest,
        LogRequest=LogRequest,
    )


_FIELD_HINTS = {
    "conversation_id": "conversation_id must be a string of 1-128 characters from A-Z a-z 0-9 . _ : -",
    "component": "component must be a string naming an allowed inference component",
    "body": "body is required and must be a JSON object (the request passed to the model)",
    "content_type": "content_type must be 'application/json' (the only type this front door sends)",
    "session_id": (
        "session_id must be the session id the stream ran on, as /open returned it (1-256 characters of A-Z a-z 0-9, "
        "with - between them)"
    ),
    "reply": "reply is required and must be a JSON object: the streamed reply assembled as a chat completion",
}


class _NotFinite(ValueError):
    """A number of the body that is not finite: ``NaN``, ``Infinity``, ``-Infinity``, or one beyond a double's range
    (``1e999999``), which Python reads as infinity and would send on as ``Infinity``, which is not JSON."""


def _reject_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotFinite(text)
    return number


def _not_finite(text: str) -> HttpError:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return HttpError(
        400,
        "InvalidJson",
        f"request body has the number {shown}, which is not finite: NaN, Infinity and numbers beyond a double's "
        "range (about 1.8e308) are not JSON, so the model could not be sent them; send a finite number",
    )


def _raw_body(raw_event: Mapping[str, Any], settings: Settings) -> bytes:
    """The request body as bytes. Lambda sets ``isBase64Encoded`` for non-text content types; anything odd
    in the event (a non-string body, a flag that is not a boolean, text that is not UTF-8) is the caller's
    request, so it is a 400, never a crash."""
    body = raw_event.get("body")
    if body is None:
        body = ""
    if not isinstance(body, str):
        raise HttpError(400, "InvalidBody", "request body must be text (JSON) or base64 text")
    flag = raw_event.get("isBase64Encoded", False)
    if flag not in (True, False):
        raise HttpError(400, "InvalidBody", "isBase64Encoded must be true or false")
    if flag:
        try:
            raw = base64.b64decode(body.encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise HttpError(400, "InvalidBody", "request body is not valid base64") from None
    else:
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in the event text
            raise HttpError(400, "InvalidBody", "request body is not valid UTF-8 text") from None
    if len(raw) > settings.max_body_bytes:
        raise HttpError(
            413,
            "PayloadTooLarge",
            f"request body is {len(raw)} bytes; the limit is {settings.max_body_bytes} bytes (MAX_BODY_BYTES). "
            "Send less context per turn: the session keeps earlier turns on the instance.",
        )
    return raw


def _too_deep() -> HttpError:
    return HttpError(
        400,
        "InvalidJson",
        f"request body nests arrays/objects more than {MAX_JSON_DEPTH} levels deep; send a flatter JSON object",
    )


def _check_json_tree(data: Any) -> None:
    """Reject what JSON allows but the rest of the path cannot carry, without recursion.

    - nesting deeper than MAX_JSON_DEPTH (re-encoding or validating it would recurse past Python's limit);
    - strings or keys with an unpaired UTF-16 surrogate (``"\\ud800"`` is valid JSON, but such text has no
      UTF-8 form, so it could never be sent to the model).
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value)
            continue
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key)
                stack.append((item, depth + 1))


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HttpError(
            400,
            "InvalidJson",
            "request body has a string with an unpaired UTF-16 surrogate "
            "(e.g. \\ud800 without its pair); such text has no UTF-8 form: send valid Unicode",
        ) from None


def parse(model: type[BaseModel], raw_event: Mapping[str, Any], settings: Settings) -> Any:
    from pydantic import ValidationError

    raw = _raw_body(raw_event, settings)
    if not raw.strip():
        raise HttpError(400, "InvalidJson", "request body is empty; send a JSON object")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError:
        raise _too_deep() from None
    except _NotFinite as exc:
        raise _not_finite(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        position = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise HttpError(400, "InvalidJson", f"request body is not valid UTF-8 JSON{position}") from None
    if not isinstance(data, dict):
        raise HttpError(400, "InvalidJson", f"request body must be a JSON object, got {type(data).__name__}")
    _check_json_tree(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else None
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields)
            message = f"unknown field {field!r}; allowed fields: {allowed}"
        elif first["type"] == "missing":
            message = f"{field} is required. " + _FIELD_HINTS.get(field or "", "")
        else:
            message = _FIELD_HINTS.get(field or "", first["msg"])
        raise HttpError(400, "InvalidField", message.strip(), field=field) from None


def check_component(name: str | None, settings: Settings) -> str | None:
    if name is None:
        return None
    if name not in _allowed_set(settings.allowed_components):
        shown = name if len(name) <= 80 else name[:77] + "..."
        listed = ", ".join(settings.allowed_components[:SHOWN_COMPONENTS])
        more = len(settings.allowed_components) - SHOWN_COMPONENTS
        raise HttpError(
            400,
            "UnknownComponent",
            f"component {shown!r} is not served by this front door; allowed components: {listed}"
            + (f" and {more} more" if more > 0 else ""),
            field="component",
        )
    return name


@functools.cache
def _allowed_set(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(names)


def model_body(request: InvokeRequest) -> bytes:
    for key in RESERVED_BODY_KEYS:
        if key in request.body:
            raise HttpError(
                400,
                "ReservedField",
                f"body.{key} is reserved for session control; use POST /close to end a conversation and "
                "omit conversation_id for a stateless call",
                field=f"body.{key}",
            )
    data = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > INVOKE_BODY_MAX_BYTES:
        raise HttpError(
            413,
            "PayloadTooLarge",
            f"model body is {len(data)} bytes; InvokeEndpoint accepts at most {INVOKE_BODY_MAX_BYTES}",
            field="body",
        )
    return data


def event_problem(event: Any) -> str | None:
    """Why ``event`` is not a Lambda Function URL (payload 2.0) event the resolver can route, or None."""
    if not isinstance(event, Mapping):
        return "the event is not a JSON object; invoke this function through its function URL"
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    if not isinstance(http, Mapping) or not isinstance(http.get("method"), str):
        return "the event has no requestContext.http.method; invoke this function through its function URL"
    if not isinstance(context, Mapping) or not isinstance(
        context.get("stage"), str
    ):  # Powertools reads it to route (a Function URL sends "$default")
        return "the event has no requestContext.stage; invoke this function through its function URL"
    if not isinstance(event.get("rawPath"), str):
        return "the event has no rawPath; invoke this function through its function URL"
    headers = event.get("headers", {})
    if headers is not None and (
        not isinstance(headers, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    ):
        return "the event's headers are not a map of strings"
    for name in ("cookies", "queryStringParameters", "pathParameters", "stageVariables"):
        value = event.get(name)
        if value is not None and not isinstance(value, (Mapping, list)):
            return f"the event's {name} is malformed"
    return None
