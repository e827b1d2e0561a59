"""The documentation site GitHub Pages serves: the Markdown pages as HTML, and the API reference.

Usage: ``python -m tools.build_site [OUTPUT]`` (``make site``, after ``make docs``) writes OUTPUT (default ``site``):

- ``index.html``: ``README.md``; ``CONTRIBUTING.html``, ``SECURITY.html``; ``docs/<page>.html`` for every page
  ``tools/check_links.py`` checks (so the site has the pages CI holds free of broken links);
- ``api/``: pdoc's API reference of ``API_MODULES``, rendered here (``render_api``) so that it reads as written:
  a docstring's ``<name>``-style placeholder stays text (``escape_placeholders``: markdown2 passes unknown tags
  through raw, and a browser swallows them), and a pydantic field's ``Annotated`` type shows its base type and the
  rule's name (``readable_annotation``), never ``AfterValidator(func=<function ... at 0x...>)``.
  ``python -m tools.build_site --api DIR`` writes only the API reference.

Headings get GitHub's anchors (``check_links.github_slug``), so a link that works on GitHub works on the site:
links between pages point at their ``.html``, links to other files of the repository at the file on GitHub
(``repository_url``: ``[project.urls] Repository`` in ``pyproject.toml`` unless it is the placeholder owner, then
the repository GitHub Actions builds, ``GITHUB_REPOSITORY``; with neither, a relative link to the file in this
checkout, never a placeholder URL). The release workflow uploads OUTPUT with ``actions/upload-pages-artifact`` and
publishes it with ``actions/deploy-pages``.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import shutil
import sys
import tempfile
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from tools import check_links

ROOT = Path(__file__).resolve().parents[1]
_HEADING = re.compile(r"<h([1-6])>(.*?)</h\1>", re.S)
_HREF = re.compile(r'(href|src)="([^"]*)"')
TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - sagemaker-llm-cdk</title>
<style>body{{max-width:60rem;margin:2rem auto;padding:0 1rem;font:16px/1.5 system-ui,sans-serif}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}}
pre{{background:#f6f8fa;padding:.6rem;overflow:auto}}code{{font-size:90%}}nav a{{margin-right:1rem}}</style>
</head><body><nav>{nav}</nav>
{body}
{scripts}</body></html>
"""
MARKDOWN_EXTRAS = ["tables", "fenced-code-blocks", "strike", "cuddled-lists", "code-friendly", "mermaid"]
"""markdown2's extras: GitHub's tables, fences and strikethrough; ``code-friendly`` keeps ``_`` literal (field names
such as instance_type are never italics), and ``mermaid`` fences become diagrams, as GitHub shows them."""
MERMAID = (
    '<script type="module">import mermaid from "https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.esm.min.mjs";'
    "mermaid.initialize({startOnLoad: true});</script>\n"
)
"""Loaded only by a page with a diagram (mermaid 11, the major GitHub renders)."""


PLACEHOLDER_OWNERS = ("my-org",)
"""GitHub owners that stand for "not known yet" (``pyproject.toml`` marks ``my-org`` as its PLACEHOLDER OWNER): a
link to them would lead nowhere, so the site never carries one."""
API_MODULES = ("sagemaker_llm_cdk", "sagemaker_llm_cdk.client")
"""The modules the API reference documents (as ``make docs`` does) with their submodules."""


def _is_placeholder(url: str) -> bool:
    owner = re.match(r"^https?://(?:www\.)?github\.com/([^/]+)", url, re.I)
    host = re.match(r"^https?://([^./]+)\.github\.io", url, re.I)
    return any(m is not None and m.group(1).lower() in PLACEHOLDER_OWNERS for m in (owner, host))


def repository_url(root: Path = ROOT, environ: typing.Mapping[str, str] | None = None) -> str | None:
    """Where links to source files point: ``[project.urls] Repository`` from ``pyproject.toml``; when that names a
    placeholder owner, the repository GitHub Actions is building (``GITHUB_SERVER_URL``/``GITHUB_REPOSITORY``);
    None when neither is known (links to source files are then relative)."""
    environ = os.environ if environ is None else environ
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    configured = str(project.get("urls", {}).get("Repository", "")).rstrip("/")
    if configured and not _is_placeholder(configured):
        return configured
    repository = environ.get("GITHUB_REPOSITORY", "").strip("/")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", repository) and repository.split("/")[0].lower() not in PLACEHOLDER_OWNERS:
        return f"{environ.get('GITHUB_SERVER_URL', 'https://github.com').rstrip('/')}/{repository}"
    return None


def output_name(page: Path, root: Path = ROOT) -> str:
    """Where a page lands in the site: README.md is the index, the others keep their path with ``.html``."""
    relative = page.relative_to(root).as_posix()
    return "index.html" if relative == "README.md" else relative[:-3] + ".html"


