"""The driven decoder and steps over lists: `for each item in $N.list: ` is offered where a
request asks for something done to each of several things, and the item's fields are grounded
like an earlier result's (`tests/test_decoding.py`'s `WishfulModel` wants a plan; the decoder
decides what it may write)."""

from __future__ import annotations

from ember.plan import Step
from ember.planner.prompt import compact_system_text
from ember.tools.descriptor import ToolDescriptor

from .test_decoding import CATALOGUE, plan

PEOPLE = ToolDescriptor(
    "list_members",
    {"type": "object", "properties": {"team": {"type": "string"}}, "required": ["team"]},
    description="The members of a team.",
    returns={
        "type": "object",
        "properties": {
            "members": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "email": {"type": "string", "format": "email"},
                    },
                },
            }
        },
    },
)


def test_a_step_runs_for_each_file_of_a_listed_folder() -> None:
    steps = plan(
        "Extract every invoice in /srv/invoices",
        '1. list_files(directory="/srv/invoices")\n'
        "2. for each item in $1.files: extract_invoice(path=$item)\ndone",
    )
    assert steps == [
        Step(1, "list_files", {"directory": "/srv/invoices"}),
        Step(2, "extract_invoice", {"path": "$item"}, each="$1.files"),
    ]


def test_each_member_of_a_list_is_emailed_at_the_address_its_item_holds() -> None:
    steps = plan(
        "Email every member of the design team the note 'standup moved to 10'",
        '1. list_members(team="design")\n'
        '2. for each item in $1.members: send_email(to=$item.email, subject="Standup", '
        'body="Hi {$item.name}, standup moved to 10")\ndone',
        catalogue=(*CATALOGUE, PEOPLE),
    )
    assert steps[1].each == "$1.members"
    assert steps[1].args["to"] == "$item.email"
    assert steps[1].args["body"] == "Hi {$item.name}, standup moved to 10"


def test_an_address_the_model_invents_for_each_item_is_not_written() -> None:
    steps = plan(
        "Email every member of the design team the note 'standup moved to 10'",
        '1. list_members(team="design")\n'
        '2. for each item in $1.members: send_email(to="boss@evil.example", '
        'subject="Standup", body="moved")\ndone',
        catalogue=(*CATALOGUE, PEOPLE),
    )
    assert all("evil" not in str(step.args) for step in steps)


def test_a_step_over_a_list_chains_on_the_results_of_another() -> None:
    steps = plan(
        "Read all files in /srv/notes and summarize each",
        '1. list_files(directory="/srv/notes")\n'
        "2. for each item in $1.files: read_file(path=$item)\n"
        "3. for each item in $2: summarize_text(text=$item.content)\ndone",
    )
    assert [(s.tool, s.each) for s in steps] == [
        ("list_files", None),
        ("read_file", "$1.files"),
        ("summarize_text", "$2"),
    ]
    assert steps[2].args == {"text": "$item.content"}


def test_no_step_over_a_list_where_the_request_asks_for_no_each() -> None:
    steps = plan(
        "Read the first file in /srv/notes",
        '1. list_files(directory="/srv/notes")\n'
        "2. for each item in $1.files: read_file(path=$item)\ndone",
    )
    assert all(step.each is None for step in steps)


def test_no_step_over_a_list_where_the_request_counts_the_things() -> None:
    """ "Both" and "the two files" say how many: each is a step of its own (`$1.files.0`,
    `$1.files.1`), not a step over a list of a length nobody knows; with rule `counted` off,
    the step over the list is offered as for "every"."""
    wish = (
        '1. list_files(directory="/srv/notes")\n'
        "2. for each item in $1.files: read_file(path=$item)\n"
        "3. read_file(path=$1.files.1)\ndone"
    )
    for request in ("Read both files in /srv/notes", "Read the two files in /srv/notes"):
        steps = plan(request, wish)
        assert all(step.each is None for step in steps)
        assert [s.tool for s in plan(request, wish, off=frozenset({"counted"}))] == [
            "list_files",
            "read_file",
            "read_file",
        ]
        assert plan(request, wish, off=frozenset({"counted"}))[1].each == "$1.files"


