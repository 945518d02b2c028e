"""The verdict's general rules, each on files and questions the generated suite does not hold:
the real loop, the real file tools on ``tmp_path``, a scripted model.

- the question is read once: a nudge minipi wrote is never taken for it;
- a claim that restates the question carries no information;
- a figure backs a claim only where its record agrees with the words the answer puts beside
  it (a time from an INFO line is no "first ERROR"; swapped labels);
- a computed figure is recomputed from the reads (a sum of selected rows, a count);
- a change is backed only for the files the tool's own record names;
- no vocabulary decides: a column named ``area`` or ``region`` gives the same verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, RunResult, run_agent
from minipi.agent.tools import ApprovalRequest
from minipi.agent.types import Nudge, Rule, RunView
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import Message
from minipi.files import ProjectFiles, create_project_tools

CONFIG = AgentConfig(max_turns=8)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def sandbox(root: Path) -> Iterator[ProjectFiles]:
    with ProjectFiles(root) as files:
        yield files


def ask(
    files: ProjectFiles,
    question: str,
    reads: list[str],
    *answers: str,
    config: AgentConfig = CONFIG,
) -> RunResult:
    replies: list[Any] = [reply_calls(("read_file", {"path": path})) for path in reads]
    model = ScriptedModel([*replies, *(reply_text(a) for a in answers)])
    result = run_agent(model, create_project_tools(files), config, question)
    model.assert_complete()
    assert result.status == "succeeded", result.error
    return result


def verdict(result: RunResult) -> tuple[str, str | None]:
    assert result.verdict is not None
    return result.verdict.kind, result.verdict.reason


LOG = (
    "2026-11-30 09:00:02 INFO start worker=7\n"
    "2026-11-30 09:00:06 INFO cache hit key=users\n"
    "2026-11-30 09:00:14 ERROR job failed code=E431\n"
    "2026-11-30 09:01:40 ERROR job failed code=E502\n"
)


def test_a_nudge_is_never_the_question(root: Path, sandbox: ProjectFiles) -> None:
    """The same final answer gets the same verdict whether a rule nudged once or not: the
    nudge is minipi's message, and the question stays the caller's."""
    write(root, {"logs/app.log": LOG})

    class OnceMore(Rule):
        nudged = False

        def accept(self, answer: str, view: RunView) -> Nudge | None:
            if self.nudged:
                return None
            self.nudged = True
            return Nudge("Please answer in one sentence.", "asked for one sentence")

    question = "When was the first ERROR in logs/app.log, and its code?"
    final = "The first ERROR was at 09:00:14, code E431."
    direct = ask(sandbox, question, ["logs/app.log"], final)
    config = AgentConfig(max_turns=8, rules=[OnceMore])
    nudged = ask(sandbox, question, ["logs/app.log"], "E431", final, config=config)
    assert nudged.question.text == direct.question.text == question
    assert verdict(nudged) == verdict(direct) == ("backed", None)


def test_a_claim_that_restates_the_question_backs_nothing(
    root: Path, sandbox: ProjectFiles
) -> None:
    write(root, {"limits/v2.json": '{"api": "v2", "requests_per_minute": 1200, "burst": 60}'})
    question = "What are the API v2 limits in limits/v2.json?"
    said = "This is a JSON object that contains data about the API v2 limits."
    # told once that it only repeats the question, the model says it again: it stands, weak
    restated = ask(sandbox, question, ["limits/v2.json"], said, said)
    assert verdict(restated) == ("weak", "restates_question")
    told = [i for i in restated.items if isinstance(i, Message) and i.by_minipi]
    assert "only repeats what the question says" in told[0].text
    right = "v2 allows 1200 requests per minute with a burst of 60."
    assert verdict(ask(sandbox, question, ["limits/v2.json"], right)) == ("backed", None)


def test_a_time_from_an_info_line_is_not_the_first_error(root: Path, sandbox: ProjectFiles) -> None:
    write(root, {"logs/app.log": LOG})
    question = "When did the first ERROR in logs/app.log happen?"
    wrong = "The first ERROR in logs/app.log was at 09:00:06, and it was a cache hit."
    assert verdict(ask(sandbox, question, ["logs/app.log"], wrong)) == ("weak", "mislabeled")
    right = "The first ERROR in logs/app.log was at 09:00:14."
    assert verdict(ask(sandbox, question, ["logs/app.log"], right)) == ("backed", None)


def test_swapped_labels_are_not_backed(root: Path, sandbox: ProjectFiles) -> None:
    write(root, {"shop/day.json": '{"day": "2026-03-02", "orders": 128, "revenue_yuan": 9600}'})
    question = "What were the orders and the revenue in shop/day.json?"
    swapped = "Orders 9600, revenue 128."
    assert verdict(ask(sandbox, question, ["shop/day.json"], swapped)) == ("weak", "mislabeled")
    right = "Orders 128, revenue 9600 yuan."
    assert verdict(ask(sandbox, question, ["shop/day.json"], right)) == ("backed", None)
    # a Chinese sentence about English keys: words cannot tell, the figures stand as found
    zh = "订单 128，营收 9600 元。"
    assert verdict(ask(sandbox, "shop/day.json 的订单和营收是多少？", ["shop/day.json"], zh)) == (
        "backed",
        None,
    )


def test_a_sum_is_recomputed_from_the_rows_it_names(root: Path, sandbox: ProjectFiles) -> None:
    rows = [
        "date,kind,amount_eur",
        "2026-11-03,travel,89.50",
        "2026-11-04,meals,31.20",
        "2026-11-09,travel,240.00",
        "2026-11-12,office,12.99",
        "2026-11-20,travel,46.50",
    ]
    write(root, {"expenses/2026-11.csv": "\n".join(rows) + "\n"})
    question = "How much did we spend on travel in total in expenses/2026-11.csv?"
    right = ask(sandbox, question, ["expenses/2026-11.csv"], "We spent €376.00 on travel.")
    assert verdict(right) == ("backed", None)
    assert right.evidence is not None
    derived = [c for c in right.evidence.claims if c.status == "derived"]
    assert [s.text for s in derived[0].sources] == ["89.50", "240.00", "46.50"]
    wrong = ask(sandbox, question, ["expenses/2026-11.csv"], "We spent €386.00 on travel.")
    assert verdict(wrong) == ("unbacked", "unsupported")
    # quoting the rows without the total does not answer a question for a total
    quoted = ask(sandbox, question, ["expenses/2026-11.csv"], "Travel: 89.50, 240.00, 46.50.")
    assert verdict(quoted) == ("weak", "computed")


def test_a_count_is_recomputed_from_the_rows_that_hold_its_words(
    root: Path, sandbox: ProjectFiles
) -> None:
    people = ["name,department,role"]
    people += [f"员工{n},技术部,工程师" for n in range(6)] + ["王芳,技术部,负责人"]
    people += [f"员工{n},市场部,专员" for n in range(6, 10)]
    write(root, {"hr/people.csv": "\n".join(people) + "\n"})
    question = "hr/people.csv 里技术部的负责人是谁？技术部一共有几个人？"
    right = ask(sandbox, question, ["hr/people.csv"], "技术部的负责人是王芳，技术部一共有7个人。")
    assert verdict(right) == ("backed", None)
    wrong = ask(sandbox, question, ["hr/people.csv"], "技术部的负责人是王芳，技术部一共有5个人。")
    assert verdict(wrong)[0] != "backed"


@pytest.mark.parametrize("column", ["region", "area"])
def test_a_column_name_never_decides_through_a_word_list(
    root: Path, sandbox: ProjectFiles, column: str
) -> None:
    """The same answer to the same question gets the same verdict whatever the column is
    called: no list maps a question's word to a file's key."""
    rows = [f"{column},revenue", "North,12800", "South,9100", "East,15300"]
    write(root, {"sales.csv": "\n".join(rows) + "\n"})
    for question in (
        "Which region of sales.csv has the highest revenue, and how much?",
        "sales.csv 里哪个地区营收最高？是多少？",
    ):
        said = "East, with 15300."
        assert verdict(ask(sandbox, question, ["sales.csv"], said)) == ("backed", None)


def test_a_change_is_backed_only_for_the_files_its_record_names(
    root: Path, sandbox: ProjectFiles
) -> None:
    write(root, {"inbox/cat.txt": "a cat\n", "inbox/dog.txt": "a dog\n", "archive/.keep": ""})

    def yes(request: ApprovalRequest) -> bool:
        return True

    def move_and_say(said: str, again: bool = False) -> RunResult:
        model = ScriptedModel(
            [
                reply_calls(("move_file", {"source": "inbox/cat.txt", "target": "archive/"})),
                reply_text(said),
                *([reply_text(said)] if again else []),  # told once, it says it again
            ]
        )
        tools = create_project_tools(sandbox, yes)
        return run_agent(model, tools, CONFIG, "Move the cat's file from inbox/ to archive/.")

    both = move_and_say("I moved cat.txt and dog.txt to archive/.", again=True)
    assert (both.status, both.code) == ("failed", "change_not_made")
    (root / "archive" / "cat.txt").rename(root / "inbox" / "cat.txt")  # as it was
    one = move_and_say("I moved cat.txt to archive/.")
    assert one.status == "succeeded"
    assert verdict(one) == ("backed", None)


def test_a_percent_and_a_currency_are_read_as_the_source_writes_them(
    root: Path, sandbox: ProjectFiles
) -> None:
    write(root, {"kpi.json": '{"churn": 0.05, "conversion": 0.445, "revenue_yuan": 9600}'})
    question = "What do kpi.json's churn, conversion and revenue say?"
    cases = {
        "Churn 0.05%, conversion 44.5%, revenue 9600 yuan.": ("weak", "mislabeled"),
        "Churn 5%, conversion 44.5%, revenue $9600.": ("weak", "mislabeled"),
        "Churn 5%, conversion 44.5%, revenue 9600 yuan.": ("backed", None),
        "流失率 5%，转化率 44.5%，营收 9600 元。": ("backed", None),
    }
    for said, expected in cases.items():
        assert verdict(ask(sandbox, question, ["kpi.json"], said)) == expected, said


def test_a_figure_said_to_come_from_a_file_must_come_from_it(
    root: Path, sandbox: ProjectFiles
) -> None:
    write(root, {"billing/a.json": '{"total": 120}', "billing/b.json": '{"total": 340}'})
    question = "What are the totals of the invoices in billing/?"
    reads = ["billing/a.json", "billing/b.json"]
    swapped = "billing/a.json totals 340 and billing/b.json totals 120."
    assert verdict(ask(sandbox, question, reads, swapped)) == ("weak", "mislabeled")
    right = "billing/a.json totals 120 and billing/b.json totals 340."
    assert verdict(ask(sandbox, question, reads, right)) == ("backed", None)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "deploy.yaml",
            "services:\n  - name: api\n    limits:\n      memory: 2Gi\n"
            "  - name: worker\n    limits:\n      memory: 768Mi\n  - name: scheduler\n"
            "    image: reg/scheduler:4.5.6\n",
        ),
        (
            "deploy.json",
            '{"services": [{"name": "api", "memory": "2Gi"}, {"name": "worker", "memory": '
            '"768Mi"}, {"name": "scheduler", "image": "reg/scheduler:4.5.6"}]}',
        ),
        (
            "deploy.ini",
            "[api]\nmemory = 2Gi\n\n[worker]\nmemory = 768Mi\n\n[scheduler]\nimage = x\n",
        ),
        (
            "deploy.md",
            "# Services\n\n## api\n\nmemory: 2Gi\n\n## worker\n\nmemory: 768Mi\n\n"
            "## scheduler\n\nimage: x\n",
        ),
    ],
)
def test_a_figure_under_another_section_is_not_backed(
    root: Path, sandbox: ProjectFiles, name: str, text: str
) -> None:
    """The section a figure is under (a parent key, a list item's name, an INI section, a
    heading) is part of its record: a memory limit of api's is not the scheduler's."""
    write(root, {name: text})
    question = f"What memory limit does the scheduler have in {name}?"
    wrong = "The memory limit for the scheduler is set to 2Gi and 768Mi."
    assert verdict(ask(sandbox, question, [name], wrong)) == ("weak", "mislabeled")
    right = "The api has a memory limit of 2Gi, the worker 768Mi."
    assert verdict(ask(sandbox, question, [name], right)) == ("backed", None)


def test_files_that_disagree_leave_the_choice_to_the_question(
    root: Path, sandbox: ProjectFiles
) -> None:
    """Two versions of one config: whichever value an answer takes, it is not green unless
    the question says which file counts."""
    old = "database:\n  host: pg-389.ams1\n  pool_size: 8\n"
    new = "database:\n  host: pg-129.par1\n  pool_size: 37\n"
    write(root, {"config/db.yaml": old, "config/db.tundra.yaml": new})
    reads = ["config/db.yaml", "config/db.tundra.yaml"]
    for said in ("Host pg-389.ams1, pool size 8.", "Host pg-129.par1, pool size 37."):
        result = ask(sandbox, "Which database host and pool size does it use?", reads, said)
        assert verdict(result) == ("weak", "conflicting"), said
    named = "Which host and pool size does config/db.tundra.yaml set?"
    right = "Host pg-129.par1, pool size 37."
    assert verdict(ask(sandbox, named, reads, right)) == ("backed", None)


def test_an_answer_that_leaves_out_one_of_two_asked_things_is_not_green(
    root: Path, sandbox: ProjectFiles
) -> None:
    note = "# 会议纪要 2026-11-20\n\n- 决定：发布检查单截止日期改到 2026-12-14\n- 负责人：李雷\n"
    write(root, {"notes/会议纪要.md": note})
    for question in (
        "谁负责发布检查单？截止日期改到了哪天？",
        "Who owns the launch checklist in notes/会议纪要.md, and when is it due now?",
    ):
        half = ask(sandbox, question, ["notes/会议纪要.md"], "截止日期改到了 2026-12-14。")
        assert verdict(half) == ("weak", "left_out"), question
        whole = ask(
            sandbox, question, ["notes/会议纪要.md"], "负责人是李雷，截止日期是 2026-12-14。"
        )
        assert verdict(whole) == ("backed", None), question


def test_a_search_hit_is_read_in_its_file(root: Path, sandbox: ProjectFiles) -> None:
    """A figure found by a search is in the file its hit line names: when the question names
    another file (one that does not exist), the figure is outside what was asked."""
    write(root, {"docs/runbooks/backup.md": "# backup\n\nTarget RTO: 180 minutes\n"})
    model = ScriptedModel(
        [
            reply_calls(("search_files", {"query": "RTO"})),
            reply_calls(("read_file", {"path": "docs/runbooks/failover.md"})),
            reply_text("The RTO of the failover runbook is 180 minutes."),
        ]
    )
    question = "Tell me the RTO the failover runbook (docs/runbooks/failover.md) sets."
    result = run_agent(model, create_project_tools(sandbox), CONFIG, question)
    assert verdict(result) == ("weak", "outside_question")


def test_a_count_is_over_the_rows_every_telling_word_selects(
    root: Path, sandbox: ProjectFiles
) -> None:
    """ "Open stores in East" counts the rows holding both words; the East rows alone, or a
    difference of two years a row happens to hold, back nothing."""
    rows = ["store,city,area,opened,status"]
    rows += [f"S10{n},Graz,East,2015,open" for n in range(4)]
    rows += ["S120,Linz,East,2021,closed", "S121,Linz,East,2021,renovating"]
    rows += [f"S13{n},Wien,West,2016,open" for n in range(3)]
    write(root, {"stores/locations.csv": "\n".join(rows) + "\n"})
    question = "How many open stores are there in the East area (stores/locations.csv)?"
    right = ask(sandbox, question, ["stores/locations.csv"], "There are 4 open stores in East.")
    assert verdict(right) == ("backed", None)
    for wrong in ("There are 6 stores in East.", "There are 6 open stores in East."):
        result = ask(sandbox, question, ["stores/locations.csv"], wrong)
        assert verdict(result)[0] != "backed", wrong


def test_a_total_is_computed_unless_a_field_is_called_total(
    root: Path, sandbox: ProjectFiles
) -> None:
    rows = ["date,kind,amount_eur", "2026-09-02,travel,40.00", "2026-09-16,travel,82.50"]
    write(root, {"expenses/2026-09.csv": "\n".join(rows) + "\n", "inv.json": '{"total": 4821.5}'})
    question = "Tell me the total of September's travel expenses (expenses/2026-09.csv)."
    one_row = ask(sandbox, question, ["expenses/2026-09.csv"], "The total is 82.50.")
    assert verdict(one_row) == ("weak", "computed")
    summed = ask(sandbox, question, ["expenses/2026-09.csv"], "The total is 122.50.")
    assert verdict(summed) == ("backed", None)
    field = ask(sandbox, "What is the total of inv.json?", ["inv.json"], "It is 4821.5.")
    assert verdict(field) == ("backed", None)


def test_a_question_about_what_no_read_holds_is_not_green(
    root: Path, sandbox: ProjectFiles
) -> None:
    """The table stops before the month asked: every figure of the answer is in it, none is
    about July 2026."""
    rows = ["month,channel,new_accounts", "2026-05,ios,2182", "2026-06,ios,4020"]
    write(root, {"growth/accounts.csv": "\n".join(rows) + "\n"})
    question = "How many new iOS accounts came in July 2026 (growth/accounts.csv)?"
    listed = "New iOS accounts: 2182 and 4020."
    assert verdict(ask(sandbox, question, ["growth/accounts.csv"], listed)) == (
        "weak",
        "not_in_reads",
    )
    asked = "How many new iOS accounts came in June 2026 (growth/accounts.csv)?"
    right = ask(sandbox, asked, ["growth/accounts.csv"], "4020 new iOS accounts.")
    assert verdict(right) == ("backed", None)


def test_two_values_of_one_field_are_one_thing_stated(root: Path, sandbox: ProjectFiles) -> None:
    """Asked for an image version and a replica count, an answer with the version of two
    environments states one thing twice, and leaves out the count."""
    prod = "notifier:\n  image: reg/notifier:18.16.4\n  replicas: 3\n"
    staging = "notifier:\n  image: reg/notifier:18.16.7\n  replicas: 1\n"
    write(root, {"deploy/production.yaml": prod, "deploy/staging.yaml": staging})
    model = ScriptedModel(
        [
            reply_calls(("search_files", {"query": "notifier"})),
            reply_text("notifier runs `reg/notifier:18.16.4` and `reg/notifier:18.16.7`."),
        ]
    )
    question = "帮我查一下线上 notifier 服务的镜像版本号和副本数。"
    result = run_agent(model, create_project_tools(sandbox), CONFIG, question)
    assert verdict(result) == ("weak", "left_out")


def test_a_difference_of_two_stated_figures_is_recomputed(
    root: Path, sandbox: ProjectFiles
) -> None:
    """Asked by how much two files differ, an answer that states both figures and their
    difference is backed (the difference derived from them); without it, it is not."""
    write(root, {"monthly/may.json": '{"orders": 428}', "monthly/july.json": '{"orders": 667}'})
    question = "In monthly/, which month had more orders, and by how many?"
    reads = ["monthly/may.json", "monthly/july.json"]
    said = "July had 239 more orders: 667 against 428 in May."
    result = ask(sandbox, question, reads, said)
    assert verdict(result) == ("backed", None)
    assert result.evidence is not None
    derived = [c for c in result.evidence.claims if c.status == "derived"]
    assert [s.text for s in derived[0].sources] == ["667", "428"]
    quoted = ask(sandbox, question, reads, "July had more orders: 667 against 428 in May.")
    assert verdict(quoted) == ("weak", "computed")


def test_a_yes_or_no_field_names_a_record_and_is_never_left_out(
    root: Path, sandbox: ProjectFiles
) -> None:
    """``default = true`` says which mirror is asked about; its value is not a figure the
    answer must state. The other asked field still must be stated."""
    mirrors = (
        '[[mirror]]\nname = "tuna-edge"\ndefault = false\ninterval_minutes = 45\n\n'
        '[[mirror]]\nname = "kestrel-main"\ndefault = true\ninterval_minutes = 15\n'
    )
    write(root, {"sync/mirrors.toml": mirrors})
    question = "Which mirror is the default, and what is its sync interval in minutes?"
    right = ask(sandbox, question, ["sync/mirrors.toml"], "kestrel-main, every 15 minutes.")
    assert verdict(right) == ("backed", None)
    half = ask(sandbox, question, ["sync/mirrors.toml"], "It syncs every 15 minutes.")
    assert verdict(half) == ("weak", "left_out")


def test_a_question_word_is_answered_by_any_field_it_names(
    root: Path, sandbox: ProjectFiles
) -> None:
    """ "memory" names ``memory`` and ``memoryUtilizationTarget``; a value of either answers
    it. A word only the unstated field holds ("limit") is still left out."""
    values = (
        "api:\n  resources:\n    requests:\n      memory: 640Mi\n"
        "  scaling:\n    memoryUtilizationTarget: 70\n"
    )
    write(root, {"chart/values.yaml": values})
    question = "What memory does the api container request?"
    right = ask(sandbox, question, ["chart/values.yaml"], "It requests 640Mi of memory.")
    assert verdict(right) == ("backed", None)
    limits = "api:\n  memory_limit: 2Gi\n  memory_request: 640Mi\n"
    write(root, {"chart/api.yaml": limits})
    asked = "What is the api container's memory limit?"
    wrong = ask(sandbox, asked, ["chart/api.yaml"], "Its memory is 640Mi.")
    assert verdict(wrong) == ("weak", "left_out")


def test_a_file_the_question_names_by_its_name_must_be_read(
    root: Path, sandbox: ProjectFiles
) -> None:
    """ "staging" names ``svc/staging.toml`` once a listing shows it: an answer from the
    defaults beside it, the staging file never read, is not shown to be about staging."""
    write(root, {"svc/defaults.toml": "port = 8080\n", "svc/staging.toml": "port = 9090\n"})
    question = "In staging, which port does svc listen on?"

    def run(reads: list[str], answer: str) -> RunResult:
        calls = [reply_calls(("list_files", {"path": "svc"}))]
        calls += [reply_calls(("read_file", {"path": path})) for path in reads]
        model = ScriptedModel([*calls, reply_text(answer)])
        return run_agent(model, create_project_tools(sandbox), CONFIG, question)

    assert verdict(run(["svc/defaults.toml"], "It listens on 8080.")) == ("weak", "not_read")
    both = ["svc/defaults.toml", "svc/staging.toml"]
    assert verdict(run(both, "It listens on 9090.")) == ("backed", None)


def test_a_figure_from_a_record_the_question_does_not_select(
    root: Path, sandbox: ProjectFiles
) -> None:
    """The question selects a record by a yes-or-no field (``default``); a figure from a
    record where it is false is another record's."""
    mirrors = (
        "mirrors:\n"
        "  - name: north\n    default: false\n    bandwidth_mbps: 400\n"
        "  - name: south\n    default: true\n    bandwidth_mbps: 250\n"
    )
    write(root, {"net/mirrors.yaml": mirrors})
    question = "What bandwidth does the default mirror have?"
    wrong = ask(sandbox, question, ["net/mirrors.yaml"], "It has 400 Mbps of bandwidth.")
    assert verdict(wrong) == ("weak", "mislabeled")
    right = ask(sandbox, question, ["net/mirrors.yaml"], "It has 250 Mbps of bandwidth.")
    assert verdict(right) == ("backed", None)


