"""Synth time and peak memory of the real app (what ``cdk synth`` runs) against a raw-L1 replay, in one call.

Usage: ``python benchmarks/synth.py [--runs 3] [--adapters 200] [--validator both|on|off] [--profile]``

What is measured, each run a fresh process as ``cdk synth`` starts it:

* **app**: ``app.py`` exactly as the CDK CLI runs it: the environment the CLI gives the app (captured once
  per call from the pinned CLI: ``cdk.json``'s context with every feature flag, the CLI's own context
  keys, ``CDK_*`` variables), the config through ``-c config=`` and the checks ``app.py`` attaches
  (cdk-nag packs, the checkov acknowledgements aspect, the wildcard guard, ``report_checks``). Every run
  writes a fresh cloud assembly, as ``make synth`` does (it removes ``cdk.out`` first).
* **raw L1**: the templates of the app's first run replayed with ``CfnResource`` per resource (and
  ``CfnParameter``/``CfnMapping``/``CfnCondition``/``CfnOutput``), one ``Stack`` per template, in an app
  with the same environment and context: what the same CloudFormation costs in CDK without the library.

Both sides run with Python's bytecode cache (``PYTHONDONTWRITEBYTECODE`` is dropped: a user's synth, or an
installed wheel, does not recompile the library on every run). Both sides run under the same validator
setting: ``on`` is what a user gets (CDK's built-in
CloudFormation validator, ``CloudFormationValidatePlugin``, runs after every synth), ``off`` sets
``CDK_VALIDATION=false`` on both (as ``cdk synth --no-validation`` does). Runs alternate app / raw so
a shared machine's drift hits both alike; the ratio is the median of the per-pair ratios. Peak memory
is the largest single process of a run (Python or the jsii Node kernel), from ``wait4``.

With ``--adapters N`` a second config has N adapters on the LoRA model (the default config has 2): the
marginal cost of an adapter is the median difference of the two configs' app times (runs of the two configs
alternated pair by pair, after both blocks) over the adapter
count difference; peak memory is printed per config, so its growth per adapter shows too.

``--profile`` instead runs the app once under cProfile (Python side) with the validator as set, and
prints the top functions by cumulative time and the number of jsii round trips (kernel requests).

Targets: app/raw at most 1.3x with the validator on, at most 2x with it off; at most 3 ms per
adapter; peak memory linear in adapters. The benchmark prints figures, never a verdict by timing assert.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
PATH = os.pathsep.join([str(CDK.parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")])

CAPTURE = textwrap.dedent("""
    import json, os, sys
    keep = {k: v for k, v in os.environ.items() if k.startswith("CDK_")}
    overflow = os.environ.get("CONTEXT_OVERFLOW_LOCATION_ENV") or os.environ.get("CDK_CONTEXT_OVERFLOW_LOCATION")
    if overflow and "CDK_CONTEXT_JSON" not in keep:
        keep["CDK_CONTEXT_JSON"] = open(overflow).read()
    json.dump(keep, open(sys.argv[1], "w"))
    from aws_cdk import App
    App().synth()
""")

RAW = textwrap.dedent("""
    import json, sys
    from aws_cdk import App, CfnCondition, CfnMapping, CfnOutput, CfnParameter, CfnResource, Fn, Stack, Token
    ATTRIBUTES = ("Condition", "DependsOn", "DeletionPolicy", "UpdateReplacePolicy", "UpdatePolicy",
                  "CreationPolicy", "Metadata")

    def condition(expression):
        (name, args), = expression.items()
        if name == "Fn::Equals":
            return Fn.condition_equals(*args)
        if name == "Fn::Not":
            return Fn.condition_not(condition(args[0]))
        if name in ("Fn::Or", "Fn::And"):
            parts = [condition(a) for a in args]
            return Fn.condition_or(*parts) if name == "Fn::Or" else Fn.condition_and(*parts)
        if name == "Condition":
            return Fn.condition_equals(Fn.ref("AWS::NoValue"), "")  # never reached in the app's templates
        raise ValueError(name)

    app = App()
    for name, template in json.load(open(sys.argv[1])).items():
        stack = Stack(app, name)
        for key, parameter in template.get("Parameters", {}).items():
            if key != "BootstrapVersion":
                CfnParameter(stack, key, type=parameter.get("Type", "String"), default=parameter.get("Default"),
                             description=parameter.get("Description"))
        for key, mapping in template.get("Mappings", {}).items():
            CfnMapping(stack, key, mapping=mapping)
        for key, expression in template.get("Conditions", {}).items():
            if key != "CDKMetadataAvailable":
                CfnCondition(stack, key, expression=condition(expression))
        for logical_id, resource in template["Resources"].items():
            if resource["Type"].startswith("AWS::CDK::"):
                continue
            cfn = CfnResource(stack, logical_id, type=resource["Type"], properties=resource.get("Properties"))
            cfn.override_logical_id(logical_id)
            for attribute in ATTRIBUTES:
                if attribute in resource:
                    cfn.add_override(attribute, resource[attribute])
        for key, output in template.get("Outputs", {}).items():
            CfnOutput(stack, key, value=Token.as_string(output["Value"]), description=output.get("Description"),
                      export_name=output.get("Export", {}).get("Name"))
    app.synth()
