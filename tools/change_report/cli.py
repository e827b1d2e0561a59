"""The command line (``python -m tools.change_report``): two cloud assembly folders or ``--git-base REF``, the report
printed as text or Markdown, also written to a file or appended to the GitHub step summary; exit status 0 whatever
changes, 2 when the inputs are not cloud assemblies or a synth fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tools.change_report.assembly import ReportError, load_assembly
from tools.change_report.comparing import compare
from tools.change_report.cost import load_cost
from tools.change_report.rendering import render_markdown, render_text
from tools.change_report.synthesizing import report_against_git


def main(argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """Run the command line on ``argv`` (else ``sys.argv``); ``prog`` names the program in the usage line (else the
    name of ``sys.argv[0]``)."""
    import argparse

    from tools import change_report

    parser = argparse.ArgumentParser(
        prog=prog, description=change_report.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base_dir", nargs="?", type=Path, help="the base cloud assembly (cdk.out folder)")
    parser.add_argument("head_dir", nargs="?", type=Path, help="the changed cloud assembly")
    parser.add_argument("--git-base", metavar="REF", help="synthesize REF and compare it with the working tree")
    parser.add_argument("--head-dir", type=Path, help="with --git-base: compare with this assembly instead")
    parser.add_argument("--config", help="with --git-base: the app config (cdk synth -c config=PATH)")
    parser.add_argument("--keep", type=Path, help="with --git-base: keep the exported source and assemblies here")
    parser.add_argument("--head-label", help="name the compared head this way (e.g. the pull request's head commit)")
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price both sides with this table (prices.json's shape) instead of what each synth used",
    )
    parser.add_argument("--markdown", action="store_true", help="GitHub-flavoured Markdown (step summary)")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--step-summary",
        action="store_true",
        help="also append the Markdown report to $GITHUB_STEP_SUMMARY, when it is set",
    )
    args = parser.parse_args(argv)
    try:
        if args.git_base:
            if args.base_dir or args.head_dir:
                parser.error("give either BASE_DIR HEAD_DIR or --git-base REF")
            report = report_against_git(
                args.git_base,
                config=args.config,
                head_dir=args.head_dir,
                keep=args.keep,
                head_label=args.head_label,
                prices=args.prices,
            )
        elif args.base_dir and args.head_dir:
            report = compare(
                load_assembly(args.base_dir),
                load_assembly(args.head_dir),
                base_label=str(args.base_dir),
                head_label=args.head_label or str(args.head_dir),
                base_cost=load_cost(args.base_dir),
                head_cost=load_cost(args.head_dir),
                prices=args.prices,
            )
        else:
            parser.error("give BASE_DIR HEAD_DIR, or --git-base REF")
    except ReportError as error:
        print(f"change report: {error}", file=sys.stderr)
        return 2
    text = render_markdown(report) if args.markdown else render_text(report)
    sys.stdout.write(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if args.step_summary and summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(render_markdown(report) + "\n")
    return 0
