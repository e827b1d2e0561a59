"""EAGLE speculative decoding: the optimization loop (state machine, jobs, datasets) and serving a promoted head,
with their settings."""

from typing import Any


def __getattr__(name: str) -> Any:
    """Names of the former module ``sagemaker_llm_cdk.eagle`` (now ``eagle.optimization``), with a warning."""
    import importlib
    import warnings

    optimization = importlib.import_module(f"{__name__}.optimization")
    if name.startswith("__") or not hasattr(optimization, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__}.{name} moved to {__name__}.optimization.{name}; import public names from sagemaker_llm_cdk itself",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(optimization, name)