def test_a_name_the_reads_give_a_field_is_a_claim_checked_in_its_record(
    root: Path, sandbox: ProjectFiles
) -> None:
    """A person's name is traced like a figure, and a number of the question in a heading
    (``Sprint 15``) says which record it must come from."""
    leads = "# Sprints\n\n## Sprint 14\n\n- Lead: Ana Ruiz\n\n## Sprint 15\n\n- Lead: Bo Chen\n"
    write(root, {"plan/sprints.md": leads})
    question = "Who leads sprint 15?"
    assert verdict(ask(sandbox, question, ["plan/sprints.md"], "Bo Chen.")) == ("backed", None)
    wrong = ask(sandbox, question, ["plan/sprints.md"], "Ana Ruiz.")
    assert verdict(wrong) == ("weak", "mislabeled")
    unnamed = ask(sandbox, question, ["plan/sprints.md"], "Carla Diaz.")
    assert verdict(unnamed) == ("weak", "no_claims")  # a name no read holds: no claim


def test_a_code_of_the_question_selects_the_record_a_figure_must_come_from(
    root: Path, sandbox: ProjectFiles
) -> None:
    """Asked about build 2031-b, a duration read from build 2030-a's line is another build's;
    asked for a percentage, a bare fraction is not one."""
    runs = (
        "build=2030-a status=failed minutes=14\n"
        "build=2031-b status=passed minutes=9\n"
        "build=2032-c status=passed minutes=11\n"
    )
    write(root, {"ci/runs.log": runs, "ci/rates.md": "- Pass rate (fraction of builds): 0.82\n"})
    question = "How many minutes did build 2031-b take?"
    wrong = ask(sandbox, question, ["ci/runs.log"], "Build 2031-b took 14 minutes.")
    assert verdict(wrong) == ("weak", "mislabeled")
    right = ask(sandbox, question, ["ci/runs.log"], "It took 9 minutes, build 2031-b.")
    assert verdict(right)[1] != "mislabeled"
    percent = "What is the pass rate, as a percentage?"
    bare = ask(sandbox, percent, ["ci/rates.md"], "The pass rate is 0.82.")
    assert verdict(bare) == ("weak", "left_out")
    assert verdict(ask(sandbox, percent, ["ci/rates.md"], "82%.")) == ("backed", None)


