"""docs/config-reference.md is what tools/config_reference.py renders from the settings models, section by section."""

from __future__ import annotations

import json
from pathlib import Path

from tools import config_reference
from tools.check_links import anchors, check_page

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "config-reference.md"


def test_the_committed_reference_is_what_the_models_render():
    rendered = config_reference.render()
    committed = PAGE.read_text(encoding="utf-8")
    assert committed == rendered, "docs/config-reference.md differs from the settings models: run `make reference`"


def test_every_model_and_field_of_the_published_schema_is_on_the_page():
    """The page is rendered from the same schemas `make schema` publishes: every model is a section, every
    property a row of it, and the published schema.json says the same (so the two cannot disagree)."""
    from tools.schemas import schemas

    published = schemas()
    page = PAGE.read_text(encoding="utf-8")
    slugs = anchors(page)
    for schema, suffix in ((published["schema.json"], ""), (published["pipeline.schema.json"], " (pipeline)")):
        page_part = config_reference._Page(schema, suffix=suffix)
        for name, model, _ in page_part.order():
            assert page_part.anchor(name) in slugs, f"no section for {name}"
            for field in model.get("properties", {}):
                assert f"| `{field}` |" in page, f"{name}.{field} is not on the page"


def test_sections_are_in_a_stable_order_from_the_root():
    schema = config_reference._Page(json.loads((ROOT / "config" / "schema.json").read_text(encoding="utf-8")))
    order = [name for name, _, _ in schema.order()]
    assert order[0] == "AppConfig" and order.index("EndpointSpec") < order.index("ModelSpec")
    assert order == [name for name, _, _ in schema.order()]


def test_field_rows_carry_type_default_range_and_allowed_values():
    page = PAGE.read_text(encoding="utf-8")
    assert "| `endpoints` | list of [EndpointSpec](#endpointspec) | required | 1 to 20 items |" in page
    assert "| `removal` | string | `retain` | one of `retain`, `destroy` |" in page
    assert "`instance_type` takes one of these" in page and "`ml.p5e.48xlarge`" in page
    accelerators = next(line for line in page.splitlines() if line.startswith("| `accelerators` |"))
    assert "| integer | `1` | 1 to 64 |" in accelerators


def test_examples_in_a_model_appear_in_its_row():
    schema = {
        "title": "AppConfig",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "description": "Who.", "examples": ["chat"], "maxLength": 8},
            "size": {"type": "integer", "default": 2, "minimum": 1},
        },
    }
    section = "\n".join(config_reference._Page(schema).section("AppConfig", schema, []))
    assert "| `name` | string | required | at most 8 characters | Who. Example: `chat`. |" in section
    assert "| `size` | integer | `2` | ≥ 1 | (not described in the model) |" in section


def test_the_page_has_no_broken_link():
    assert check_page(PAGE) == []
