"""Where the Lambda handler sources are: inside the wheel, or in the repository's lambda/ folder.

Every handler imports the shared package ``llm_cdk_shared`` (``lambda/_shared/llm_cdk_shared/``), so a
function's asset is ``staged_handler(name)``: the handler folder plus a copy of that package, in a folder
named by the hash of what it holds (deterministic, reused by later synths). Each asset is self-contained.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

_PACKAGED = Path(__file__).resolve().parents[1] / "_lambda"
_REPOSITORY = Path(__file__).resolve().parents[3] / "lambda"
SHARED_FOLDER = "_shared"
SHARED_PACKAGE = "llm_cdk_shared"
"""The handlers' shared package: ``lambda/_shared/llm_cdk_shared/``, copied into every function's asset."""
_STAGING_FORMAT = b"1"  # bump to change every staged folder's name (a change of how assets are laid out)


def handler_dir(name: str) -> str:
    """The folder holding ``lambda/<name>/index.py``, whichever way the library was installed."""
    for root in (_PACKAGED, _REPOSITORY):
        folder = root / name
        if (folder / "index.py").is_file():
            return str(folder)
    raise FileNotFoundError(
        f"Lambda source '{name}' not found in {_PACKAGED} or {_REPOSITORY}; reinstall sagemaker-llm-cdk"
    )


def shared_package_dir() -> Path:
    """``lambda/_shared/llm_cdk_shared`` (in the wheel: ``sagemaker_llm_cdk/_lambda/_shared/llm_cdk_shared``)."""
    for root in (_PACKAGED, _REPOSITORY):
        folder = root / SHARED_FOLDER / SHARED_PACKAGE
        if (folder / "__init__.py").is_file():
            return folder
    raise FileNotFoundError(
        f"The handlers' shared package {SHARED_PACKAGE} is not in {_PACKAGED / SHARED_FOLDER} or "
        f"{_REPOSITORY / SHARED_FOLDER}; reinstall sagemaker-llm-cdk"
    )


def _source_files(folder: Path) -> list[Path]:
    """The files a function ships from ``folder``: not bytecode, and nothing a tool or editor leaves beside the
    sources (hidden files and folders such as ``.mypy_cache``, ``.pytest_cache``, ``.ruff_cache``, ``.DS_Store``;
    ``*.swp`` and ``*~``), which would ship with the code and change its hash, hence redeploy it."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not _tool_litter(p.relative_to(folder)))


def _tool_litter(relative: Path) -> bool:
    return (
        any(part == "__pycache__" or part.startswith(".") for part in relative.parts)
        or relative.suffix in (".pyc", ".swp")
        or relative.name.endswith("~")
    )


def _holds(folder: Path, contents: Mapping[str, bytes]) -> bool:
    """Whether ``folder`` still holds each file of ``contents`` with its size (its name is their hash)."""
    for relative, content in contents.items():
        try:
            if (folder / relative).stat().st_size != len(content):
                return False
        except OSError:
            return False
    return True


def staged_handler(name: str, extra_files: Mapping[str, bytes] | None = None) -> str:
    """A folder holding ``lambda/<name>/``, the shared package under ``llm_cdk_shared/`` and ``extra_files``
    (relative path -> content), staged once per distinct content and named by its hash."""
    source = Path(handler_dir(name))
    shared = shared_package_dir()
    files: dict[str, Path | bytes] = {}
    for path in _source_files(source):
        files[path.relative_to(source).as_posix()] = path
    for path in _source_files(shared):
        files[f"{SHARED_PACKAGE}/{path.relative_to(shared).as_posix()}"] = path
    for relative, content in sorted((extra_files or {}).items()):
        files[relative] = content
    digest = hashlib.sha256(_STAGING_FORMAT)
    contents: dict[str, bytes] = {}
    for relative in sorted(files):
        item = files[relative]
        contents[relative] = item if isinstance(item, bytes) else item.read_bytes()
        digest.update(relative.encode() + b"\0" + contents[relative] + b"\0")
    staged = Path(tempfile.gettempdir()) / f"sagemaker-llm-cdk-asset-{name}-{digest.hexdigest()[:32]}"
    if staged.is_dir() and not _holds(staged, contents):  # e.g. a temp cleaner removed files from it
        shutil.rmtree(staged, ignore_errors=True)
    if not staged.is_dir():  # only ever made whole, by the rename below
        work = Path(tempfile.mkdtemp(prefix=staged.name + "-", dir=staged.parent))
        try:
            for relative, content in contents.items():
                target = work / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            work.chmod(0o755)  # mkdtemp makes it private; the asset is read by the CDK CLI and zipped as is
            try:
                os.replace(work, staged)  # atomic: a concurrent synth either sees all of it or stages its own
            except OSError:
                if not staged.is_dir():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return str(staged)
