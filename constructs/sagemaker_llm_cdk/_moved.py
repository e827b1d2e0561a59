"""Old module paths (before the library had one package per feature), kept working with a DeprecationWarning.

``import sagemaker_llm_cdk.endpoint`` or ``from sagemaker_llm_cdk.settings import ModelSpec`` still works: the
old name is a thin module that forwards attribute lookups to the modules that now hold them. Public names
come from the package root (``sagemaker_llm_cdk.__all__``); these paths go away in the next major version.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any, Sequence

MOVED: dict[str, tuple[str, ...]] = {
    "acknowledgements": ("core.nag", "core.checkov"),
    "adapter_manifest": ("adapters.manifest",),
    "adapter_stack": ("adapters.adapter_stack",),
    "bundling": ("core.bundling",),
    "capacity_guard": ("capacity.guard",),
    "capacity_plan": ("capacity.capacity_plan", "capacity.settings"),
    "component_base": ("hosting.component_base",),
    "config_layers": ("config.layers",),
    "cost": ("operations.cost",),
    "deployment_check": ("operations.deployment_check",),
    "endpoint": ("hosting.endpoint", "hosting.settings"),
    "errors": ("core.errors",),
    "functions": ("core.functions", "core.accounts"),
    "grants": ("core.grants",),
    "images": ("hosting.images", "core.accounts"),
    "jumpstart": ("hosting.jumpstart",),
    "lora_adapter": ("adapters.lora_adapter", "adapters.settings"),
    "model_component": ("hosting.model_component", "core.instances"),
    "monitoring": ("operations.monitoring", "operations.settings"),
    "naming": ("core.naming",),
    "pricing": ("operations.pricing",),
    "regions": ("core.regions",),
    "removal": ("core.removal",),
    "schedule_expression": ("core.schedule_expression",),
    "service_model": ("core.service_model",),
    "session_front_door": ("sessions.front_door",),
    "settings": ("core.settings", "hosting.settings", "adapters.settings", "sessions.settings", "eagle.settings"),
    "speculative_decoding": ("eagle.serving",),
    "storage": ("core.storage",),
    "turn_log": ("sessions.turn_log",),
    "validation": ("core.validation", "core.settings"),
}
"""Old module (under the package) -> the modules that hold its names now, searched in order."""


def _forwarder(old: str, package: str, targets: Sequence[str]) -> types.ModuleType:
    module = types.ModuleType(f"{package}.{old}", f"Moved: see {', '.join(f'{package}.{t}' for t in targets)}.")

    def __getattr__(name: str) -> Any:
        for target in targets:
            real = importlib.import_module(f"{package}.{target}")
            if hasattr(real, name):
                return getattr(real, name)
        raise AttributeError(f"module {package}.{old!r} (moved to {', '.join(targets)}) has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({n for t in targets for n in dir(importlib.import_module(f"{package}.{t}"))})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        prefix, _, old = fullname.rpartition(".")
        if prefix != self.package or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        old = spec.name.rpartition(".")[2]
        targets = MOVED[old]
        warnings.warn(f"{spec.name} moved to {', '.join(f'{self.package}.{t}' for t in targets)}; import public "
                      f"names from {self.package} itself", DeprecationWarning, stacklevel=2)
        return _forwarder(old, self.package, targets)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install(package: str) -> None:
    """Let the old module paths of ``package`` import (once per process)."""
    if not any(isinstance(f, _Finder) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(_Finder(package))