def test_two_files_the_question_names_by_a_word_leave_it_undecided(
    root: Path, sandbox: ProjectFiles
) -> None:
    """ "search" is the name of ``search.md`` and of ``search-2025.md``: which room counts,
    words cannot tell."""
    write(root, {"teams/search.md": "Room: B-204\n", "teams/search-2025.md": "Room: B-117\n"})
    question = "Which room does the search team meet in?"
    calls = [reply_calls(("list_files", {"path": "teams"}))]
    calls += [reply_calls(("read_file", {"path": p})) for p in ("teams/search.md",)]
    calls += [reply_calls(("read_file", {"path": "teams/search-2025.md"}))]
    model = ScriptedModel([*calls, reply_text("They meet in B-204.")])
    result = run_agent(model, create_project_tools(sandbox), CONFIG, question)
    assert verdict(result) == ("weak", "conflicting")


def test_a_bare_right_code_at_the_end_of_a_chain_of_clues_is_green(
    root: Path, sandbox: ProjectFiles
) -> None:
    """The issue's treasure hunt: the answer is only the code, read where the clues led."""
    clues = {
        "hunt/start.txt": "The next clue is in hunt/moss.txt.\n",
        "hunt/moss.txt": "Go on to hunt/vault.txt.\n",
        "hunt/vault.txt": "code: TealHarbor58\n",
    }
    write(root, clues)
    question = "Start at hunt/start.txt and follow the clues: what is the code?"
    result = ask(sandbox, question, list(clues), "TealHarbor58")
    assert verdict(result) == ("backed", None)


