"""Every cdk-nag acknowledgement the library makes, each naming its finding and saying why.

This is the one place to read them. Constructs call the function for their kind at the
end of their constructor; nothing else in the library acknowledges a finding. cdk-nag 3
acknowledges per finding (``AwsSolutions-IAM5[Resource::...]``), so a new wildcard that
nobody reviewed still fails the synth.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

if TYPE_CHECKING:
    from .endpoint import LlmEndpoint
    from .model_component import ModelComponent

PACK = "AwsSolutions"


def acknowledge(construct: IConstruct, rule: str, reason: str, *, finding: str | None = None) -> None:
    """Acknowledge one finding of ``rule`` on ``construct`` (and its children)."""
    rule_id = f"{rule}[{finding}]" if finding else rule
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PACK}::{rule_id}", reason=reason))


def nag_form(scope: IConstruct, value: str) -> str:
    """``value`` (a string that may hold tokens) as cdk-nag writes it in a finding id."""
    if "${Token[" not in value:
        return value  # no token (CDK encodes every string token so): resolving would return it unchanged
    return _render(Stack.of(scope).resolve(value))


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return f"<{arg}>"
        if kind == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if kind == "Fn::Join":
            return str(arg[0]).join(_render(part) for part in arg[1])
    # Any other intrinsic (Fn::Select, Fn::Split, Fn::FindInMap, ...): cdk-nag writes it as compact JSON.
    return json.dumps(value, separators=(",", ":"))


def _policy_resources(policy: Any, contains: str, suffix: str) -> list[str]:
    """The resources of ``policy`` (an ``iam.Policy``) in cdk-nag's form that contain ``contains`` and end with
    ``suffix`` (ARNs CDK builds itself, whose form differs between bound and environment-agnostic stacks)."""
    cfn = policy.node.default_child
    document = Stack.of(policy).resolve(cfn.policy_document) or {}
    found: list[str] = []
    for statement in document.get("Statement", []):
        resources = statement.get("Resource", [])
        for resource in resources if isinstance(resources, list) else [resources]:
            text = _render(resource)
            if contains in text and text.endswith(suffix) and "*" in text and text not in found:
                found.append(text)
    return found


def _wildcard_only(construct: IConstruct, reason: str) -> None:
    """``AwsSolutions-IAM5[Resource::*]`` on ``construct``, guarded: only ``grants.WILDCARD_ONLY_ACTIONS`` may be on '*'."""
    from .grants import acknowledge_wildcard_only

    acknowledge_wildcard_only(construct, reason)


def _iam5(construct: IConstruct, resource: str, reason: str) -> None:
    acknowledge(construct, "AwsSolutions-IAM5", reason, finding=f"Resource::{nag_form(construct, resource)}")


def endpoint(endpoint: "LlmEndpoint") -> None:
    role = endpoint.role
    stack = Stack.of(endpoint)
    log_group = f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:{endpoint.log_group_name}"
    if log_group.endswith("*"):
        _iam5(role, log_group, "The endpoint's name is only known at deploy time (a token was passed), so its log "
              "group /aws/sagemaker/Endpoints/<name> cannot be named here.")
    _iam5(role, f"{log_group}:log-stream:*", "SageMaker creates one log stream per instance and container in the "
          "endpoint's own log group; the stream names are generated.")
    if endpoint.vpc is not None:
        _iam5(role, f"arn:{stack.partition}:ec2:{stack.region}:{stack.account}:network-interface/*",
              "SageMaker creates the endpoint's network interfaces at deploy time under generated ids; creation is "
              "limited to this endpoint's subnets and security groups, which are named.")
    if endpoint.data_capture_bucket is not None:
        _iam5(role, endpoint.data_capture_bucket.arn_for_objects("data-capture/*"),
              "Data Capture writes one object per capture file under the data-capture/ prefix; only that prefix, "
              "and only PutObject/AbortMultipartUpload.")


def function(function: Any) -> None:
    """Every Lambda function made by ``functions.python_function``."""
    acknowledge(function, "AwsSolutions-L1",
                "Runtime is Python 3.13, the newest runtime the pinned Powertools public layer version is published "
                "for; functions.RUNTIME and POWERTOOLS_LAYER_VERSION move together.")
    _wildcard_only(function.role, "X-Ray PutTraceSegments and PutTelemetryRecords have no resource-level permissions; "
                   "tracing needs them on '*'.")


def component_logs(component: "ModelComponent", streams_arn: str) -> None:
    _iam5(component.endpoint.role, streams_arn,
          "SageMaker creates one log stream per copy of the model in the component's own log group "
          "/aws/sagemaker/InferenceComponents/<component>; the stream names are generated.")


def model_component(component: "ModelComponent", weights_arn: str) -> None:
    _iam5(component.endpoint.role, weights_arn,
          "The model's weights are many files under one S3 prefix; read-only GetObject on that prefix only.")


if TYPE_CHECKING:
    from .capacity_plan import CapacityPlan


def capacity_plan(plan: "CapacityPlan") -> None:
    """A ``CapacityPlan``: its purchase handler (reserve mode) and the custom resource framework."""
    from .capacity_plan import reserved_capacity_arns

    if plan.on_event_function is not None and plan.on_event_function.role is not None:
        role = plan.on_event_function.role
        _wildcard_only(role, "sagemaker:SearchTrainingPlanOfferings has no resource type, so it is allowed on '*' (it "
                       "reads offerings and buys nothing); X-Ray tracing needs '*' as well.")
        _iam5(role, reserved_capacity_arns(Stack.of(plan)),
              "CreateTrainingPlan creates the plan's reserved capacity under an id SageMaker generates at purchase, "
              "so it cannot be named in advance: only CreateReservedCapacity, only in this account and region; the "
              "purchase itself (CreateTrainingPlan) is limited to this plan's name.")
    if plan.provider_role is not None and plan.on_event_function is not None:
        _iam5(plan.provider_role, f"{plan.on_event_function.function_arn}:*",
              "The custom resource framework invokes the plan's purchase handler: lambda:InvokeFunction on that one "
              "function and its versions (the ':*' qualifier), nothing else.")


def deployment_check(check: Any) -> None:
    """A ``deployment_check.DeploymentCheck`` (Provider framework with an is-complete waiter)."""
    handlers = (check.on_event_function, check.is_complete_function)
    for role in check.framework_roles:
        for handler in handlers:
            _iam5(role, f"{handler.function_arn}:*",
                  "The custom resource framework invokes the check's own handler function; lambda:InvokeFunction on "
                  "that one function and its versions (the ':*' qualifier), nothing else.")
    waiter = check.provider.node.find_child("waiter-state-machine")
    framework = check.provider.node
    for child in ("framework-isComplete", "framework-onTimeout"):
        _iam5(waiter, f"{framework.find_child(child).function_arn}:*",
              "The waiter state machine invokes the framework's polling function; lambda:InvokeFunction on that one "
              "function and its versions (the ':*' qualifier), nothing else.")
    _wildcard_only(waiter, "Step Functions delivers its execution logs through CloudWatch Logs log-delivery actions "
                   "(CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...), which have no resource-level "
                   "permissions; CDK grants them on '*' for the waiter's log group.")
    acknowledge(waiter, "AwsSolutions-SF2",
                "The Provider framework creates its waiter state machine without a tracing option; it only polls the "
                "check function, whose own X-Ray tracing is on, and logs ALL events to its log group.")


def session_front_door(front_door: Any) -> None:
    """A ``session_front_door.SessionFrontDoor``: nothing to acknowledge beyond its function's.

    AwsSolutions reports only the two findings every ``python_function`` has (L1 and the X-Ray
    IAM5[Resource::*], acknowledged in ``function``). The rest complies: the table has point-in-time
    recovery (DDB3) and a rotating customer-managed key (KMS5); the role has no managed policy (IAM4)
    and names the endpoint, the table, the key and each served component, except that beyond
    ``MAX_LISTED_COMPONENTS`` components one inference-component ARN pattern replaces the list: that
    exact pattern is acknowledged, so any other new wildcard on the front door still fails the synth.
    """
    for arn in front_door.component_resources:
        if "*" in arn:
            _iam5(front_door.function.role, arn,
                  f"InvokeEndpoint on {len(front_door.components)} inference components (a base and its adapters) "
                  "by their common name prefix, so the policy does not grow per adapter; the endpoint ARN in the "
                  "same statement limits it to this endpoint's components, and the handler serves only the "
                  "components packaged with it.")



def front_door_stream_grant(grantee: IConstruct, arn: str, count: int) -> None:
    """``SessionFrontDoor.grant_stream`` with a component name pattern: exactly that pattern, on the grantee."""
    _iam5(grantee, arn, f"InvokeEndpointWithResponseStream on the {count} inference components a session front door "
          "serves (a base and its adapters) by their common name prefix, so the policy does not grow per adapter; "
          "the endpoint ARN in the same statement limits it to that endpoint's components.")


def eagle_optimization(eagle: Any) -> None:
    """An ``eagle.EagleOptimization``: its job role, dataset/start/record functions and state machine."""
    from aws_cdk import ArnFormat

    from .eagle import DATASETS, JOBS, MAP_RESULTS, REPORTS

    stack = Stack.of(eagle)
    bucket = eagle.artifacts_bucket
    job = eagle.job_role
    _wildcard_only(job, "cloudwatch:PutMetricData has no resource type (limited by a cloudwatch:namespace condition to "
                   "SageMaker's namespaces); in a VPC, the ec2:Describe* calls SageMaker makes before attaching the "
                   "job's network interfaces have none either.")
    for arn, why in ((eagle.model_objects_arn, "the model's weights are many files under the model's S3 prefix"),
                     (eagle.dataset_objects_arn, "the training set is many JSONL shards under the dataset prefix")):
        if "*" in arn:
            _iam5(job, arn, f"Read-only GetObject under one prefix: {why}.")
    _iam5(job, bucket.arn_for_objects(f"{JOBS}/*"),
          "Each optimization job writes its draft head and benchmarks under jobs/<job name>/, a name made at run "
          "time; PutObject only, only under jobs/.")
    _iam5(job, stack.format_arn(service="logs", resource="log-group", resource_name="/aws/sagemaker/*",
                                arn_format=ArnFormat.COLON_RESOURCE_NAME),
          "SageMaker writes the job's logs to a log group under /aws/sagemaker/ whose name it chooses (not documented "
          "for optimization jobs); only that path.")
    if eagle.component.endpoint.vpc is not None:
        _iam5(job, stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
              "SageMaker creates the job's network interfaces in the endpoint's subnets under ids it makes at run time.")

    for function in (eagle.plan_function, eagle.convert_function, eagle.finalize_function):
        if function is not None:
            _iam5(function.role, bucket.arn_for_objects(f"{DATASETS}/*"),
                  "The dataset builder writes the plan, shards, manifests and summary of each run under "
                  "datasets/<run id>/, a name made at run time; PutObject only, only under datasets/.")
    if eagle.convert_function is not None:
        _iam5(eagle.convert_function.role, eagle.capture_bucket.arn_for_objects(f"{eagle.capture_prefix}*"),
              "Data Capture writes one object per capture file under data-capture/<endpoint>/; read-only GetObject "
              "under this endpoint's folder only.")
    if eagle.finalize_function is not None:
        _iam5(eagle.finalize_function.role, bucket.arn_for_objects(f"{MAP_RESULTS}/*"),
              "Step Functions writes the Distributed Map's result files under map-results/<map run id>/; read-only.")
    if eagle.validate_function is not None and "*" in eagle.dataset_objects_arn:
        _iam5(eagle.validate_function.role, eagle.dataset_objects_arn,
              "The dataset's format is checked on a sample of the JSONL files under its prefix; read-only.")
    _iam5(eagle.start_function.role, eagle.job_arn_pattern,
          "Job names are made at run time from the run's inputs (eagle-<model>-<hash>); Create/Describe/AddTags on "
          "optimization jobs named eagle-* only.")
    _iam5(eagle.record_function.role, bucket.arn_for_objects(f"{JOBS}/*/results/*"),
          "The record function reads the benchmark files a job wrote under jobs/<job name>/results/; read-only.")
    _iam5(eagle.record_function.role, bucket.arn_for_objects(f"{REPORTS}/*"),
          "One JSON report per run under reports/<model>/<run id>.json; PutObject only, only under reports/.")

    machine = eagle.state_machine
    role = machine.role
    _wildcard_only(role, "X-Ray tracing (PutTraceSegments, GetSamplingRules, ...) and the CloudWatch Logs log-delivery "
                   "actions Step Functions uses for its execution log have no resource-level permissions.")
    _iam5(role, eagle.job_arn_pattern,
          "The wait loop describes the run's optimization job, whose name is made at run time (eagle-*); "
          "DescribeOptimizationJob only.")
    for function in (eagle.plan_function, eagle.convert_function, eagle.finalize_function, eagle.validate_function,
                     eagle.start_function, eagle.record_function):
        if function is not None:
            _iam5(role, f"{function.function_arn}:*",
                  "CDK's Lambda task grants lambda:InvokeFunction on the function and its versions (':*'); the "
                  "state machine invokes only this loop's own functions.")
    if eagle.convert_function is not None:
        why = ("CDK's Distributed Map grants its ItemReader (GetObject) and ResultWriter (PutObject, multipart) on "
               "every key of the artifacts bucket; the definition reads only datasets/<run>/plan/items.json and "
               "writes only map-results/, and an explicit Deny refuses PutObject anywhere else.")
        # Read from the policy CDK wrote, as cdk-nag reads it: in a stack bound to a region but not an account the
        # partition there is <AWS::Partition> while Stack.partition is already "aws".
        default_policy = role.node.try_find_child("DefaultPolicy")
        bucket_id = f"<{stack.get_logical_id(bucket.node.default_child)}>"
        forms = [f for f in (_policy_resources(default_policy, bucket_id, "/*") if default_policy is not None else [])
                 if ":s3:::" in f and f.endswith(f"{bucket_id}/*")]
        if forms:
            for form in forms:
                acknowledge(role, "AwsSolutions-IAM5", why, finding=f"Resource::{form}")
        else:
            _iam5(role, f"arn:{stack.partition}:s3:::{bucket.bucket_name}/*", why)
        # The execution ARNs are read from the policy CDK wrote, as cdk-nag reads them, so the finding ids
        # match in an environment-agnostic stack (<AWS::Region>) and in a bound one (us-east-1) alike.
        policy = machine.node.find_child("DistributedMapPolicy")
        for resource in _policy_resources(policy, ":execution:", ":*"):
            why = ("redrive the Distributed Map's child executions" if resource.endswith("/ConvertCaptures:*")
                   else "describe and stop the child executions of this state machine")
            acknowledge(policy, "AwsSolutions-IAM5",
                        f"A Distributed Map runs its batches as child executions named at run time; CDK grants "
                        f"the state machine to {why}, only under its own name.",
                        finding=f"Resource::{resource}")


def speculative_decoding(wiring: Any, draft_bucket: Any, draft_prefix: str) -> None:
    """A ``speculative_decoding.SpeculativeDecoding``: the endpoint role's read of draft heads, the serving-model function."""
    _iam5(wiring.component.endpoint.role, draft_bucket.arn_for_objects(f"{draft_prefix}/*/draft/*"),
          "A promoted draft head is many files under jobs/<job name>/draft/ (the job name is made at run time); the "
          "endpoint reads heads read-only, only draft/ folders.")
    _iam5(wiring.function.role, wiring.model_arn_pattern,
          "Serving models are named <model>-eagle-<hash of their properties> when the stack deploys; create, describe "
          "and delete only models with this component's prefix.")


