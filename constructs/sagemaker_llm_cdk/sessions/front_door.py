"""``SessionFrontDoor``: an HTTPS front door (Lambda Function URL, IAM auth) for multi-turn chat.

Session-aware (sticky) routing has no endpoint setting: every ``InvokeEndpoint`` call carries a
session id, and SageMaker sends it to the instance that opened the session. A chat app has a
conversation id, not a session id; the front door keeps the mapping conversation -> session in
a DynamoDB table, opens a session on a conversation's first turn, reopens it when SageMaker or
the container lost it, and closes it on request (handler: ``lambda/session_router/index.py``,
client: ``sagemaker_llm_cdk.client.SessionClient``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE, python_function
from ..core.metrics import metric
from ..core.nag import acknowledge_resource
from ..core.storage import secure_key
from ..settings.sessions import SessionSettings
from . import session_containers, trust
from .handler_package import ALLOWED_COMPONENTS_FILE as ALLOWED_COMPONENTS_FILE
from .handler_package import HANDLER_FOLDER as HANDLER_FOLDER
from .handler_package import handler_code
from .served_components import MAX_LISTED_COMPONENTS as MAX_LISTED_COMPONENTS
from .served_components import ServedComponent as ServedComponent
from .served_components import choose_settings, component_problems, component_resources, unique
from .served_components import component_name_pattern as component_name_pattern
from .session_containers import FIRST_LMI_WITH_SESSIONS as FIRST_LMI_WITH_SESSIONS
from .session_containers import SESSION_VARIABLES as SESSION_VARIABLES

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent
    from .turn_log import TurnLog

PARTITION_KEY = "conversation_id"
TTL_ATTRIBUTE = "expires_at"
TIMEOUT = Duration.seconds(300)
"""The handler keeps every turn inside it: no model call starts unless its worst case (68 s plus a
DynamoDB write) fits in the remaining time; otherwise the caller gets 504 TimeBudgetExceeded."""
MEMORY_MB = 512

_session_variables = session_containers.session_variables
"""The LMI variables a front door's settings set on each container it serves."""


