"""Python packages shipped inside Lambda assets, installed at synth from the registry's wheels, without Docker.

Two uses (see ``functions.python_function``):

* ``sdk_layer``: one Lambda layer per stack with the pinned AWS SDK (``lambda/sdk-requirements.txt``:
  boto3, botocore and their dependencies, exact versions). The Lambda runtime's bundled boto3 lags
  releases and rejects requests for APIs it does not know (``ModelSpeculativeDecodingConfig`` needs
  botocore 1.42+); functions that call SageMaker get this layer, whose ``/opt/python`` comes before the
  runtime's own packages on ``sys.path``.
* a handler folder's own ``requirements.txt`` (e.g. ``orjson`` for the dataset builder): installed into
  that function's asset next to its code.

How: ``pip install --only-binary=:all: --platform manylinux2014_x86_64 ... --python-version 3.13
--implementation cp --target <dir>`` with the synthesizing Python's own pip, so wheels are chosen for
the Lambda runtime's Python and architecture, not the machine's. This is CDK *local* bundling
(``ILocalBundling``): no Docker. Each install is cached in ``$SAGEMAKER_LLM_CDK_CACHE`` (default
``~/.cache/sagemaker-llm-cdk/lambda-packages``) under the hash of the requirements, platform and Python
version, and the asset hash is that same hash (plus the handler's sources): a synth with a warm cache
copies (hard-links where it can) and downloads nothing. A packages-only asset (the SDK layer) is a zip made
once from the cached install (``cached_archive``): every synth links one file into the cloud assembly
instead of recreating the install's thousand folders. The requirement files ship inside the wheel,
so an outside team's synth installs exactly the same versions. A synth that cannot reach the package
index and has no cached install fails with an error that says so (the Docker fallback is never used).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, BundlingOutput, ILocalBundling
from aws_cdk import aws_lambda as lambda_

PYTHON_VERSION = "3.13"
"""Python of the Lambda runtime the packages are installed for (``functions.RUNTIME``)."""
PLATFORMS: dict[str, tuple[str, ...]] = {
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"),
    "arm64": ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"),
}
"""Wheel platform tags per Lambda architecture (Amazon Linux 2023: glibc 2.34)."""
CACHE_ENV = "SAGEMAKER_LLM_CDK_CACHE"
_FORMAT = "1"  # bump to invalidate every cached install (a change of how installs are laid out)


def cache_root() -> Path:
    """Where installs are cached: ``$SAGEMAKER_LLM_CDK_CACHE``, else ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sagemaker-llm-cdk" / "lambda-packages"


def requirements_hash(requirements: Path, architecture: str = "x86_64", python_version: str = PYTHON_VERSION) -> str:
    """Hash of what an install depends on: the requirement lines, the platform and the Python version."""
    lines = [line.strip() for line in requirements.read_text(encoding="utf-8").splitlines()]
    wanted = [line for line in lines if line and not line.startswith("#")]
    text = "\n".join([_FORMAT, architecture, python_version, *wanted])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pinned_versions(requirements: Path) -> dict[str, str]:
    """``name -> version`` of the ``name==version`` lines of a requirements file (lower-case names)."""
    pins: dict[str, str] = {}
    for raw in requirements.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def find_pip() -> list[str]:
    """How to run pip: the synthesizing Python's own (``python -m pip``), else a ``pip3``/``pip`` on ``PATH``.

    Any pip will do, whichever Python it belongs to: the command names the runtime's Python version,
    implementation and platforms and installs into a target folder. A virtualenv made without pip (``uv venv``,
    ``python -m venv --without-pip``) synthesizes with the machine's pip. With none, one clear error says so.
    """
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise RuntimeError(
        f"The Lambda packages are installed at synth with pip, and there is none: {sys.executable} has no pip module "
        "and no pip3 or pip is on PATH. Install pip into this environment (`python -m ensurepip`, or "
        "`uv pip install pip` in a uv virtualenv), or put a pip on PATH; Docker is not used."
    )


