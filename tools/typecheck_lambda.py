"""mypy over every Lambda handler folder, each as its function's asset lays it out.

Each function is checked on its own (every folder has an ``index`` module), with ``lambda/_shared`` and the
folder itself on the search path, for the Lambda runtime's Python (3.13), with the library's strict settings
from pyproject.toml except ``warn_return_any``: handlers hand on boto3 answers and JSON values, which are ``Any``.
Exit status 1 when any folder has a finding. Usage: ``python -m tools.typecheck_lambda [lambda]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON_VERSION = "3.13"  # sagemaker_llm_cdk.core.bundling.PYTHON_VERSION, the functions' runtime


def handler_folders(root: Path) -> list[Path]:
    return sorted(folder for folder in root.iterdir() if (folder / "index.py").is_file())


def check(folder: Path, shared: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": os.pathsep.join([str(shared), str(folder)])}
    files = sorted(str(path) for path in folder.glob("*.py"))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-warn-return-any",
            "--python-version",
            PYTHON_VERSION,
            "--cache-dir",
            str(folder.parent.parent / ".mypy_cache" / "lambda" / folder.name),
            *files,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def main(root: Path) -> int:
    failed = []
    for folder in handler_folders(root):
        result = check(folder, root / "_shared")
        if result.returncode != 0:
            failed.append(folder.name)
            print(result.stdout + result.stderr, end="")
    count = len(handler_folders(root))
    print(
        f"mypy (strict, Python {PYTHON_VERSION}) on {count} Lambda function(s): "
        + (f"findings in {', '.join(failed)}" if failed else "no issues")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "lambda"))
