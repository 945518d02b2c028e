"""The engine's child process: llama-cpp-python's server, with a faster greedy grammar sampler.

    python -m minipi.local.engine_child --model M.gguf --port 8123 ...   (llama_cpp.server's flags)

llama-cpp-python applies a request's grammar to every token of the vocabulary at every step
(its sampler chain: penalties, grammar, then greedy at temperature 0). Its cost grows with the
vocabulary, not the model, so for a small model with a large vocabulary it costs more than the
model itself (the measurements: bench/TUNING.md). llama.cpp's own server does what is done here
(``common_sampler_sample``): at temperature 0 the next token is the one with the highest logit
that the grammar allows, so the grammar is asked about the best few candidates first, and about
the whole vocabulary only when it refuses them all. The result is the same token, by
construction, at about the cost of a request without a grammar.

Only requests with a grammar, at temperature 0, without logits processors take this path;
anything else is llama-cpp-python's own. If llama-cpp-python's internals are not what this
was written against (``_init_sampler``, the ``llama_sampler_i`` interface), the patch is not
made and the server runs as shipped (a line on stderr, in the engine's log, says so).
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

__all__ = ["GreedyGrammar", "install", "main"]

TOP = 32
"""Candidates the grammar is asked about first: the best ``TOP`` logits."""


class GreedyGrammar:
    """A llama.cpp sampler (``sampler``, for a sampler chain): of the candidates, the one with
    the highest logit that ``grammar`` allows; the grammar follows each accepted token."""

    def __init__(self, llama_cpp: Any, model: Any, grammar: Any) -> None:
        import numpy as np

        self._lib = llama_cpp
        self._np = np
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        self._top = (llama_cpp.llama_token_data * TOP)()
        self._few = llama_cpp.llama_token_data_array(self._top, TOP, -1, False)
        self._dtype = np.dtype(
            [("id", np.intc), ("logit", np.single), ("p", np.single)], align=True
        )
        face = llama_cpp.llama_sampler_i()
        face.apply = llama_cpp.llama_sampler_i_apply(lambda _, cur: self._apply(cur))
        face.accept = llama_cpp.llama_sampler_i_accept(
            lambda _, token: llama_cpp.llama_sampler_accept(self.grammar, token)
        )
        face.reset = llama_cpp.llama_sampler_i_reset(
            lambda _: llama_cpp.llama_sampler_reset(self.grammar)
        )
        face.name = llama_cpp.llama_sampler_i_name(0)
        face.clone = llama_cpp.llama_sampler_i_clone(0)
        face.free = llama_cpp.llama_sampler_i_free(0)  # the chain leaves custom samplers alone
        self._face = face  # the callbacks must outlive every call
        self.sampler = llama_cpp.llama_sampler()
        self.sampler.iface = ctypes.pointer(face)
        self.sampler.ctx = None

    def _apply(self, cur: Any) -> None:
        candidates = cur.contents
        count = int(candidates.size)
        address = ctypes.addressof(candidates.data.contents)
        buffer = (self._lib.llama_token_data * count).from_address(address)
        logits = self._np.frombuffer(buffer, dtype=self._dtype, count=count)["logit"]
        k = min(TOP, count)
        best = self._np.argpartition(-logits, k - 1)[:k]
        best = best[self._np.argsort(-logits[best], kind="stable")]
        for slot, index in enumerate(best.tolist()):
            self._top[slot].id = buffer[index].id
            self._top[slot].logit = buffer[index].logit
        self._few.size, self._few.selected, self._few.sorted = k, -1, False
        self._lib.llama_sampler_apply(self.grammar, ctypes.byref(self._few))
        for slot in range(k):
            if self._top[slot].logit != float("-inf"):
                candidates.selected = int(best[slot])
                return
        self._lib.llama_sampler_apply(self.grammar, cur)  # none of the best: ask about all
        candidates.selected = int(self._np.argmax(logits))

    def __del__(self) -> None:
        if getattr(self, "grammar", None) is not None:
            self._lib.llama_sampler_free(self.grammar)
            self.grammar = None


def install() -> bool:
    """Make llama-cpp-python's greedy sampling under a grammar ``GreedyGrammar``'s; False
    (and nothing changed) when its internals are not the expected ones."""
    try:
        import llama_cpp
        from llama_cpp import llama as module

        stock = module.Llama._init_sampler
        needed = ("llama_sampler_i", "llama_sampler_init_grammar", "llama_sampler_chain_remove")
        if not all(hasattr(llama_cpp, name) for name in needed):
            return False
    except (ImportError, AttributeError):
        return False

    def init_sampler(self: Any, *args: Any, **kwargs: Any) -> Any:
        grammar, temp = kwargs.get("grammar"), kwargs.get("temp", 0.8)
        if grammar is None or temp != 0.0 or kwargs.get("logits_processor") is not None or args:
            return stock(self, *args, **kwargs)
        chain = stock(self, **{**kwargs, "grammar": None, "temp": -1.0})  # penalties, dist
        last = llama_cpp.llama_sampler_chain_n(chain.sampler) - 1
        llama_cpp.llama_sampler_free(llama_cpp.llama_sampler_chain_remove(chain.sampler, last))
        greedy = GreedyGrammar(llama_cpp, self._model, grammar)
        llama_cpp.llama_sampler_chain_add(chain.sampler, ctypes.pointer(greedy.sampler))
        chain.custom_samplers.append((last, greedy))  # removed from the chain before its free
        return chain

    module.Llama._init_sampler = init_sampler  # type: ignore[method-assign]
    return True


def main() -> None:
    if not install():
        print("minipi: llama-cpp-python's stock grammar sampler is used", file=sys.stderr)
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
