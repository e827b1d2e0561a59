"""The settings floor: every validated settings model of the library, and nothing that builds resources.

One module per feature (``hosting``, which gathers ``endpoint``, ``copies``, ``model``, ``model_rules`` and
``fit``; ``adapters``, ``capacity``, ``eagle``, ``sessions``, ``routing``, ``operations``), the model's serving
parsers (``tool_calling``) and images (``images``), and the deployment config that holds them all (``config``,
with ``budget``, ``tags`` and ``config_names``). The package imports only ``core``'s plain modules and never
``aws_cdk``, so a config is checked without CDK, and every construct package builds on it: ``make check`` holds
the floor (``tools/import_graph.py``).
"""
