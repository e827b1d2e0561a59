"""This team's stacks: the LLM platform stack built from a deployment config, and the synth checks."""
from .checks import attach_checks
from .llm_platform import LlmPlatformStack

__all__ = ["LlmPlatformStack", "attach_checks"]
