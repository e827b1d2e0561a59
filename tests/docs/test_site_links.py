"""Where the site's links to source files point: the configured repository, the one GitHub Actions builds, or a
relative link; never the placeholder owner. And a page's ``make TARGET`` pointers name targets that exist."""

from __future__ import annotations

from pathlib import Path

from tools import build_site, check_links

PLACEHOLDER_PYPROJECT = (
    '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/my-org/sagemaker-llm-cdk"\n'
)


def repo(tmp_path: Path, pyproject: str) -> Path:
    root = tmp_path / "repo"
    (root / "docs" / "api").mkdir(parents=True)
    (root / "docs" / "api" / "sagemaker_llm_cdk.html").write_text("<html>api</html>")
    (root / "pyproject.toml").write_text(pyproject)
    (root / "README.md").write_text("# Read me\n\nSee [code](app.py) and [the tools](tools/).\n")
    (root / "app.py").write_text("")
    (root / "tools").mkdir()
    return root


def test_a_configured_repository_is_used_and_the_placeholder_owner_is_recognised(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/acme/llm/"\n'
    )
    environ = {"GITHUB_REPOSITORY": "other/repo"}
    assert build_site.repository_url(tmp_path, environ=environ) == "https://github.com/acme/llm"
    assert build_site._is_placeholder("https://github.com/my-org/x")
    assert build_site._is_placeholder("https://my-org.github.io/x/")
    assert not build_site._is_placeholder("https://github.com/acme/my-org")


def test_the_placeholder_owner_gives_way_to_the_repository_actions_builds(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PLACEHOLDER_PYPROJECT)
    environ = {"GITHUB_REPOSITORY": "acme/llm", "GITHUB_SERVER_URL": "https://github.example.com"}
    assert build_site.repository_url(tmp_path, environ=environ) == "https://github.example.com/acme/llm"
    assert (
        build_site.repository_url(tmp_path, environ={"GITHUB_REPOSITORY": "acme/llm"}) == "https://github.com/acme/llm"
    )
    assert build_site.repository_url(tmp_path, environ={}) is None
    assert build_site.repository_url(tmp_path, environ={"GITHUB_REPOSITORY": "my-org/x"}) is None
    assert build_site.repository_url(tmp_path, environ={"GITHUB_REPOSITORY": "not a repo"}) is None


def test_with_no_known_repository_links_to_source_files_are_relative(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    root = repo(tmp_path, PLACEHOLDER_PYPROJECT)
    build_site.build(root / "site", root=root)
    index = (root / "site" / "index.html").read_text()
    assert 'href="../app.py"' in index and 'href="../tools"' in index and "my-org" not in index


def test_in_actions_links_to_source_files_point_at_the_built_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/llm")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    root = repo(tmp_path, PLACEHOLDER_PYPROJECT)
    build_site.build(tmp_path / "site", root=root)
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="https://github.com/acme/llm/blob/main/app.py"' in index
    assert 'href="https://github.com/acme/llm/tree/main/tools"' in index


def test_a_pointer_to_a_make_target_that_does_not_exist_is_broken(tmp_path):
    (tmp_path / "Makefile").write_text(
        ".PHONY: docs test\nBIN := .venv/bin\ndocs: setup\n\tpdoc\ntest test-fast:\n\tpytest\nsetup:\n\ttrue\n"
    )
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\nRun `make docs`, `make CONFIG=x.yaml test`, `make -j2 test-fast` and `make site`.\n\n"
        "```bash\n$ make setup && make reference\nmake\n```\n\nTo make sure: `make` alone is fine.\n"
    )
    assert check_links.make_targets(tmp_path / "Makefile") == {"docs", "test", "test-fast", "setup"}
    broken = check_links.check_page(page, root=tmp_path)
    assert [(b.line, b.target) for b in broken] == [(3, "make site"), (6, "make reference")]
    assert "no such make target in" in broken[0].reason and "docs, setup, test, test-fast" in broken[0].reason
    assert "name one of those or remove the pointer" in broken[0].reason


def test_without_a_makefile_make_pointers_are_not_checked(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n`make anything`\n")
    assert check_links.make_targets(tmp_path / "Makefile") is None
    assert check_links.check_page(page, root=tmp_path) == []


def test_the_committed_pages_name_only_make_targets_that_exist():
    pointers = [
        t
        for p in check_links.pages(list(check_links.DEFAULT_PAGES))
        for _, t in check_links.make_pointers(p.read_text())
    ]
    assert len(pointers) > 50 and set(pointers) <= check_links.make_targets(check_links.ROOT / "Makefile")