def pip_command(
    requirements: Path, target: Path, architecture: str = "x86_64", python_version: str = PYTHON_VERSION
) -> list[str]:
    """The pip command that installs ``requirements`` for the Lambda runtime into ``target``."""
    command = [
        *find_pip(),
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--no-warn-script-location",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
        "--target",
        str(target),
        "-r",
        str(requirements),
    ]
    for platform in PLATFORMS[architecture]:
        command += ["--platform", platform]
    return command


def cached_install(requirements: Path, architecture: str = "x86_64", python_version: str = PYTHON_VERSION) -> Path:
    """The folder holding ``requirements`` installed for the runtime; installed (once) if not cached yet."""
    root = cache_root()
    final = root / requirements_hash(requirements, architecture, python_version)
    if (final / ".complete").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=root))
    try:
        result = subprocess.run(
            pip_command(requirements, work, architecture, python_version), capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            detail = "\n".join(
                line for line in (result.stderr or result.stdout).splitlines() if "is ignored" not in line
            )[-2000:]
            raise RuntimeError(
                f"Installing the Lambda packages of {requirements} for Python {python_version} on {architecture} "
                f"failed (pip exit {result.returncode}): {detail.strip()}\nThe synth needs the Python package index "
                "(PyPI or the mirror pip is configured for) once, or a filled cache in "
                f"{root} (set {CACHE_ENV} to use another folder); Docker is not used."
            )
        shutil.rmtree(work / "bin", ignore_errors=True)  # console scripts: nothing a function runs
        for cache in work.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        (work / ".complete").write_text(requirements.read_text(encoding="utf-8"), encoding="utf-8")
        try:
            os.replace(work, final)
        except OSError:  # another synth (a parallel test worker) finished the same install first
            if not (final / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _copy_tree(source: Path, destination: Path) -> None:
    """Copy ``source`` into ``destination``, hard-linking files where the file system allows it."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(
        source,
        destination,
        copy_function=link_or_copy,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".complete", "__pycache__", "*.pyc"),
    )


def _source_files(folder: Path, exclude: Iterable[str]) -> list[Path]:
    patterns = tuple(exclude)
    files = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not any(relative.match(p) or part == p for p in patterns for part in relative.parts):
            files.append(path)
    return files


@jsii.implements(ILocalBundling)
class _PipBundling:
    """CDK local bundling: the handler's sources (if any) plus the cached install, under ``subdir``."""

    def __init__(self, requirements: Path, *, source: Path | None, subdir: str, architecture: str) -> None:
        self.requirements, self.source, self.subdir, self.architecture = requirements, source, subdir, architecture

    def try_bundle(self, output_dir: str, *_options: object, **_keywords: object) -> bool:
        """Install (or take from the cache) and copy into ``output_dir``; never declines."""
        installed = cached_install(self.requirements, self.architecture)
        out = Path(output_dir)
        _copy_tree(installed, out / self.subdir if self.subdir else out)
        if self.source is not None:
            for path in _source_files(self.source, _EXCLUDE):
                target = out / path.relative_to(self.source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        return True


_EXCLUDE = ("__pycache__", "*.pyc")


def _bundling(requirements: Path, *, source: Path | None, subdir: str, architecture: str) -> BundlingOptions:
    # The image and command are what CDK would run in Docker if local bundling declined; it never
    # declines (it raises with the reason), so Docker is not needed. They do the same install.
    target = f"/asset-output/{subdir}" if subdir else "/asset-output"
    copy = "cp -r /asset-input/. /asset-output/ && " if source is not None else ""
    return BundlingOptions(
        image=lambda_.Runtime.PYTHON_3_13.bundling_image,
        local=_PipBundling(requirements, source=source, subdir=subdir, architecture=architecture),
        command=["bash", "-c", f"{copy}pip install --no-compile -r {requirements.name} -t {target}"],
    )


_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # as the CDK CLI zips a directory asset: the content alone makes the archive


def cached_archive(requirements: Path, architecture: str = "x86_64", subdir: str = "python") -> Path:
    """The cached install of ``requirements`` as a zip (files under ``subdir/``), made once next to the install.

    Its entries are what the CDK CLI would zip from the staged folder (files only, no ``__pycache__``, the
    install's own marker left out), so the Lambda layer holds the same files.
    """
    installed = cached_install(requirements, architecture)
    archive = installed.parent / f"{installed.name}-{_FORMAT}-{subdir or 'root'}.zip"
    if archive.is_file():
        return archive
    work = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    try:
        with zipfile.ZipFile(work, "w", zipfile.ZIP_DEFLATED) as bundle:
            for path in sorted(installed.rglob("*")):
                relative = path.relative_to(installed)
                if (
                    not path.is_file()
                    or relative.as_posix() == ".complete"
                    or path.suffix == ".pyc"
                    or "__pycache__" in relative.parts
                ):
                    continue
                entry = zipfile.ZipInfo(f"{subdir}/{relative.as_posix()}" if subdir else relative.as_posix(), _ZIP_DATE)
                entry.external_attr = (path.stat().st_mode & 0xFFFF) << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                bundle.writestr(entry, path.read_bytes())
        os.replace(work, archive)
    finally:
        work.unlink(missing_ok=True)
    return archive


@jsii.implements(ILocalBundling)
class _ArchiveBundling:
    """CDK local bundling of a packages-only asset: the cached archive, hard-linked (or copied) as the output.

    One file instead of the install's tree (about a thousand folders for the SDK) on every synth; CDK moves it
    into the cloud assembly and the CLI uploads it as it is.
    """

    def __init__(self, requirements: Path, *, subdir: str, architecture: str) -> None:
        self.requirements, self.subdir, self.architecture = requirements, subdir, architecture

    def try_bundle(self, output_dir: str, *_options: object, **_keywords: object) -> bool:
        """Take the archive from the cache (installing and zipping it once); never declines."""
        archive = cached_archive(self.requirements, self.architecture, self.subdir)
        target = Path(output_dir) / "packages.zip"
        try:
            os.link(archive, target)
        except OSError:
            shutil.copy2(archive, target)
        return True


def packages_code(requirements: Path, *, architecture: str = "x86_64", subdir: str = "python") -> lambda_.Code:
    """Asset code holding only the packages of ``requirements`` (a layer's content: under ``python/``).

    The asset is one zip (``BundlingOutput.ARCHIVED``) taken from the cache, not a folder copied on every synth.
    """
    digest = requirements_hash(requirements, architecture)
    target = f"/tmp/packages/{subdir}" if subdir else "/tmp/packages"
    return lambda_.Code.from_asset(
        str(requirements.parent),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=f"packages-{digest}",
        bundling=BundlingOptions(
            image=lambda_.Runtime.PYTHON_3_13.bundling_image,
            local=_ArchiveBundling(requirements, subdir=subdir, architecture=architecture),
            output_type=BundlingOutput.ARCHIVED,
            # What CDK would run in Docker if local bundling declined (it never does): the same install, zipped.
            command=[
                "bash",
                "-c",
                f"pip install --no-compile -r {requirements.name} -t {target} && cd /tmp/packages "
                f"&& python -m zipfile -c /asset-output/packages.zip {subdir or '.'}",
            ],
        ),
    )


def handler_code(folder: Path, requirements: Path, *, architecture: str = "x86_64") -> lambda_.Code:
    """Asset code of a handler folder plus the packages of its ``requirements`` file, at the asset's root."""
    digest = hashlib.sha256(requirements_hash(requirements, architecture).encode())
    for path in _source_files(folder, _EXCLUDE):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return lambda_.Code.from_asset(
        str(folder),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=f"handler-{digest.hexdigest()}",
        bundling=_bundling(requirements, source=folder, subdir="", architecture=architecture),
    )
