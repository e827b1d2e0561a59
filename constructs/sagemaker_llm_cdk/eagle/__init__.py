"""EAGLE speculative decoding: the optimization loop (state machine, jobs, datasets) and serving a promoted head, with their settings."""