""")

PROFILE = textwrap.dedent("""
    import cProfile, pstats, runpy, sys
    top, dump = int(sys.argv[1]), sys.argv[2:]
    import jsii._kernel.providers.process as process
    import collections
    calls = collections.Counter()
    send = process._NodeProcess.send
    callers = collections.Counter()
    def counting(self, obj, *a, **k):
        calls[type(obj).__name__.replace("Request", "")] += 1
        frame = sys._getframe(1)
        while frame is not None and "site-packages" in frame.f_code.co_filename:
            frame = frame.f_back
        if frame is not None:
            callers[f"{frame.f_code.co_filename.replace(root, '')}:{frame.f_lineno} {frame.f_code.co_name}"] += 1
        return send(self, obj, *a, **k)
    root = __import__("os").getcwd() + "/"
    process._NodeProcess.send = counting
    sys.argv = ["app.py"]
    sys.path.insert(0, ".")
    profiler = cProfile.Profile()
    status = 0
    profiler.enable()
    try:
        runpy.run_path("app.py", run_name="__main__")
    except SystemExit as exit:
        status = exit.code or 0
    profiler.disable()
    print(f"jsii round trips (kernel requests): {sum(calls.values())} ({dict(calls.most_common())}); "
          f"app exit status {status}")
    print("round trips by the first caller outside site-packages:")
    for where, count in callers.most_common(30):
        print(f"  {count:6d}  {where}")
    if dump:
        profiler.dump_stats(dump[0])
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
""")


def cli_environment(work: Path) -> dict[str, str]:
    """The CDK_* environment the pinned CLI gives an app run from this folder (context with cdk.json's flags)."""
    if not CDK.exists():
        sys.exit(f"{CDK} not found: run `make synth-setup` first")
    script, captured = work / "capture.py", work / "cli-env.json"
    script.write_text(CAPTURE)
    env = {**os.environ, "CDK_DISABLE_VERSION_CHECK": "1", "CDK_CLI_TELEMETRY": "false"}
    env["PATH"] = PATH
    subprocess.run(
        [
            str(CDK),
            "synth",
            "--quiet",
            "--app",
            f"{sys.executable} {script} {captured}",
            "--output",
            str(work / "capture.out"),
        ],
        cwd=ROOT,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # exits 1: "This app contains no stacks"
    if not captured.is_file():
        sys.exit(f"the CDK CLI did not run the capture app ({CDK} synth --app ...)")
    cli = json.loads(captured.read_text())
    for transient in ("CDK_OUTDIR", "CDK_ERROR_FILE", "CDK_PERF_COUNTERS_FILE"):
        cli.pop(transient, None)
    return cli


def app_config(adapters: int, work: Path) -> Path:
    """The default config, or it with ``adapters`` adapters on its LoRA model, in a copy of config/."""
    import yaml

    folder = work / f"config-{adapters}"
    shutil.copytree(ROOT / "config", folder)
    if adapters:
        data = yaml.safe_load((folder / "default.yaml").read_text())
        models = [m for e in data["endpoints"] for m in e["models"]]
        model = next((m for m in models if m.get("lora")), models[0])
        model.setdefault("lora", {"max_gpu_adapters": 8, "max_cpu_adapters": 64})
        model["adapters"] = [
            {"name": f"adapter-{i:04d}", "artifact_s3_uri": f"s3://my-adapters/a{i}.tar.gz"} for i in range(adapters)
        ]
        (folder / "default.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "default.yaml"


class Runner:
    def __init__(self, cli: dict[str, str], work: Path) -> None:
        self.cli, self.work, self.count = cli, work, 0

    def env(self, *, validator: bool, config: Path | None = None) -> dict[str, str]:
        # PYTHONDONTWRITEBYTECODE (set in some sandboxes and CI images) would recompile the app's own modules on
        # every run, which a user's `cdk synth` (or an installed wheel, compiled at install) does not: both sides
        # run with bytecode caching, as users get it; the warm-up run writes the caches.
        env = {k: v for k, v in os.environ.items() if not k.startswith("CDK_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(self.cli)
        env["PATH"] = PATH  # Node 22 of package.json first, as the Makefile and the CLI run the app
        context = json.loads(env["CDK_CONTEXT_JSON"])
        if config is not None:
            context["config"] = str(config)
        env["CDK_CONTEXT_JSON"] = json.dumps(context)
        self.count += 1
        env["CDK_OUTDIR"] = str(self.work / f"out-{self.count}")
        if not validator:
            env["CDK_VALIDATION"] = "false"
        return env

    def run(self, command: list[str], env: dict[str, str]) -> tuple[float, float, float, Path]:
        """Wall seconds, CPU seconds (user + system, the jsii Node kernel included) and peak RSS (MiB, the largest
        single process) of one run; fails on a non-zero exit."""
        log = self.work / "last.log"
        with log.open("w") as out:
            start = time.perf_counter()
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(process.pid, 0)
            elapsed = time.perf_counter() - start
            cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
            # The jsii Node kernel can outlive the app's Python by a moment: as the subreaper, this process
            # gets it when it is orphaned; reap it (and anything else of this run) so its CPU and memory count.
            while True:
                try:
                    _, _, orphan = os.wait4(-1, 0)
                except ChildProcessError:
                    break
                cpu, peak = cpu + orphan.ru_utime + orphan.ru_stime, max(peak, orphan.ru_maxrss)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{log.read_text()[-3000:]}")
        return elapsed, cpu, peak / 1024, Path(env["CDK_OUTDIR"])

    def app(self, config: Path, validator: bool) -> tuple[float, float, float, Path]:
        return self.run([sys.executable, "app.py"], self.env(validator=validator, config=config))

    def raw(self, templates: Path, validator: bool) -> tuple[float, float, float, Path]:
        return self.run([sys.executable, str(self.work / "raw.py"), str(templates)], self.env(validator=validator))


def replay_file(assembly: Path, label: str, work: Path) -> tuple[Path, int, int]:
    """Every template of ``assembly`` as ``{stack name: template}``; resources counted without CDK metadata."""
    templates = {}
    for path in sorted(assembly.glob("*.template.json")):
        templates[path.name.split(".")[0]] = json.loads(path.read_text())
    target = work / f"{label}-templates.json"
    target.write_text(json.dumps(templates))
    resources = sum(
        1 for t in templates.values() for r in t["Resources"].values() if not r["Type"].startswith("AWS::CDK::")
    )
    return target, resources, len(templates)


def clean(*folders: Path) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def measure(runner: Runner, config: Path, label: str, validator: bool, runs: int) -> dict[str, object]:
    first = runner.app(config, validator)[-1]  # warm-up, and the templates the raw side replays
    templates, resources, count = replay_file(first, f"{label}-{validator}", runner.work)
    clean(first)
    clean(runner.raw(templates, validator)[-1])  # warm-up
    app, raw, app_cpu, raw_cpu, app_mem, raw_mem = [], [], [], [], [], []
    for _ in range(runs):
        seconds, cpu, memory, out = runner.app(config, validator)
        app.append(seconds), app_cpu.append(cpu), app_mem.append(memory), clean(out)
        seconds, cpu, memory, out = runner.raw(templates, validator)
        raw.append(seconds), raw_cpu.append(cpu), raw_mem.append(memory), clean(out)
    ratios = [a / b for a, b in zip(app, raw, strict=True)]
    cpu_ratios = [a / b for a, b in zip(app_cpu, raw_cpu, strict=True)]
    setting = "validator on (as users get it)" if validator else "validator off on both (CDK_VALIDATION=false)"
    print(f"{label}, {setting}: {resources} resources in {count} templates, {runs} runs each")
    for side, wall, cpu, memory in (("app   ", app, app_cpu, app_mem), ("raw L1", raw, raw_cpu, raw_mem)):
        print(
            f"  {side}  wall median {statistics.median(wall):6.2f} s (min {min(wall):.2f}, max {max(wall):.2f})  "
            f"cpu median {statistics.median(cpu):6.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f})  "
            f"peak {statistics.median(memory):4.0f} MiB"
        )
    goal = 1.3 if validator else 2.0
    print(
        f"  ratio app/raw L1: wall median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
        f"max {max(ratios):.2f}), cpu median {statistics.median(cpu_ratios):.2f}x (min {min(cpu_ratios):.2f}, "
        f"max {max(cpu_ratios):.2f}); goal <= {goal:.1f}x",
        flush=True,
    )
    return {"app": app, "raw": raw, "app_cpu": app_cpu, "raw_cpu": raw_cpu, "app_mem": app_mem, "resources": resources}


def become_subreaper() -> None:
    """Orphaned descendants (a jsii kernel outliving its Python) are re-parented here, so they can be reaped."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def main() -> None:
    become_subreaper()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--adapters", type=int, default=200, help="adapters in the second config (0 to skip)")
    parser.add_argument("--validator", choices=("both", "on", "off"), default="both")
    parser.add_argument("--profile", action="store_true", help="cProfile one app run and count jsii round trips")
    parser.add_argument("--top", type=int, default=45, help="functions printed by --profile")
    parser.add_argument("--profile-out", help="also write --profile's pstats file here")
    parser.add_argument("--profile-adapters", type=int, default=0, help="--profile the config with this many adapters")
    args = parser.parse_args()
    settings = {"both": (True, False), "on": (True,), "off": (False,)}[args.validator]
    with tempfile.TemporaryDirectory(prefix="synth-bench-") as tmp:
        work = Path(tmp)
        (work / "raw.py").write_text(RAW)
        runner = Runner(cli_environment(work), work)
        default = app_config(0, work)
        if args.profile:
            config = app_config(args.profile_adapters, work) if args.profile_adapters else default
            env = runner.env(validator=settings[0], config=config)
            (work / "profile_app.py").write_text(PROFILE)
            dump = [str(Path(args.profile_out).resolve())] if args.profile_out else []
            subprocess.run(
                [sys.executable, str(work / "profile_app.py"), str(args.top), *dump], cwd=ROOT, env=env, check=False
            )
            return
        many = app_config(args.adapters, work) if args.adapters else None
        for validator in settings:
            base = measure(runner, default, "default config (2 adapters)", validator, args.runs)
            if many is None:
                continue
            more = measure(runner, many, f"{args.adapters} adapters", validator, args.runs)
            extra = args.adapters - 2
            # The two blocks above ran one after the other, so load drift between them moves their difference:
            # the marginal cost comes from app runs of the two configs alternated, pair by pair.
            pairs = [(runner.app(default, validator), runner.app(many, validator)) for _ in range(args.runs)]
            for pair in pairs:
                clean(pair[0][-1], pair[1][-1])
            for index, figure in ((0, "wall"), (1, "cpu")):
                marginal = [(float(b[index]) - float(a[index])) / extra * 1000 for a, b in pairs]  # type: ignore[arg-type]
                print(
                    f"  marginal {figure} of an adapter (app, {extra} more, {args.runs} alternated pairs): median "
                    f"{statistics.median(marginal):.1f} ms (min {min(marginal):.1f}, max {max(marginal):.1f}); "
                    "goal <= 3 ms"
                )
            added = more["resources"] - base["resources"]  # type: ignore[operator]
            raw_marginal = [
                (b - a) / max(1, added) * 1000
                for a, b in zip(base["raw_cpu"], more["raw_cpu"], strict=True)  # type: ignore[call-overload]
            ]
            memory = (statistics.median(more["app_mem"]) - statistics.median(base["app_mem"])) / extra * 1024  # type: ignore[call-overload]
            print(
                f"  peak memory {memory:+.0f} KiB per adapter; raw L1 cpu per extra resource "
                f"{statistics.median(raw_marginal):.1f} ms ({added} more resources)",
                flush=True,
            )


if __name__ == "__main__":
    main()
