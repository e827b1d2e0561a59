"""tools/build_site.py: the Pages site has every checked page as HTML with GitHub's anchors, and the API reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import build_site


def test_pages_become_html_with_githubs_anchors_and_working_links(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "api").mkdir(parents=True)
    (root / "docs" / "api" / "sagemaker_llm_cdk.html").write_text("<html>api</html>")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/o/r"\n'
    )
    (root / "README.md").write_text("# Read me\n\nSee [the guide](docs/guide.md#deploying-it) and [code](app.py).\n")
    (root / "docs" / "guide.md").write_text("# Guide\n\n## Deploying it\n\nBack [home](../README.md#read-me).\n")
    (root / "app.py").write_text("")
    written = build_site.build(tmp_path / "site", root=root)
    assert sorted(p.relative_to(tmp_path / "site").as_posix() for p in written) == ["docs/guide.html", "index.html"]
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="docs/guide.html#deploying-it"' in index and 'href="https://github.com/o/r/blob/main/app.py"' in index
    guide = (tmp_path / "site" / "docs" / "guide.html").read_text()
    assert '<h2 id="deploying-it">' in guide and 'href="../index.html#read-me"' in guide
    assert (tmp_path / "site" / "api" / "sagemaker_llm_cdk.html").is_file()


def test_field_names_stay_as_written_and_diagrams_render(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "api").mkdir(parents=True)
    (root / "docs" / "api" / "sagemaker_llm_cdk.html").write_text("<html>api</html>")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/o/r"\n'
    )
    (root / "README.md").write_text(
        "# Read me\n\n| field | meaning |\n| --- | --- |\n| endpoints[].instance_type | the max_instances and "
        "min_copies |\n\nSet instance_type_name, *emphasis* kept.\n\n```mermaid\nflowchart LR\n  A --> B\n```\n"
    )
    build_site.build(tmp_path / "site", root=root)
    index = (tmp_path / "site" / "index.html").read_text()
    assert "<em>" not in index.replace("<em>emphasis</em>", "")
    assert "endpoints[].instance_type" in index and "max_instances" in index and "instance_type_name" in index
    assert '<div class="mermaid">flowchart LR' in index and "mermaid@11" in index


def test_a_page_without_a_diagram_loads_no_script(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "api").mkdir(parents=True)
    (root / "docs" / "api" / "sagemaker_llm_cdk.html").write_text("<html>api</html>")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/o/r"\n'
    )
    (root / "README.md").write_text("# Read me\n\nText.\n")
    build_site.build(tmp_path / "site", root=root)
    assert "<script" not in (tmp_path / "site" / "index.html").read_text()


def test_the_site_needs_the_api_reference_first(tmp_path):
    with pytest.raises(SystemExit, match="make docs"):
        build_site.build(tmp_path / "site", root=tmp_path)


def test_links_to_source_files_point_at_the_repository_in_pyproject_unless_it_is_the_placeholder():
    url = build_site.repository_url(environ={})
    assert url is None or (url.startswith("https://github.com/") and "my-org" not in url)
    assert Path(build_site.__file__).name == "build_site.py"
