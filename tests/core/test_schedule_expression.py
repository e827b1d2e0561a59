"""EventBridge Scheduler expressions: what Scheduler accepts passes, what it refuses is one clear problem."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sagemaker_llm_cdk import ConfigurationError, EagleSettings
from sagemaker_llm_cdk.core.schedule_expression import schedule_problem
from support.properties import examples

VALID = [
    "rate(1 minute)",
    "rate(5 minutes)",
    "rate(1 hour)",
    "rate(12 hours)",
    "rate(1 day)",
    "rate(7 days)",
    "cron(0 3 ? * SUN *)",
    "cron(0 3 ? * MON-FRI *)",
    "cron(15 10 ? * 6L 2027-2029)",
    "cron(0 12 * * ? *)",
    "cron(0/15 * * * ? *)",
    "cron(0 8 1 * ? *)",
    "cron(0 18 ? * MON#2 *)",
    "cron(0 9 L * ? *)",
    "cron(0 9 15W * ? *)",
    "cron(0 9 LW * ? *)",
    "cron(5,35 14 * JAN-MAR,DEC ? *)",
    "cron(0 */2 ? * * *)",
    "cron(0 0 ? * FRI-MON *)",
    "cron(10-40/5 0-6 ? * L *)",
    "at(2027-01-31T03:00:00)",
]

INVALID = [
    ("cron(0 3 * * SUN)", "six fields"),  # 5-field (Unix) cron
    ("cron(0 3 * * ? * *)", "six fields"),
    ("rate(0 days)", "at least 1"),
    ("rate(1 days)", "singular 'day'"),
    ("rate(2 day)", "plural 'days'"),
    ("rate(1 minutes)", "singular 'minute'"),
    ("rate(3 hour)", "plural 'hours'"),
    ("rate(2 weeks)", "not a unit"),
    ("rate(7days)", "one space between"),
    ("rate(-1 days)", "one space between"),
    ("cron(0 3 * * * *)", "exactly one of day-of-month and day-of-week"),
    ("cron(0 3 ? * ? *)", "exactly one of day-of-month and day-of-week"),
    ("cron(60 3 ? * SUN *)", "minutes field '60'"),
    ("cron(0 24 ? * SUN *)", "hours field '24'"),
    ("cron(0 3 32 * ? *)", "day-of-month field '32'"),
    ("cron(0 3 0 * ? *)", "day-of-month field '0'"),
    ("cron(0 3 ? 13 SUN *)", "month field '13'"),
    ("cron(0 3 ? * 8 *)", "day-of-week field '8'"),
    ("cron(0 3 ? * SUN 1969)", "year field '1969'"),
    ("cron(0 3 ? * SUN 2200)", "year field '2200'"),
    ("cron(0 3 ? * MON#6 *)", "k 1-5"),
    ("cron(0 3 ? * sun *)", "day-of-week field 'sun'"),
    ("cron(0 3 L * L *)", "exactly one of day-of-month"),
    ("cron(0 3 1W,15 * ? *)", "stand alone"),
    ("cron(0/0 3 ? * SUN *)", "at least 1"),
    ("cron(30-10 3 ? * SUN *)", "runs backwards"),
    ("cron(0 3 ? * SUN ?)", "'?' is only for day-of-month or day-of-week"),
    ("cron(0 3 ? * 1/2 *)", "day-of-week takes no step"),
    ("cron(0 3 ? * 3#1,6#3 *)", "stand alone"),
    ("cron(0 3 1,,2 * ? *)", "an empty item"),
    ("cron(0  3 ? * SUN *)", "six fields"),
    ("at(2027-02-30T03:00:00)", "not a real date"),
    ("at(2027-01-31 03:00:00)", "at(yyyy-mm-ddThh:mm:ss)"),
    ("weekly", "starts with none of"),
    ("", "starts with none of"),
]


@pytest.mark.parametrize("expression", VALID)
def test_expressions_scheduler_accepts_pass(expression):
    assert schedule_problem("schedule", expression) is None
    assert EagleSettings(schedule=expression).schedule == expression


@pytest.mark.parametrize("expression, reason", INVALID)
def test_expressions_scheduler_refuses_are_one_clear_problem(expression, reason):
    problem = schedule_problem("schedule", expression)
    assert problem is not None and reason in problem.fix, problem
    with pytest.raises(ConfigurationError, match=r"schedule: got .*; allowed: rate\(value unit\).*; fix: "):
        EagleSettings(schedule=expression)


# ----------------------------------------------------------------------------- properties
_UNIT = st.sampled_from(["minute", "hour", "day"])


@given(value=st.integers(min_value=1, max_value=10**6), unit=_UNIT)
def test_rate_accepts_exactly_the_matching_unit_form(value, unit):
    singular, plural = f"rate({value} {unit})", f"rate({value} {unit}s)"
    assert (schedule_problem("s", singular) is None) == (value == 1)
    assert (schedule_problem("s", plural) is None) == (value != 1)


@given(unit=st.sampled_from(["minute", "minutes", "hour", "hours", "day", "days"]))
def test_rate_of_zero_is_refused(unit):
    assert schedule_problem("s", f"rate(0 {unit})") is not None


def _item(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high)
    ordered = st.tuples(number, number).map(sorted)
    return st.one_of(
        number.map(str),
        ordered.map(lambda r: f"{r[0]}-{r[1]}"),
        st.tuples(number, st.integers(1, high - low + 1)).map(lambda t: f"{t[0]}/{t[1]}"),
        st.integers(1, high - low + 1).map(lambda step: f"*/{step}"),
    )


def _field(low: int, high: int, *, steps: bool = True) -> st.SearchStrategy[str]:
    item = _item(low, high) if steps else _item(low, high).filter(lambda i: "/" not in i)
    return st.one_of(st.just("*"), st.lists(item, min_size=1, max_size=3).map(",".join))


_DAY_OF_MONTH = st.one_of(_field(1, 31), st.sampled_from(["L", "LW", "1W", "15W", "31W"]))
_DAY_OF_WEEK = st.one_of(
    _field(1, 7, steps=False), st.sampled_from(["L", "6L", "FRIL", "MON#1", "3#5", "MON-FRI", "SUN,SAT"])
)


@st.composite
def _cron(draw) -> str:
    fields = [draw(_field(0, 59)), draw(_field(0, 23)), "?", draw(_field(1, 12)), "?", draw(_field(1970, 2199))]
    if draw(st.booleans()):
        fields[2] = draw(_DAY_OF_MONTH)
    else:
        fields[4] = draw(_DAY_OF_WEEK)
    return "cron(" + " ".join(fields) + ")"


@settings(max_examples=examples(300))
@given(expression=_cron())
def test_every_expression_of_the_documented_grammar_is_accepted(expression):
    assert schedule_problem("s", expression) is None, expression


@settings(max_examples=examples(200))
@given(expression=_cron(), drop=st.integers(0, 5))
def test_a_cron_without_one_of_its_six_fields_is_refused(expression, drop):
    fields = expression[len("cron(") : -1].split(" ")
    del fields[drop]
    problem = schedule_problem("s", "cron(" + " ".join(fields) + ")")
    assert problem is not None and "six fields" in problem.fix


@settings(max_examples=examples(200))
@given(expression=_cron(), both=st.sampled_from(["*", "1", "?"]))
def test_both_day_fields_set_or_both_unset_is_refused(expression, both):
    fields = expression[len("cron(") : -1].split(" ")
    fields[2] = fields[4] = both
    problem = schedule_problem("s", "cron(" + " ".join(fields) + ")")
    assert problem is not None and "exactly one of day-of-month and day-of-week" in problem.fix


@given(when=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2199, 12, 31)))
def test_at_takes_every_real_second(when):
    assert schedule_problem("s", f"at({when.replace(microsecond=0).isoformat()})") is None


@given(text=st.text(max_size=40))
def test_anything_is_either_accepted_or_one_problem_never_an_exception(text):
    problem = schedule_problem("s", text)
    assert problem is None or (problem.path == "s" and problem.value == text and problem.fix)