# ------------------------------------------------------------------------------- checkov
# checkov reads skips from each resource's CloudFormation metadata
# (``Metadata: {checkov: {skip: [{id, comment}]}}``); ``tools/run_checkov.py`` fails on any
# finding that is not skipped, and on a skip without a comment.

import jsii  # noqa: E402
from aws_cdk import Aspects, CfnResource, IAspect  # noqa: E402

_LIBRARY = __name__.rpartition(".")[0]

_LOG_DELIVERY_ACTIONS = frozenset({
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
    "logs:CreateLogStream", "logs:PutLogEvents",
})
"""What CDK's Step Functions state machine grants on '*' for vended log delivery."""

CHECKOV_REASONS = {
    "CKV_AWS_115": (
        "No reserved concurrency by default: reserving takes concurrency from the account's regional pool (new "
        "accounts may have as little as 10, and 100 must stay unreserved), so it can fail the deployment. These "
        "functions run on CloudFormation events, a daily schedule or IAM-signed front-door requests; "
        "functions.python_function(reserved_concurrency=...) sets a limit where one is wanted."),
    "CKV_AWS_116": (
        "A dead-letter queue only keeps failed asynchronous events. These functions are invoked synchronously "
        "(the custom resource framework, the front door's function URL) or their failures already surface: a "
        "failed custom resource fails the deployment, and the capacity plan's daily check has an alarm on its "
        "errors (EventBridge retries it twice)."),
    "CKV_AWS_117": (
        "The functions call only AWS APIs (SageMaker, SageMaker Runtime, CloudWatch, DynamoDB) over TLS with IAM "
        "and hold no network-reachable data; running them in a VPC would need NAT or interface endpoints that the "
        "deployment does not otherwise have."),
    "CKV_AWS_173": (
        "The environment holds only names and settings (Powertools service name, metric namespace, plan, table and "
        "endpoint names), no secrets; Lambda encrypts it at rest with an AWS-owned key."),
    "CKV_AWS_158": (
        "CloudWatch Logs encrypts every log group at rest. The handlers log metadata only (log_event=False; names, "
        "counts, status codes, never prompts or completions), so a customer-managed key would add a key policy for "
        "the logs service principal and a key to pay for without protecting anything sensitive."),
    "CKV_AWS_18": (
        "This is the access-log bucket of a SecureBucket: it receives the server access logs of the bucket next to "
        "it. Logging it in turn would need another bucket, and logging it to itself loops."),
    "CKV_AWS_111": (
        "Step Functions delivers the waiter state machine's logs through CloudWatch Logs log-delivery actions "
        "(CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...) that have no resource-level permissions; "
        "CDK's Provider framework grants that set on '*' for the waiter's log group (also acknowledged for cdk-nag "
        "in deployment_check)."),
}
"""Why each checkov check that the library's resources fail is acknowledged (see ``checkov_defaults``)."""


