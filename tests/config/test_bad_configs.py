"""Held-out bad configs: every mutant of every committed config loads, or fails with one ``ConfigurationError``
that names the field (its config path), the file and line, with every problem in the same round.

A mutation harness, not hand-picked examples: for each committed config (``config/*.yaml`` and
``config/examples/*.yaml``, layered ones with what they extend), every node of the parsed YAML is, one at a
time, deleted, replaced by each wrong YAML type and by edge values, or given a misspelt sibling key; text
mutations break the YAML itself and ``extends``; pairs of independent mutations must both be reported in one
error. The regression tests below pin each bug the harness found (``pytest.raises(match=...)``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sagemaker_llm_cdk import ConfigurationError, load_config

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
NOT_APP_CONFIGS = {"jumpstart.lock.yaml", "pipeline.yaml"}  # other formats, with their own tests
CONFIGS = sorted(
    str(p.relative_to(ROOT))
    for p in [*(ROOT / "config").glob("*.yaml"), *(ROOT / "config" / "examples").glob("*.yaml")]
    if p.name not in NOT_APP_CONFIGS
)
DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

WRONG_TYPES: dict[str, Any] = {
    "null": None,
    "int": 7,
    "float": 2.5,
    "bool": True,
    "string": "text",
    "list": [1, "a"],
    "mapping": {"k": 1},
}
EDGES: dict[str, Any] = {
    "empty string": "",
    "empty list": [],
    "empty mapping": {},
    "negative": -3,
    "zero": 0,
    "huge": 10**30,
    "long string": "x" * 5000,
    "unicode and control characters": "ünï\x00\x07\u202e名\ud7ff",
}
REPLACEMENTS: dict[str, Any] = {**WRONG_TYPES, **EDGES}
EDGES_OF: dict[type, tuple[str, ...]] = {
    str: ("empty string", "long string", "unicode and control characters"),
    list: ("empty list",),
    dict: ("empty mapping",),
    int: ("negative", "zero", "huge"),
    float: ("negative", "zero", "huge"),
}
"""The edge values tried on a node of each type (a number's edges on a string only repeat its type error)."""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of config/: mutants are written in place of one file, next to what it extends and the lock.
    In memory (/dev/shm) where there is one: thousands of small writes cost a millisecond each on some disks."""
    shm = Path("/dev/shm")
    root = (
        Path(tempfile.mkdtemp(prefix="bad-configs-", dir=shm))
        if shm.is_dir() and os.access(shm, os.W_OK)
        else tmp_path_factory.mktemp("configs")
    )
    shutil.copytree(ROOT / "config", root / "config")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def restore(workdir: Path) -> Iterator[None]:
    """Each test puts the copied configs back as committed, whatever it wrote over them."""
    yield
    shutil.copytree(ROOT / "config", workdir / "config", dirs_exist_ok=True)


def render(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def walk(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, path + (index,))


def mutated(data: Any, path: tuple[Any, ...], value: Any = None, *, delete: bool = False) -> Any:
    out = copy.deepcopy(data)
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return out


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=DUMPER, sort_keys=False, allow_unicode=True)


# A field whose value another rule reads may be reported where that rule looks: these pairs say where.
RELATED = [
    (
        re.compile(r"^capacity_plans\[\d+\]\.(name|instance_count)$"),
        re.compile(r"endpoints\[\d+\]\.(capacity_plan|scaling)"),
    ),
    (re.compile(r"^endpoints\[\d+\]\.models\[\d+\]\.name$"), re.compile(r"routers\[\d+\]\.targets\[\d+\]\.model")),
]


def names_field(message: str, path: tuple[Any, ...], *, deleted: bool = False) -> bool:
    """Whether ``message`` points at the mutated field at ``path`` (its path in the file): the field itself, the
    mapping holding it (a rule between it and a sibling), the list it was deleted from, or a related field."""
    field = render(path)
    if not field:
        return True
    if re.search(re.escape(field) + r"(?!\w)", message):
        return True
    parent = render(path[:-1])
    if parent and (f"{parent}." in message or (deleted or isinstance(path[-1], int)) and parent in message):
        return True
    return any(mutant.match(field) and where.search(message) for mutant, where in RELATED)


def judge(target: Path, text: str | bytes, path: tuple[Any, ...] | None, *, deleted: bool = False) -> tuple[str, str]:
    """Load ``text`` written at ``target``: ("loads", ""), ("refused", message) or ("bug", why)."""
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")
    try:
        load_config(target)
        return "loads", ""
    except ConfigurationError as error:
        message = str(error)
        if str(target) not in message.splitlines()[0]:
            return "bug", f"the file is not named in the head line:\n{message}"
        unlocated = [p.located() for p in error.problems if not p.where]
        if unlocated:
            return "bug", f"problems without their file and line: {unlocated}"
        if path is not None and not names_field(message, path, deleted=deleted):
            return "bug", f"{render(path)} is not named:\n{message}"
        if "Traceback" in message:
            return "bug", message
        return "refused", message
    except Exception:  # noqa: BLE001 - any other exception is the bug being looked for
        return "bug", traceback.format_exc(limit=-4)


MUST_FAIL = {"duplicate key", "unknown sibling key"}
"""Mutations no config may accept (any other may happen to be allowed: a bool where a string goes, say)."""
FREE_FORM = {"tags", "environment"}
"""Mappings whose keys are the user's (tag keys, environment variables): a new key there is allowed."""
DUPLICATE = "duplicate-of-"
"""Prefix of a sibling key that the text then renames to the key itself: the key given twice."""


def single_mutants(data: Any) -> Iterator[tuple[str, tuple[Any, ...], str, bool]]:
    """(label, path, text, deleted) for every node of ``data``: deleted, replaced, misspelt sibling added."""
    for path, node in walk(data):
        if not path:
            continue
        yield "delete", path, dump(mutated(data, path, delete=True)), True
        for label in (*WRONG_TYPES, *EDGES_OF.get(type(node), ())):
            value = REPLACEMENTS[label]
            if value != node or type(value) is not type(node):
                yield label, path, dump(mutated(data, path, value)), False
        if isinstance(node, str):  # the same text made too long: names, URIs and tags have AWS length limits
            yield "a long tail", path, dump(mutated(data, path, node + "x" * 1100)), False
        if isinstance(path[-1], str):
            sibling = path[:-1] + (path[-1] + "x",)
            yield "unknown sibling key", sibling, dump(mutated(data, sibling, node)), False
            twice = dump(mutated(data, path[:-1] + (DUPLICATE + path[-1],), node))
            yield "duplicate key", path, twice.replace(f"{DUPLICATE}{path[-1]}:", f"{path[-1]}:", 1), False


@pytest.mark.parametrize("config", CONFIGS)
def test_every_mutation_of_a_committed_config_loads_or_fails_clearly(workdir, restore, config):
    data = yaml.safe_load((ROOT / config).read_text(encoding="utf-8"))
    target = workdir / config
    bugs, outcomes = [], {"loads": 0, "refused": 0}
    for label, path, text, deleted in single_mutants(data):
        outcome, detail = judge(target, text, path if "extends" not in path else None, deleted=deleted)
        if outcome == "bug":
            bugs.append(f"{config}: {label} at {render(path)}: {detail}")
        elif label in MUST_FAIL and outcome != "refused" and not (len(path) > 1 and path[-2] in FREE_FORM):
            bugs.append(f"{config}: {label} at {render(path)} loads")
        else:
            outcomes[outcome] += 1
    assert not bugs, f"{len(bugs)} bad outcome(s); first ones:\n" + "\n\n".join(bugs[:5])
    assert outcomes["refused"] > outcomes["loads"] > 0, outcomes  # the harness did reach both sides


@pytest.mark.parametrize("config", CONFIGS)
def test_two_independent_mutations_are_reported_in_one_round(workdir, restore, config):
    data = yaml.safe_load((ROOT / config).read_text(encoding="utf-8"))
    target = workdir / config
    leaves = [
        p
        for p, node in walk(data)
        if p and not isinstance(node, (dict, list)) and not {"extends", "$delete", "$replace"} & set(map(str, p))
    ]
    refused = []
    for path in leaves:
        for label in ("list", "negative", "empty string"):
            if judge(target, dump(mutated(data, path, REPLACEMENTS[label])), path)[0] == "refused":
                refused.append((path, label))
                break
    rng = random.Random(f"pairs:{config}")
    tried, bugs = 0, []
    while tried < 40 and len(refused) >= 2:
        (first, a), (second, b) = rng.sample(refused, 2)
        if first[: len(second)] == second or second[: len(first)] == first or first[:-1] == second[:-1]:
            continue  # one inside the other, or siblings (a rule between them may report them as one)
        tried += 1
        both = mutated(mutated(data, first, REPLACEMENTS[a]), second, REPLACEMENTS[b])
        outcome, message = judge(target, dump(both), None)
        if outcome != "refused" or not (names_field(message, first) and names_field(message, second)):
            bugs.append(f"{render(first)}={a} with {render(second)}={b}: {outcome}\n{message}")
    assert not bugs, f"{len(bugs)} pair(s) not reported together; first ones:\n" + "\n\n".join(bugs[:3])


LAYERED = [
    (config, extends)
    for config in CONFIGS
    for extends in [yaml.safe_load((ROOT / config).read_text(encoding="utf-8")).get("extends")]
    if isinstance(extends, str)
]


@pytest.mark.parametrize(("config", "extends"), LAYERED)
def test_a_mutated_base_is_reported_in_the_base_when_its_child_is_loaded(workdir, restore, config, extends):
    """A seeded sample of the base's mutants, loaded through the config that extends it: the error names the
    base file (where the value is written) and the field."""
    base = (workdir / config).parent / extends
    data = yaml.safe_load(base.read_text(encoding="utf-8"))
    rng = random.Random(f"base:{config}")
    mutants = [m for m in single_mutants(data) if m[0] in ("delete", "list", "negative", "unknown sibling key")]
    bugs = []
    for label, path, text, deleted in rng.sample(mutants, min(25, len(mutants))):
        base.write_text(text, encoding="utf-8")
        outcome, message = judge(workdir / config, (ROOT / config).read_text(encoding="utf-8"), None)
        if outcome == "bug" or outcome == "refused" and str(base) not in message.split("\n", 1)[1] and not deleted:
            bugs.append(f"{label} at {render(path)} of {extends}: {outcome}\n{message}")
    assert not bugs, "\n\n".join(bugs[:3])


TEXT_MUTANTS = {
    "a tab for indentation": lambda text: re.sub(r"^  ", "\t", text, count=3, flags=re.M),
    "bad indentation": lambda text: re.sub(r"(\n[\w-]+:.*\n(?:(?:[ #].*)?\n)*)([\w-]+:)", r"\1 \2", text, count=1),
    "an unclosed quote": lambda text: re.sub(r"^(\s*[\w-]+): (\w\S*)$", r'\1: "\2', text, count=1, flags=re.M),
    "an unclosed flow list": lambda text: text.replace("\n", "\nbroken: [a, b\n", 1),
    "an empty file": lambda text: "",
    "a comment only": lambda text: "# nothing here\n",
    "a file that is a list": lambda text: "- a\n- b\n",
    "a file that is a scalar": lambda text: "just text\n",
    "a NUL byte": lambda text: text.replace("\n", "\n\x00", 1),
    "extends a missing file": lambda text: "extends: nowhere.yaml\n" + re.sub(r"^extends:.*\n", "", text, flags=re.M),
    "extends itself": lambda text: "extends: ./{name}\n" + re.sub(r"^extends:.*\n", "", text, flags=re.M),
    "extends a list file": lambda text: "extends: list.yaml\n" + re.sub(r"^extends:.*\n", "", text, flags=re.M),
    "extends a number": lambda text: "extends: 3\n" + re.sub(r"^extends:.*\n", "", text, flags=re.M),
    "extends a NUL path": lambda text: 'extends: "a\\0b.yaml"\n' + re.sub(r"^extends:.*\n", "", text, flags=re.M),
    "a key given twice": lambda text: re.sub(r"^([\w-]+):.*$", r"\g<0>\n\g<0>", text, count=1, flags=re.M),
    "an unhashable key": lambda text: "? [a, b]\n: c\n" + text,
    "a date that does not exist": lambda text: "when: 2027-13-45\n" + text,
    "a recursive alias": lambda text: "loop: &a [*a]\n" + text,
    "not UTF-8": lambda text: text.encode("utf-8").replace(b"\n", b"\n# caf\xe9\n", 2),
}


@pytest.mark.parametrize("config", CONFIGS)
def test_broken_yaml_and_extends_give_one_clear_error(workdir, restore, config):
    source = (ROOT / config).read_text(encoding="utf-8")
    target = workdir / config
    (target.parent / "list.yaml").write_text("- a\n")
    bugs = []
    for label, mutate in TEXT_MUTANTS.items():
        text = mutate(source)
        text = text.replace("{name}", target.name) if isinstance(text, str) else text
        if text == source:
            continue
        outcome, message = judge(target, text, None)
        if outcome != "refused":
            bugs.append(f"{label}: {outcome}\n{message}")
        elif not re.search(rf"{re.escape(str(target))}( line \d+|\b)", message):
            bugs.append(f"{label}: the file is not named with its line\n{message}")
    assert not bugs, "\n\n".join(bugs)


def test_the_cycle_is_named_with_each_file(workdir):
    a, b = workdir / "config" / "cycle-a.yaml", workdir / "config" / "cycle-b.yaml"
    a.write_text("extends: cycle-b.yaml\n")
    b.write_text("# the other half\nextends: cycle-a.yaml\n")
    with pytest.raises(
        ConfigurationError, match=re.escape(f"fix: break the cycle {a} -> {b} -> {a}; where: {b} line 2")
    ):
        load_config(a)


def test_mutants_that_load_also_build_their_stack(workdir, restore):
    """A seeded sample of the mutants that load (two: building a stack takes seconds): building the stack raises
    nothing, or only a ConfigurationError."""
    from aws_cdk import App, Environment

    from stacks import LlmPlatformStack

    rng = random.Random("stacks")
    built = 0
    for config in rng.sample(CONFIGS, len(CONFIGS)):
        if built == 2:
            break
        data = yaml.safe_load((ROOT / config).read_text(encoding="utf-8"))
        mutants = list(single_mutants(data))
        for _label, path, text, _ in rng.sample(mutants, len(mutants)):
            target = workdir / config
            if judge(target, text, path)[0] != "loads":
                continue
            loaded = load_config(target)
            with contextlib.suppress(ConfigurationError):  # a construct's own check: allowed, it is the one error type
                LlmPlatformStack(
                    App(),
                    loaded.stack_name,
                    config=loaded,
                    config_dir=target.parent,
                    env=Environment(account=loaded.target.account, region=loaded.target.region),
                )
            built += 1
            break
    assert built == 2


# ------------------------------------------------------------------ regressions found by the harness


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def base_config(folder: Path) -> Path:
    shutil.copy(ROOT / "config" / "base.yaml", folder / "base.yaml")
    return folder / "base.yaml"


def test_extends_with_a_nul_byte_is_a_configuration_error(tmp_path):
    """Before: ValueError: embedded null byte (from Path.resolve), with a traceback."""
    path = write(tmp_path, "dev.yaml", 'extends: "base\\0.yaml"\n')
    with pytest.raises(ConfigurationError, match=r"extends: got .*allowed: a readable YAML file; fix: check `extends`"):
        load_config(path)


def test_a_jumpstart_model_whose_architecture_is_a_list_is_a_configuration_error(tmp_path):
    """Before: TypeError: unhashable type: 'list' (the pre-trained head's check read it as a name)."""
    shutil.copy(ROOT / "config" / "jumpstart.lock.yaml", tmp_path / "jumpstart.lock.yaml")
    data = yaml.safe_load((ROOT / "config" / "examples" / "eagle-jumpstart.yaml").read_text())
    data["endpoints"][0]["models"][0]["architecture"] = ["GptOssForCausalLM"]
    path = write(tmp_path, "js.yaml", dump(data))
    with pytest.raises(
        ConfigurationError,
        match=re.escape("endpoints[0].models[0].architecture: got ['GptOssForCausalLM']; allowed: text"),
    ):
        load_config(path)


def test_a_huge_duration_with_a_window_is_a_configuration_error(tmp_path):
    """Before: OverflowError from timedelta(days=10**30) in the purchase-window rule."""
    shutil.copytree(ROOT / "config", tmp_path / "config")
    path = tmp_path / "config" / "examples" / "reserved-capacity.yaml"
    data = yaml.safe_load(path.read_text())
    data["capacity_plans"][0]["duration_days"] = 10**30
    path.write_text(dump(data))
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plans[0].duration_days: got 1000000000000000000000000000000; allowed: whole days 1-182"
        ),
    ):
        load_config(path)


