"""Pure logic of the EAGLE dataset builder: Data Capture lines in, chat-format JSONL records out.

Nothing here talks to AWS. Everything works on iterables of ``bytes`` so the Lambda handler
can feed it a streamed S3 body and the tests and the benchmark can feed it local files. This module
names the builder's API in one place; each concept lives in its own module:

* ``dataset_streams`` - :func:`iter_bounded_lines` splits a stream of byte chunks into lines without
  ever holding more than ``max_line_bytes`` of one line (longer lines become :class:`OversizedLine`);
  :func:`iter_bounded_line_views` does the same without copying lines out of their chunk;
  :func:`iter_object_data` inflates gzip; :func:`iter_json_array` streams the elements of a large JSON
  array (Step Functions ``ResultWriter`` files) from byte chunks.
* ``dataset_converter`` - :class:`BatchConverter` turns Data Capture records (one JSON document per line, see
  https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html)
  into ``{"messages": [...]}`` lines, per inference component, with exact-duplicate removal
  and per-reason skip counts. Invariant, per component and in total:
  ``records_in == converted + duplicates + sum(skipped.values())``. It reads with ``dataset_payloads``
  (capture payloads), ``dataset_requests`` / ``dataset_messages`` / ``dataset_templates`` (requests as chat
  turns), ``dataset_responses`` (responses as text), ``dataset_agents`` (tool calls and tool results) and
  writes with ``dataset_records``; ``dataset_skips`` names every reason a line is skipped for; front-door turns
  are written once per conversation (``dataset_prefixes``).
* ``dataset_formats`` - :func:`detect_dataset_format` checks user-supplied datasets (ShareGPT, OpenAI chat,
  OpenAI completions); :func:`is_chat_record` (``dataset_records``) checks written records.
* ``dataset_keys`` - the output prefix the dataset is written under and the component a capture key names.
* ``dataset_fast_json`` - orjson and pybase64 when they import, else the standard library (same output).
"""

from __future__ import annotations

from dataset_agents import DROPPED_PARTS, agent_messages, agent_reply, encode_agent_record
from dataset_converter import BatchConverter, ComponentStats
from dataset_fast_json import FAST_JSON_AVAILABLE
from dataset_fast_json import loads_fast as _loads_fast
from dataset_formats import DATASET_FORMATS, detect_dataset_format
from dataset_keys import OUTPUT_PREFIX_MAX_BYTES, component_from_key, output_prefix_problem
from dataset_messages import Message
from dataset_messages import chat_messages as _chat_messages
from dataset_messages import plain_chat as _plain_chat
from dataset_records import encode_record, encode_record_fast, is_chat_record, one_line
from dataset_requests import echoes_prompt, request_to_messages
from dataset_responses import _response_from_stream, response_to_text
from dataset_responses import plain_response as _plain_response
from dataset_responses import sse_text_fast as _sse_text_fast
from dataset_skips import DEFAULT_COMPONENT, SKIP_REASONS, UNATTRIBUTED
from dataset_skips import Skip as _Skip
from dataset_streams import (
    OversizedLine,
    UnreadableData,
    detect_compression,
    iter_bounded_line_views,
    iter_bounded_lines,
    iter_gunzip,
    iter_json_array,
    iter_object_data,
)
from dataset_templates import text_messages as _text_messages

__all__ = [
    "DROPPED_PARTS",
    "agent_messages",
    "agent_reply",
    "encode_agent_record",
    "BatchConverter",
    "ComponentStats",
    "FAST_JSON_AVAILABLE",
    "DATASET_FORMATS",
    "detect_dataset_format",
    "OUTPUT_PREFIX_MAX_BYTES",
    "component_from_key",
    "output_prefix_problem",
    "Message",
    "encode_record",
    "encode_record_fast",
    "is_chat_record",
    "one_line",
    "echoes_prompt",
    "request_to_messages",
    "response_to_text",
    "DEFAULT_COMPONENT",
    "SKIP_REASONS",
    "UNATTRIBUTED",
    "OversizedLine",
    "UnreadableData",
    "detect_compression",
    "iter_bounded_line_views",
    "iter_bounded_lines",
    "iter_gunzip",
    "iter_json_array",
    "iter_object_data",
    # the converter's inner steps, which the builder's tests call directly
    "_loads_fast",
    "_chat_messages",
    "_plain_chat",
    "_response_from_stream",
    "_plain_response",
    "_sse_text_fast",
    "_Skip",
    "_text_messages",
]