def checkov_skip(construct_or_cfn_resource: IConstruct, check_id: str, comment: str) -> None:
    """Skip checkov's ``check_id`` on one resource, with ``comment`` as the reason.

    ``construct_or_cfn_resource`` is a ``CfnResource`` or an L2 construct whose
    ``node.default_child`` is one. Skips merge into the resource's ``checkov`` metadata; a
    check already skipped there keeps its first comment.
    """
    resource = construct_or_cfn_resource
    if not CfnResource.is_cfn_resource(resource):
        resource = construct_or_cfn_resource.node.default_child  # type: ignore[assignment]
        if resource is None or not CfnResource.is_cfn_resource(resource):
            raise TypeError(f"{construct_or_cfn_resource.node.path}: not a CfnResource and has no CfnResource "
                            "default child; pass the CfnResource to skip checkov checks on")
    if not check_id.strip() or not comment.strip():
        raise ValueError(f"{resource.node.path}: a checkov skip needs a check id and a comment (got {check_id!r}, "
                         f"{comment!r})")
    cfn: CfnResource = resource  # type: ignore[assignment]
    metadata = dict(cfn.get_metadata("checkov") or {})
    skips = [dict(s) for s in metadata.get("skip", [])]
    if any(s.get("id") == check_id for s in skips):
        return
    skips.append({"id": check_id, "comment": comment})
    metadata["skip"] = skips
    cfn.add_metadata("checkov", metadata)


