"""Synth time of the app against a raw-L1 baseline that declares the same resources, measured in one run.

Usage: ``python benchmarks/synth.py [--runs 5] [--adapters 200]``

Each measurement is a fresh process (as ``cdk synth`` runs the app), so jsii start-up is
included in both. The baseline builds the same template resource by resource with
``CfnResource`` (the library's output replayed as raw L1), so the ratio is what the
library's constructs, validation and grants add on top of plain CloudFormation in CDK.
The runs alternate library / baseline so drift on a shared machine hits both alike.
Goal (issue 2): the library adds at most 1.5x over raw L1.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LIBRARY = textwrap.dedent("""
    import sys, yaml
    from aws_cdk import App
    from sagemaker_llm_cdk import parse_config
    from stacks import LlmPlatformStack
    data = yaml.safe_load(open(sys.argv[1]))
    app = App(outdir=sys.argv[2])
    LlmPlatformStack(app, "Bench", config=parse_config(data))
    app.synth()
""")

BASELINE = textwrap.dedent("""
    import json, sys
    from aws_cdk import App, CfnResource, Stack
    template = json.load(open(sys.argv[1]))
    app = App(outdir=sys.argv[2])
    stack = Stack(app, "Bench")
    for logical_id, resource in template["Resources"].items():
        if resource["Type"].startswith("AWS::CDK::"):
            continue
        cfn = CfnResource(stack, logical_id, type=resource["Type"], properties=resource.get("Properties"))
        cfn.override_logical_id(logical_id)
    app.synth()
""")


def config_with_adapters(count: int) -> dict:
    import yaml

    data = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    if count:
        model = data["endpoints"][0]["models"][0]
        model["lora"] = {"max_gpu_adapters": 8, "max_cpu_adapters": 64}
        model["adapters"] = [{"name": f"adapter-{i:04d}", "artifact_s3_uri": f"s3://my-adapters/a{i}.tar.gz"}
                             for i in range(count)]
    return data


def run(script: str, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(label: str, adapters: int, runs: int, work: Path) -> None:
    import yaml

    config = work / f"{label}.yaml"
    config.write_text(yaml.safe_dump(config_with_adapters(adapters)))
    out = work / f"{label}-lib"
    run(LIBRARY, str(config), str(out))  # warm-up, and the template the baseline replays
    templates = sorted(out.glob("*.template.json"))
    merged = {"Resources": {}}
    for template in templates:
        merged["Resources"].update(json.loads(template.read_text())["Resources"])
    replay = work / f"{label}-template.json"
    replay.write_text(json.dumps(merged))
    run(BASELINE, str(replay), str(work / f"{label}-raw"))  # warm-up
    library, baseline = [], []
    for _ in range(runs):
        library.append(run(LIBRARY, str(config), str(out)))
        baseline.append(run(BASELINE, str(replay), str(work / f"{label}-raw")))
    ratios = [a / b for a, b in zip(library, baseline)]
    resources = len(merged["Resources"])
    print(f"{label}: {resources} resources in {len(templates)} template(s), {runs} runs each")
    print(f"  library  median {statistics.median(library):6.2f} s  (min {min(library):.2f}, max {max(library):.2f})")
    print(f"  raw L1   median {statistics.median(baseline):6.2f} s  (min {min(baseline):.2f}, max {max(baseline):.2f})")
    print(f"  ratio library/raw L1: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
          f"max {max(ratios):.2f}); goal <= 1.50x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--adapters", type=int, default=200, help="adapters in the second config (0 to skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        measure("default", 0, args.runs, work)
        if args.adapters:
            measure(f"{args.adapters}-adapters", args.adapters, args.runs, work)


if __name__ == "__main__":
    main()
