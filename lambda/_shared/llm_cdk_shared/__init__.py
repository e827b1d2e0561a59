"""Code every sagemaker-llm-cdk Lambda function shares, copied into each function's asset at synth.

Modules (import only what a handler uses; none imports another's heavy dependency):

* ``clients``: one lazily made, cached boto3 client per service with the retries and user agent the
  functions use; tests inject a stubbed client.
* ``aws_errors``: ``not_found(error, service)``, the one rule for "the resource is not there".
* ``env``: typed environment reading that names the variable and collects every problem.
* ``problems``: a pydantic ``ValidationError`` as ``field: got V; allowed: ...; fix: ...`` lines (imports no pydantic:
  it reads the error it is given).
* ``custom_resource``: the CloudFormation custom resource event model (imports pydantic: handlers import it on
  first use, not at module level, so a cold start does not pay for it).

The package name is unique to this library so it cannot clash with anything in the Lambda runtime
or a layer; this file imports nothing, so importing one module costs only that module.
"""