def made_by_library(node: IConstruct) -> bool:
    """Whether ``node`` was made inside one of this library's constructs (so its checks and settings apply)."""
    # One round trip for every ancestor (``scopes``: root first, ``node`` last) instead of two per level.
    return any(type(scope).__module__.startswith(_LIBRARY + ".") for scope in node.node.scopes[:-1])


def _checkov_findings(resource: Any) -> list[str]:
    """The checks in ``CHECKOV_REASONS`` that ``resource`` (made by the library) fails as it is configured."""
    kind = resource.cfn_resource_type
    if kind == "AWS::Lambda::Function":
        found = []
        if resource.reserved_concurrent_executions is None:
            found.append("CKV_AWS_115")
        if resource.dead_letter_config is None:
            found.append("CKV_AWS_116")
        if resource.vpc_config is None:
            found.append("CKV_AWS_117")
        if resource.kms_key_arn is None:  # the L2 sets Environment lazily; a function without one passes anyway
            found.append("CKV_AWS_173")
        return found
    if kind == "AWS::Logs::LogGroup":
        return ["CKV_AWS_158"] if resource.kms_key_id is None else []
    if kind == "AWS::S3::Bucket":
        from .storage import SecureBucket

        bucket = resource.node.scope
        owner = bucket.node.scope if bucket is not None else None
        if (isinstance(owner, SecureBucket) and owner.access_logs is bucket
                and resource.logging_configuration is None):
            return ["CKV_AWS_18"]
        return []
    if kind == "AWS::IAM::Policy":
        document = Stack.of(resource).resolve(resource.policy_document) or {}
        wildcard_actions: set[str] = set()
        for statement in document.get("Statement", []):
            resources = statement.get("Resource")
            if resources == "*" or (isinstance(resources, list) and "*" in resources):
                actions = statement.get("Action", [])
                wildcard_actions.update([actions] if isinstance(actions, str) else actions)
        if wildcard_actions & {"logs:CreateLogDelivery"} and wildcard_actions <= _LOG_DELIVERY_ACTIONS:
            return ["CKV_AWS_111"]
        return []
    return []


