#!/usr/bin/env python3
"""This team's CDK app: load the deployment config, build the stack, attach checks, synthesize."""

import io
import os
import sys
from pathlib import Path

from aws_cdk import App, Environment
from sagemaker_llm_cdk import (
    EXTEND_CONTEXT,
    PURCHASE_CONTEXT,
    ConfigurationError,
    consent_problems,
    consented_plans,
    cost_ceiling_table,
    cost_model,
    file_consents,
    load_config,
    locate_problems,
    removal_note,
)

from stacks import LlmPlatformStack, attach_checks
from stacks.checks import FAIL_SYNTH_CONTEXT, report_checks, write_cost_model
from stacks.router_stage import add_app_routers
from stacks.synth_output import (
    APP_PROPS,
    SUMMARY_CONTEXT,
    cli_command,
    keep_annotations,
    offline_diff_hint,
    prints_summary,
)

CONSENT_SOURCE = "the consent to spend (-c purchase / -c extend)"
CONSENT_KEYS = (PURCHASE_CONTEXT, EXTEND_CONTEXT)


def main() -> None:
    # The app reports the checks itself: one summary per pack and rule instead of every finding in the log
    # (every finding goes to cdk.out/nag-findings.md), and it still fails on an unacknowledged error.
    # No stack traces (APP_PROPS): for a Python app they hold only jsii's kernel, which the CLI prints as a location.
    # post_cli_context: a -c or cdk.json setting of FAIL_SYNTH_CONTEXT cannot turn it back on, which would make
    # app.synth() raise ValidationFailed (a jsii traceback, with CDK's own copy of every finding) before the summary.
    app = App(post_cli_context={FAIL_SYNTH_CONTEXT: False}, **APP_PROPS)
    path = app.node.try_get_context("config") or "config/default.yaml"
    pipeline = app.node.try_get_context("pipeline")
    try:
        if pipeline:  # -c pipeline=config/pipeline.yaml: only the delivery pipeline; its stages hold the stacks
            from stacks.pipeline import attach_pipeline

            attach_pipeline(app, pipeline)
            extra_packs: tuple[str, ...] = ()
        else:
            # every config rule, the stack's own included, and the consent's names, in one round
            config = load_config(path, consent={key: consented_plans(app, key) for key in CONSENT_KEYS})
            env = Environment(account=config.target.account, region=config.target.region)
            try:
                platform = LlmPlatformStack(
                    app, config.stack_name, config=config, config_dir=Path(path).parent, env=env
                )
                add_app_routers(app, platform, config)  # routers: a <stack name>Routers stack (stacks/router_stage.py)
            except ConfigurationError as error:  # a construct's check the config rules did not foresee
                raise ConfigurationError(
                    locate_problems(path, error.problems), source=f"{path} (found while building {error.source})"
                ) from None
            extra_packs = config.checks.nag_warning_packs
        # -c purchase=<plan> / -c extend=<plan>: a name that matches no declared plan is a typo, not consent, and the
        # same key in cdk.json, cdk.context.json or ~/.cdk.json would consent on every deploy.
        problems = consent_problems(app)
        if problems:
            raise ConfigurationError(problems, source=CONSENT_SOURCE)
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        in_files = [found.problem() for found in file_consents()] if error.source != CONSENT_SOURCE else []
        if in_files:  # the config failed before the consent was checked: the files' part needs no config
            print(f"error: {ConfigurationError(in_files, source=CONSENT_SOURCE)}", file=sys.stderr)
        sys.exit(1)
    attach_checks(app, extra_packs=extra_packs)
    # The tables are for the reader of a synth log (make synth, cdk synth); cdk ls and cdk diff print them only when
    # the synth fails, and cdk.out/synth-summary.md always has them (stacks/synth_output.py says how it is decided).
    command = cli_command()
    summary = prints_summary(
        app.node.try_get_context(SUMMARY_CONTEXT), command=command, under_cli="CDK_CLI_VERSION" in os.environ
    )
    log = sys.stderr if summary else io.StringIO()
    checks_log = sys.stderr if summary else io.StringIO()
    # The most each endpoint can run, for the reviewer reading the synth log.
    cost_table = cost_ceiling_table(app)
    print(cost_table, file=log)
    # What `cdk destroy` would leave behind (removal: retain | destroy in the config).
    print(removal_note(app), file=log)
    try:
        assembly = app.synth()
    except (
        RuntimeError
    ) as error:  # jsii's ValidationFailed: the checks failed the synth; report them once, no traceback
        if "ValidationFailed" not in str(error):
            raise
        report_checks(app.outdir, cost_table=cost_table, stream=sys.stderr)
        sys.exit(1)
    write_cost_model(assembly.directory, cost_model(app))  # the change report compares the base's and the head's
    status = report_checks(assembly.directory, cost_table=cost_table, stream=checks_log)
    keep_annotations(assembly.directory)  # the CLI shows warnings and errors, and no info to acknowledge
    if status:
        if isinstance(checks_log, io.StringIO):  # quiet never hides why the command failed
            print(checks_log.getvalue(), end="", file=sys.stderr)
        sys.exit(status)
    hint = offline_diff_hint(command)
    if hint:
        print(hint, file=sys.stderr)


if __name__ == "__main__":
    main()