class SessionFrontDoor(Construct):
    """A Lambda Function URL that gives chat apps session-aware routing on an ``LlmEndpoint``.

    Callers sign requests with SigV4 (auth type ``AWS_IAM``; allow them with ``grant_invoke_url``),
    ``POST /open`` a conversation (the server issues its id and binds it to the caller, see
    ``SessionSettings.owner``) and ``POST /invoke`` turns with that ``conversation_id``; every turn of
    a conversation reaches the instance that holds its session. Without ``conversation_id`` a turn is
    stateless (load-aware routing). ``POST /close`` ends a conversation. The answers are buffered;
    ``grant_stream`` lets a caller stream turns from SageMaker on the session ``/open`` returned.

    The owner comes from the request context Lambda fills for a signed URL request; a principal
    allowed ``lambda:InvokeFunction`` on the function itself (not through the URL) could forge it.
    ``grant_invoke_url`` grants that action only with ``lambda:InvokedViaFunctionUrl``; grant nothing
    broader on this function (the README gives an SCP guard).

    Under ``owner: session`` the owner includes the caller's session name, which ``AssumeRole`` and
    ``AssumeRoleWithWebIdentity`` let the caller choose: ``grant_invoke_pinned`` grants a role and pins its
    session names in its trust policy (``sessions/trust.py``); ``settings.callers`` grants existing roles,
    whose trust the live preflight reads. Who can act as whom under each mode: docs/sessions-trust.md.

    Creates:

    - a DynamoDB table (partition key ``conversation_id``, TTL attribute ``expires_at``, on-demand,
      point-in-time recovery, encrypted with a customer-managed KMS key). Rows live at most
      ``settings.expiration_seconds``, so the table is deleted with the stack: losing it only makes
      the next turn of each conversation open a new session (the reply says ``X-Session-Reopened``).
    - the function (Python, Powertools, 300 s timeout, 512 MB, its own log group, X-Ray) and its URL.
    - permissions: ``sagemaker:InvokeEndpoint`` on this endpoint and the served components only (named one
      by one up to ``MAX_LISTED_COMPONENTS``, beyond that one ARN pattern of their common name prefix,
      acknowledged exactly; the handler still refuses any component not in its packaged list);
      ``dynamodb:GetItem``/``PutItem``/``DeleteItem`` on the table only; the key's use through
      DynamoDB only.
    - on each served LMI container (the default component, listed base models, and the base of
      each listed adapter): ``OPTION_ENABLE_STATEFUL_SESSIONS=true`` and
      ``OPTION_SESSIONS_EXPIRATION=<expiration_seconds>``. A custom container gets a synth warning:
      it must implement the SageMaker session protocol itself.

    Smallest use::

        base = endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://b/qwen3-8b/",
                                                    sessions=SessionSettings()))
        front_door = SessionFrontDoor(self, "Chat", endpoint=endpoint, default_component=base)
        front_door.grant_invoke_url(chat_app_role)

    Escape hatches: ``function``, ``function_url``, ``table``, ``encryption_key``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: LlmEndpoint,
        default_component: ModelComponent,
        components: Sequence[ServedComponent] = (),
        settings: SessionSettings | None = None,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint whose inference components the front door calls.
        :param default_component: the component a request that names none goes to (usually the
            base model). Always allowed.
        :param components: further components callers may name (``"component"`` in the request),
            e.g. LoRA adapters of the base model. Each must be on ``endpoint``. Default: only
            ``default_component``.
        :param settings: session expiry and the largest request body. Default: the default
            component's ``spec.sessions``, else ``SessionSettings()`` (1200 s, 1 MiB).
        :param encryption_key: KMS key for the session table. Default: a new key with yearly
            rotation, used for nothing else (kept when the stack is deleted, like every key the
            library creates).
        """
        super().__init__(scope, id)
        self.endpoint = endpoint
        served, containers = self._check_served(endpoint, default_component, components, settings)
        chosen = self.settings
        self.components: tuple[ServedComponent, ...] = tuple(served)
        self.default_component = default_component
        session_containers.enable_sessions(containers, chosen)

        stack = Stack.of(self)
        self.encryption_key: kms.IKey = encryption_key or secure_key(
            self, "Key", description=f"Session table of the front door {self.node.path}"
        )
        self.table = dynamodb.Table(
            self,
            "Sessions",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self.encryption_key,
            removal_policy=RemovalPolicy.DESTROY,
        )

        self.service_name = f"{HANDLER_FOLDER}-{endpoint.endpoint_name}"
        self.function = python_function(
            self,
            "Resource",
            folder=HANDLER_FOLDER,
            description=_description(endpoint),
            timeout=TIMEOUT,
            memory_size=MEMORY_MB,
            environment=self._environment(endpoint, default_component, chosen),
            code=handler_code([c.component_name for c in served]),
        )
        self.function_url = lambda_.FunctionUrl(
            self, "Url", function=self.function, auth_type=lambda_.FunctionUrlAuthType.AWS_IAM
        )
        self.url = self.function_url.url

        self._grant_function(stack, endpoint, served)
        self.pinned_roles: list[iam.IRole] = []
        """Roles granted with ``grant_invoke_pinned``."""
        self._grant_callers(stack, chosen)
        session_containers.warn_about_containers(self, containers)

    def _check_served(
        self,
        endpoint: LlmEndpoint,
        default_component: ModelComponent,
        components: Sequence[ServedComponent],
        settings: SessionSettings | None,
    ) -> tuple[list[Any], list[Any]]:
        """Choose ``settings`` and refuse what cannot be served; return the served components and their containers."""
        problems = component_problems("default_component", default_component, endpoint)
        for index, component in enumerate(components):
            problems.extend(component_problems(f"components[{index}]", component, endpoint))
        chosen, settings_problems = choose_settings(settings, default_component, self.node.path)
        problems.extend(settings_problems)
        self.settings = chosen
        served = unique([default_component, *components]) if not problems else []
        containers = session_containers.containers(served)
        if not problems:
            problems.extend(session_containers.container_problems(containers, chosen, default_component))
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        return served, containers

    def _grant_function(self, stack: Stack, endpoint: LlmEndpoint, served: Sequence[Any]) -> None:
        """The function's role: invoke the endpoint's served components, use the session table and its key."""
        role = self.function.role
        assert role is not None  # python_function always gives the function a role
        self.component_resources: list[str] = component_resources(stack, served)
        """What the role may invoke besides the endpoint: each served component's ARN, or one name pattern."""
        # Beyond MAX_LISTED_COMPONENTS components one inference-component ARN pattern replaces the list: exactly
        # that pattern is acknowledged, so any other new wildcard on the front door still fails the synth. The rest
        # complies (the table has point-in-time recovery and a rotating customer-managed key, no managed policy).
        grants.grant(
            role,
            sid="InvokeServedComponents",
            actions=["sagemaker:InvokeEndpoint"],
            resources=[endpoint.endpoint_arn, *self.component_resources],
            reason=f"InvokeEndpoint on {len(self.components)} inference components (a base and its adapters) by their "
            "common name prefix, so the policy does not grow per adapter; the endpoint ARN in the same "
            "statement limits it to this endpoint's components, and the handler serves only the components "
            "packaged with it.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ReadWriteSessions",
                actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"],
                resources=[self.table.table_arn],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="UseSessionTableKey",
                actions=["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"],
                resources=[self.encryption_key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{stack.region}.{stack.url_suffix}"}},
            )
        )

    def _grant_callers(self, stack: Stack, settings: SessionSettings) -> None:
        """Grant the existing roles of ``settings.callers`` (ARNs of the stack's account) the URL."""
        problems = []
        for index, arn in enumerate(settings.callers):
            account = arn.split(":")[4]
            if not Token.is_unresolved(stack.account) and account != stack.account:
                problems.append(
                    Problem(
                        f"callers[{index}]",
                        arn,
                        f"a role of the stack's account {stack.account}",
                        "grant a role of another account through that account (a function URL "
                        "resource policy is not made here)",
                    )
                )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        self.callers: list[iam.IRole] = []
        """The roles of ``settings.callers``, imported and granted ``grant_invoke_url``."""
        for index, arn in enumerate(settings.callers):
            role = iam.Role.from_role_arn(self, f"Caller{index}", arn, mutable=True)
            self.grant_invoke_url(role)
            self.callers.append(role)

    # --------------------------------------------------------------- environment
    def _environment(self, endpoint: LlmEndpoint, default_component: Any, settings: SessionSettings) -> dict[str, str]:
        # Fixed size whatever the number of components: their names are in ALLOWED_COMPONENTS_FILE.
        return {
            "ENDPOINT_NAME": endpoint.endpoint_name,
            "SESSIONS_TABLE": self.table.table_name,
            "DEFAULT_COMPONENT": default_component.component_name,
            "SESSION_TTL_SECONDS": str(settings.expiration_seconds),
            "MAX_BODY_BYTES": str(settings.max_body_bytes),
            "OWNER_MODE": settings.owner,
            **({"IDENTITY_POOLS": ",".join(settings.identity_pools)} if settings.identity_pools else {}),
            "POWERTOOLS_SERVICE_NAME": self.service_name,
        }

    # ------------------------------------------------------------------ grants
    def grant_invoke_url(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to call the URL: ``lambda:InvokeFunctionUrl`` on this function when the URL's
        auth type is AWS_IAM, plus ``lambda:InvokeFunction`` only when invoked through a function URL
        (both are required for function URLs)."""
        return self.function_url.grant_invoke_url(grantee)

    def grant_invoke_pinned(self, role: iam.IRole, *, pin: str | None = None) -> iam.Grant:
        """Allow ``role`` to call the URL (``grant_invoke_url``) and fix, in its trust policy, who each session is.

        The owner the router reads must not be a name the caller picks. Deny statements are added to the
        role's trust policy (they hold whatever its Allow statements say; see ``sessions/trust.py``):

        - ``owner: session``, ``pin="user_name"`` (default): only IAM users of the role's account may assume it,
          each with its user name as the session name (``sts:RoleSessionName`` = ``${aws:username}``).
        - ``owner: session``, ``pin="source_identity"``: only sessions that already carry a source identity (set
          by a SAML or OIDC identity provider) may assume it, with that source identity as the session name
          (``sts:RoleSessionName`` = ``${aws:SourceIdentity}``); SAML sessions named by the provider stay allowed.
        - ``owner: cognito_identity`` (no ``pin``): only web identities of ``settings.identity_pools``
          (``cognito-identity.amazonaws.com:aud``); the owner is the identity id Cognito assigned.

        :param role: a role defined in this app (``iam.Role``): an imported role's trust policy cannot be
            changed here (list it in ``settings.callers`` and let the live preflight read it).
        :param pin: ``user_name`` or ``source_identity`` under ``owner: session``; nothing otherwise.
        """
        mode = self.settings.owner
        problems = []
        document = getattr(role, "assume_role_policy", None)
        if not isinstance(role, iam.Role) or document is None:
            problems.append(
                Problem(
                    "role",
                    getattr(role, "role_arn", type(role).__name__),
                    "a role defined in this app (iam.Role), whose trust policy the synth writes",
                    "pin the trust of an existing role yourself (docs/sessions-trust.md) and list "
                    "it in sessions.callers, or grant_invoke_url it",
                )
            )
        if mode == "role":
            problems.append(
                Problem(
                    "owner",
                    mode,
                    "session or cognito_identity: under owner role every session of a "
                    "role is one owner, so there is no session name to pin",
                    "use grant_invoke_url, or set owner: session",
                )
            )
        elif mode == "cognito_identity" and pin is not None:
            problems.append(
                Problem(
                    "pin", pin, "nothing under owner cognito_identity (the owner is the identity id)", "leave pin out"
                )
            )
        elif mode == "session" and (pin or "user_name") not in trust.SESSION_NAME_PINS:
            problems.append(
                Problem(
                    "pin",
                    pin,
                    "one of " + ", ".join(trust.SESSION_NAME_PINS),
                    "user_name for IAM users, source_identity for people signed in through an identity provider",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=f"{self.node.path}.grant_invoke_pinned")
        assert isinstance(role, iam.Role) and role.assume_role_policy is not None
        if mode == "cognito_identity":
            statements = trust.cognito_statements(self.settings.identity_pools)
        else:
            statements = trust.pin_statements(
                pin or "user_name", account=Stack.of(role).account, organization=self.settings.organization_id
            )
        for statement in statements:
            role.assume_role_policy.add_statements(iam.PolicyStatement.from_json(statement))
        if pin == "source_identity":
            # Every way in must also allow sts:SetSourceIdentity, or IAM refuses the sessions the pin is for. The
            # document is read as the synth resolves it: Allow statements added after this call are covered too.
            cfn = role.node.default_child
            assert isinstance(cfn, iam.CfnRole)
            cfn.assume_role_policy_document = Lazy.any(_WithSetSourceIdentity(role, role.assume_role_policy))
        self.pinned_roles.append(role)
        return self.grant_invoke_url(role)

    def grant_stream(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to stream turns itself: ``sagemaker:InvokeEndpointWithResponseStream`` on this
        endpoint and the served components (the same ARNs, or the same name pattern, as the function's role).

        The front door answers buffered (Lambda streams responses natively only from Node.js managed
        runtimes; this function is Python), so ``SessionClient``'s ``Conversation.stream`` opens the
        conversation here and streams from SageMaker with the returned ``session_id``. SageMaker does
        not tie a session to a caller: whoever holds this grant may call the components with or without
        a session, as ``grant_invoke`` on a component allows. A name pattern, when used, is acknowledged
        on the grantee for exactly that pattern."""
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpointWithResponseStream"],
            resource_arns=[self.endpoint.endpoint_arn, *self.component_resources],
        )
        for arn in self.component_resources:
            if "*" in arn and isinstance(grantee, Construct):  # exactly that pattern, on the grantee
                acknowledge_resource(
                    grantee,
                    arn,
                    (
                        f"InvokeEndpointWithResponseStream on the {len(self.components)} inference components a "
                        "session front door serves (a base and its adapters) by their common name prefix, so the "
                        "policy does not grow per adapter; the endpoint ARN in the same statement limits it to that "
                        "endpoint's components."
                    ),
                )
        return grant

    # ----------------------------------------------------------------- metrics
    def metric_invocations(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests the function handled. Default: sum over 5 minutes."""
        return self.function.metric_invocations(**kwargs)

    def metric_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """Invocations that crashed (not error answers, see ``metric_server_errors``). Default: sum over 5 minutes."""
        return self.function.metric_errors(**kwargs)

    def metric_throttles(self, **kwargs: Any) -> cloudwatch.Metric:
        """Invocations Lambda throttled. Default: sum over 5 minutes."""
        return self.function.metric_throttles(**kwargs)

    def metric_duration(self, **kwargs: Any) -> cloudwatch.Metric:
        """How long the function ran, milliseconds. Default: average over 5 minutes."""
        return self.function.metric_duration(**kwargs)

    def metric(
        self, metric_name: str, *, statistic: str = "Sum", period: Duration | None = None, **kwargs: Any
    ) -> cloudwatch.Metric:
        """A count the handler publishes (namespace SageMakerLlm, dimension ``service``): e.g. SessionsOpened,
        SessionsReopened, SessionTurns, StatelessInvocations, ClientErrors, ServerErrors, Throttled."""
        return metric(
            METRICS_NAMESPACE, metric_name, {"service": self.service_name}, statistic=statistic, period=period, **kwargs
        )

    # ------------------------------------------------------------------ EAGLE turn log
    def log_turns(self, turn_log: TurnLog) -> None:
        """Write each completed turn to ``turn_log`` (Firehose, chat-completions JSONL naming the component).

        The EAGLE dataset source ``front_door`` reads it; the function may only put records on that stream
        (``lambda/session_router/turn_log.py``). A turn that cannot be logged is counted, never failed. Streamed
        turns reach it through ``POST /log``, which the client calls after a stream (``client.Conversation.stream``).
        The turns expire after ``settings.turn_log_retention_days`` (``TurnLog.keep_for``)."""
        turn_log.keep_for(self.settings.turn_log_retention_days, by=self.node.path)
        self.function.add_environment("TURN_LOG_STREAM", turn_log.delivery_stream_name)
        turn_log.grant_put(self.function)
        self.turn_log = turn_log

    def metric_server_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """5xx answers the handler returned (endpoint failures, misconfiguration); Lambda counts these as
        successful invocations. Default: sum over 1 minute."""
        return self.metric("ServerErrors", **kwargs)

    def metric_sessions_reopened(self, **kwargs: Any) -> cloudwatch.Metric:
        """Turns that found their session lost and opened a new one. Default: sum over 1 minute."""
        return self.metric("SessionsReopened", **kwargs)


def _description(endpoint: LlmEndpoint) -> str:
    text = f"the session front door (conversation -> SageMaker session) of endpoint {endpoint.node.path}"
    return text if len(text) <= 256 else text[:253] + "..."


@jsii.implements(IStableAnyProducer)
class _WithSetSourceIdentity:
    """A pinned role's trust policy as the synth resolves it, with ``sts:SetSourceIdentity`` beside every way in
    (``trust.with_set_source_identity``)."""

    def __init__(self, role: iam.Role, document: iam.PolicyDocument) -> None:
        self._role = role
        self._document = document

    def produce(self) -> Any:
        return trust.with_set_source_identity(Stack.of(self._role).resolve(self._document))
