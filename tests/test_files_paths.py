"""Path strings: validation before any access (A1, A2, A12), containment (A3), display, policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minipi.files.paths import (
    RelPath,
    escape_line,
    is_sensitive,
    is_within,
    parse_path,
    quote_path,
    show,
)
from support.files import refused

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("", "invalid_path"),
        ("a\x00b", "invalid_path"),
        (123, "invalid_path"),
        (None, "invalid_path"),
        (["a.txt"], "invalid_path"),
        (b"a.txt", "invalid_path"),
        ("/", "absolute_path"),
        ("/etc/passwd", "absolute_path"),
        ("//server/share/x", "absolute_path"),
        ("\\\\server\\share\\x", "absolute_path"),
        ("\\windows\\x", "absolute_path"),
        ("C:\\Windows\\x", "absolute_path"),
        ("c:/x", "absolute_path"),
        ("~/x", "absolute_path"),
        ("reports\\daily.json", "invalid_path"),
        ("..", "parent_ref"),
        ("../outside/secret.txt", "parent_ref"),
        ("a/../../outside/secret.txt", "parent_ref"),
        ("a/./../..", "parent_ref"),
        ("a/..", "parent_ref"),
        ("./x/../a.txt", "parent_ref"),
        ("a" * 5000, "path_too_long"),
        ("x/" * 2100, "path_too_long"),
        ("d/" + "n" * 300, "path_too_long"),
        ("猫" * 90, "path_too_long"),  # 270 bytes in UTF-8
        ("bad\ud800name", "invalid_path"),
    ],
)
def test_degenerate_and_escaping_paths_are_refused_with_a_code(raw: object, code: str) -> None:
    error = refused(code, lambda: parse_path(raw))
    assert error.message  # an explanation for the model, not a traceback
    assert "Traceback" not in error.message


def test_refusals_say_what_to_do_next() -> None:
    error = refused("absolute_path", lambda: parse_path("/etc/passwd"))
    assert "relative to the project root" in error.message
    assert "reports/daily.json" in error.message
    error = refused("invalid_path", lambda: parse_path("a\\b", arg="source"))
    assert "'/'" in error.message
    assert error.message.startswith("source")


def test_parent_references_are_rejected_before_normalising() -> None:
    # "a/.." normalises to "." (harmless), but any ".." is refused as written
    refused("parent_ref", lambda: parse_path("reports/../reports/daily.json"))


@pytest.mark.parametrize(
    ("raw", "parts", "text"),
    [
        (".", (), "."),
        ("./", (), "."),
        ("reports", ("reports",), "reports"),
        ("./reports//daily.json", ("reports", "daily.json"), "reports/daily.json"),
        ("archive/", ("archive",), "archive"),
        ("a/./b/.", ("a", "b"), "a/b"),
        ("...", ("...",), "..."),
        ("..a", ("..a",), "..a"),
        ("．．", ("．．",), "．．"),  # fullwidth dots are a plain name, not a parent reference
        ("\u2024\u2024", ("\u2024\u2024",), "\u2024\u2024"),
        (" a ", (" a ",), " a "),
        ("~backup", ("~backup",), "~backup"),
        ("n" * 255, ("n" * 255,), "n" * 255),
    ],
)
def test_accepted_paths_are_canonical(raw: str, parts: tuple[str, ...], text: str) -> None:
    rel = parse_path(raw)
    assert rel.parts == parts
    assert rel.text == text


def test_trailing_slash_is_remembered() -> None:
    assert parse_path("archive/").trailing_slash
    assert not parse_path("archive").trailing_slash
    assert not parse_path("./").trailing_slash
    assert RelPath(("a", "b")).parent == RelPath(("a",))


def test_containment_compares_components_not_string_prefixes(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    assert is_within(root, root)
    assert is_within(root, root / "a" / "b.txt")
    assert is_within(str(root) + "/", str(root) + "/a")
    assert not is_within(root, tmp_path / "proj-secrets" / "key")
    assert not is_within(root, tmp_path / "proj-secrets")
    assert not is_within(root, tmp_path)
    assert not is_within(root, str(root) + "/../proj-secrets/key")
    assert is_within("/", "/etc")


@pytest.mark.parametrize(
    "relpath",
    [
        ".env",
        ".ENV",
        ".env.local",
        "config/.env.production",
        "certs/server.pem",
        "tls/SERVER.KEY",
        "id_rsa",
        "keys/id_ed25519.pub",
        "id_ecdsa",
        ".ssh/config",
        ".ssh",
        ".git/config",
        ".git",
        "vendor/lib/.GIT/HEAD",
        "home/.aws/credentials",
        ".netrc",
    ],
)
def test_sensitive_paths(relpath: str) -> None:
    assert is_sensitive(relpath.split("/"))


@pytest.mark.parametrize(
    "relpath", ["reports/daily.json", "environment.txt", "keyboard.md", "git/notes", "pem.txt"]
)
def test_ordinary_paths_are_not_sensitive(relpath: str) -> None:
    assert not is_sensitive(relpath.split("/"))


def test_allow_globs_excuse_only_what_they_name() -> None:
    assert not is_sensitive([".env.example"], allow=[".env.example"])
    assert not is_sensitive(["sub", ".env.example"], allow=[".env.example"])
    assert not is_sensitive(["config", "dev.key"], allow=["config/dev.key"])
    assert is_sensitive(["other", "dev.key"], allow=["config/dev.key"])
    assert not is_sensitive([".git", "config"], allow=[".git"])
    assert is_sensitive([".git", "deploy.pem"], allow=[".git"])  # a secret inside stays refused
    assert not is_sensitive(["CERTS", "A.PEM"], allow=["*.pem"])


@pytest.mark.parametrize(
    "name",
    [
        "line\nbreak.txt",
        "esc\x1b[31mred.txt",
        "bidi\u202etxt.exe",
        "iso\u2066late",
        "zero\u200bwidth",
        "bom\ufeff",
        "sep\u2028line",
        " leading",
        "trailing ",
        'quote".txt',
        "back\\slash",
        "a -> b",
        "[truncated: 0 more entries; list a subdirectory]",
        "(empty directory)",
        "pipe (fifo)",
        "bad\udce9byte",
        "tag\U000e0041",
    ],
)
def test_dangerous_names_are_shown_as_one_json_line(name: str) -> None:
    shown = quote_path(name)
    assert shown.startswith('"')
    assert shown.endswith('"')
    assert shown.isprintable()
    assert not any(c in shown for c in "\u202e\u2066\u200b\ufeff\u2028")
    assert json.loads(shown) == name


@pytest.mark.parametrize(
    "name", ["reports/daily-2026-09-06.json", "inbox/猫咪小花.txt", "a b/c d.txt", "x:1.txt"]
)
def test_plain_names_are_shown_as_is(name: str) -> None:
    assert quote_path(name) == name


def test_colons_are_quoted_for_search_lines() -> None:
    assert quote_path("a.txt:3: fake", colon=True) == '"a.txt:3: fake"'


def test_escape_line_keeps_one_printable_line() -> None:
    assert escape_line("a\tb\x1b[2Jc\u202ed\re") == "a\tb\\u001b[2Jc\\u202ed\\re"


def test_quoting_keeps_ordinary_unicode() -> None:
    assert quote_path(" 猫🐱") == '" 猫🐱"'


def test_show_shortens_and_quotes() -> None:
    assert show("a.txt") == "'a.txt'"
    assert show("x" * 500).endswith("…'")
    assert show("a\nb") == '"a\\nb"'