def test_layering_problems_come_with_the_configs_own_problems(tmp_path):
    """Before: a misused $delete stopped at the merge, so the overlay's field problems came only after fixing it;
    and a key given twice stopped the YAML reader."""
    base_config(tmp_path)
    path = write(
        tmp_path,
        "dev.yaml",
        """\
extends: base.yaml
removal: destroy
removal: retain
endpoints:
  - name: Chat
    scaling: {max_instances: 0}
    models:
      - {name: qwen3-32b-typo, $delete: true}
""",
    )
    with pytest.raises(ConfigurationError) as error:
        load_config(path)
    lines = [p.located() for p in error.value.problems]
    assert lines == [
        "removal: got 'retain'; allowed: each key once in a mapping; key 'removal' is given twice; fix: remove one of "
        f"the two (the last one is the value read); where: {path} line 3",
        "endpoints[0].models[0].name: got 'qwen3-32b-typo'; allowed: a name in the list it extends: qwen3-32b; fix: "
        f"correct the name, or remove the $delete item (there is nothing to delete); where: {path} line 8",
        "endpoints[0].scaling.max_instances: got 0; allowed: at least 1; fix: set max_instances to a value at least 1; "
        f"where: {path} line 6",
    ]


def test_problems_name_the_file_and_line_where_the_field_is_written(tmp_path):
    """Before: only the head line named the files (``dev.yaml (extends base.yaml)``) and the path was the merged
    config's, which differs from the file's when items merge by name."""
    base = base_config(tmp_path)
    path = write(
        tmp_path,
        "dev.yaml",
        """\
extends: base.yaml
endpoints:
  - name: Chat
    models:
      - {name: qwen3-32b, $delete: true}
      - name: small
        model_data_s3_uri: s3://my-llm-weights/small/
        copies: {min_copies: -1}
""",
    )
    with pytest.raises(ConfigurationError) as error:
        load_config(path)
    message = str(error.value)
    assert message.startswith(f"1 problem(s) in {path} (extends {base}):")
    assert message.endswith(
        "endpoints[0].models[0].copies.min_copies: got -1; allowed: at least 0; fix: set min_copies "
        f"to a value at least 0; where: {path} line 8, as endpoints[0].models[1].copies.min_copies "
        "there"
    )
    (tmp_path / "base.yaml").write_text(base.read_text().replace("max_instances: 2", "max_instances: -2"))
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"endpoints[0].scaling.max_instances: got -2; allowed: at least 1; fix: set max_instances to a value at "
            f"least 1; where: {base} line 19"
        ),
    ):
        load_config(path)