def test_a_table_header_names_fields_and_is_no_name_an_answer_states(
    root: Path, sandbox: ProjectFiles
) -> None:
    """A header cell (``Owner``) names a column; only the body's cells are values."""
    table = "| Owner | Team |\n|---|---|\n| Yuki Kowalski | Search |\n"
    write(root, {"docs/owners.md": table})
    question = "Who owns the search team in docs/owners.md?"
    headers = ask(sandbox, question, ["docs/owners.md"], "Owner and Team.")
    assert verdict(headers) == ("weak", "no_claims")
    right = ask(sandbox, question, ["docs/owners.md"], "Yuki Kowalski.")
    assert verdict(right) == ("backed", None)


def test_a_pasted_comment_or_search_hit_line_is_copied(root: Path, sandbox: ProjectFiles) -> None:
    """A line of a read without its comment marker, or a search hit with its ``path:line:``,
    pasted as the answer, says nothing of its own."""
    code = "# Uploads above LIMIT_MB are refused by the gateway.\nLIMIT_MB = 640\n"
    write(root, {"svc/limits.py": code})
    question = "What upload size does svc/limits.py allow?"
    comment = "Uploads above LIMIT_MB are refused by the gateway."
    assert verdict(ask(sandbox, question, ["svc/limits.py"], comment))[1] == "copied"
    model = ScriptedModel(
        [
            reply_calls(("search_files", {"query": "LIMIT_MB"})),
            reply_text("svc/limits.py:2: LIMIT_MB = 640"),
        ]
    )
    result = run_agent(model, create_project_tools(sandbox), CONFIG, question)
    assert verdict(result) == ("weak", "copied")


