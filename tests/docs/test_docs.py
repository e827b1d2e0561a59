"""The API reference (`make docs`, pdoc) renders every public name, and the version has one source."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import sagemaker_llm_cdk

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docs
def test_api_reference_documents_every_public_name(tmp_path):
    import pdoc
    import pdoc.render  # pdoc is a dev requirement: the API reference is part of CI, never skipped

    pdoc.render.configure(docformat="restructuredtext", show_source=False)
    pdoc.pdoc("sagemaker_llm_cdk", output_directory=tmp_path)
    page = (tmp_path / "sagemaker_llm_cdk.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'<section id="([A-Za-z_]+)"', page))
    assert not set(sagemaker_llm_cdk.__all__) - ids, f"not in the API reference: {set(sagemaker_llm_cdk.__all__) - ids}"


def test_version_is_single_sourced():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sagemaker_llm_cdk.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]\d+|rc\d+)?", sagemaker_llm_cdk.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{sagemaker_llm_cdk.__version__}]" in changelog, "CHANGELOG.md has no section for this version"
