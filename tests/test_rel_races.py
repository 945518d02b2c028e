"""Races (RELIABILITY A10, A11, C2): another process changes the tree while a tool works.

A thread toggles a name between a regular file (or directory) and a symlink to ``outside/``
as fast as it can while the sandbox reads, lists, searches or moves through that name. Timing
through a subprocess is impractical, so these drive ``ProjectFiles`` directly. Each race runs a
bounded number of iterations (and at most about a second) with a fixed seed; the GIL switch
interval is shortened so the threads really interleave. Zero escapes, zero clobbers, and each
race must have been hit both ways (else it proved nothing).
"""

from __future__ import annotations

import os
import random
import stat
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from minipi.agent.tools import ApprovalRequest
from minipi.errors import FileAccessError
from minipi.files import ProjectFiles, move
from minipi.files.paths import parse_path
from minipi.files.results import Moved
from minipi.files.walk import Root
from support.files import SECRET, Approvals, Project, make_project

pytestmark = pytest.mark.reliability

SEED = 20_260_906
ITERATIONS = 5000  # per race, at most; a race also stops after SECONDS
SECONDS = 1.0
PATIENCE = 20.0  # more seconds, only while an outcome that must be seen was not
INSIDE = "INSIDE\n"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    (project.outside / "inner.txt").write_text(SECRET + "\n", encoding="utf-8")
    return project