RECIPE = "[bread]\noven_celsius = 220\nproof_minutes = 45\nflour_grams = 500\n"


@pytest.mark.parametrize(
    "answer",
    [
        "The oven is at 220 °C; the baking time is not specified in the recipe.",
        "Proof it for 45 minutes. There is no mention of salt.",
        "The oven runs at 220 °C, but the salt could not be found in recipes/bread.toml.",
        "烤箱温度是 220 度，烘烤时间文件里没有写明。",
        "面粉 500 克，盐的用量找不到。",
    ],
)
def test_an_answer_that_says_the_files_lack_something_is_never_green(
    root: Path, sandbox: ProjectFiles, answer: str
) -> None:
    """A read shows what a file holds, never what no file holds: an answer that says
    something is not given is not backed, whatever else it states rightly."""
    write(root, {"recipes/bread.toml": RECIPE})
    question = "How hot is the oven and how long does the bread bake?"
    result = ask(sandbox, question, ["recipes/bread.toml"], answer)
    assert verdict(result) == ("weak", "says_absent")


def test_an_answer_that_gives_what_was_asked_stays_backed(
    root: Path, sandbox: ProjectFiles
) -> None:
    write(root, {"recipes/bread.toml": RECIPE})
    question = "How hot is the oven and how long does the dough proof?"
    result = ask(
        sandbox,
        question,
        ["recipes/bread.toml"],
        "The oven is at 220 °C and the dough proofs for 45 minutes.",
    )
    assert verdict(result) == ("backed", None)


