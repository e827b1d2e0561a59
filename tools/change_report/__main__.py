"""``python -m tools.change_report``: runs the command line (``tools.change_report.cli.main``), its usage line naming
the program ``change_report.py``, and exits with its status."""

import sys

from tools.change_report.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="change_report.py"))
