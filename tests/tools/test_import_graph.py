"""tools/import_graph.py: the library keeps its package layers and has no import cycle, the team's app imports the
public root only; the checker finds every kind of breach, wherever the import is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import import_graph

pytestmark = pytest.mark.synth


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "sagemaker_llm_cdk"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            if parent != Path(".") and not (package / parent / "__init__.py").exists():
                (package / parent / "__init__.py").write_text("", encoding="utf-8")
        path.write_text(text, encoding="utf-8")
    return package


def test_the_library_keeps_its_layers_and_has_no_cycle():
    assert import_graph.problems() == []


def test_the_team_app_imports_the_public_root_only_and_has_no_cycle():
    assert import_graph.team_problems() == []


def test_hosting_row_of_the_matrix_holds_only_core_and_the_settings_floor():
    rows = [line.split() for line in import_graph.matrix()]
    assert {row[2] for row in rows if row[0] == "hosting"} <= {"core", "settings"}


def test_the_allow_list_stays_within_two_edges_each_with_a_reason():
    assert len(import_graph.ALLOWED) <= import_graph.MAX_ALLOWED == 2
    assert all(reason.strip() for reason in import_graph.ALLOWED.values())


@pytest.mark.parametrize(
    ("where", "kind"),
    [
        ("from ..adapters.lora import Adapter\n", "module"),
        ("def make():\n    from ..adapters.lora import Adapter\n", "deferred"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..adapters.lora import Adapter\n", "type"),
    ],
)
def test_an_import_of_a_higher_layer_is_found_however_it_is_written(tmp_path, where, kind):
    package = _package(tmp_path, {"hosting/endpoint.py": where, "adapters/lora.py": "Adapter = 1\n"})
    assert import_graph.problems(package) == [
        f"hosting imports adapters, a higher layer: sagemaker_llm_cdk.hosting.endpoint:{where.count(chr(10))} ({kind})"
    ]


def test_a_sibling_in_the_same_layer_is_refused(tmp_path):
    package = _package(tmp_path, {"adapters/lora.py": "from ..capacity.plan import Plan\n", "capacity/plan.py": ""})
    assert import_graph.problems(package) == [
        "adapters imports capacity, a sibling in its layer: sagemaker_llm_cdk.adapters.lora:1 (module)"
    ]


def test_a_lower_layer_is_allowed(tmp_path):
    package = _package(tmp_path, {"eagle/loop.py": "from ..hosting.endpoint import E\n", "hosting/endpoint.py": ""})
    assert import_graph.problems(package) == []


def test_a_cycle_held_together_by_a_deferred_import_is_found(tmp_path):
    package = _package(
        tmp_path,
        {
            "hosting/endpoint.py": "from .model import Model\n",
            "hosting/model.py": "def make():\n    from .endpoint import Endpoint\n",
        },
    )
    assert import_graph.problems(package) == [
        "import cycle: sagemaker_llm_cdk.hosting.endpoint <-> sagemaker_llm_cdk.hosting.model"
    ]


def test_type_only_imports_inside_one_package_make_no_cycle(tmp_path):
    package = _package(
        tmp_path,
        {
            "hosting/endpoint.py": "from .model import Model\n",
            "hosting/model.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .endpoint import "
            "Endpoint\n",
        },
    )
    assert import_graph.problems(package) == []


def test_the_settings_floor_may_not_reach_cdk_through_its_imports(tmp_path):
    package = _package(
        tmp_path,
        {
            "settings/hosting.py": "def rule():\n    from ..core.names import name\n",
            "core/names.py": "from aws_cdk import Stack\n",
        },
    )
    assert import_graph.problems(package) == [
        "sagemaker_llm_cdk.settings.hosting (settings) reaches, through its imports, the construct module "
        "sagemaker_llm_cdk.core.names"
    ]


def test_a_package_without_a_layer_is_named(tmp_path):
    package = _package(tmp_path, {"extras/thing.py": "from ..core.names import name\n", "core/names.py": ""})
    assert import_graph.problems(package) == [
        "sagemaker_llm_cdk.extras.thing: package 'extras' has no layer in LAYERS (tools/import_graph.py)"
    ]


def test_an_allowed_edge_passes_and_one_no_longer_needed_is_named(tmp_path):
    package = _package(tmp_path, {"hosting/endpoint.py": "from ..eagle.serving import S\n", "eagle/serving.py": ""})
    every, _, _ = import_graph.collect(package)
    assert import_graph.layer_problems(every, allowed={("hosting", "eagle"): "why"}) == []
    assert import_graph.layer_problems(every, allowed={("hosting", "eagle"): "why", ("core", "settings"): "old"}) == [
        "ALLOWED edge core -> settings is no longer imported: remove it from the list"
    ]


def test_more_than_two_allowed_edges_are_refused(tmp_path):
    package = _package(tmp_path, {"core/names.py": ""})
    every, _, _ = import_graph.collect(package)
    allowed = {("hosting", "eagle"): "a", ("hosting", "adapters"): "b", ("hosting", "capacity"): "c"}
    assert "ALLOWED holds 3 edges against the layers; at most 2" in import_graph.layer_problems(every, allowed=allowed)


def _team(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_team_app_may_not_import_an_internal_module(tmp_path):
    repo = _team(
        tmp_path,
        {
            "app.py": "from sagemaker_llm_cdk import LlmEndpoint\n",
            "stacks/__init__.py": "",
            "stacks/platform.py": "from sagemaker_llm_cdk.hosting.endpoint import LlmEndpoint\n",
        },
    )
    assert import_graph.team_problems(repo) == [
        "stacks/platform.py:1 imports sagemaker_llm_cdk.hosting.endpoint: the team's app imports the library's public "
        "root only (from sagemaker_llm_cdk import ...)"
    ]


def test_a_cycle_among_the_team_stacks_is_found_even_through_a_type_only_import(tmp_path):
    repo = _team(
        tmp_path,
        {
            "app.py": "",
            "stacks/__init__.py": "",
            "stacks/pipeline.py": "from .routers import RouterStack\n",
            "stacks/routers.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .pipeline import "
            "Pipeline\n",
        },
    )
    assert import_graph.team_problems(repo) == ["import cycle: stacks.pipeline <-> stacks.routers"]


def test_the_command_exits_1_and_prints_each_problem(monkeypatch, capsys):
    monkeypatch.setattr(import_graph, "problems", lambda: ["hosting imports eagle, a higher layer: x:1 (module)"])
    monkeypatch.setattr(import_graph, "team_problems", lambda: [])
    assert import_graph.main([]) == 1
    assert capsys.readouterr().out == "hosting imports eagle, a higher layer: x:1 (module)\n"
