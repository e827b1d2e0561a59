"""Broken links in the repository's Markdown pages, offline.

Usage: ``python -m tools.check_links [FILE_OR_FOLDER ...]`` (default: ``README.md``, ``CONTRIBUTING.md``,
``SECURITY.md`` and every ``docs/**/*.md`` but the generated ``docs/api/``). Exit 1 when a link is broken.

What counts as broken: a relative link (``[text](path)``, ``![alt](path)``, ``[id]: path``, HTML ``href``/``src``)
whose file or folder does not exist, or whose ``#anchor`` names no heading of the target Markdown page, with
headings turned into anchors as GitHub does (``github_slug``: lower case, punctuation dropped, spaces to
hyphens, ``-1``, ``-2`` ... for repeats) plus explicit ``<a name>``/``id`` anchors. External links
(``http:``, ``https:``, ``mailto:`` and other schemes) are not fetched: CI stays offline and deterministic.
Links inside code spans and fenced code blocks are not links, and are skipped.

A pointer to a make target is checked too: ``make TARGET`` in a code span (`` `make docs` ``) or at the start of a
shell line in a fenced block, against the targets of the ``Makefile`` at the root (a page naming a target that was
renamed or removed is as broken as a dead link).

``tests/docs/test_docs_links.py`` runs it on the committed pages; CI's docs job runs it after ``make docs``.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PAGES = ("README.md", "CONTRIBUTING.md", "SECURITY.md", "docs")
SKIPPED_FOLDERS = ("docs/api",)
"""Generated output (pdoc's HTML), not a page anyone edits."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_HTML_ANCHOR = re.compile(r"""<[a-z][^>]*\b(?:name|id)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
_MAKE_RULE = re.compile(r"^([A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*::?(?!=)", re.M)
_MAKE_IN_SPAN = re.compile(r"^make\s+(.*)$")
_MAKE_IN_SHELL = re.compile(r"(?:^\s*(?:\$\s+)?|(?:&&|\|\||;)\s*)make\s+([^;&|#]*)")
_LINE_ANCHOR = re.compile(r"^L\d+(C\d+)?(-L\d+(C\d+)?)?$")
"""GitHub's line anchors on a source file (``file.py#L10-L20``)."""


@dataclass(frozen=True)
class Broken:
    """One broken link: where it is, what it points at, and why it does not resolve."""

    page: Path
    line: int
    target: str
    reason: str

    def __str__(self) -> str:
        where = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{where}:{self.line}: {self.target}: {self.reason}"


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before de-duplication): Markdown markup removed, lower case,
    every character that is not a letter, digit, space, hyphen or underscore dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays, its target goes
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # emphasis underscores, not those inside words
    out = []
    for char in text.strip().lower():
        category = unicodedata.category(char)
        if char in " -_" or category[0] in "LN" or category == "Mn":
            out.append("-" if char == " " else char)
    return "".join(out)


