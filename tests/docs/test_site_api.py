"""tools/build_site.py: the API reference the site publishes reads as the docstrings are written: no memory
addresses, every ``<name>`` placeholder shown, no link to the placeholder owner."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import Field
from sagemaker_llm_cdk.core.settings import field_rule, name_problem

from tools import build_site

pytestmark = pytest.mark.docs

ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
PLACEHOLDER = re.compile(r"<([A-Za-z][^<>\n`]*)>")


class _Text(HTMLParser):
    """The text a browser shows: tags dropped, entities decoded (an unknown ``<name>`` tag shows nothing)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def shown_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return "".join(parser.parts)


@pytest.fixture(scope="module")
def api(tmp_path_factory) -> Path:
    return build_site.render_api(tmp_path_factory.mktemp("api"))


def _docstrings() -> list[str]:
    import pdoc.doc

    found, todo = [], [pdoc.doc.Module.from_name(name) for name in build_site.API_MODULES]
    seen: set[str] = set()
    while todo:
        item = todo.pop()
        if item.fullname in seen:
            continue
        seen.add(item.fullname)
        found.append(item.docstring)
        if isinstance(item, pdoc.doc.Module | pdoc.doc.Class):
            todo += [m for m in item.own_members if m.fullname.startswith(("sagemaker_llm_cdk",))]
        if isinstance(item, pdoc.doc.Module):
            todo += item.submodules
    return found


def test_no_memory_address_in_any_page_or_the_search_index(api):
    files = [*api.rglob("*.html"), api / "search.js"]
    assert len(files) >= 3
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not ADDRESS.findall(text), f"{path.name}: {ADDRESS.findall(text)[:3]}"
    page = (api / "sagemaker_llm_cdk.html").read_text(encoding="utf-8")
    assert "AfterValidator(name_problem)" in page and "func=" not in page


def test_every_placeholder_a_docstring_writes_is_shown(api):
    wanted: dict[str, int] = {}
    for docstring in _docstrings():
        for match in PLACEHOLDER.finditer(docstring):
            name = match.group(1).split()[0].lower()
            if "://" in match.group(1) or name in build_site.HTML_ELEMENTS:
                continue  # a reStructuredText link target or real HTML
            wanted[match.group(0)] = wanted.get(match.group(0), 0) + 1
    assert {"<name>", "<stack name>", "<region>"} <= set(wanted), sorted(wanted)
    shown = "".join(shown_text(p.read_text(encoding="utf-8")) for p in api.rglob("*.html"))
    missing = {p: n for p, n in wanted.items() if shown.count(p) < n}
    assert not missing, f"placeholders a browser does not show (wanted count): {missing}"


def test_the_published_site_links_to_no_placeholder_owner(api, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    build_site.build(tmp_path / "site", api=api)
    offenders = [
        p.relative_to(tmp_path).as_posix()
        for p in (tmp_path / "site").rglob("*")
        if p.is_file() and p.suffix in (".html", ".js") and "my-org" in p.read_text(encoding="utf-8")
    ]
    assert not offenders


def test_placeholders_are_escaped_and_real_html_is_kept():
    rendered = (
        "<p>Named <stack name>-<name> in arn:aws:sagemaker:<region>:<account>:x, <stack_name>Capacity; "
        '<code>&lt;b&gt;</code> <a href="#x">link</a><br/></p>'
    )
    escaped = build_site.escape_placeholders(rendered)
    assert "&lt;stack name&gt;-&lt;name&gt;" in escaped and "&lt;region&gt;:&lt;account&gt;" in escaped
    assert "&lt;stack_name&gt;Capacity" in escaped
    assert (
        escaped.startswith("<p>")
        and '<a href="#x">link</a><br/></p>' in escaped
        and "<code>&lt;b&gt;</code>" in escaped
    )
    assert shown_text(escaped).startswith("Named <stack name>-<name> in arn:aws:sagemaker:<region>:<account>:x")


def test_annotated_fields_show_their_base_type_and_their_rule_by_name():
    from typing import Annotated

    rule = field_rule(lambda v: name_problem("", v))
    assert build_site.readable_annotation(Annotated[str, rule, Field(description="d")]) == (
        "Annotated[str, AfterValidator(name_problem)]"
    )
    assert build_site.readable_annotation(Annotated[int | None, Field(description="d", ge=1)]) == (
        "Annotated[int | None, Ge(ge=1)]"
    )
    assert build_site.readable_annotation(Annotated[str, Field(description="only a description")]) == "str"
    nested = build_site.readable_annotation(list[Annotated[str, rule]] | None)
    assert nested == "list[Annotated[str, AfterValidator(name_problem)]] | None"

    def _named_problem(value):
        return None

    assert "AfterValidator(_named_problem)" in build_site.readable_annotation(
        Annotated[str, field_rule(_named_problem)]
    )
    assert not ADDRESS.search(build_site.readable_annotation(Annotated[int, object()]))
    assert build_site.readable_annotation(dict[str, int]) == "dict[str, int]"


def test_the_api_option_takes_one_folder():
    with pytest.raises(SystemExit, match=r"--api takes one folder, got \[\]; usage: python -m tools.build_site"):
        build_site.main(["--api"])
    with pytest.raises(SystemExit, match=r"--api takes one folder, got \['a', 'b'\]"):
        build_site.main(["--api", "a", "b"])
