"""tools/import_graph.py: the library has no import cycle and keeps its layers; the checker finds both kinds."""

from __future__ import annotations

from pathlib import Path

from tools import import_graph


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "sagemaker_llm_cdk"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_library_has_no_cycle_and_keeps_its_layers():
    assert import_graph.problems() == []


def test_finds_a_cycle_held_together_by_a_deferred_import(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "hosting/__init__.py": "",
            "hosting/endpoint.py": "from .model import Model\n",
            "hosting/model.py": "def make():\n    from .endpoint import Endpoint\n",
        },
    )
    assert import_graph.problems(package) == [
        "import cycle: sagemaker_llm_cdk.hosting.endpoint <-> sagemaker_llm_cdk.hosting.model"
    ]


def test_type_checking_imports_and_own_package_do_not_count(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "hosting/__init__.py": "from .endpoint import Endpoint\n",
            "hosting/endpoint.py": "from .model import Model\n",
            "hosting/model.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .endpoint import Endpoint\n",
        },
    )
    assert import_graph.problems(package) == []


def test_core_may_not_import_a_feature(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "hosting/__init__.py": "",
            "core/functions.py": "from ..hosting.images import account\n",
            "settings/images.py": "account = 1\n",
        },
    )
    assert import_graph.problems(package) == [
        "sagemaker_llm_cdk.core.functions (core) imports the feature module sagemaker_llm_cdk.hosting",
        "sagemaker_llm_cdk.core.functions (core) imports the feature module sagemaker_llm_cdk.settings.images",
    ]


def test_config_may_not_reach_a_construct_module(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "config/__init__.py": "",
            "hosting/__init__.py": "",
            "settings/config.py": "from ..hosting.settings import ModelSpec\n",
            "settings/hosting.py": "def rule():\n    from .endpoint import Endpoint\n",
            "hosting/endpoint.py": "from aws_cdk import Stack\n",
        },
    )
    assert import_graph.problems(package) == [
        "sagemaker_llm_cdk.settings.config (config) imports, through its imports, the construct module "
        "sagemaker_llm_cdk.hosting.endpoint"
    ]
