"""Where the Lambda handler sources are: inside the wheel, or in the repository's lambda/ folder."""
from __future__ import annotations

from pathlib import Path

_PACKAGED = Path(__file__).resolve().parents[1] / "_lambda"
_REPOSITORY = Path(__file__).resolve().parents[3] / "lambda"


def handler_dir(name: str) -> str:
    """The folder holding ``lambda/<name>/index.py``, whichever way the library was installed."""
    for root in (_PACKAGED, _REPOSITORY):
        folder = root / name
        if (folder / "index.py").is_file():
            return str(folder)
    raise FileNotFoundError(
        f"Lambda source '{name}' not found in {_PACKAGED} or {_REPOSITORY}; reinstall sagemaker-llm-cdk"
    )
