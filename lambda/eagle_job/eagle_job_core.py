"""The pure logic of the EAGLE optimization job Lambdas in one namespace: naming, requests, results, decisions.

Nothing here calls AWS; ``index.py`` does the I/O and passes plain data in. Every function is deterministic so
a retried Step Functions state computes the same job name, request and record. Each concept has its module,
whose names this one re-exports: ``job_errors`` (the errors Step Functions matches by name), ``job_request``
(architectures, model source, S3 URIs, the job's name and its CreateOptimizationJob request), ``job_settings``
(``start``'s environment), ``job_watermark`` (the watermark claim's value format, shared with the dataset
builder), ``job_status`` (terminal statuses), ``job_results`` (parsing the job's benchmark results) and
``job_decision`` (whether a run's head is promoted).
"""

from __future__ import annotations

from job_decision import Decision as Decision
from job_decision import Incumbent as Incumbent
from job_decision import decide as decide
from job_decision import pretrained_incumbent as pretrained_incumbent
from job_errors import ConfigurationError as ConfigurationError
from job_errors import DatasetMissingError as DatasetMissingError
from job_errors import EagleJobError as EagleJobError
from job_errors import EmptyDatasetError as EmptyDatasetError
from job_errors import InvalidEventError as InvalidEventError
from job_errors import JobNotTerminalError as JobNotTerminalError
from job_errors import OptimizationJobConflictError as OptimizationJobConflictError
from job_errors import ResourceLimitExceededError as ResourceLimitExceededError
from job_errors import UnsupportedArchitectureError as UnsupportedArchitectureError
from job_errors import UnsupportedInstanceTypeError as UnsupportedInstanceTypeError
from job_errors import UnsupportedModelSourceError as UnsupportedModelSourceError
from job_errors import WatermarkConflictError as WatermarkConflictError
from job_request import EAGLE_VERSION_BY_ARCHITECTURE as EAGLE_VERSION_BY_ARCHITECTURE
from job_request import JOB_NAME_MAX as JOB_NAME_MAX
from job_request import JOB_NAME_PATTERN as JOB_NAME_PATTERN
from job_request import JOB_NAME_PREFIX as JOB_NAME_PREFIX
from job_request import build_create_request as build_create_request
from job_request import check_model_source as check_model_source
from job_request import eagle_version_for as eagle_version_for
from job_request import job_name as job_name
from job_request import job_output_uri as job_output_uri
from job_request import join_s3 as join_s3
from job_request import parse_s3_uri as parse_s3_uri
from job_request import tag_value as tag_value
from job_results import CONCURRENCY_KEYS as CONCURRENCY_KEYS
from job_results import LABEL_KEYS as LABEL_KEYS
from job_results import LATENCY_KEYS as LATENCY_KEYS
from job_results import MAX_DEPTH as MAX_DEPTH
from job_results import THROUGHPUT_KEYS as THROUGHPUT_KEYS
from job_results import BenchmarkRow as BenchmarkRow
from job_results import ResultsSummary as ResultsSummary
from job_results import classify_label as classify_label
from job_results import extract_rows as extract_rows
from job_results import parse_json_documents as parse_json_documents
from job_results import summarize_results as summarize_results
from job_settings import StartSettings as StartSettings
from job_settings import settings_from_env as settings_from_env
from job_status import TERMINAL_STATUSES as TERMINAL_STATUSES
from job_watermark import CLAIM_EXPIRY_SECONDS as CLAIM_EXPIRY_SECONDS
from job_watermark import EMPTY_WATERMARK as EMPTY_WATERMARK
from job_watermark import WatermarkClaim as WatermarkClaim
from job_watermark import claim_value as claim_value
from job_watermark import decode_claim as decode_claim
