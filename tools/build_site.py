"""The documentation site GitHub Pages serves: the Markdown pages as HTML, and the API reference.

Usage: ``python -m tools.build_site [OUTPUT]`` (``make site``, after ``make docs``) writes OUTPUT (default ``site``):

- ``index.html``: ``README.md``; ``CONTRIBUTING.html``, ``SECURITY.html``; ``docs/<page>.html`` for every page
  ``tools/check_links.py`` checks (so the site has the pages CI holds free of broken links);
- ``api/``: pdoc's API reference, copied from ``docs/api`` (``make docs`` writes it).

Headings get GitHub's anchors (``check_links.github_slug``), so a link that works on GitHub works on the site:
links between pages point at their ``.html``, links to other files of the repository at the file on GitHub
(``[project.urls] Repository`` in ``pyproject.toml``). The release workflow uploads OUTPUT with
``actions/upload-pages-artifact`` and publishes it with ``actions/deploy-pages``.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
import tomllib
from pathlib import Path

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


def repository_url(root: Path = ROOT) -> str:
    """``[project.urls] Repository`` from ``pyproject.toml``: where links to source files point."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["urls"]["Repository"]).rstrip("/")


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


def render_page(page: Path, site_pages: dict[Path, str], *, root: Path = ROOT, repository: str) -> str:
    """One page as HTML, its links rewritten for the site."""
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


def build(output: Path, *, root: Path = ROOT, api: Path | None = None) -> list[Path]:
    """Write the site into ``output`` (emptied first); the files written."""
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
        target.write_text(render_page(page, site_pages, root=root, repository=repository), encoding="utf-8")
        written.append(target)
    shutil.copytree(api, output / "api")  # served as is: a Pages artifact deployment runs no Jekyll
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    output = Path(args[0]) if args else ROOT / "site"
    written = build(output)
    print(f"wrote {len(written)} page(s) and the API reference into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
