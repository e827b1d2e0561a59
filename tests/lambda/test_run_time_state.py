"""Run-time parameters: created once, never reset by a deploy, kept or deleted by the stack's removal mode.

Every request is checked against botocore's service model (Stubber) and its enums, lengths and
patterns (``assert_valid_request``).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

NAME = "/sagemaker-llm/state/eagle/SageMakerLlm-qwen3-32b/draft-head"
EARLIER = "/sagemaker-llm/eagle/SageMakerLlm-qwen3-32b/draft-head"
STATUS = "/sagemaker-llm/state/capacity-plans/chat-p5e-2027q1/status"
PLAN = "chat-p5e-2027q1"
PROPS = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
    "ParameterName": NAME,
    "InitialValue": "none",
    "Removal": "retain",
    "Description": "Approved EAGLE draft head",
}
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/SageMakerLlmEaglePromotion/guid"
HEAD = "s3://artifacts/jobs/qwen-eagle-1/draft/"


@pytest.fixture
def state(load_handler):
    return load_handler("run_time_state")


@pytest.fixture
def ssm(state):
    stubber = Stubber(state._ssm())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def sm(state):
    stubber = Stubber(state._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(
    request_type: str, props: dict[str, Any] = PROPS, logical_id: str = "ChatQwen332bDraftHead", **extra: Any
) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": "Custom::SageMakerLlmRunTimeParameter",
        "StackId": STACK_ID,
        "RequestId": "r",
        "LogicalResourceId": logical_id,
        "ResourceProperties": props,
        **extra,
    }


def expect(stubber: Stubber, service: str, operation: str, params: dict[str, Any], response: dict[str, Any]) -> None:
    assert_valid_request(service, operation, params)
    stubber.add_response(_snake(operation), response, params)


def expect_error(stubber: Stubber, service: str, operation: str, params: dict[str, Any], code: str) -> None:
    assert_valid_request(service, operation, params)
    stubber.add_client_error(_snake(operation), service_error_code=code, expected_params=params)


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


def current(ssm: Stubber, value: str | None, name: str = NAME) -> None:
    if value is None:
        expect_error(ssm, "ssm", "GetParameter", {"Name": name}, "ParameterNotFound")
    else:
        expect(
            ssm,
            "ssm",
            "GetParameter",
            {"Name": name},
            {"Parameter": {"Name": name, "Type": "String", "Value": value, "Version": 3}},
        )


def owner_tag(state, logical_id: str = "ChatQwen332bDraftHead") -> list[dict[str, str]]:
    digest = state.owner({"StackId": STACK_ID, "LogicalResourceId": logical_id})
    return [{"Key": f"sagemaker-llm-cdk:owner:{digest}", "Value": f"SageMakerLlmEaglePromotion/{logical_id}"}]


def legacy_tag(state, logical_id: str = "ChatQwen332bDraftHead") -> list[dict[str, str]]:
    """The single owner tag earlier releases wrote."""
    return [
        {"Key": "sagemaker-llm-cdk:owner", "Value": state.owner({"StackId": STACK_ID, "LogicalResourceId": logical_id})}
    ]


def adopter_tag(state, logical_id: str = "ChatQwen332bDraftHead") -> list[dict[str, str]]:
    """The owner tag of a resource that found the parameter and did not create it."""
    (tag,) = owner_tag(state, logical_id)
    return [{"Key": tag["Key"], "Value": "adopted:" + tag["Value"]}]


def tagged(ssm: Stubber, state, name: str = NAME, tags: list[dict[str, str]] | None = None) -> None:
    expect(
        ssm,
        "ssm",
        "AddTagsToResource",
        {"ResourceType": "Parameter", "ResourceId": name, "Tags": tags or owner_tag(state)},
        {},
    )


def test_the_resource_type_and_state_folder_are_the_constructs():
    from sagemaker_llm_cdk.core import run_time_state

    with open(run_time_state.__file__.rsplit("/constructs/", 1)[0] + "/lambda/run_time_state/index.py") as file:
        source = file.read()
    assert f'RESOURCE_TYPE = "{run_time_state.RESOURCE_TYPE}"' in source
    assert f'STATE_PREFIX = "{run_time_state.STATE_PREFIX}"' in source


def test_an_owner_tag_fits_ssm_and_names_its_stack_and_resource(state):
    """One key per owner (a digest of stack id and logical id): a stack deployed again is a new owner."""
    tag = state.owner_tag({"StackId": STACK_ID, "LogicalResourceId": "L" * 255})
    assert len(tag["Key"]) == 88 and tag["Value"].startswith("SageMakerLlmEaglePromotion/LLL")
    assert len(tag["Value"]) == 256
    assert_valid_request("ssm", "AddTagsToResource", {"ResourceType": "Parameter", "ResourceId": NAME, "Tags": [tag]})
    adopter = state.adopter_tag(tag)
    assert adopter["Key"] == tag["Key"] and adopter["Value"] == "adopted:" + tag["Value"][:248]
    assert_valid_request(
        "ssm", "AddTagsToResource", {"ResourceType": "Parameter", "ResourceId": NAME, "Tags": [adopter]}
    )
    assert state.adopted(adopter) and not state.adopted(tag)
    assert state.owners([adopter]) == state.owners([tag]) == {tag["Key"][len("sagemaker-llm-cdk:owner:") :]}
    again = state.owner_tag({"StackId": STACK_ID.replace("guid", "guid-2"), "LogicalResourceId": "L" * 255})
    assert again["Key"] != tag["Key"]


def test_create_makes_an_absent_parameter_with_its_initial_value_and_owner_tag(state, ssm, lambda_context):
    current(ssm, None)
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        {"Version": 1},
    )

    assert state.handler(event("Create"), lambda_context) == {
        "PhysicalResourceId": NAME,
        "Data": {"ParameterName": NAME},
    }


def test_create_keeps_a_value_that_is_already_there(state, ssm, lambda_context):
    """A stack deployed again after a delete with removal retain, or a resource whose logical id changed."""
    current(ssm, HEAD)
    list_tags(ssm, [])
    tagged(ssm, state)

    state.handler(event("Create"), lambda_context)  # no PutParameter: the Stubber fails on any unplanned call


def test_create_seeds_a_new_parameter_from_the_earlier_name(state, ssm, lambda_context):
    current(ssm, None)
    current(ssm, HEAD, name=EARLIER)
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": HEAD,
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        {"Version": 1},
    )

    state.handler(event("Create", {**PROPS, "SeedFrom": EARLIER}), lambda_context)


def test_create_without_a_seed_value_starts_from_the_initial_value(state, ssm, lambda_context):
    current(ssm, None)
    current(ssm, None, name=EARLIER)
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        {"Version": 1},
    )

    state.handler(event("Create", {**PROPS, "SeedFrom": EARLIER}), lambda_context)


def test_a_writer_that_wins_the_race_keeps_its_value(state, ssm, lambda_context):
    current(ssm, None)
    expect_error(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        "ParameterAlreadyExists",
    )
    list_tags(ssm, [])
    tagged(ssm, state)
    current(ssm, HEAD)

    state.handler(event("Create"), lambda_context)


DESTROY = {**PROPS, "Removal": "destroy"}


@pytest.mark.parametrize(
    "found, removal, recorded",
    [
        ([], "destroy", "adopter"),
        ([{"Key": "team", "Value": "ml"}], "destroy", "adopter"),
        ([], "retain", "owner"),
        ("another owner", "destroy", "owner"),
        ("another adopter", "destroy", "adopter"),
        ("another adopter", "retain", "adopter"),
        ("an earlier release's tag of its own", "destroy", "owner"),
    ],
    ids=[
        "ownerless",
        "only other tags",
        "ownerless in retain mode",
        "joins an owner",
        "joins an adopter",
        "joins an adopter in retain mode",
        "earlier release",
    ],
)
def test_create_records_whether_it_adopted_a_parameter_that_was_there(
    state, ssm, lambda_context, found, removal, recorded
):
    """Found with no owner in destroy mode, or held by an adopter: the value existed before the stack."""
    tags = (
        found
        if isinstance(found, list)
        else {
            "another owner": owner_tag(state, "OldDraftHead"),
            "another adopter": adopter_tag(state, "OldDraftHead"),
            "an earlier release's tag of its own": legacy_tag(state),
        }[found]
    )
    current(ssm, HEAD)
    list_tags(ssm, tags)
    tagged(ssm, state, tags=adopter_tag(state) if recorded == "adopter" else owner_tag(state))

    state.handler(event("Create", {**PROPS, "Removal": removal}), lambda_context)


def test_an_update_keeps_what_create_recorded(state, ssm, lambda_context):
    """A rollback's Update, or a routine one, leaves an adopter's tag as it is: nothing turns it into a creator's."""
    current(ssm, HEAD)
    list_tags(ssm, adopter_tag(state))

    state.handler(event("Update", DESTROY, PhysicalResourceId=NAME, OldResourceProperties=PROPS), lambda_context)


