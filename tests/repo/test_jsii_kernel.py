"""The test suite's jsii kernel without jsii's relay process (tests/support/jsii_kernel.py and .js)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import JSII_RELAY_REASON, ROOT
from support import jsii_kernel

pytestmark = pytest.mark.synth

NODE = shutil.which("node")
PYTHON_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "CDK_VALIDATION": "false"}


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
            found.append((int(entry.name), cmdline))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_this_process_runs_one_kernel_process_and_no_relay():
    if JSII_RELAY_REASON is not None:
        pytest.skip(f"this run uses jsii's relay: {JSII_RELAY_REASON}")
    kernels = [(pid, cmd) for pid, cmd in children(os.getpid()) if "jsii_kernel.js" in cmd]
    assert len(kernels) == 1, children(os.getpid())
    ((pid, command),) = kernels
    assert "--max-old-space-size=4069" in command  # started by jsii's own process provider
    assert children(pid) == []  # the kernel itself: no relay in between
    assert (
        "JSII_RUNTIME" not in os.environ and "NODE_PRESERVE_SYMLINKS" not in os.environ
    )  # subprocesses run jsii as users do


@pytest.fixture
def unswitched(monkeypatch):
    """The environment of a plain `make test` (a run with the relay switch on still checks the helper's rules)."""
    for name in (jsii_kernel.RELAY_SWITCH, "JSII_RUNTIME", "JSII_NODE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_kernel_assumptions_hold_for_the_installed_jsii(unswitched):
    """The pinned jsii's kernel has what jsii_kernel.js relies on; when an upgrade breaks it, the suite says so."""
    assert jsii_kernel.unsupported_reason() is None


def test_a_kernel_that_changed_falls_back_to_the_relay_and_says_what_changed(unswitched):
    unswitched.setattr(
        jsii_kernel, "ASSUMED", {**jsii_kernel.ASSUMED, "readFD:4,writeFD:4": "the kernel talks over fd 4"}
    )
    assert jsii_kernel.unsupported_reason() == (
        f"jsii {__import__('jsii').__version__}'s kernel changed (the kernel talks over fd 4 no longer holds)"
    )


@pytest.mark.parametrize(
    "name, value, reason",
    [
        ("LLM_CDK_TESTS_JSII_RELAY", "1", "LLM_CDK_TESTS_JSII_RELAY is set"),
        ("JSII_RUNTIME", "/opt/other-runtime.js", "JSII_RUNTIME or JSII_NODE is set already"),
        ("JSII_NODE", "/opt/node", "JSII_RUNTIME or JSII_NODE is set already"),
    ],
)
def test_the_relay_is_kept_when_asked_for_or_when_jsii_is_configured_already(unswitched, name, value, reason):
    unswitched.setenv(name, value)
    assert jsii_kernel.unsupported_reason() == reason


def test_relay_switch_zero_or_empty_keeps_the_kernel_without_relay(unswitched):
    for value in ("", "0"):
        unswitched.setenv("LLM_CDK_TESTS_JSII_RELAY", value)
        assert jsii_kernel.unsupported_reason() is None


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_only_api_messages_reach_stdout_and_console_output_gets_the_relays_envelope(tmp_path):
    """jsii_kernel.js against a stand-in kernel: every way Node code writes output ends on fd 2 wrapped as the
    relay wraps it, fd 3 reads stdin and writes stdout, stdin is closed to the kernel's code, and the
    --preserve-symlinks flag the kernel reads is present."""
    shutil.copyfile(jsii_kernel.SCRIPT, tmp_path / "jsii_kernel.js")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "program.js").write_text(
        textwrap.dedent("""\
        const fs = require('fs');
        console.log('log line');
        console.error('error line');
        process.stdout.write('raw stdout ');
        process.stderr.write(Buffer.from('raw stderr'));
        fs.writeSync(1, 'fd one');
        fs.writeSync(2, Buffer.from('xxfd twoxx'), 2, 6);
        fs.writeSync(1, '');
        const buffer = Buffer.alloc(64);
        const size = fs.readSync(3, buffer, 0, buffer.length, null);
        fs.writeSync(3, Buffer.from(JSON.stringify({echo: buffer.subarray(0, size).toString().trim(),
          preserve: process.execArgv.includes('--preserve-symlinks'), stdinReadable: process.stdin.readable}) + '\\n'));
        process.stdin.on('data', () => fs.writeSync(3, 'stdin leaked\\n'));
        """)
    )
    result = subprocess.run(
        [NODE, tmp_path / "jsii_kernel.js"], input=b'{"hello":1}\n', capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"echo": '{"hello":1}', "preserve": True, "stdinReadable": True}
    ]
    unwrapped = []
    for line in result.stderr.splitlines():
        ((key, data),) = json.loads(line).items()
        unwrapped.append((key, base64.b64decode(data).decode()))
    assert unwrapped == [
        ("stdout", "log line\n"),
        ("stderr", "error line\n"),
        ("stdout", "raw stdout "),
        ("stderr", "raw stderr"),
        ("stdout", "fd one"),
        ("stderr", "fd two"),
    ]


DEPRECATED_USE = textwrap.dedent("""\
    import json, sys
    from support import jsii_kernel
    print("relay:" + str(jsii_kernel.start()), file=sys.stderr)
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_, aws_logs as logs
    app = cdk.App(outdir=sys.argv[1])
    stack = cdk.Stack(app, "S")
    lambda_.Function(stack, "F", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                     code=lambda_.Code.from_inline("def handler(e, c): pass"), log_retention=logs.RetentionDays.ONE_DAY)
    print(json.dumps(app.synth().get_stack_by_name("S").template, sort_keys=True))
    """)


def test_an_app_synthesizes_the_same_template_and_console_warnings_with_or_without_the_relay(tmp_path):
    """A real kernel: JSII_DEPRECATED=warn makes aws-cdk-lib print a warning with console.warn. It reaches
    Python's stderr as text, once; stdout carries only what Python printed; the template is the same."""
    script = tmp_path / "app.py"
    script.write_text(DEPRECATED_USE)
    runs = {}
    for relay in ("0", "1"):
        env = {**PYTHON_ENV, "JSII_DEPRECATED": "warn", "LLM_CDK_TESTS_JSII_RELAY": relay}
        result = subprocess.run(
            [sys.executable, script, tmp_path / f"out-{relay}"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        runs[relay] = result
    assert runs["0"].stderr.splitlines()[0] == "relay:None"
    assert runs["1"].stderr.splitlines()[0] == "relay:LLM_CDK_TESTS_JSII_RELAY is set"
    for result in runs.values():
        warning = [line for line in result.stderr.splitlines() if "is deprecated" in line]
        assert len(warning) == 1, result.stderr
        assert warning[0].startswith("[WARNING] aws-cdk-lib.aws_lambda.FunctionOptions#logRetention is deprecated")
        assert "b'" not in result.stderr  # no line that stderr_sink could not unwrap
    assert runs["0"].stderr.splitlines()[1:] == runs["1"].stderr.splitlines()[1:]
    template = json.loads(runs["0"].stdout)
    assert runs["0"].stdout == runs["1"].stdout
    assert [r["Type"] for r in template["Resources"].values()].count("Custom::LogRetention") == 1
