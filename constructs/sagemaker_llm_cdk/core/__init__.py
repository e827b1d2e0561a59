"""Shared internals every feature uses (errors, validation, settings base, facts from botocore, grants and
acknowledgements, Lambda function shape, storage); imports no feature package."""
