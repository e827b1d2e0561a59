"""The errors the EAGLE job functions raise on purpose.

Step Functions Retry/Catch match the class name (the Lambda ``errorType``), so each failure a state machine
handles has its own class, all built on ``EagleJobError``; ``index`` re-exports them under the same names.
"""

from __future__ import annotations


class EagleJobError(Exception):
    """Base class for errors raised on purpose by the EAGLE job Lambdas."""


class InvalidEventError(EagleJobError):
    """The event does not have the documented shape."""


class ConfigurationError(EagleJobError):
    """An environment variable of the function is missing or invalid (a deployment problem)."""


class UnsupportedArchitectureError(EagleJobError):
    """The model architecture has no EAGLE support in SageMaker optimization jobs."""


class UnsupportedModelSourceError(EagleJobError):
    """The model location is not an S3 URI (for example a Hugging Face Hub id)."""


class UnsupportedInstanceTypeError(EagleJobError):
    """The deployment instance type is not accepted by CreateOptimizationJob."""


class DatasetMissingError(EagleJobError):
    """No object exists under the training data S3 URI."""


class EmptyDatasetError(EagleJobError):
    """The dataset builder reported zero records."""


class ResourceLimitExceededError(EagleJobError):
    """SageMaker refused the job because an account quota is used up; retry later or raise the quota."""


class OptimizationJobConflictError(EagleJobError):
    """A job with the derived name exists but was created from different inputs."""


class WatermarkConflictError(EagleJobError):
    """The capture watermark is not where this run's plan found it: another run moved or holds it."""


class JobNotTerminalError(EagleJobError):
    """``record`` was called before the optimization job reached a terminal status."""