def _lines_outside_code(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line not inside a fenced code block, code spans blanked out."""
    lines, fence = [], ""
    for number, line in enumerate(text.splitlines(), start=1):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            continue
        lines.append((number, _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)))
    return lines


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown page has: its headings' slugs (repeats numbered) and explicit HTML anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for _, line in _lines_outside_code(text):
        heading = _HEADING.match(line)
        title = heading.group(2) if heading else (previous if previous.strip() and _SETEXT.match(line) else None)
        if title is not None:
            slug = github_slug(title)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        for match in _HTML_ANCHOR.finditer(line):
            found.add(match.group(1) if match.group(1) is not None else match.group(2))
        previous = "" if heading else line
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link on a Markdown page, outside code."""
    found = []
    for number, line in _lines_outside_code(text):
        for match in _INLINE_LINK.finditer(line):
            found.append((number, match.group(1).strip("<>")))
        reference = _REFERENCE.match(line)
        if reference:
            found.append((number, reference.group(1).strip("<>")))
        for match in _HTML_LINK.finditer(line):
            found.append((number, match.group(1) if match.group(1) is not None else match.group(2)))
    return found


def make_targets(makefile: Path) -> set[str] | None:
    """The targets a Makefile defines (None when there is no Makefile: then no make pointer is checked)."""
    if not makefile.is_file():
        return None
    return {t for m in _MAKE_RULE.finditer(makefile.read_text(encoding="utf-8")) for t in m.group(1).split()}


def _targets_named(arguments: str) -> list[str]:
    """The targets of a make command line's arguments: VAR=value assignments and -options skipped, up to the first
    word that is not a target name."""
    found = []
    for word in arguments.split():
        if "=" in word or word.startswith("-"):
            continue
        if not re.fullmatch(r"[a-z][\w.-]*", word):
            break
        found.append(word)
    return found


def make_pointers(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every ``make TARGET`` a page names: in a code span, or on a shell line of a fenced
    code block."""
    found, fence = [], ""
    for number, line in enumerate(text.splitlines(), start=1):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
                continue
            for match in _MAKE_IN_SHELL.finditer(line):
                found += [(number, target) for target in _targets_named(match.group(1))]
            continue
        if opening:
            fence = opening.group(1)
            continue
        for span in _CODE_SPAN.finditer(line):
            command = _MAKE_IN_SPAN.match(span.group(0).strip("`").strip())
            if command:
                found += [(number, target) for target in _targets_named(command.group(1))]
    return found


def check_page(page: Path, *, root: Path = ROOT, cache: dict[Path, set[str]] | None = None) -> list[Broken]:
    """The broken links of one page. ``root`` is where a link starting with ``/`` resolves (the repository)."""
    cache = {} if cache is None else cache
    text = page.read_text(encoding="utf-8")
    broken = []
    targets = make_targets(root / "Makefile")
    for line, name in make_pointers(text):
        if targets is not None and name not in targets:
            broken.append(
                Broken(
                    page,
                    line,
                    f"make {name}",
                    f"no such make target in {root.name}/Makefile (it has: {', '.join(sorted(targets))}); "
                    "name one of those or remove the pointer",
                )
            )
    for line, target in links(text):
        if not target or _SCHEME.match(target):
            continue  # external (http, https, mailto, ...): not fetched
        path_part, _, anchor = target.partition("#")
        path_part = unquote(path_part.split("?", 1)[0])
        if path_part:
            resolved = (root / path_part.lstrip("/")) if path_part.startswith("/") else (page.parent / path_part)
            resolved = resolved.resolve()
            if not resolved.exists():
                broken.append(Broken(page, line, target, "no such file or folder"))
                continue
        else:
            resolved = page.resolve()
        if not anchor:
            continue
        anchor = unquote(anchor)
        if resolved.suffix.lower() != ".md" or resolved.is_dir():
            if (
                resolved.is_file()
                and not _LINE_ANCHOR.match(anchor)
                and resolved.suffix.lower() not in (".html", ".htm")
            ):
                broken.append(Broken(page, line, target, "an anchor on a file that is not Markdown (only #L<line>)"))
            continue
        if resolved not in cache:
            cache[resolved] = {a.lower() for a in anchors(resolved.read_text(encoding="utf-8"))}
        if anchor.lower() not in cache[resolved]:
            broken.append(Broken(page, line, target, f"no heading or anchor #{anchor} in {resolved.name}"))
    return broken


def pages(arguments: list[str], *, root: Path = ROOT) -> list[Path]:
    """The Markdown files named (a folder: every ``*.md`` in it, recursively, but generated folders)."""
    found: list[Path] = []
    for name in arguments:
        path = (root / name) if not Path(name).is_absolute() else Path(name)
        if path.is_dir():
            skipped = [(root / folder).resolve() for folder in SKIPPED_FOLDERS]
            found += sorted(p for p in path.rglob("*.md") if not any(p.resolve().is_relative_to(s) for s in skipped))
        elif path.is_file():
            found.append(path)
    return found


def check(arguments: list[str] | None = None, *, root: Path = ROOT) -> list[Broken]:
    """Every broken link of the pages named (default: ``DEFAULT_PAGES``)."""
    cache: dict[Path, set[str]] = {}
    return [
        b
        for page in pages(list(arguments or DEFAULT_PAGES), root=root)
        for b in check_page(page, root=root, cache=cache)
    ]


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    checked = pages(list(arguments or DEFAULT_PAGES))
    broken = check(arguments)
    for item in broken:
        print(f"error: {item}", file=sys.stderr)
    print(f"{len(checked)} page(s), {len(broken)} broken link(s)", file=sys.stderr if broken else sys.stdout)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
