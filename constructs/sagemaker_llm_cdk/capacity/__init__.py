"""Capacity plans (SageMaker training plans for endpoints): purchase, extension, expiry, the Active guard, with their
settings."""
