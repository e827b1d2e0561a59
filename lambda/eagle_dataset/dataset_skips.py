"""How the converter accounts for every line: the components lines are counted under when the record names
none (``DEFAULT_COMPONENT``, and ``UNATTRIBUTED`` for lines kept out of every training set), every reason a line
can be skipped for (``SKIP_REASONS``), and ``Skip``, which a step raises to skip the current line with its
reason. Each skip is counted under its reason, so ``records_in == converted + duplicates +
sum(skipped.values())`` holds per component.
"""

from __future__ import annotations

#: Component name of endpoints without inference components (the name ``finalize`` falls back
#: to, and what callers pass as ``default_component`` when every record is the endpoint's own).
DEFAULT_COMPONENT = "base"
#: Bucket for lines whose component is not known: the line is not readable at all, or it names
#: no component while the endpoint may host several (AWS does not document that Data Capture
#: records of inference-component endpoints name the component). Records here never reach a
#: component's training set. The leading underscore cannot occur in a SageMaker name.
UNATTRIBUTED = "_unattributed"

#: Every reason a line can be skipped for, in the order they are checked.
SKIP_REASONS: tuple[str, ...] = (
    "line_too_long",  # longer than max_line_bytes; never buffered
    "blank_line",  # empty or whitespace only
    "not_utf8",  # line (or a decoded payload) is not valid UTF-8
    "truncated_line",  # JSON ends early (object cut off mid-write)
    "invalid_json_line",  # not JSON at all (binary junk, garbage)
    "missing_capture_data",  # JSON, but no captureData object
    "corrupt_compressed_object",  # gzip data that does not inflate (or is cut off): rest of the object
    "unsupported_compression",  # zstd, bzip2, xz or zip bytes: the object is not read
    "unattributed_component",  # names no inference component and none can be assumed (kept apart)
    "not_a_turn_record",  # front-door source: JSON, but not {"component", "messages"} (TurnLog format)
    "invalid_component_name",  # inferenceComponentName is not a valid SageMaker name
    "too_many_components",  # more distinct components in one batch than allowed
    "missing_request",  # no endpointInput (capture configured for Output only)
    "missing_response",  # no endpointOutput (capture configured for Input only)
    "unsupported_encoding",  # encoding is not JSON, BASE64 or CSV, or data is not a string
    "undecodable_base64",  # encoding BASE64 but data is not base64
    "request_not_json",  # request payload is not a JSON document
    "unsupported_request_shape",  # JSON, but none of the known LLM request shapes
    "non_text_content",  # chat content parts other than text (images, audio, ...)
    "unsupported_message_role",  # legacy function_call / function messages, unknown roles, malformed tool calls
    "error_response",  # the model container answered with an error (an error object; LMI: empty failed generation)
    "unsupported_response_shape",  # none of the known LLM response shapes
    "empty_response",  # the model produced no text
    "invalid_unicode",  # text holds lone surrogates; cannot be written as UTF-8
    "conversation_prefix",  # front-door source: a later turn's record of the batch holds this whole conversation
)


class Skip(Exception):
    """Control flow of the converter's steps: the current line is skipped for ``reason`` (one of
    ``SKIP_REASONS``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