def test_a_missing_field_points_at_the_mapping_that_lacks_it(tmp_path):
    base_config(tmp_path)
    path = write(
        tmp_path,
        "dev.yaml",
        "extends: base.yaml\nendpoints:\n  - name: Chat\n    models:\n"
        "      - {name: qwen3-32b, $delete: true}\n      - name: small\n",
    )
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"endpoints[0].models[0].model_data_s3_uri: got nothing (the field is missing); allowed: an s3:// prefix "
            "or .tar.gz with source s3 (the default); fix: give model_data_s3_uri, or source: jumpstart with model_id "
            f"and version; where: under {path} line 6, as endpoints[0].models[1].model_data_s3_uri there"
        ),
    ):
        load_config(path)


def test_a_scalar_item_in_a_list_that_merges_by_name_is_named_in_its_file(tmp_path):
    """Before: it was appended, and reported as endpoints[0].models[1] (its place after the merge) without a line."""
    base_config(tmp_path)
    path = write(tmp_path, "dev.yaml", "extends: base.yaml\nendpoints:\n  - name: Chat\n    models:\n      - 7\n")
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"endpoints[0].models[0]: got 7; allowed: a mapping of keys to values (an item with a name); fix: write it "
            f"as a mapping, e.g. {{name: ...}}, or remove it; where: {path} line 5"
        ),
    ):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("when: 2027-13-45\n", r"unknown position: got 'month must be in 1\.\.12'; allowed: valid YAML"),
        ("? [a, b]\n: c\n", r"line 1, column 3: got 'a mapping key that is a list or mapping'; allowed: valid YAML"),
    ],
)
def test_yaml_the_constructor_refuses_is_a_configuration_error(tmp_path, text, expected):
    """Before: ValueError from the date constructor; TypeError from an unhashable key."""
    with pytest.raises(ConfigurationError, match=expected):
        load_config(write(tmp_path, "c.yaml", text))


