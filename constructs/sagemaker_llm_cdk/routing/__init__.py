"""Inference routers: one entry point for a model served in several regions and accounts (``InferenceRouter``)."""
