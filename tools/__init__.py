"""Repository tooling run by the Makefile: template linting and reports."""