@jsii.implements(IAspect)
class _CheckovDefaults:
    def visit(self, node: IConstruct) -> None:
        if isinstance(node, CfnResource) and made_by_library(node):  # CDK calls this for every construct
            for check_id in _checkov_findings(node):
                checkov_skip(node, check_id, CHECKOV_REASONS[check_id])


def checkov_defaults(scope: IConstruct) -> None:
    """Acknowledge, on every resource the library made under ``scope``, the checkov findings it has by design.

    Runs as an Aspect at synth, so resources added after this call are covered. Only resources
    inside the library's constructs get skips, only for the checks they fail as configured, each
    with its reason from ``CHECKOV_REASONS``; your own resources are never skipped.
    """
    Aspects.of(scope).add(_CheckovDefaults())


_PIPELINE_ACTION_WILDCARDS = {
    "s3:GetObject*": "read the pipeline's artifacts",
    "s3:GetBucket*": "read the artifact bucket's location and versioning",
    "s3:List*": "list the artifact bucket",
    "s3:DeleteObject*": "replace artifacts of a rerun",
    "s3:Abort*": "abort multipart uploads of large artifacts",
    "kms:ReEncrypt*": "re-encrypt artifacts under the pipeline's key",
    "kms:GenerateDataKey*": "encrypt new artifacts under the pipeline's key",
}