GREENHOUSE = '{"day": "2026-03-14", "humidity": 71, "lamp_minutes": 540}\n'


def test_words_between_two_figures_may_label_either(root: Path, sandbox: ProjectFiles) -> None:
    """ "On <day> the humidity was 71": "humidity" sits between the day and 71 and names
    71's record; words cannot tell it speaks of the day, so it never contradicts the day.
    Words that name neither figure's record still do."""
    write(root, {"sensors/greenhouse.json": GREENHOUSE})
    question = "What was the humidity on 2026-03-14?"
    right = ask(
        sandbox, question, ["sensors/greenhouse.json"], "On 2026-03-14 the humidity was 71."
    )
    assert verdict(right) == ("backed", None)
    swapped = ask(
        sandbox, question, ["sensors/greenhouse.json"], "The humidity was 540 on 2026-03-14."
    )
    assert verdict(swapped) == ("weak", "mislabeled")


def test_a_quoted_piece_of_the_question_is_no_fault(root: Path, sandbox: ProjectFiles) -> None:
    """Repeating the question in quotes states nothing of the answer's own: the verdict
    rests on the rest; what the question quotes that no read holds still keeps it weak."""
    write(root, {"sensors/greenhouse.json": GREENHOUSE})
    question = "How many lamp minutes did the greenhouse log on 2026-03-14?"
    quoted = ask(
        sandbox,
        question,
        ["sensors/greenhouse.json"],
        'You asked "how many lamp minutes": the log says 540.',
    )
    assert verdict(quoted) == ("backed", None)
    unread = ask(
        sandbox,
        'How many minutes did the "night lamp" run?',
        ["sensors/greenhouse.json"],
        'The "night lamp" ran 540 minutes.',
    )
    assert verdict(unread) == ("weak", "not_in_reads")


