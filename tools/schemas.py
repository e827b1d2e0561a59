"""The configs' JSON Schemas, for editors (each config's first line names its schema).

Usage: ``python -m tools.schemas [FOLDER]`` (``make schema``) writes, into FOLDER (default ``config``):

- ``schema.json``: a whole deployment config (``config/default.yaml``);
- ``schema.layer.json``: a deployment config that ``extends`` others or is extended (``base.yaml``,
  ``dev.yaml``, ``prod.yaml``): the same properties, none required, ``$delete``/``$replace`` allowed
  in the items that merge by name;
- ``pipeline.schema.json``: the delivery pipeline's file (``config/pipeline.yaml``).

``tests/config/test_config_layers.py`` fails when a published schema is not what this writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MODELINE = "# yaml-language-server: $schema=./{schema}"


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema, for every schema ``main`` writes."""
    from sagemaker_llm_cdk.config.loading import json_schema

    from stacks.pipeline import PipelineSettings

    pipeline = PipelineSettings.model_json_schema(mode="validation")
    pipeline["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    pipeline["title"] = "sagemaker-llm-cdk delivery pipeline config"
    return {
        "schema.json": json_schema(),
        "schema.layer.json": json_schema(layer=True),
        "pipeline.schema.json": pipeline,
    }


def schema_for(config: Path) -> str:
    """The schema file a config in ``config/`` should name in its modeline."""
    if config.name == "pipeline.yaml":
        return "pipeline.schema.json"
    text = config.read_text(encoding="utf-8")
    layered = config.name == "base.yaml" or any(line.startswith("extends:") for line in text.splitlines())
    return "schema.layer.json" if layered else "schema.json"


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path("config")
    for name, schema in schemas().items():
        (folder / name).write_text(render(schema), encoding="utf-8")
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