_PIPELINE_WILDCARD_ACTIONS = {
    "cloudformation:DescribeStacks": "the self-mutation step reads the stacks of every target account it deploys",
    "s3:ListBucket": "the self-mutation step lists the CDK bootstrap buckets it finds by lookup",
    "codebuild:StartBuild": "the asset role starts one publishing project per asset, created by CDK Pipelines",
    "codebuild:BatchGetBuilds": "the asset role follows those builds",
    "codebuild:StopBuild": "the asset role stops those builds when the pipeline stops",
    "kms:Decrypt": "the pipeline role uses the cross-region replication keys, which it only knows by alias",
    "kms:DescribeKey": "the pipeline role uses the cross-region replication keys, which it only knows by alias",
    "kms:Encrypt": "the pipeline role uses the cross-region replication keys, which it only knows by alias",
    "kms:GenerateDataKey*": "the pipeline role uses the cross-region replication keys, which it only knows by alias",
    "kms:ReEncrypt*": "the pipeline role uses the cross-region replication keys, which it only knows by alias",
}
"""What CDK Pipelines grants on '*' in the pipeline stack (reviewed; nothing else may be added there on '*')."""


def _child(scope: IConstruct, *names: str) -> Any:
    for name in names:
        scope = scope.node.try_find_child(name) if scope is not None else None  # type: ignore[assignment]
    return scope