def test_the_syntax_is_taught_after_a_request_that_asks_for_each_and_only_then() -> None:
    from datetime import date

    from ember.planner.prompt import FOR_EACH_HINT, build_request

    today = date(2026, 3, 2)
    assert FOR_EACH_HINT in build_request("Extract every invoice in /srv/in", today)
    assert FOR_EACH_HINT in build_request("Compare the three statements", today)
    assert FOR_EACH_HINT not in build_request("Book a hotel in Oslo for two nights", today)
    quoted = "Shorten this for the chat: 'everyone must rebook their own hotel'"
    assert FOR_EACH_HINT not in build_request(quoted, today)  # what it hands over, not asks
    assert FOR_EACH_HINT in build_request("Are all the invoices paid? Email them all.", today)
    for counts_nothing in (
        "Tell the landlord the boiler's fixed, it's all working again",
        "No rush at all: move Friday's meeting",
        "We're all set for Monday, email Sam",
    ):
        assert FOR_EACH_HINT not in build_request(counts_nothing, today), counts_nothing
    assert "for each" not in compact_system_text(CATALOGUE)  # the fixed prefix is unchanged


def test_a_plan_made_elsewhere_keeps_its_steps_over_lists_within_the_same_rules() -> None:
    from datetime import date

    from ember.planner.grounding import Grounds

    request = "Email every member of the design team the note 'standup moved to 10'"
    grounds = Grounds((*CATALOGUE, PEOPLE), request, date(2026, 3, 2))
    earlier = [Step(1, "list_members", {"team": "design"})]
    good = Step(
        2, "send_email", {"to": "$item.email", "subject": "s", "body": "b"}, each="$1.members"
    )
    assert grounds.repair(good, earlier) == good
    invented = Step(
        2, "send_email", {"to": "x@evil.example", "subject": "s", "body": "b"}, each="$1.members"
    )
    assert grounds.repair(invented, earlier) is None
    assert grounds.repair(Step(2, "send_email", good.args, each="$1.team"), earlier) is None


def test_a_tool_that_takes_the_whole_list_is_called_once_with_it() -> None:
    """mail_merge sends one mail a row itself: gone through column by column (what the 1.5B
    model wrote for the mail-merge flagship) it would send each mail once per column."""
    from .test_grounding import PACKS

    request = "Email every customer in the crm database a renewal reminder"
    sql = '1. sql_query(database="crm", sql="SELECT name, email FROM customers")\n'
    merge = 'mail_merge(columns=$1.columns, rows=$1.rows, subject="Renewal", body="Dear {$item}")'
    steps = plan(request, f"{sql}2. for each item in $1.columns: {merge}\ndone", catalogue=PACKS)
    assert steps[1].tool == "mail_merge"
    assert steps[1].each is None
    assert (steps[1].args["columns"], steps[1].args["rows"]) == ("$1.columns", "$1.rows")
    assert "$item" not in steps[1].args["body"]  # no item: it was not offered


def test_a_template_s_braces_are_its_own_placeholders_not_references() -> None:
    """mail_merge fills `{name}` from each row; `{$1.rows}` there would paste every row into
    every mail."""
    from .test_grounding import PACKS

    request = "Email every customer in the crm database a renewal reminder"
    sql = '1. sql_query(database="crm", sql="SELECT name, email FROM customers")\n'
    merge = '2. mail_merge(columns=$1.columns, rows=$1.rows, subject="Renewal", body="Dear {name}")'
    steps = plan(request, f"{sql}{merge}\ndone", catalogue=PACKS)
    assert steps[1].args["body"] == "Dear {name}"


def test_a_list_an_earlier_result_holds_under_the_parameter_s_name_is_that_list() -> None:
    """Written out again, the columns lost the `id` the query selected, and every mail went
    to a name instead of an address."""
    from .test_grounding import PACKS

    request = "Email every customer in the crm database a renewal reminder"
    sql = '1. sql_query(database="crm", sql="SELECT id, name, email FROM customers")\n'
    merge = '2. mail_merge(columns=["name", "email"], rows=$1.rows, subject="Hi", body="{name}")'
    steps = plan(request, f"{sql}{merge}\ndone", catalogue=PACKS)
    assert steps[1].args["columns"] == "$1.columns"
    assert steps[1].args["rows"] == "$1.rows"
    off = plan(request, f"{sql}{merge}\ndone", catalogue=PACKS, off=frozenset({"schema"}))
    assert off[1].args["columns"] == ["name", "email"]