def _with_anchors(body: str) -> str:
    seen: dict[str, int] = {}

    def heading(match: re.Match[str]) -> str:
        text = html.unescape(re.sub(r"<[^>]+>", "", match.group(2)))
        slug = check_links.github_slug(text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchor = slug if count == 0 else f"{slug}-{count}"
        return f'<h{match.group(1)} id="{anchor}">{match.group(2)}</h{match.group(1)}>'

    return _HEADING.sub(heading, body)


def render_page(
    page: Path, site_pages: dict[Path, str], *, root: Path = ROOT, repository: str | None, output: Path | None = None
) -> str:
    """One page as HTML, its links rewritten for the site. With no ``repository``, a link to a file that is not a
    page is relative: from the page's place in ``output`` to the file in ``root`` (or as written, with no output)."""
    import markdown2  # type: ignore[import-untyped]  # pdoc's Markdown renderer, a dev requirement through pdoc

    here = output_name(page, root)
    depth = here.count("/")
    up = "../" * depth

    def link(match: re.Match[str]) -> str:
        target = html.unescape(match.group(2))
        if not target or target.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            return match.group(0)
        path_part, hash_, anchor = target.partition("#")
        resolved = (
            (root / path_part.lstrip("/")) if path_part.startswith("/") else (page.parent / path_part)
        ).resolve()
        if resolved in site_pages:
            new = up + site_pages[resolved] + (hash_ + anchor)
        elif repository is None:
            new = (
                os.path.relpath(resolved, (output.resolve() / here).parent) if output is not None else path_part
            ).replace(os.sep, "/") + (hash_ + anchor)
        else:
            kind = "tree" if resolved.is_dir() else "blob"
            relative = (
                resolved.relative_to(root.resolve()).as_posix()
                if resolved.is_relative_to(root.resolve())
                else path_part
            )
            new = f"{repository}/{kind}/main/{relative}" + (hash_ + anchor)
        return f'{match.group(1)}="{html.escape(new, quote=True)}"'

    text = page.read_text(encoding="utf-8")
    body = markdown2.markdown(text, extras=MARKDOWN_EXTRAS)
    body = _HREF.sub(link, _with_anchors(body))
    title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("# ")), page.stem)
    nav = " ".join(
        f'<a href="{up}{name}">{label}</a>'
        for name, label in (
            ("index.html", "Home"),
            ("docs/config-reference.html", "Config reference"),
            ("api/sagemaker_llm_cdk.html", "API"),
        )
    )
    scripts = MERMAID if 'class="mermaid"' in body else ""
    return TEMPLATE.format(title=html.escape(title), nav=nav, body=body, scripts=scripts)


_ELEMENT_NAMES = (
    "a abbr b blockquote br caption code col colgroup dd del details div dl dt em figcaption figure h1 h2 "
    "h3 h4 h5 h6 hr i img input ins kbd li mark ol p pre q s samp section small span strike strong sub "
    "summary sup table tbody td tfoot th thead tr tt u ul var wbr"
)
HTML_ELEMENTS = frozenset(_ELEMENT_NAMES.split())
"""The elements a docstring's HTML holds (markdown2's and pdoc's output): any other tag-like ``<word ...>`` in it is
a placeholder a docstring wrote as text (``<name>``, ``<stack name>``, ``<region>:<account>``)."""
_TAG_LIKE = re.compile(r"</?([A-Za-z][\w.:-]*)(?:\s[^<>]*|/)?>")
_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")
"""The memory address in a default ``repr`` (``<function f at 0x7fb9...>``): different on every run, meaningless."""


def escape_placeholders(rendered: str) -> str:
    """``rendered`` (a docstring as HTML) with every tag that is not an HTML element escaped, so that a browser
    shows a ``<name>`` placeholder instead of swallowing it as an unknown tag."""

    def tag(match: re.Match[str]) -> str:
        return match.group(0) if match.group(1).lower() in HTML_ELEMENTS else html.escape(match.group(0), quote=False)

    return _TAG_LIKE.sub(tag, rendered)


def _rule_name(func: Any) -> str:
    """A validator function's readable name: the rule a ``field_rule`` wraps, the function a lambda calls."""
    import inspect

    func = getattr(func, "func", func)  # functools.partial
    if inspect.isfunction(func):
        scope = inspect.getclosurevars(func)
        if callable(scope.nonlocals.get("check")):
            return _rule_name(scope.nonlocals["check"])
        if func.__name__ == "<lambda>":
            called = [name for name in func.__code__.co_names if callable(scope.globals.get(name))]
            if called:
                return next((name for name in called if name.endswith("_problem")), called[0])
    name = str(getattr(func, "__qualname__", None) or repr(func)).rsplit(".<locals>.", 1)[-1]
    return _ADDRESS.sub("", name)


