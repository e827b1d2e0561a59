"""AWS's Guard rules registry, vendored (``registry/``), and the reviewed reasons for its findings."""