def test_a_missing_file_the_tool_reported_is_backed_by_its_record(
    root: Path, sandbox: ProjectFiles
) -> None:
    """The one absence a tool shows is a path it answered ``not_found``: "X does not exist"
    for that path is backed by the tool's record, in any language; content said of the
    missing file is unsupported; an absence said of anything else stays weak."""
    write(root, {"sensors/greenhouse.json": GREENHOUSE})
    question = "What does sensors/cellar.json say about humidity?"
    for said in ("sensors/cellar.json does not exist.", "sensors/cellar.json 不存在。"):
        gone = ask(sandbox, question, ["sensors/cellar.json"], said)
        assert verdict(gone) == ("backed", None)
        assert gone.evidence is not None
        assert gone.evidence.claims[0].sources[0].text.startswith("error [not_found]")
    invented = ask(sandbox, question, ["sensors/cellar.json"], "sensors/cellar.json shows 64.")
    assert verdict(invented) == ("unbacked", "unsupported")
    other = ask(
        sandbox,
        question,
        ["sensors/cellar.json"],
        "sensors/cellar.json does not exist; the humidity is not recorded anywhere.",
    )
    assert verdict(other) == ("weak", "says_absent")


def test_a_path_the_change_record_shows_reports_the_change(
    root: Path, sandbox: ProjectFiles
) -> None:
    """After a move, the answer naming where the file now is reports what the tool did: the
    tool's record backs it, whatever verb the answer uses (or none)."""
    write(root, {"drafts/poem.md": "roses\n", "published/.keep": ""})

    def yes(request: ApprovalRequest) -> bool:
        return True

    model = ScriptedModel(
        [
            reply_calls(("move_file", {"source": "drafts/poem.md", "target": "published/"})),
            reply_text("Done: the poem is now published/poem.md."),
        ]
    )
    result = run_agent(
        model, create_project_tools(sandbox, yes), CONFIG, "Publish the poem from drafts/."
    )
    assert verdict(result) == ("backed", None)


