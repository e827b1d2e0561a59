"""The command line (``python -m tools.update_catalogue --markdown``): every row synthesized into a temporary folder
and the table of what each change does on deploy printed."""

from __future__ import annotations

import sys

from tools.update_catalogue.analysis import results, synthesizer
from tools.update_catalogue.table import markdown


def main(argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """Run the command line on ``argv`` (else ``sys.argv``); ``prog`` names the program in the usage line (else the
    name of ``sys.argv[0]``)."""
    import argparse

    from tools import update_catalogue

    parser = argparse.ArgumentParser(
        prog=prog, description=update_catalogue.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--markdown", action="store_true", help="print the Markdown table (docs/update-catalogue.md)")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("give --markdown")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="update-catalogue-") as folder:
        sys.stdout.write(markdown(results(synthesizer(Path(folder)))))
    return 0
