"""Old module paths (before the feature packages) still import, forward to the new modules, and warn."""
from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

import sagemaker_llm_cdk
from sagemaker_llm_cdk import _moved

# One name each old module held, and the module that holds it now.
CASES = {
    "settings": ("ModelSpec", "sagemaker_llm_cdk.hosting.settings"),
    "endpoint": ("LlmEndpoint", "sagemaker_llm_cdk.hosting.endpoint"),
    "capacity_plan": ("CapacityPlanSpec", "sagemaker_llm_cdk.capacity.settings"),
    "monitoring": ("MonitoringSettings", "sagemaker_llm_cdk.operations.settings"),
    "removal": ("set_removal", "sagemaker_llm_cdk.core.removal"),
    "acknowledgements": ("checkov_skip", "sagemaker_llm_cdk.core.checkov"),
    "images": ("LMI_IMAGES", "sagemaker_llm_cdk.hosting.images"),
    "config_layers": ("load_layers", "sagemaker_llm_cdk.config.layers"),
}


def _fresh(name: str) -> None:
    sys.modules.pop(f"sagemaker_llm_cdk.{name}", None)


@pytest.mark.parametrize("old", sorted(CASES))
def test_old_path_forwards_with_a_warning(old):
    name, new = CASES[old]
    _fresh(old)
    with pytest.warns(DeprecationWarning, match=rf"sagemaker_llm_cdk\.{old} moved to .*{new}"):
        module = importlib.import_module(f"sagemaker_llm_cdk.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_every_target_exists_and_no_old_module_file_remains():
    root = sagemaker_llm_cdk.__path__[0]
    for old, targets in _moved.MOVED.items():
        assert importlib.util.find_spec(f"sagemaker_llm_cdk.{old}").origin is None, old  # a forwarder, not a file
        for target in targets:
            assert importlib.import_module(f"sagemaker_llm_cdk.{target}").__file__.startswith(root)


def test_unknown_name_on_an_old_path_is_an_attribute_error():
    _fresh("errors")
    with pytest.warns(DeprecationWarning):
        module = importlib.import_module("sagemaker_llm_cdk.errors")
    with pytest.raises(AttributeError, match=r"'errors' \(moved to core\.errors\) has no attribute 'Nope'"):
        module.Nope  # noqa: B018


def test_former_eagle_module_names_come_from_the_eagle_package():
    from sagemaker_llm_cdk.eagle.optimization import EagleOptimization

    with pytest.warns(DeprecationWarning, match=r"sagemaker_llm_cdk\.eagle\.EagleOptimization moved"):
        from sagemaker_llm_cdk.eagle import EagleOptimization as old
    assert old is EagleOptimization
    with pytest.raises(AttributeError):
        importlib.import_module("sagemaker_llm_cdk.eagle").Nope  # noqa: B018