@contextmanager
def fast_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@contextmanager
def toggling(flip: Callable[[random.Random], None]) -> Iterator[None]:
    """Run ``flip`` in a loop in a thread (seeded) until the block ends."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        rng = random.Random(SEED)
        try:
            while not stop.is_set():
                flip(rng)
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    thread = threading.Thread(target=loop, name="toggler", daemon=True)
    with fast_switching():
        thread.start()
        time.sleep(0.01)  # let it get going
        try:
            yield
        finally:
            stop.set()
            thread.join(5)
    assert not errors, errors


def race(attempt: Callable[[int], str], must_see: set[str]) -> Counter[str]:
    """Call ``attempt(n)`` (it returns an outcome name) ``ITERATIONS`` times or for
    ``SECONDS``, and check every outcome in ``must_see`` happened. No early stop: the rare
    interleavings (a swap between lstat and open) need the whole budget to show up. On a
    loaded machine (a toggler that rarely gets the GIL: once 4967 "symlink", 33 other, no
    "moved" in a full CI run) it goes on, up to ``PATIENCE`` more seconds, until every
    outcome of ``must_see`` was seen."""
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + SECONDS
    n = 0
    while True:
        outcomes[attempt(n)] += 1
        n += 1
        now = time.monotonic()
        if n >= ITERATIONS or now > deadline:
            if all(outcomes[o] for o in must_see) or now > deadline + PATIENCE:
                break
            time.sleep(0)  # let the toggler run
    assert all(outcomes[o] for o in must_see), f"the race was not hit both ways: {outcomes}"
    return outcomes


def file_flipper(root: Path, name: str, target: str) -> Callable[[random.Random], None]:
    """Atomically replace ``root/name`` by a new regular file or a symlink to ``target``."""
    temp = root / f".{name}.next"

    def flip(rng: random.Random) -> None:
        temp.unlink(missing_ok=True)
        if rng.random() < 0.5:
            temp.write_text(INSIDE, encoding="utf-8")  # a new inode each time
        else:
            os.symlink(target, temp)
        os.replace(temp, root / name)

    return flip


def dir_flipper(root: Path, name: str, target: str) -> Callable[[random.Random], None]:
    """Swap ``root/name`` between a real directory and a symlink to ``target``."""
    real, link = root / f".{name}.real", root / f".{name}.link"
    real.mkdir()
    (real / "inner.txt").write_text(INSIDE, encoding="utf-8")
    os.symlink(target, link)
    here = root / name

    def flip(rng: random.Random) -> None:
        first, second = (real, link) if rng.random() < 0.5 else (link, real)
        os.rename(first, here)
        time.sleep(0)
        os.rename(here, first)
        os.rename(second, here)
        time.sleep(0)
        os.rename(here, second)

    return flip


def test_a10_a_file_toggled_to_a_symlink_is_never_read_through(project: Project) -> None:
    flip = file_flipper(project.root, "toggled.txt", "../outside/secret.txt")
    flip(random.Random(0))

    def attempt(n: int) -> str:
        try:
            text = files.read_text("toggled.txt")
        except FileAccessError as error:
            return error.code
        assert text.text == INSIDE, "read through a symlink to outside"
        return "read"

    with ProjectFiles(project.root) as files, toggling(flip):
        outcomes = race(attempt, {"read", "symlink"})
    assert set(outcomes) <= {"read", "symlink", "not_found"}, outcomes


def test_a11_a_directory_swapped_for_a_symlink_is_never_entered(project: Project) -> None:
    flip = dir_flipper(project.root, "d", "../outside")

    def attempt(n: int) -> str:
        operation = ("read", "list", "search", "search_d")[n % 4]
        try:
            if operation == "read":
                shown = files.read_text("d/inner.txt").text
            elif operation == "list":
                shown = "\n".join(e.path for e in files.list_dir("d").entries)
                assert "secret.txt" not in shown, "listed outside/"
            else:
                found = files.search("SECRET", "d" if operation == "search_d" else ".")
                shown = "\n".join(m.text for m in found.matches)
        except FileAccessError as error:
            return f"{operation}:{error.code}"
        assert SECRET not in shown, f"{operation} went through the symlink"
        return f"{operation}:ok"

    with ProjectFiles(project.root) as files, toggling(flip):
        outcomes = race(attempt, {"read:ok", "read:symlink", "list:ok", "list:symlink"})
    codes = {key.split(":")[1] for key in outcomes}
    # not_a_directory: lstat saw the directory, open(O_DIRECTORY | O_NOFOLLOW) the link
    assert codes <= {"ok", "symlink", "not_found", "not_a_directory"}, outcomes


def test_c2_a_source_toggled_to_a_symlink_never_moves_the_outside_file(project: Project) -> None:
    secret = project.outside / "secret.txt"
    flip = file_flipper(project.root, "a.txt", "../outside/secret.txt")
    flip(random.Random(0))

    def attempt(n: int) -> str:
        try:
            moved = files.move("a.txt", f"archive/a{n}.txt", Approvals(True))
        except FileAccessError as error:
            return error.code
        result = (project.root / moved.destination).lstat()
        assert stat.S_ISREG(result.st_mode), "moved a symlink"
        assert result.st_ino != secret.stat().st_ino, "linked the outside file in"
        return "moved"

    with ProjectFiles(project.root) as files, toggling(flip):
        outcomes = race(attempt, {"moved", "symlink"})
    assert secret.stat().st_nlink == 1  # no hard link to it was ever made
    assert secret.read_text(encoding="utf-8") == SECRET + "\n"
    for path in (project.root / "archive").iterdir():
        assert path.read_text(encoding="utf-8") == INSIDE
    allowed = {"moved", "symlink", "not_found", "changed_since_approval"}
    assert set(outcomes) <= allowed, outcomes


def move_changed_after_the_check(
    project: Project, source: str, target: str, change: Callable[[move.MovePlan], None]
) -> Moved:
    """Plan and execute a move (approved) whose files ``change`` alters after the last
    re-check, right before the link: the window that re-checking cannot close."""
    fd = os.open(project.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        root = Root(fd, os.fstat(fd).st_dev)
        plan = move.plan_move(root, parse_path(source), parse_path(target))
        try:
            return move.execute_move(root, plan, checked=lambda: change(plan))
        finally:
            plan.close()
    finally:
        os.close(fd)


def test_c2_a_destination_created_after_the_last_check_is_kept(project: Project) -> None:
    """The window between the final re-check and ``link``: the no-replace link closes it."""

    def someone_writes(plan: move.MovePlan) -> None:
        (project.root / plan.destination.text).write_text("THEIRS\n", encoding="utf-8")

    with pytest.raises(FileAccessError) as caught:
        move_changed_after_the_check(project, "notes.txt", "archive", someone_writes)
    assert caught.value.code == "destination_exists"
    assert (project.root / "archive" / "notes.txt").read_text() == "THEIRS\n"
    assert (project.root / "notes.txt").read_text() == "hello\nworld\n"


@pytest.mark.parametrize("impostor", ["symlink to outside", "another file"])
@pytest.mark.parametrize("original", ["renamed away", "deleted"])
def test_c2_a_source_swapped_after_the_last_check_is_not_what_gets_moved(
    project: Project, impostor: str, original: str
) -> None:
    """The window between the final re-check and ``link``: only the approved inode (pinned by
    its fd) can get the new name, never whatever the source name holds by then."""
    source, kept = project.root / "notes.txt", project.root / "kept.txt"
    dog = project.root / "inbox" / "狗狗旺财.txt"

    def swap_the_source(plan: move.MovePlan) -> None:
        del plan
        if original == "renamed away":
            os.rename(source, kept)
        swap = project.root / "swap.tmp"
        if impostor == "another file":
            os.link(dog, swap)
        else:
            os.symlink("../outside/secret.txt", swap)
        os.replace(swap, source)

    approved = source.stat().st_ino
    destination = project.root / "archive" / "notes.txt"
    if original == "deleted":  # the approved file is gone: nothing may be moved
        with pytest.raises(FileAccessError) as caught:
            move_changed_after_the_check(project, "notes.txt", "archive", swap_the_source)
        assert caught.value.code == "changed_since_approval"
        assert not os.path.lexists(destination)
    else:
        move_changed_after_the_check(project, "notes.txt", "archive", swap_the_source)
        assert destination.lstat().st_ino == approved
        assert destination.read_text() == "hello\nworld\n"
    # the impostor is someone else's: left where it was, and it got no new name
    assert os.path.lexists(source)
    assert dog.stat().st_nlink == (2 if impostor == "another file" else 1)
    assert (project.outside / "secret.txt").stat().st_nlink == 1


def test_c2_a_destination_racing_the_move_is_never_clobbered(project: Project) -> None:
    """Another writer creates the destination (O_EXCL, as a careful program would) at a random
    moment after the approval; exactly one of the two wins, and nothing is lost."""
    rng = random.Random(SEED)

    def attempt(n: int) -> str:
        ours, theirs = f"ours{n}.txt", f"archive/x{n}.txt"
        (project.root / ours).write_text(f"OURS {n}\n", encoding="utf-8")
        racer = _Racer(project.root / theirs, f"THEIRS {n}\n", rng.random() * 2e-4)
        try:
            files.move(ours, theirs, racer.approve)
            outcome = "moved"
        except FileAccessError as error:
            outcome = "refused" if error.code == "changed_since_approval" else error.code
        racer.thread.join(5)
        left = project.root / ours
        at_destination = (project.root / theirs).read_text(encoding="utf-8")
        if racer.created:  # their file won: ours must still be where it was
            assert at_destination == f"THEIRS {n}\n", "clobbered their file"
            assert left.read_text(encoding="utf-8") == f"OURS {n}\n", "lost our file"
        else:  # our move won: theirs was refused
            assert at_destination == f"OURS {n}\n"
            assert not left.exists()
        return "refused" if outcome == "destination_exists" else outcome

    with ProjectFiles(project.root) as files, fast_switching():
        outcomes = race(attempt, {"moved", "refused"})
    assert set(outcomes) <= {"moved", "refused"}, outcomes


class _Racer:
    """Starts, from inside the approval, a thread that creates ``path`` after ``delay``."""

    def __init__(self, path: Path, content: str, delay: float) -> None:
        self.path, self.content, self.delay = path, content, delay
        self.created = False
        self.thread = threading.Thread(target=self._create, daemon=True)

    def approve(self, request: ApprovalRequest) -> bool:
        del request
        self.thread.start()
        return True

    def _create(self) -> None:
        deadline = time.perf_counter() + self.delay
        while time.perf_counter() < deadline:
            pass
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        try:
            os.write(fd, self.content.encode())
        finally:
            os.close(fd)
        self.created = True
