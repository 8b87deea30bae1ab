"""The shadow repository and the recorder against real git: snapshots honour ``.gitignore``, never
touch the workspace's ``.git``, run nothing a hostile repository names, and restore exactly."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from acp_agent.checkpoints.plan import Target
from acp_agent.checkpoints.recorder import Recorder
from acp_agent.checkpoints.restore import prepare
from acp_agent.checkpoints.shadow import EMPTY_TREE, Shadow, blob_id, current, shadow_dir
from acp_agent.journal.events import Checkpoint
from tests.support.hostile_git import make_hostile_repo, need_git


@pytest.fixture(autouse=True)
def _git() -> None:
    need_git()


def _record_command(
    recorder: Recorder, roots: list[Path], change: object
) -> tuple[Checkpoint, ...]:
    async def run() -> tuple[Checkpoint, ...]:
        pending = await recorder.before_all(roots)
        assert callable(change)
        change()
        return await recorder.after(pending)

    return anyio.run(run)


def _record_files(
    recorder: Recorder, roots: list[Path], paths: list[Path], change: object
) -> tuple[Checkpoint, ...]:
    async def run() -> tuple[Checkpoint, ...]:
        pending = await recorder.before_files(paths, roots)
        assert callable(change)
        change()
        return await recorder.after(pending)

    return anyio.run(run)


def _restore(state: Path, checkpoint: Checkpoint, *, force: bool = False) -> list[str]:
    targets = [
        Target(checkpoint.root, f, checkpoint.before, checkpoint.after) for f in checkpoint.files
    ]
    restore = prepare(state, "s1", targets)
    changed = restore.changed_since(Path(checkpoint.root))
    if changed and not force:
        return changed
    restore.apply()
    return changed


def test_a_command_checkpoint_records_what_changed_and_restores_it(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "keep.txt").write_text("keep\n")
    (root / "edit.txt").write_text("old\n")
    (root / "gone.txt").write_text("will be removed\n")
    recorder, roots = Recorder(state, "s1"), [root]

    def change() -> None:
        (root / "edit.txt").write_text("new\n")
        (root / "gone.txt").unlink()
        (root / "sub").mkdir()
        (root / "sub" / "made.txt").write_text("made\n")

    (checkpoint,) = _record_command(recorder, roots, change)
    assert checkpoint.root == str(root.resolve())
    assert checkpoint.files == ("edit.txt", "gone.txt", "sub/made.txt")
    assert _restore(state, checkpoint) == []
    assert (root / "edit.txt").read_text() == "old\n"
    assert (root / "gone.txt").read_text() == "will be removed\n"
    assert not (root / "sub" / "made.txt").exists()
    assert (root / "keep.txt").read_text() == "keep\n"


def test_an_unchanged_tree_makes_no_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a").write_text("a")
    assert _record_command(Recorder(tmp_path / "state", "s1"), [root], lambda: None) == ()


def test_gitignored_files_are_neither_recorded_nor_restored(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    (root / "build").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src.c").write_text("int x;\n")
    recorder, roots = Recorder(state, "s1"), [root]

    def change() -> None:
        (root / "src.c").write_text("int y;\n")
        (root / "build" / "out.o").write_text("object\n")
        (root / "run.log").write_text("log\n")

    (checkpoint,) = _record_command(recorder, roots, change)
    assert checkpoint.files == ("src.c",)
    _restore(state, checkpoint)
    assert (root / "build" / "out.o").read_text() == "object\n"
    assert (root / "run.log").read_text() == "log\n"
    assert (
        _record_files(recorder, roots, [root / "x.log"], lambda: (root / "x.log").write_text("1"))
        == ()
    )


def test_an_exact_files_checkpoint_records_only_those_files(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "other.txt").write_text("other\n")
    recorder, roots = Recorder(state, "s1"), [root]
    (checkpoint,) = _record_files(
        recorder, roots, [root.resolve() / "a.txt"], lambda: (root / "a.txt").write_text("two\n")
    )
    assert checkpoint.files == ("a.txt",)
    shadow = Shadow(state, root.resolve(), "s1")
    assert set(shadow.files(checkpoint.before, ["other.txt"]).values()) == {None}
    (created,) = _record_files(
        recorder, roots, [root.resolve() / "new.txt"], lambda: (root / "new.txt").write_text("n\n")
    )
    assert created.before == EMPTY_TREE
    _restore(state, created)
    assert not (root / "new.txt").exists()


def test_a_file_changed_since_is_named_and_kept_unless_forced(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("v1\n")
    recorder, roots = Recorder(state, "s1"), [root]
    (checkpoint,) = _record_files(
        recorder, roots, [root.resolve() / "a.txt"], lambda: (root / "a.txt").write_text("v2\n")
    )
    (root / "a.txt").write_text("the user's v3\n")
    assert _restore(state, checkpoint) == ["a.txt"]
    assert (root / "a.txt").read_text() == "the user's v3\n"
    assert _restore(state, checkpoint, force=True) == ["a.txt"]
    assert (root / "a.txt").read_text() == "v1\n"


def test_bytes_modes_and_links_come_back_exactly(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / ".gitattributes").write_text("* text eol=crlf\n")
    (root / "crlf.txt").write_bytes(b"a\r\nb\n\x00\xff")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("crlf.txt", root / "link")
    recorder, roots = Recorder(state, "s1"), [root]

    def change() -> None:
        (root / "crlf.txt").write_bytes(b"changed")
        (root / "run.sh").chmod(0o644)
        (root / "link").unlink()
        (root / "link").write_text("no longer a link")

    (checkpoint,) = _record_command(recorder, roots, change)
    _restore(state, checkpoint)
    assert (root / "crlf.txt").read_bytes() == b"a\r\nb\n\x00\xff"
    assert os.access(root / "run.sh", os.X_OK)
    assert os.readlink(root / "link") == "crlf.txt"


def test_the_workspace_git_is_untouched_and_no_program_of_it_runs(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path)
    state = tmp_path / "state"
    before = repo.git_dir_digest()
    recorder, roots = Recorder(state, "s1"), [repo.root]

    def change() -> None:
        (repo.root / "a.txt").write_text("by the agent\n")
        (repo.root / "c.md").write_text("md too\n")

    (checkpoint,) = _record_command(recorder, roots, change)
    assert set(checkpoint.files) == {"a.txt", "c.md"}
    (single,) = _record_files(
        recorder, roots, [repo.root / "b.dat"], lambda: (repo.root / "b.dat").write_text("x\n")
    )
    _restore(state, checkpoint)
    _restore(state, single)
    assert (repo.root / "a.txt").read_text() == "alpha\nchanged\n"
    assert (repo.root / "b.dat").read_text() == "beta\nchanged\n"
    assert repo.markers() == []
    assert repo.git_dir_digest() == before
    assert shadow_dir(state, repo.root).is_dir()
    assert not (repo.root / ".git").samefile(shadow_dir(state, repo.root))


def test_a_nested_repository_without_a_commit_does_not_stop_a_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "nested").mkdir(parents=True)
    import subprocess

    subprocess.run(["git", "init", "-q", str(root / "nested")], check=True)
    (root / "top.txt").write_text("1")
    recorder, roots = Recorder(tmp_path / "state", "s1"), [root]
    (checkpoint,) = _record_command(recorder, roots, lambda: (root / "top.txt").write_text("2"))
    assert checkpoint.files == ("top.txt",)


def test_the_state_dir_inside_the_root_is_not_recorded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    state = root / ".state"
    root.mkdir()
    recorder, roots = Recorder(state, "s1"), [root]
    (checkpoint,) = _record_command(recorder, roots, lambda: (root / "f").write_text("1"))
    assert checkpoint.files == ("f",)


def test_trees_are_kept_by_session_refs(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    recorder, roots = Recorder(state, "s1"), [root]
    (checkpoint,) = _record_command(recorder, roots, lambda: (root / "f").write_text("1"))
    shadow = Shadow(state, root.resolve(), "s1")
    refs = shadow.git("for-each-ref", "--format=%(objectname)", "refs/sessions/s1/").split()
    assert checkpoint.after.encode() in refs
    shadow.keep("child", [checkpoint.after])
    shadow.forget("s1")
    assert shadow.git("for-each-ref", "refs/sessions/s1/") == b""
    assert shadow.git("for-each-ref", "refs/sessions/child/") != b""


def test_current_hashes_like_git(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"hello\n")
    found = current(path)
    assert (
        found is not None
        and found.sha == blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    )
    assert current(tmp_path / "missing") is None


def test_a_tree_too_large_is_refused_once_and_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_agent.checkpoints import shadow as shadow_module

    root = tmp_path / "ws"
    root.mkdir()
    for n in range(5):
        (root / f"f{n}").write_text("x")
    monkeypatch.setattr(shadow_module, "MAX_FILES", 3)
    recorder, roots = Recorder(tmp_path / "state", "s1"), [root]
    assert _record_command(recorder, roots, lambda: (root / "f0").write_text("y")) == ()
    shadow = recorder.shadow(root.resolve())
    assert shadow._refusal is not None and "more than 3 files" in shadow._refusal
    (edited,) = _record_files(
        recorder, roots, [root.resolve() / "f1"], lambda: (root / "f1").write_text("z")
    )
    assert edited.files == ("f1",)  # an edit tool's exact file is still recorded
