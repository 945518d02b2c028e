"""Path strings: validation, sensitivity policy, containment, and safe display.

Nothing here touches the filesystem. ``parse_path`` turns a model-supplied string into the
components that ``minipi.files.walk`` then opens one by one; it refuses before any access:

- not a string, empty, or a NUL byte                     -> ``invalid_path``
- absolute (``/x``), ``~``, a drive (``C:``), UNC/``\\x``   -> ``absolute_path``
- any other backslash                                    -> ``invalid_path`` (the separator is
  ``/``; a POSIX name may contain ``\\``, but a model writing one almost always means a Windows
  separator, so we refuse rather than guess)
- a ``..`` component, checked *before* normalising       -> ``parent_ref``
- over 4096 characters/bytes, or a component over 255 bytes -> ``path_too_long``

``.`` components and repeated or trailing slashes are dropped; ``"."`` alone is the root.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from minipi.errors import FileAccessError

__all__ = [
    "DEFAULT_SENSITIVE",
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_CHARS",
    "OWN_DIRS",
    "RelPath",
    "allows",
    "escape_line",
    "is_sensitive",
    "is_within",
    "parse_path",
    "quote_path",
    "show",
]

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255

DEFAULT_SENSITIVE: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_*",  # id_rsa, id_ed25519, ...
    ".ssh",
    ".git",
    ".gnupg",
    ".aws",
    ".netrc",
    ".pgpass",
)
"""Component globs (case-insensitive) that are refused unless allowed. A directory listed here
(``.git``, ``.ssh``) makes everything under it sensitive."""

OWN_DIRS: tuple[tuple[str, ...], ...] = ((".config", "minipi"), (".local", "share", "minipi"))
"""minipi's own config and data directories where they usually are (below a home directory),
as runs of components: they hold its config file, sessions, chat history and MCP logs, which
are never the project's. A path through one is sensitive as a ``DEFAULT_SENSITIVE`` folder is,
so a root of the home directory or ``/`` still keeps them out."""

_EXAMPLE = "like 'reports/daily.json', or '.' for the project root"
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True, slots=True)
class RelPath:
    """A validated root-relative path: its components, and whether the input ended in ``/``."""

    parts: tuple[str, ...]
    trailing_slash: bool = False

    @property
    def text(self) -> str:
        """The canonical form: components joined by ``/``; ``"."`` for the root."""
        return "/".join(self.parts) or "."

    def child(self, name: str) -> RelPath:
        return RelPath((*self.parts, name))

    @property
    def parent(self) -> RelPath:
        return RelPath(self.parts[:-1])


def parse_path(raw: object, *, arg: str = "path") -> RelPath:
    """Validate a root-relative path string; raise ``FileAccessError`` with a code if refused."""
    if not isinstance(raw, str):
        kind = "null" if raw is None else type(raw).__name__
        raise _refuse("invalid_path", f"{arg} must be a string {_EXAMPLE}; got {kind}", "")
    if not raw:
        raise _refuse("invalid_path", f"{arg} is empty; give a path {_EXAMPLE}", raw)
    _check_length(raw, arg)
    if "\x00" in raw:
        raise _refuse("invalid_path", f"{arg} contains a NUL byte; give a path {_EXAMPLE}", raw)
    _check_absolute(raw, arg)
    parts = raw.split("/")
    if ".." in parts:
        raise _refuse(
            "parent_ref",
            f"{arg} {show(raw)} contains '..'; paths stay inside the project root: "
            f"give a path {_EXAMPLE}",
            raw,
        )
    kept = tuple(p for p in parts if p not in ("", "."))
    for part in kept:
        _check_component(part, raw, arg)
    return RelPath(kept, trailing_slash=raw.endswith("/") and bool(kept))


def _check_length(raw: str, arg: str) -> None:
    if len(raw) > MAX_PATH_CHARS or len(raw.encode("utf-8", "surrogatepass")) > MAX_PATH_CHARS:
        raise _refuse(
            "path_too_long",
            f"{arg} is {len(raw)} characters; the limit is {MAX_PATH_CHARS}",
            raw,
        )


def _check_absolute(raw: str, arg: str) -> None:
    first = raw.split("/", 1)[0]
    if raw.startswith(("/", "\\")) or _DRIVE.match(raw) or first == "~":
        raise _refuse(
            "absolute_path",
            f"{arg} {show(raw)} is absolute; it must be relative to the project root, {_EXAMPLE}",
            raw,
        )
    if "\\" in raw:
        raise _refuse(
            "invalid_path",
            f"{arg} {show(raw)} contains a backslash; separate directories with '/', {_EXAMPLE}",
            raw,
        )


def _check_component(part: str, raw: str, arg: str) -> None:
    try:
        size = len(os.fsencode(part))
    except UnicodeEncodeError:
        raise _refuse(
            "invalid_path", f"{arg} {show(raw)} is not a valid file name (bad Unicode)", raw
        ) from None
    if size > MAX_COMPONENT_BYTES:
        raise _refuse(
            "path_too_long",
            f"a component of {arg} is {size} bytes; names are at most {MAX_COMPONENT_BYTES} bytes",
            raw,
        )


def _refuse(code: str, message: str, raw: str) -> FileAccessError:
    return FileAccessError(message, code=code, path=raw)


def is_sensitive(parts: Sequence[str], allow: Sequence[str] = ()) -> bool:
    """True when a component matches ``DEFAULT_SENSITIVE`` or ends a run of ``OWN_DIRS``, and
    no ``allow`` glob excuses it.

    Matching is case-insensitive. An allow glob without ``/`` excuses a component by name
    (``.env.example``); one with ``/`` must match the path up to that component
    (``config/dev.key``). Allowing a directory (``.git``) does not allow a sensitive file in it.
    """
    lowered = [part.lower() for part in parts]
    for index, name in enumerate(lowered):
        if not (
            any(fnmatch.fnmatchcase(name, glob) for glob in DEFAULT_SENSITIVE)
            or _ends_own(lowered, index + 1)
        ):
            continue
        prefix = "/".join(parts[: index + 1]).lower()
        if not any(_allows(glob.lower(), name, prefix) for glob in allow):
            return True
    return False


def _ends_own(parts: Sequence[str], end: int) -> bool:
    """Whether the (lower-cased) ``parts[:end]`` end with one of ``OWN_DIRS``."""
    return any(tuple(parts[end - len(own) : end]) == own for own in OWN_DIRS if len(own) <= end)


def allows(parts: Sequence[str], allow: Sequence[str]) -> bool:
    """Whether an ``allow`` glob names the path ``parts`` or a folder above it (the rule of
    ``is_sensitive``: a glob without ``/`` by a component's name, one with ``/`` by the path)."""
    for index, part in enumerate(parts):
        prefix = "/".join(parts[: index + 1]).lower()
        if any(_allows(glob.lower(), part.lower(), prefix) for glob in allow):
            return True
    return False


def _allows(glob: str, name: str, prefix: str) -> bool:
    target = prefix if "/" in glob else name
    return fnmatch.fnmatchcase(target, glob.strip("/"))


def is_within(root: str | os.PathLike[str], candidate: str | os.PathLike[str]) -> bool:
    """True when ``candidate`` is ``root`` or below it, comparing path *components*.

    Lexical only (``os.path.abspath``; symlinks are not resolved): ``/tmp/proj-secrets`` is not
    within ``/tmp/proj``. ProjectFiles does not rely on this for access (the fd walk does the
    confinement); it is for callers that must keep their own files outside a root.
    """
    root_parts = _components(root)
    candidate_parts = _components(candidate)
    return candidate_parts[: len(root_parts)] == root_parts


def _components(path: str | os.PathLike[str]) -> list[str]:
    absolute = os.path.abspath(os.fspath(path))
    return [p for p in absolute.split(os.sep) if p]


_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def quote_path(path: str, *, colon: bool = False) -> str:
    """``path`` as shown in tool output: as-is when plain, else as a JSON string literal.

    Quoted when it holds a control, format (bidi, zero-width), line-separator or surrogate
    character, a ``"`` or ``\\``, leading/trailing whitespace, ``" -> "``, starts with ``[``
    or ``(`` or ends with ``)`` (so it cannot imitate a notice or a type suffix), or, with
    ``colon``, a ``:`` (search lines are ``path:line: text``). Unsafe characters are written
    as ``\\uXXXX``, so the literal is one printable line that ``json.loads`` turns back into
    the exact name.
    """
    if not _needs_quotes(path, colon=colon):
        return path
    return '"' + "".join(_escape(c) for c in path) + '"'


def _needs_quotes(path: str, *, colon: bool) -> bool:
    if path != path.strip() or path.startswith(("[", "(")) or path.endswith(")"):
        return True
    if " -> " in path or '"' in path or "\\" in path or (colon and ":" in path):
        return True
    return any(_unsafe(c) for c in path)


def _escape(char: str) -> str:
    if ord(char) < 0x20 or (ord(char) > 0xFFFF and _unsafe(char)):
        return json.dumps(char)[1:-1]  # JSON's own escapes: \n, \u001b, a surrogate pair
    if _unsafe(char):
        return f"\\u{ord(char):04x}"
    return json.dumps(char, ensure_ascii=False)[1:-1]


def escape_line(text: str) -> str:
    """``text`` with control, format and line-separator characters (not tab) as ``\\uXXXX``,
    so that it stays one line and cannot steer a terminal."""
    return "".join(_escape(c) if c != "\t" and _unsafe(c) else c for c in text)


def show(raw: str, *, limit: int = 80) -> str:
    """A path for an error message: quoted, escaped, and shortened if very long."""
    shown = raw if len(raw) <= limit else raw[:limit] + "…"
    quoted = quote_path(shown)
    return quoted if quoted.startswith('"') else f"'{quoted}'"