def test_a_writer_that_wins_the_race_in_destroy_mode_makes_the_resource_an_adopter(state, ssm, lambda_context):
    """The parameter was made by someone else between GetParameter and PutParameter: not the resource's own."""
    current(ssm, None)
    expect_error(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        "ParameterAlreadyExists",
    )
    list_tags(ssm, [])
    tagged(ssm, state, tags=adopter_tag(state))
    current(ssm, HEAD)

    state.handler(event("Create", DESTROY), lambda_context)


@pytest.mark.parametrize(
    "change",
    [
        {"Description": "a new description"},
        {"InitialValue": "something else"},
        {"Removal": "destroy"},
        {},  # a tag change: CloudFormation sends the same properties
    ],
    ids=["description", "initial value", "removal", "tags only"],
)
def test_an_update_with_the_same_name_never_writes_the_value(state, ssm, lambda_context, change):
    current(ssm, HEAD)
    list_tags(ssm, owner_tag(state))  # already its owner: no tag is written either

    result = state.handler(
        event("Update", {**PROPS, **change}, PhysicalResourceId=NAME, OldResourceProperties=PROPS), lambda_context
    )

    assert result["PhysicalResourceId"] == NAME


def test_an_update_recreates_a_parameter_deleted_by_hand(state, ssm, lambda_context):
    current(ssm, None)
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME,
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        {"Version": 1},
    )

    state.handler(event("Update", PhysicalResourceId=NAME, OldResourceProperties=PROPS), lambda_context)