def test_a_change_claimed_before_it_was_made_is_told_once(
    root: Path, sandbox: ProjectFiles
) -> None:
    """A model that writes that it moved a file instead of calling the tool is told that no
    tool made the change; when it then makes it, the run succeeds, backed by the record."""
    write(root, {"drafts/poem.md": "roses\n", "published/.keep": ""})

    def yes(request: ApprovalRequest) -> bool:
        return True

    model = ScriptedModel(
        [
            reply_text("I moved drafts/poem.md to published/."),
            reply_calls(("move_file", {"source": "drafts/poem.md", "target": "published/"})),
            reply_text("I moved drafts/poem.md to published/."),
        ]
    )
    tools = create_project_tools(sandbox, yes)
    result = run_agent(model, tools, CONFIG, "Publish the poem from drafts/.")
    model.assert_complete()
    # told, the next request must be a call (answering again is what was refused)
    assert [r.tool_choice for r in model.requests] == ["auto", "required", "auto"]
    assert (root / "published" / "poem.md").is_file()
    assert verdict(result) == ("backed", None)


def test_what_the_question_names_is_no_answer_from_outside_its_folder(
    root: Path, sandbox: ProjectFiles
) -> None:
    """ "Move Kiwi's card to adopted/": the name Kiwi, read in waiting/, repeats the question;
    it is no figure found outside the folder the question names."""
    write(root, {"waiting/kiwi.md": "Name: Kiwi Sunbeam\nAge: 4\n", "adopted/.keep": ""})

    def yes(request: ApprovalRequest) -> bool:
        return True

    model = ScriptedModel(
        [
            reply_calls(("read_file", {"path": "waiting/kiwi.md"})),
            reply_calls(("move_file", {"source": "waiting/kiwi.md", "target": "adopted/"})),
            reply_text("Moved Kiwi Sunbeam's card to adopted/."),
        ]
    )
    question = "Move Kiwi Sunbeam's card to adopted/."
    result = run_agent(model, create_project_tools(sandbox, yes), CONFIG, question)
    assert verdict(result) == ("backed", None)
