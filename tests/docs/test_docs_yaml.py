"""Every YAML block in the docs can be pasted: each says what it is on the line above it and works as it says.

Markers (an HTML comment right above the block):

* ``<!-- yaml: complete -->``: a whole config;
* ``<!-- yaml: fragment over CONFIG[, under PATH] -->``: laid over CONFIG (a shipped config) at PATH, as a layered
  file would be (``endpoints[Chat]`` is the item named Chat, ``models`` a key);
* ``<!-- yaml: alternatives over CONFIG[, under PATH] -->``: each line is one fragment, tried alone;
* ``<!-- yaml: layer, as config/NAME.yaml -->``: a layered file, read as if it were that file.

Each block's config is loaded with every rule and synthesized (without the checks, as the update catalogue does).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.assemblies import config_data, synth_config

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
BLOCK = re.compile(r"(?:<!-- yaml: (?P<marker>[^>]*?) -->\n)?```yaml\n(?P<body>.*?)```", re.S)
MARKER = re.compile(
    r"(?P<kind>complete|fragment|alternatives|layer)"
    r"(?: over (?P<base>[\w./-]+\.yaml))?(?:, under (?P<path>[\w.\[\]-]+))?(?:, as (?P<as>[\w./-]+))?"
)


def blocks() -> list[Any]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start("body")].count("\n")
            found.append(
                pytest.param(
                    page, line, match.group("marker"), match.group("body"), id=f"{page.relative_to(ROOT)}:{line}"
                )
            )
    return found


def wrap(path: str | None, value: Any) -> dict[str, Any]:
    """``value`` placed at ``path`` (``endpoints[Chat].models[m]``) as a layered file would write it."""
    for part in reversed((path or "").split(".") if path else []):
        key, _, name = part.partition("[")
        value = {key: [{"name": name.rstrip("]"), **value}]} if name else {key: value}
    assert isinstance(value, dict)
    return value


def configs(marker: str, body: str) -> list[tuple[dict[str, Any], Path]]:
    from sagemaker_llm_cdk.config.layers import merge

    match = MARKER.fullmatch(marker)
    assert match, f"unknown marker {marker!r}"
    kind = match.group("kind")
    if kind == "complete":
        return [(yaml.safe_load(body), ROOT / "config")]
    if kind == "layer":
        target = ROOT / match.group("as")
        copy = target.with_name(f".docs-{target.name}")
        copy.write_text(body, encoding="utf-8")
        try:
            return [(config_data(copy), target.parent)]
        finally:
            copy.unlink()
    base = ROOT / match.group("base")
    texts = (
        [line for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
        if kind == "alternatives"
        else [body]
    )
    out = []
    for text in texts:
        fragment = yaml.safe_load(text.strip() if kind == "alternatives" else _dedent(text))
        out.append((merge(config_data(base), wrap(match.group("path"), fragment)), base.parent))
    return out


def _dedent(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    return "\n".join(line[indent:] for line in text.splitlines())


def test_every_block_says_what_it_is():
    unmarked = [p.id for p in blocks() if not p.values[2]]
    assert unmarked == [], f"add a <!-- yaml: ... --> marker above: {unmarked}"


@pytest.mark.parametrize("page, line, marker, body", blocks())
def test_a_block_pasted_as_it_says_loads_and_synthesizes(page, line, marker, body, tmp_path):
    if not marker:
        pytest.fail(f"{page.name}:{line}: no marker")
    assert "\n...\n" not in f"\n{body}" and not re.search(r"^\s*\.\.\.\s*$", body, re.M), "a literal ... line"
    for index, (data, config_dir) in enumerate(configs(marker, body)):
        synth_config(data, config_dir, tmp_path / str(index))
