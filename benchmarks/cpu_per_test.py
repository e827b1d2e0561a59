"""A pytest plugin for ``benchmarks/tests.py --by-module``: CPU seconds of every test, the test process and its
children.

Each test's figure is what its worker process and every child of it used while the test ran: the worker's own
user + system time, its waited-for children (``cutime``/``cstime``: ``cdk synth``, pip, checkov), and its
live descendants (the jsii runtime host and its Node kernel), read from ``/proc``. A module-scoped fixture
counts in the test that builds it. Lines go to ``$CPU_PER_TEST_DIR/cpu-<pid>.jsonl``. Linux only; it measures, it
never asserts.
"""

from __future__ import annotations

import json
import os
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
_started: dict[str, float] = {}
_out: Any = None


def _fields(pid: int | str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _cpu_seconds() -> float:
    me = os.getpid()
    own = _fields(me)
    assert own is not None
    ticks = sum(int(x) for x in own[11:15])  # utime, stime, cutime, cstime
    parents: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _fields(entry)
            if fields is not None:
                parents[int(entry)] = int(fields[1])
                used[int(entry)] = int(fields[11]) + int(fields[12])
    for pid, parent in parents.items():  # every live descendant: the jsii kernel is the runtime host's child
        while parent not in (me, 0, 1) and parent in parents:
            parent = parents[parent]
        if parent == me and pid != me:
            ticks += used[pid]
    return ticks / _TICK


def pytest_runtest_protocol(item: Any, nextitem: Any) -> None:
    _started[item.nodeid] = _cpu_seconds()


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    global _out
    if nodeid not in _started:
        return
    if _out is None:  # held open for the worker's whole life, one line appended and flushed per test
        _out = open(  # noqa: SIM115
            os.path.join(os.environ["CPU_PER_TEST_DIR"], f"cpu-{os.getpid()}.jsonl"), "a", encoding="utf-8"
        )
    _out.write(json.dumps({"id": nodeid, "cpu": _cpu_seconds() - _started.pop(nodeid)}) + "\n")
    _out.flush()