def test_the_app_prints_the_layered_problems_without_a_traceback(tmp_path):
    """The app run as `cdk synth -c config=PATH` runs it: one error, every problem with file and line, exit 1."""
    base_config(tmp_path)
    config = write(
        tmp_path,
        "dev.yaml",
        "extends: base.yaml\nstack_name: A\nstack_name: B\nendpoints:\n"
        "  - name: Chat\n    scaling: {max_instances: 0}\n",
    )
    env = dict(
        os.environ,
        CDK_OUTDIR=str(tmp_path / "out"),
        CDK_CONTEXT_JSON=json.dumps({"config": str(config)}),
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"error: 2 problem(s) in {config} (extends {tmp_path / 'base.yaml'}):" in result.stderr
    assert "stack_name: got 'B'; allowed: each key once in a mapping; key 'stack_name' is given twice" in result.stderr
    assert "endpoints[0].scaling.max_instances: got 0; allowed: at least 1" in result.stderr
    assert f"where: {config} line 6" in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.template.json")), (
        "nothing synthesized"
    )


def test_a_scalar_item_of_the_base_is_named_in_the_base(tmp_path):
    """Before: the base's item was located by its index in the overlay file (dev.yaml line 5, the wrong file)."""
    base = write(tmp_path, "base.yaml", "endpoints:\n  - [1, a]\n  - name: Chat\n    instance_type: ml.g6e.12xlarge\n")
    path = write(
        tmp_path,
        "dev.yaml",
        "extends: base.yaml\nendpoints:\n  - name: Chat\n    models:\n"
        "      - {name: m, model_data_s3_uri: 's3://my-llm-weights/m/'}\n",
    )
    with pytest.raises(ConfigurationError) as error:
        load_config(path)
    assert [p.located() for p in error.value.problems] == [
        f"endpoints[0]: got [1, 'a']; allowed: a mapping of keys to values; fix: write endpoints[0] as a mapping of "
        f"keys to values; where: {base} line 2"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            b"stack_name: A\nendpoints:\n  - name: \x00x\n",
            r"line 3: got 'character #x0000: control characters are not allowed'; allowed: "
            r"valid YAML; .*; where: .* line 3",
        ),
        (b"# caf\xe9\nstack_name: A\n", r"line 1: got b'\\xe9\\nst'; allowed: UTF-8 text; fix: save .* as UTF-8"),
    ],
)
def test_characters_yaml_or_utf8_refuse_are_named_with_their_line(tmp_path, text, expected):
    """Before: a NUL byte was at an 'unknown position'; a byte that is not UTF-8 said 'check the path'."""
    path = tmp_path / "c.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigurationError, match=expected):
        load_config(path)


