"""Consent to spend on a capacity plan: ``-c purchase=<plan>`` / ``-c extend=<plan>`` on the deploy command.

A consent is a plan name in the deploy command's context. The CDK CLI also merges ``cdk.json``,
``cdk.context.json`` and ``~/.cdk.json`` into the context of every deploy, so the same key in one of
those files would consent again on each run: it consents to nothing here (``consented_plans`` is then
empty) and fails the synth of an app that declares a plan (``FileConsent.problem``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii

from constructs import IConstruct, IValidation

from ..core.errors import Problem
from ..settings.capacity import EXTEND_CONTEXT, PURCHASE_CONTEXT

CONTEXT_FILES = (("cdk.json", "context"), ("cdk.context.json", None), ("~/.cdk.json", "context"))
"""Files the CDK CLI merges into the app's context on every run, with the key that holds it there (None: the
whole file): ``cdk.json`` and ``cdk.context.json`` in its working directory (the app's), and the user's
``~/.cdk.json``. What they hold reaches the app as ``-c`` does, in ``CDK_CONTEXT_JSON``."""


@dataclass(frozen=True)
class FileConsent:
    """A consent key written in a context file (``CONTEXT_FILES``): ``value`` under ``key`` in ``file``."""

    file: str
    """The file as the CDK CLI names it: ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``."""
    path: Path
    key: str
    value: Any

    def problem(self) -> Problem:
        """The refusal, with the command that gives the same consent on the command line."""
        names = ",".join(sorted(_names(self.value))) or "<plan>"
        where = f"the context of {self.file}" if self.file != "cdk.context.json" else self.file
        return Problem(
            f"{self.file} context {self.key}",
            self.value,
            f"no consent to {self.key} in a file the CDK CLI reads on every deploy (cdk.json, cdk.context.json, "
            f"~/.cdk.json): only -c {self.key}=<plan> on the deploy command consents",
            f'remove "{self.key}" from {where} and pass -c {self.key}={names} on the deploy command that should '
            f'spend (make deploy CONTEXT="-c {self.key}={names}")',
            where=str(self.path),
        )


def file_consents(app_dir: Path | None = None, home: Path | None = None) -> list[FileConsent]:
    """Every ``purchase`` / ``extend`` key in ``CONTEXT_FILES``, read where the CDK CLI reads them.

    ``app_dir`` defaults to the working directory (the CLI runs the app in its own) and ``home`` to
    ``$HOME`` (the CLI's ``os.homedir()``). A file that is missing or is not a JSON object holds none
    (the CLI itself refuses to run on a file it cannot parse).
    """
    app_dir = Path.cwd() if app_dir is None else app_dir
    home = Path.home() if home is None else home
    found: list[FileConsent] = []
    for name, section in CONTEXT_FILES:
        path = home / name[2:] if name.startswith("~/") else app_dir / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        context = data.get(section) if section is not None and isinstance(data, dict) else data
        if isinstance(context, dict):
            found.extend(
                FileConsent(name, path, key, context[key])
                for key in (PURCHASE_CONTEXT, EXTEND_CONTEXT)
                if key in context
            )
    return found


def _names(raw: Any) -> frozenset[str]:
    if raw is None or raw is False or raw == "":
        return frozenset()
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    return frozenset(str(item).strip() for item in items if str(item).strip())


def consented_plans(scope: IConstruct, key: str = PURCHASE_CONTEXT) -> frozenset[str]:
    """Plan names the deploy command consents to: ``-c purchase=a,b`` (``App(context=...)`` may give a list).

    Empty when the context is not set, and when ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``
    holds the key (``file_consents``): the CDK CLI merges those files into the context of every
    deploy, where a committed or user-level name would consent each time, and the app cannot tell
    their values from ``-c``. ``consent_problems`` reports both such a file and unknown names.
    """
    if any(found.key == key for found in file_consents()):
        return frozenset()
    return _names(scope.node.try_get_context(key))


@jsii.implements(IValidation)
class _NoConsentInFiles:
    """Fails the synth of an app with a plan while a context file holds a consent (``file_consents``).

    ``consent_problems`` reports the same before synth in an app that calls it; this holds for any
    app that declares a plan, so a consent in a file fails ``cdk synth`` and ``cdk deploy`` rather
    than leaving the plan unbought with a note that looks like the consent went unseen.
    """

    def __init__(self, found: list[FileConsent]) -> None:
        self._lines = [found_one.problem().located() for found_one in found]

    def validate(self) -> list[str]:
        return self._lines