def test_a_new_name_is_a_new_parameter_and_cloudformation_deletes_the_old_id(state, ssm, lambda_context):
    renamed = {**PROPS, "ParameterName": NAME + "-2"}
    current(ssm, None, name=NAME + "-2")
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": NAME + "-2",
            "Value": "none",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Approved EAGLE draft head",
        },
        {"Version": 1},
    )

    result = state.handler(
        event("Update", renamed, PhysicalResourceId=NAME, OldResourceProperties=PROPS), lambda_context
    )

    assert result["PhysicalResourceId"] == NAME + "-2"


def plan_props(**extra: Any) -> dict[str, Any]:
    return {
        **PROPS,
        "ParameterName": STATUS,
        "InitialValue": "Unknown",
        "PlanName": PLAN,
        "Description": "Status of capacity plan",
        **extra,
    }


def describe(sm: Stubber, status: str | None) -> None:
    params = {"TrainingPlanName": PLAN}
    if status is None:
        expect_error(sm, "sagemaker", "DescribeTrainingPlan", params, "ResourceNotFound")
        return
    expect(
        sm,
        "sagemaker",
        "DescribeTrainingPlan",
        params,
        {
            "TrainingPlanArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}",
            "TrainingPlanName": PLAN,
            "Status": status,
        },
    )


def test_a_plan_status_is_read_at_create_so_the_first_deploy_binds_an_active_plan(state, ssm, sm, lambda_context):
    current(ssm, None, name=STATUS)
    describe(sm, "Active")
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": STATUS,
            "Value": "Active",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Status of capacity plan",
        },
        {"Version": 1},
    )

    state.handler(event("Create", plan_props()), lambda_context)


def test_an_update_refreshes_a_plan_status_from_sagemaker_never_to_a_default(state, ssm, sm, lambda_context):
    current(ssm, "Scheduled", name=STATUS)
    describe(sm, "Active")
    expect(ssm, "ssm", "PutParameter", {"Name": STATUS, "Value": "Active", "Type": "String", "Overwrite": True}, {})
    list_tags(ssm, owner_tag(state), name=STATUS)

    state.handler(
        event("Update", plan_props(), PhysicalResourceId=STATUS, OldResourceProperties=plan_props()), lambda_context
    )


def test_an_unchanged_plan_status_is_not_written_again(state, ssm, sm, lambda_context):
    current(ssm, "Active", name=STATUS)
    describe(sm, "Active")
    list_tags(ssm, owner_tag(state), name=STATUS)

    state.handler(
        event("Update", plan_props(), PhysicalResourceId=STATUS, OldResourceProperties=plan_props()), lambda_context
    )