def default_with(change: Any) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["endpoints"][0]["data_capture"].update(sampling_percentage=True),
            "endpoints[0].data_capture.sampling_percentage: got True; allowed: a number, not true or false; fix: write "
            "sampling_percentage as a number",
        ),
        (
            lambda d: d["endpoints"][0]["scaling"].update(max_instances=True),
            "endpoints[0].scaling.max_instances: got True; allowed: a number, not true or false",
        ),
        (
            lambda d: d.update(
                capacity_plans=[
                    {
                        "name": "p",
                        "instance_type": "ml.p5e.48xlarge",
                        "instance_count": 1,
                        "duration_days": 1,
                        "max_upfront_fee_usd": 1,
                        "start_after": 7,
                    }
                ]
            ),
            "capacity_plans[0].start_after: got 7; allowed: an ISO-8601 time with a time zone, e.g. "
            "2026-01-15T00:00:00Z",
        ),
    ],
)
def test_values_pydantic_would_coerce_are_refused(change, expected):
    """Before: true loaded as 1 (a 1% capture, one instance) and 7 as 1970-01-01T00:00:07Z, without a word."""
    from sagemaker_llm_cdk import parse_config

    with pytest.raises(ConfigurationError, match=re.escape(expected)):
        parse_config(default_with(change), source="c.yaml")


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"project": "v" * 257}, "tags.project: got 'vvvv"),
        ({"project": "v" * 257}, "allowed: a tag value of at most 256 letters, digits, spaces and _ . : / = + - @"),
        (
            {"AWS:owner": "me"},
            "tags.AWS:owner: got 'AWS:owner'; allowed: a tag key not starting with aws: (reserved for AWS)",
        ),
        (
            {"k" * 129: "v"},
            "allowed: a tag key of 1-128 letters, digits, spaces and _ . : / = + - @; fix: rename the tag",
        ),
        ({"owner": "a\x07b"}, "tags.owner: got 'a\\x07b'; allowed: a tag value of at most 256"),
        ({f"k{i}": "v" for i in range(51)}, "tags: got '51 tags'; allowed: at most 50 tags (AWS's limit per resource)"),
    ],
)
def test_tags_follow_the_aws_tag_rules(tags, expected):
    """Before: any string loaded, and CloudFormation refused the tag at deploy."""
    from sagemaker_llm_cdk import parse_config

    with pytest.raises(ConfigurationError, match=re.escape(expected)):
        parse_config(default_with(lambda d: d.update(tags=tags)), source="c.yaml")
    parse_config(default_with(lambda d: d.update(tags={"cost-center": "ML team/eu: 42", "empty": "", "名前": "値"})))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["endpoints"][0]["models"][0].update(
                model_data_s3_uri="s3://my-llm-weights/" + "k" * 1010 + "/"
            ),
            "endpoints[0].models[0].model_data_s3_uri: got 's3://my-llm-weights/kkk",
        ),
        (
            lambda d: d["endpoints"][0]["models"][0].update(
                model_data_s3_uri="s3://my-llm-weights/" + "k" * 1010 + "/"
            ),
            "allowed: an S3 URI of at most 1024 characters (SageMaker's S3Uri); fix: use a shorter prefix or object "
            "key",
        ),
        (
            lambda d: d["endpoints"][0]["models"][1].update(environment={"MY_FLAG": "v" * 1025}),
            "endpoints[0].models[1].environment.MY_FLAG: got 'vvv",
        ),
        (
            lambda d: d["endpoints"][0]["models"][1].update(environment={"MY_FLAG": "v" * 1025}),
            "allowed: a value of at most 1024 characters",
        ),
        (
            lambda d: d["endpoints"][0]["models"][1].update(environment={f"V{i}": "1" for i in range(101)}),
            "endpoints[0].models[1].environment: got '101 variables'; allowed: at most 100 variables",
        ),
    ],
)
def test_lengths_sagemaker_refuses_are_config_errors(change, expected):
    """Before: they loaded and SageMaker refused the model at deploy (botocore: S3Uri and EnvironmentValue max
    1024, EnvironmentMap at most 100 entries)."""
    from sagemaker_llm_cdk import parse_config

    with pytest.raises(ConfigurationError, match=re.escape(expected)):
        parse_config(default_with(change), source="c.yaml")
