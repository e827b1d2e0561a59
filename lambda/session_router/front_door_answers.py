"""What the caller gets back: JSON answers, the HttpError every refusal is raised as, and the counts of both.

Every error is answered ``{"error": {"code", "message", "field"?, "model_status"?}}`` with its HTTP status and
counted (ClientErrors, ServerErrors, or Throttled for back-pressure, which the errors alarm does not count); an
unexpected exception is a 500 whose log names its type and place, never its text (it may quote the request).
Powertools' event handler is imported only when an answer is built.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response
    from front_door_settings import ConfigurationError

logger = Logger()
metrics = Metrics()


class HttpError(Exception):
    """An error answered to the caller as ``{"error": {...}}`` with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        model_status: int | None = None,
        headers: dict[str, str] | None = None,
        backpressure: bool = False,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.model_status = model_status
        self.headers = headers or {}
        self.backpressure = backpressure
        """A 5xx that says "busy, retry" rather than "failed": counted as Throttled, never as ServerErrors."""


def json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response[str]:
    from aws_lambda_powertools.event_handler import Response

    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
        headers=headers,
    )


def count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def answer_http_error(error: HttpError) -> Response[str]:
    # ServerErrors feeds the front door's errors alarm: back-pressure is counted as Throttled instead.
    count("Throttled" if error.backpressure else "ClientErrors" if error.status < 500 else "ServerErrors")
    logger.info("request rejected", extra={"status": error.status, "error_code": error.code, "field": error.field})
    payload: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.field:
        payload["field"] = error.field
    if error.model_status is not None:
        payload["model_status"] = error.model_status
    return json_response(error.status, {"error": payload}, error.headers)


def answer_route_not_found(method: str, path: str) -> Response[str]:
    return answer_http_error(
        HttpError(
            404,
            "RouteNotFound",
            f"no route for {_quoted(method)} {_quoted(path)}; use POST /open, POST /invoke, POST /log or POST /close",
        )
    )


def _quoted(text: str) -> str:
    """``text`` as the caller sent it when it is short printable ASCII, else its ``repr`` cut to 80 characters: an
    answer never echoes a huge path, control characters or a lone surrogate (which has no UTF-8 form)."""
    if len(text) <= 80 and text.isascii() and text.isprintable():
        return text
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def answer_configuration_error(error: ConfigurationError) -> Response[str]:
    logger.error("configuration error", extra={"detail": str(error)})
    return answer_http_error(HttpError(500, "Misconfigured", str(error)))


def answer_unexpected(error: Exception) -> Response[str]:
    # Never log the exception text: it may quote request data. Type and location are enough to debug.
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
    logger.error("unhandled error", extra={"error_type": type(error).__name__, "where": where})
    return answer_http_error(HttpError(500, "InternalError", "internal error; see the function's logs"))