def test_a_plan_not_bought_yet_is_recorded_as_not_found(state, ssm, sm, lambda_context):
    current(ssm, None, name=STATUS)
    describe(sm, None)
    expect(
        ssm,
        "ssm",
        "PutParameter",
        {
            "Name": STATUS,
            "Value": "NotFound",
            "Type": "String",
            "Overwrite": False,
            "Tier": "Standard",
            "Tags": owner_tag(state),
            "Description": "Status of capacity plan",
        },
        {"Version": 1},
    )

    state.handler(event("Create", plan_props()), lambda_context)


def test_access_denied_on_the_plan_fails_the_deploy(state, ssm, sm, lambda_context):
    current(ssm, "Active", name=STATUS)
    expect_error(sm, "sagemaker", "DescribeTrainingPlan", {"TrainingPlanName": PLAN}, "AccessDeniedException")

    with pytest.raises(state.ClientError, match="AccessDeniedException"):
        state.handler(
            event("Update", plan_props(), PhysicalResourceId=STATUS, OldResourceProperties=plan_props()), lambda_context
        )


def list_tags(ssm: Stubber, tags: list[dict[str, str]], name: str = NAME) -> None:
    expect(ssm, "ssm", "ListTagsForResource", {"ResourceType": "Parameter", "ResourceId": name}, {"TagList": tags})


def untagged(ssm: Stubber, keys: list[str], name: str = NAME) -> None:
    expect(ssm, "ssm", "RemoveTagsFromResource", {"ResourceType": "Parameter", "ResourceId": name, "TagKeys": keys}, {})


def test_delete_with_removal_retain_keeps_the_parameter_and_gives_up_its_ownership(state, ssm, lambda_context):
    """A retained parameter no longer names the deleted resource: a later destroy-mode owner is then the last."""
    list_tags(ssm, owner_tag(state))
    untagged(ssm, [owner_tag(state)[0]["Key"]])

    state.handler(event("Delete", PhysicalResourceId=NAME), lambda_context)  # no DeleteParameter


def test_delete_with_removal_destroy_deletes_a_parameter_it_alone_owns(state, ssm, lambda_context):
    list_tags(ssm, owner_tag(state) + [{"Key": "team", "Value": "ml"}])
    expect(ssm, "ssm", "DeleteParameter", {"Name": NAME}, {})

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


def test_delete_keeps_a_parameter_another_resource_also_owns(state, ssm, lambda_context):
    """A logical id change: the new resource added its tag on Create; the old one's Delete removes only its own."""
    list_tags(ssm, owner_tag(state) + owner_tag(state, logical_id="RenamedDraftHead"))
    untagged(ssm, [owner_tag(state)[0]["Key"]])

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


def test_delete_keeps_a_parameter_it_does_not_own(state, ssm, lambda_context):
    list_tags(ssm, owner_tag(state, logical_id="RenamedDraftHead"))

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


@pytest.mark.parametrize("others", [[], [{"Key": "team", "Value": "ml"}]], ids=["last owner", "with other tags"])
def test_delete_by_an_adopter_in_destroy_mode_keeps_the_parameter(state, ssm, lambda_context, others):
    """The value existed before the resource: its Delete (a failed first deploy's rollback, a stack delete) keeps it."""
    list_tags(ssm, adopter_tag(state) + others)
    untagged(ssm, [adopter_tag(state)[0]["Key"]])

    state.handler(event("Delete", DESTROY, PhysicalResourceId=NAME), lambda_context)  # no DeleteParameter


@pytest.mark.parametrize("other", [False, True], ids=["sole owner", "with a new owner"])
def test_the_owner_tag_of_earlier_releases_counts_as_its_owners(state, ssm, lambda_context, other):
    """Parameters deployed by earlier releases carry one ``sagemaker-llm-cdk:owner`` tag and get no event on upgrade."""
    list_tags(ssm, legacy_tag(state) + (owner_tag(state, logical_id="RenamedDraftHead") if other else []))
    if other:
        untagged(ssm, ["sagemaker-llm-cdk:owner"])
    else:
        expect(ssm, "ssm", "DeleteParameter", {"Name": NAME}, {})

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


