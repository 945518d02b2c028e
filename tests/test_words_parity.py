"""One message table per set of messages, each key in both languages with the same facts
(issue 37, item 6): a Chinese run names the URL, the path, the flag and the hint that an
English run names, because both texts of a key take the same placeholders, filled from the
same values, and say the same flags, commands and names."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from string import Formatter

import pytest

from support.cli import EXAMPLES, QUESTION, minipi
from support.fake import Call, FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"
SRC = Path(__file__).resolve().parents[1] / "src" / "minipi"
HAN = re.compile(r"[\u4e00-\u9fff]")

TABLES = {
    ("minipi.cli.words", "_TEXT"),
    ("minipi.cli.export", "_LABELS"),
    ("minipi.said", "_TEXT"),
}
"""Every table of (Chinese, English) texts: a new one is found by ``test_every_table_is_known``."""

_FACTS = re.compile(
    r"https?://[!-~]*"  # a URL or a scheme (ASCII: a Chinese text goes on without a space)
    r"|`[^`]+`"  # a command
    r"|(?<![\w-])--?[A-Za-z][\w-]*"  # a flag
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"  # an environment variable
    r"|\b[a-z]+_[a-z_]+\b"  # a setting or key
    r"|/v1\b|\[y/N\]|\b\d+\b"
)


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(text) if name is not None}


def facts(text: str) -> list[str]:
    """The flags, commands, URLs and names a text says (its placeholders left out)."""
    bare = re.sub(r"\{[^{}]*\}", " ", text)
    return sorted(match.strip(".,;:)（）") for match in _FACTS.findall(bare))


def table(module: str, name: str) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = getattr(importlib.import_module(module), name)
    return found


def pairs(node: ast.AST) -> list[ast.Tuple]:
    """The (Chinese, English) string pairs under ``node``."""
    found = []
    for pair in (n for n in ast.walk(node) if isinstance(n, ast.Tuple) and len(n.elts) == 2):
        texts = [e.value for e in pair.elts if isinstance(e, ast.Constant) and type(e.value) is str]
        if len(texts) == 2 and HAN.search(texts[0]) and not HAN.search(texts[1]):
            found.append(pair)
    return found


def test_every_table_is_known() -> None:
    """Every (Chinese, English) pair of the source is in one of ``TABLES``: none is kept
    apart (its placeholders would go unchecked), and Chinese texts whose English comes from
    elsewhere are only the end codes' meanings (``minipi.cli.words._END_ZH``)."""
    stray, chinese_only = [], []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            name = target.id if isinstance(target, ast.Name) else ""
            if (module, name) in TABLES:
                continue
            stray += [f"{module}:{p.lineno}" for p in pairs(node)]
            value = getattr(node, "value", None)
            if isinstance(value, ast.Dict) and any(
                isinstance(v, ast.Constant) and HAN.search(str(v.value)) for v in value.values
            ):
                chinese_only.append(f"{module}.{name}")
    assert stray == []
    assert chinese_only == ["minipi.cli.words._END_ZH"]


@pytest.mark.parametrize(("module", "name"), sorted(TABLES))
def test_each_text_has_the_placeholders_and_facts_of_its_english(module: str, name: str) -> None:
    differ = {
        key: (zh, en)
        for key, (zh, en) in table(module, name).items()
        if placeholders(zh) != placeholders(en)
        or (facts(zh) != facts(en) and en != key)  # a status says its own name in English
    }
    assert differ == {}


def test_an_end_in_chinese_keeps_the_detail_it_was_not_worded_with() -> None:
    """An end whose detail comes from elsewhere (a guided reply, a server's words, a saved
    session) is glossed in Chinese and still says the detail, whatever its code."""
    from minipi.agent.ends import END_CODES
    from minipi.agent.result import RunResult
    from minipi.ai.types import Usage
    from minipi.cli.words import Words

    detail = "see http://127.0.0.1:9/v1 and --base-url"
    lost = []
    for code, (status, _) in END_CODES.items():
        if code != "cancelled":
            result = RunResult(status, "", (), Usage(), 1, 0, code=code, error=detail)
            if detail not in Words(True).summary(result):
                lost.append(code)
    assert lost == []


def test_a_detail_changed_after_it_was_worded_is_shown_as_it_is() -> None:
    """The Chinese wording never says more than the English detail: one with a secret taken
    out after it was worded is shown as it is, not worded again from the facts."""
    from minipi.agent.result import RunResult
    from minipi.agent.types import End
    from minipi.ai.types import Usage
    from minipi.cli.words import Words

    worded = End.saying("repeated_tool_error", count=3, content="key sk-secret refused")
    hidden = worded.detail.replace("sk-secret", "***")
    result = RunResult("failed", "", (), Usage(), 3, 3, worded.code, hidden, said=worded.said)
    line = Words(True).summary(result).splitlines()[-1]
    assert line == f"repeated_tool_error：同一个工具错误接连出现（{hidden}）"
    result = RunResult(
        "failed", "", (), Usage(), 3, 3, worded.code, worded.detail, said=worded.said
    )
    line = Words(True).summary(result).splitlines()[-1]
    assert line == "repeated_tool_error：同一个工具错误接连出现 3 次：key sk-secret refused"


def end_line(stderr: str, code: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith(code))


def test_a_chinese_run_names_the_unreachable_endpoint_and_the_hint() -> None:
    """The reported case: the same facts as the English run (URL, `minipi serve`,
    --base-url, QWEN_BASE_URL, the attempts), said in Chinese."""
    from minipi.local.ports import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    endpoint = ["-p", str(SAMPLE), "--base-url", url, "-m", "m"]
    chinese = minipi("ask", QUESTION, *endpoint)
    english = minipi("ask", "How many orders are in the daily report?", *endpoint)
    assert (chinese.returncode, english.returncode) == (1, 1)
    said = end_line(chinese.stderr, "endpoint_unreachable")
    assert url in said
    assert (
        "服务端在运行吗？（用 `minipi serve` 启动一个，或设置 --base-url / QWEN_BASE_URL）" in said
    )
    assert facts(said) == facts(end_line(english.stderr, "endpoint_unreachable"))


def test_a_chinese_budget_end_says_how_many_requests_it_made(fake_server: FakeServer) -> None:
    """An end the loop words (a budget) says its numbers in Chinese too."""
    fake_server.add(*[Turn(calls=[Call("list_files", {"path": "."})])] * 2)
    endpoint = ["-p", str(SAMPLE), "--base-url", fake_server.base_url, "-m", "fake-model"]
    chinese = minipi("ask", QUESTION, *endpoint, "--max-turns", "1")
    fake_server.add(Turn(calls=[Call("list_files", {"path": "."})]))
    english = minipi("ask", "How many orders?", *endpoint, "--max-turns", "1")
    said = end_line(chinese.stderr, "max_turns")
    assert said == "max_turns：1 次模型请求后仍未作答（可用 --max-turns 调高）"
    assert facts(said) == facts(end_line(english.stderr, "max_turns"))