def pipeline(pipeline: Any) -> None:
    """The app's delivery pipeline: a ``pipelines.CodePipeline`` after ``build_pipeline()`` (``stacks/pipeline.py``).

    Every finding here is in what CDK Pipelines generates (its roles' grants on the artifact bucket and
    key, CodeBuild's own log groups and report groups, the self-mutation and asset roles); none is on
    the app's endpoints, which are acknowledged by the library's constructs as everywhere else.
    """
    from aws_cdk import aws_codebuild as codebuild

    stack = Stack.of(pipeline)
    inner = pipeline.pipeline
    s1 = ("A CodePipeline artifact bucket, created and used only by the pipeline: it holds the source zip and cloud "
          "assemblies of each run, encrypted with the pipeline's KMS key, TLS-only and not public. Access is "
          "through the pipeline's roles only and recorded by CloudTrail; server access logs would add no signal.")
    acknowledge(inner.artifact_bucket, "AwsSolutions-S1", s1)
    checkov_skip(inner.artifact_bucket, "CKV_AWS_18", s1)
    for support in inner.cross_region_support.values():
        replication = s1.replace("A CodePipeline artifact bucket",
                                 "The cross-region replication bucket of the pipeline (one per target region)")
        acknowledge(support.replication_bucket, "AwsSolutions-S1", replication)
        checkov_skip(support.replication_bucket, "CKV_AWS_18", replication)
        _iam5(pipeline, support.replication_bucket.arn_for_objects("*"),
              "The pipeline copies each run's artifacts into the replication bucket of a target region; artifacts are "
              "many objects with generated keys.")
    for action, why in _PIPELINE_ACTION_WILDCARDS.items():
        acknowledge(pipeline, "AwsSolutions-IAM5", f"CDK Pipelines grants its roles '{action}' to {why}, on the "
                    "pipeline's own artifact bucket and key only.", finding=f"Action::{action}")
    _iam5(pipeline, inner.artifact_bucket.arn_for_objects("*"),
          "Pipeline steps read and write run artifacts (generated keys) in the pipeline's own artifact bucket.")
    from .grants import acknowledge_wildcard_only

    acknowledge_wildcard_only(pipeline, (
        "CDK Pipelines' generated statements without resource types or with names known only at run time: "
        "cloudformation:DescribeStacks and s3:ListBucket for self-mutation, codebuild:StartBuild/BatchGetBuilds for "
        "asset publishing, and KMS use of the cross-region replication keys (referenced by alias)."),
        extra_actions=_PIPELINE_WILDCARD_ACTIONS)
    for role, what in ((inner.role, "kms:Encrypt/GenerateDataKey* on the cross-region replication keys, which it only "
                                    "knows by alias (see the IAM5 acknowledgement above)"),
                       (_child(pipeline, "Assets", "FileRole"), "codebuild:StartBuild on the asset-publishing projects CDK Pipelines creates, "
                                        "one per asset")):
        policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
        if policy is not None:
            checkov_skip(policy, "CKV_AWS_111", f"CDK Pipelines grants {what}; each action on '*' is reviewed in "
                         "acknowledgements._PIPELINE_WILDCARD_ACTIONS, and the wildcard guard refuses any other.")
    for project in (c for c in pipeline.node.find_all() if isinstance(c, codebuild.Project)):
        if project.role is None:
            continue
        _iam5(project.role, f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:/aws/codebuild/"
              f"{project.project_name}:*", "CodeBuild writes each build's logs to streams it names per build, in the "
              "project's own log group.")
        _iam5(project.role, f"arn:{stack.partition}:codebuild:{stack.region}:{stack.account}:report-group/"
              f"{project.project_name}-*", "CodeBuild test reports go to report groups named after the project.")
    acknowledge(pipeline, "AwsSolutions-IAM5", (
        "The self-mutation step assumes the CDK bootstrap roles of this account, which it only finds by tag: the "
        "statement is limited to roles tagged aws-cdk:bootstrap-role (deploy, file-publishing, image-publishing)."),
        finding=f"Resource::arn:*:iam::{stack.account}:role/*")
    for resource in (f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:/aws/codebuild/*",
                     f"arn:{stack.partition}:codebuild:{stack.region}:{stack.account}:report-group/*"):
        _iam5(pipeline, resource, "The asset-publishing projects share one role; CDK Pipelines creates a project per "
              "asset, so the role names CodeBuild's log groups and report groups of this account and region.")


def capacity_guard(guard: Any) -> None:
    """A ``capacity_guard.CapacityPlanGuard``: its custom resource framework invokes only its own check."""
    _iam5(guard.provider_role, f"{guard.function.function_arn}:*",
          "The custom resource framework invokes the capacity guard's own check function; lambda:InvokeFunction on "
          "that one function and its versions (the ':*' qualifier), nothing else.")
def auto_delete_objects(stack: Stack) -> None:
    """CDK's bucket-emptying provider, present with ``removal: destroy`` (``removal.set_removal``)."""
    provider = stack.node.try_find_child("Custom::S3AutoDeleteObjectsCustomResourceProvider")
    handler = provider.node.try_find_child("Handler") if provider is not None else None
    if handler is None:
        return
    why = ("CDK's auto-delete-objects handler (removal: destroy) runs only when CloudFormation deletes a bucket, "
           "invoked synchronously by CloudFormation, and calls only S3 APIs: ")
    for check, detail in (("CKV_AWS_115", "it needs no reserved concurrency, which would take from the account's pool"),
                          ("CKV_AWS_116", "a failed call fails the stack deletion, so a dead-letter queue adds nothing"),
                          ("CKV_AWS_117", "outside a VPC, which would need an S3 endpoint or NAT it has no use for")):
        checkov_skip(handler, check, why + detail + ".")
