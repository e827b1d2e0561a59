"""``python -m tools.update_catalogue``: runs the command line (``tools.update_catalogue.cli.main``), its usage line
naming the program ``update_catalogue.py``, and exits with its status."""

import sys

from tools.update_catalogue.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="update_catalogue.py"))