def _describe_metadata(item: Any) -> str:
    """One ``Annotated`` metadata item as text: a validator by its rule's name, a ``Field``'s constraints (its
    description is the docstring already), anything else by its ``repr`` without memory addresses."""
    from pydantic.fields import FieldInfo

    if isinstance(item, FieldInfo):
        return ", ".join(filter(None, (_describe_metadata(part) for part in item.metadata)))
    if callable(getattr(item, "func", None)) and type(item).__module__.startswith("pydantic"):
        return f"{type(item).__name__}({_rule_name(item.func)})"
    return _ADDRESS.sub("", repr(item))


def _holds_annotated(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Annotated or any(
        _holds_annotated(arg) for arg in typing.get_args(annotation)
    )


def readable_annotation(annotation: Any, _format: Any = None) -> str:
    """A type annotation as pdoc shows it, but an ``Annotated[...]`` as its base type and readable metadata
    (``Annotated[str, AfterValidator(name_problem)]``), and never a memory address."""
    import types

    from pdoc import _compat

    format_plain = _format or _compat.formatannotation
    if not _holds_annotated(annotation):
        return _ADDRESS.sub("", format_plain(annotation))
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        parts = [readable_annotation(args[0], format_plain)]
        parts += [text for text in (_describe_metadata(item) for item in args[1:]) if text]
        return parts[0] if len(parts) == 1 else f"Annotated[{', '.join(parts)}]"
    if origin in (typing.Union, types.UnionType):
        return " | ".join("None" if arg is type(None) else readable_annotation(arg, format_plain) for arg in args)
    inner = ", ".join(readable_annotation(arg, format_plain) for arg in args)
    return f"{format_plain(origin)}[{inner}]"


@contextlib.contextmanager
def _readable_pdoc() -> Iterator[None]:
    """pdoc with ``readable_annotation`` for every annotation and ``escape_placeholders`` after every docstring's
    Markdown (the pages and the search index), for the time of one rendering."""
    import pdoc.doc
    import pdoc.render
    import pdoc.search

    original_format = getattr(pdoc.doc, "formatannotation")  # noqa: B009  # pdoc.doc imports it, not exports it
    original_html = pdoc.render.env.filters["to_html"]

    def to_html(docstring: str) -> str:
        rendered: str = original_html(docstring)
        escaped = type(rendered)(escape_placeholders(rendered))
        for name, value in vars(rendered).items():  # markdown2's toc_html and metadata
            setattr(escaped, name, escape_placeholders(value) if isinstance(value, str) else value)
        return escaped

    with (
        mock.patch.object(pdoc.doc, "formatannotation", lambda a: readable_annotation(a, original_format)),
        mock.patch.dict(pdoc.render.env.filters, {"to_html": to_html}),
        mock.patch.object(pdoc.search, "to_html", to_html),
        mock.patch.dict(os.environ, {"PDOC_ALLOW_EXEC": "1"}),  # importing aws_cdk starts jsii's node process
    ):
        yield


def render_api(output: Path, modules: tuple[str, ...] = API_MODULES) -> Path:
    """Write the API reference of ``modules`` into ``output`` (pdoc, reStructuredText docstrings, no source)."""
    import pdoc
    import pdoc.doc
    import pdoc.render

    pdoc.render.configure(docformat="restructuredtext", show_source=False)
    from_name = pdoc.doc.Module.from_name.__func__  # type: ignore[attr-defined]  # functools.cache under classmethod
    from_name.cache_clear()  # a module rendered before in this process keeps its annotations as pdoc formatted them
    try:
        with _readable_pdoc():
            pdoc.pdoc(*modules, output_directory=output)
    finally:
        from_name.cache_clear()  # and a later plain pdoc run does not reuse ours
    return output


def build(output: Path, *, root: Path = ROOT, api: Path | None = None) -> list[Path]:
    """Write the site into ``output`` (emptied first); the files written. ``api`` is the API reference to copy
    (default ``docs/api``; ``main`` renders it with ``render_api``)."""
    api = root / "docs" / "api" if api is None else api
    if not (api / "sagemaker_llm_cdk.html").is_file():
        raise SystemExit(f"error: {api} has no API reference: run `make docs` first")
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)
    pages = check_links.pages(list(check_links.DEFAULT_PAGES), root=root)
    site_pages = {page.resolve(): output_name(page, root) for page in pages}
    repository = repository_url(root)
    written = []
    for page in pages:
        target = output / output_name(page, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        rendered = render_page(page, site_pages, root=root, repository=repository, output=output)
        target.write_text(rendered, encoding="utf-8")
        written.append(target)
    shutil.copytree(api, output / "api")  # served as is: a Pages artifact deployment runs no Jekyll
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--api"]:
        if len(args) != 2:
            raise SystemExit(
                f"error: --api takes one folder, got {args[1:]!r}; usage: python -m tools.build_site --api DIR"
            )
        print(f"wrote the API reference into {render_api(Path(args[1]))}")
        return 0
    output = Path(args[0]) if args else ROOT / "site"
    with tempfile.TemporaryDirectory() as api:
        written = build(output, api=render_api(Path(api)))
    print(f"wrote {len(written)} page(s) and the API reference into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
