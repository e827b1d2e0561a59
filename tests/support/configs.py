"""Shared by the config tests: the default config as data with one change, and the problems a parse reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sagemaker_llm_cdk import ConfigurationError, parse_config

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "config" / "default.yaml"


def base() -> dict:
    return yaml.safe_load(DEFAULT.read_text())


def endpoint(**changes) -> dict:
    data = base()
    data["endpoints"][0].update(changes)
    return data


def model(**changes) -> dict:
    data = base()
    data["endpoints"][0]["models"][0].update(changes)
    return data


def lora_model(**changes) -> dict:
    """The default config with ``changes`` to its adapter base (models[1]: LoRA, no EAGLE)."""
    data = base()
    data["endpoints"][0]["models"][1].update(changes)
    return data


def problems(data) -> list[str]:
    with pytest.raises(ConfigurationError) as info:
        parse_config(data, source="test.yaml")
    return [p.line() for p in info.value.problems]