def test_an_earlier_releases_tag_naming_another_owner_keeps_the_parameter(state, ssm, lambda_context):
    """The rollback of a new logical id: the old resource's earlier-release tag still holds the parameter."""
    list_tags(ssm, legacy_tag(state, logical_id="OldDraftHead") + owner_tag(state))
    untagged(ssm, [owner_tag(state)[0]["Key"]])

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


def test_a_parameter_at_the_tag_limit_fails_with_what_to_remove(state, ssm, lambda_context):
    current(ssm, HEAD)
    list_tags(ssm, [])
    assert_valid_request(
        "ssm", "AddTagsToResource", {"ResourceType": "Parameter", "ResourceId": NAME, "Tags": owner_tag(state)}
    )
    ssm.add_client_error(
        "add_tags_to_resource",
        service_error_code="TooManyTagsError",
        expected_params={"ResourceType": "Parameter", "ResourceId": NAME, "Tags": owner_tag(state)},
    )

    with pytest.raises(
        state.StateError,
        match=rf"ParameterName {NAME}: AddTagsToResource refused its owner tag "
        r"sagemaker-llm-cdk:owner:[0-9a-f]{64} \(SageMakerLlmEaglePromotion/"
        r"ChatQwen332bDraftHead\).*limit of 50 tags.*remove-tags-from-resource",
    ):
        state.handler(event("Create"), lambda_context)


def test_a_denied_cleanup_of_a_destroy_parameter_fails_naming_it(state, ssm, lambda_context):
    """A name outside the state folder, gone from the template: its named grant went with it."""
    outside = "/team/values/watermark"
    expect_error(
        ssm, "ssm", "ListTagsForResource", {"ResourceType": "Parameter", "ResourceId": outside}, "AccessDeniedException"
    )

    with pytest.raises(
        state.StateError,
        match=rf"ParameterName {outside} \(Removal destroy\): AccessDeniedException:"
        r".*only parameters under /sagemaker-llm/state/.*delete-parameter "
        rf"--name {outside}",
    ):
        state.handler(
            event("Delete", {**PROPS, "ParameterName": outside, "Removal": "destroy"}, PhysicalResourceId=outside),
            lambda_context,
        )


def test_a_denied_cleanup_of_a_retained_parameter_keeps_it(state, ssm, lambda_context):
    outside = "/team/values/watermark"
    expect_error(
        ssm, "ssm", "ListTagsForResource", {"ResourceType": "Parameter", "ResourceId": outside}, "AccessDeniedException"
    )

    state.handler(event("Delete", {**PROPS, "ParameterName": outside}, PhysicalResourceId=outside), lambda_context)


def test_delete_of_a_failed_create_touches_nothing(state, ssm, lambda_context):
    state.handler(
        event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId="r-2024-request-id"), lambda_context
    )


def test_delete_of_a_parameter_already_gone_succeeds(state, ssm, lambda_context):
    expect_error(
        ssm, "ssm", "ListTagsForResource", {"ResourceType": "Parameter", "ResourceId": NAME}, "InvalidResourceId"
    )

    state.handler(event("Delete", {**PROPS, "Removal": "destroy"}, PhysicalResourceId=NAME), lambda_context)


@pytest.mark.parametrize(
    "props, message",
    [
        (
            {**PROPS, "ParameterName": "no spaces allowed"},
            r"ParameterName 'no spaces allowed' is not an SSM parameter name",
        ),
        ({**PROPS, "InitialValue": ""}, r"InitialValue"),
        ({**PROPS, "Removal": "keep"}, r"Removal"),
        ({**PROPS, "SeedFrom": "a b"}, r"SeedFrom 'a b' is not an SSM parameter name"),
        ({**PROPS, "PlanName": "no_underscores"}, r"PlanName 'no_underscores' is not a training plan name"),
        ({**PROPS, "Extra": "x"}, r"Extra"),
        ({k: v for k, v in PROPS.items() if k != "Removal"}, r"Removal"),
    ],
    ids=["name", "empty initial value", "removal", "seed", "plan", "unknown key", "missing removal"],
)
def test_bad_properties_fail_before_any_call(state, ssm, lambda_context, props, message):
    with pytest.raises(state.StateError, match=message):
        state.handler(event("Create", props), lambda_context)


def test_a_bad_event_fails_before_any_call(state, ssm, lambda_context):
    with pytest.raises(state.StateError, match=r"Update events need PhysicalResourceId"):
        state.handler(event("Update", OldResourceProperties=PROPS), lambda_context)
