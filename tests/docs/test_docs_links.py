"""tools/check_links.py: the committed pages have no broken relative link or anchor, and the checker finds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import check_links
from tools.check_links import anchors, check, github_slug, links

ROOT = Path(__file__).resolve().parents[2]
PAGES = check_links.pages(list(check_links.DEFAULT_PAGES))
"""Found when the suite is collected: a page added to docs/ is checked without a change here."""


def test_the_default_pages_include_the_readme_and_every_docs_page():
    names = {str(p.relative_to(ROOT)) for p in PAGES}
    assert "README.md" in names and "docs/config-reference.md" in names
    assert {str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")} <= names
    assert not any(name.startswith("docs/api/") for name in names), "pdoc's generated output is not a page"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_committed_page_has_no_broken_link(page):
    broken = check_links.check_page(page)
    assert not broken, "\n".join(str(b) for b in broken)


@pytest.mark.parametrize(
    "heading, slug",
    [
        ("Config reference", "config-reference"),
        ("`EndpointSpec`", "endpointspec"),
        ("PipelineSettings (pipeline)", "pipelinesettings-pipeline"),
        ("Capacity plans: reserved GPUs, never bought silently", "capacity-plans-reserved-gpus-never-bought-silently"),
        ("Endpoint -> model -> adapter", "endpoint---model---adapter"),
        ("What `make check` runs (and why)", "what-make-check-runs-and-why"),
        ("snake_case_name and *emphasis*", "snake_case_name-and-emphasis"),
        ("[Linked](https://example.com) heading", "linked-heading"),
    ],
)
def test_slugs_are_githubs(heading, slug):
    assert github_slug(heading) == slug


def test_repeated_headings_and_html_anchors_are_anchors_and_code_is_not():
    text = '# Setup\n## Setup\nTitle\n=====\n<a name="custom"></a>\n```\n# not a heading\n[x](missing.md)\n```\n'
    assert anchors(text) == {"setup", "setup-1", "title", "custom"}
    assert links(text) == []
    assert links('see `[x](missing.md)` and [y](real.md "title") and <img src="pic.png">\n[ref]: other.md#a\n') == [
        (1, "real.md"),
        (1, "pic.png"),
        (2, "other.md#a"),
    ]


def test_broken_files_and_anchors_are_found_and_external_links_are_not_fetched(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Deploying it\n")
    (tmp_path / "tool.py").write_text("print(1)\n")
    (tmp_path / "README.md").write_text(
        "# Readme\n"
        "[ok](docs/guide.md#deploying-it) [ok](#readme) [ok](tool.py#L1) [ok](docs/) [ok](/docs/guide.md)\n"
        "[web](https://example.invalid/nowhere) [mail](mailto:nobody@example.invalid)\n"
        "[gone](docs/missing.md) [bad anchor](docs/guide.md#deploy) [self](#nope) [py](tool.py#main)\n"
    )
    broken = check(["README.md", "docs"], root=tmp_path)
    assert [(b.line, b.target) for b in broken] == [
        (4, "docs/missing.md"),
        (4, "docs/guide.md#deploy"),
        (4, "#nope"),
        (4, "tool.py#main"),
    ]
    assert "no heading or anchor #deploy in guide.md" in str(broken[1])


def test_the_command_exits_1_on_a_broken_link(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("[x](nowhere.md)\n")
    assert check_links.main([str(page)]) == 1
    assert "nowhere.md: no such file or folder" in capsys.readouterr().err
    page.write_text("# Fine\n[x](#fine)\n")
    assert check_links.main([str(page)]) == 0
