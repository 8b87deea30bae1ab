"""The shadow repository: a bare git repository under the state directory that records a root.

One shadow per root (``<state>/checkpoints/<key>/``, ``key`` a hash of the root's path), shared
by every session of that root; each session has its own index in it (``indexes/<session>``), so
two sessions never contend for one and a session's index keeps git's stat cache between
snapshots: a snapshot re-hashes only the files whose stat changed. git runs with
``GIT_DIR=<shadow> GIT_WORK_TREE=<root> GIT_INDEX_FILE=<index>`` and ``safegit``'s environment
with the global configuration off too, so the workspace's own ``.git`` is never opened (git
skips a ``.git`` entry in the work tree) and nothing the user's configuration says applies.

What is recorded is what ``git add -A`` takes: the workspace's ``.gitignore`` files are honoured,
an ignored file is neither recorded nor restored; a nested repository is a gitlink (its files are
not recorded; one without a commit is skipped, ``--ignore-errors``). ``info/attributes`` unsets
``text``, ``filter`` and ``diff`` for every path, so a blob holds the file's exact bytes (no
end-of-line conversion, no filter). ``info/exclude`` holds the state directory when it lies under
the root.

Trees are the checkpoints (no commits: a ref may name a tree); each one a session's journal names
is kept reachable by a ref ``refs/sessions/<session>/<tree>`` (``keep``), so a ``git gc`` never
drops it; a fork copies its parent's refs for the events it copies.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from acp_agent.journal.events import Checkpoint
from acp_agent.logs import get_logger
from acp_agent.safegit import GitUnavailable, git_env, run_git

log = get_logger("acp_agent.checkpoints")

MAX_FILES: Final = 50_000
"""A root with more files than this (``.gitignore`` honoured) is not snapshotted whole."""
GIT_TIMEOUT_S: Final = 120.0
"""A first snapshot of a large tree hashes every file; later ones only what changed."""
EMPTY_TREE: Final = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
SHADOW_CONFIG: Final = """[core]
\trepositoryformatversion = 0
\tbare = true
\tautocrlf = false
\tsafecrlf = false
\tfilemode = true
\tsymlinks = true
\tfsmonitor = false
\tuntrackedCache = false
\thooksPath = /dev/null
[gc]
\tauto = 0
"""
SHADOW_ATTRIBUTES: Final = "* -text -filter -diff -merge -ident -working-tree-encoding\n"
REGULAR: Final = "100644"
EXECUTABLE: Final = "100755"
SYMLINK: Final = "120000"


class ShadowError(Exception):
    """A git command of the shadow repository failed; the message has its stderr."""


@dataclass(frozen=True, slots=True)
class Blob:
    """One file as a tree holds it: its mode (``REGULAR``, ``EXECUTABLE``, ``SYMLINK``) and
    blob id; a file that is not there is ``None`` where a ``Blob`` is expected."""

    mode: str
    sha: str


def shadow_dir(state_dir: Path, root: Path) -> Path:
    key = hashlib.sha256(os.fsencode(root)).hexdigest()[:24]
    return state_dir / "checkpoints" / key


class Shadow:
    """The shadow repository of ``root``, used by one session (``index``)."""

    def __init__(
        self, state_dir: Path, root: Path, session_id: str, git_dir: Path | None = None
    ) -> None:
        self.root = root
        self.git_dir = git_dir if git_dir is not None else shadow_dir(state_dir, root)
        self.session_id = session_id
        self.index = self.git_dir / "indexes" / session_id
        self._state_dir = state_dir
        self._refusal: str | None = None
        self._env = git_env(
            [("core.excludesFile", os.devnull)],
            variables={
                "GIT_DIR": str(self.git_dir),
                "GIT_WORK_TREE": str(root),
                "GIT_INDEX_FILE": str(self.index),
                "GIT_CONFIG_GLOBAL": os.devnull,
            },
        )

    # -- git --------------------------------------------------------------------------------

    def git(
        self, *args: str, input_bytes: bytes | None = None, ok: tuple[int, ...] = (0,)
    ) -> bytes:
        try:
            done = run_git(
                args, self._env, cwd=self.root, timeout=GIT_TIMEOUT_S, input_bytes=input_bytes
            )
        except GitUnavailable as exc:
            raise ShadowError(str(exc)) from exc
        if done.returncode not in ok:
            error = done.stderr.decode("utf-8", "replace").strip()
            raise ShadowError(f"git {args[0]} failed ({done.returncode}): {error}")
        return done.stdout

    def ensure(self) -> None:
        """Create the repository the first time (no template: no sample hooks)."""
        if (self.git_dir / "HEAD").is_file():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info", "indexes"):
            (self.git_dir / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.git_dir / "config").write_text(SHADOW_CONFIG)
        (self.git_dir / "info" / "attributes").write_text(SHADOW_ATTRIBUTES)
        (self.git_dir / "info" / "exclude").write_text(self._excluded())
        (self.git_dir / "HEAD").write_text("ref: refs/heads/main\n")
        log.info("checkpoint_shadow_created", root=str(self.root), git_dir=str(self.git_dir))

    def _excluded(self) -> str:
        state = self._state_dir.resolve()
        if state.is_relative_to(self.root.resolve()) and state != self.root.resolve():
            return f"/{state.relative_to(self.root.resolve()).as_posix()}/\n"
        return ""

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, paths: Sequence[str] | None = None) -> str:
        """The tree of the root as it is now (``paths`` None) or of just ``paths`` (relative,
        POSIX; a missing or ignored one is left out). The objects are written; ``keep`` the tree
        to keep them."""
        self.ensure()
        if paths is None:
            self._refuse_too_large()
            self.git("add", "-A", "--ignore-errors", "--", ".", ok=(0, 1))
            return self.git("write-tree").decode().strip()
        present = [p for p in paths if os.path.lexists(self.root / p)]
        kept = self._not_ignored(present)
        if not kept:
            return EMPTY_TREE
        entries = b"".join(self._entry(path) for path in kept)
        partial = self.index.with_name(self.index.name + ".files")
        env_index = {"GIT_INDEX_FILE": str(partial)}
        try:
            partial.unlink(missing_ok=True)
            self._with(env_index, "update-index", "--add", "--index-info", input_bytes=entries)
            return self._with(env_index, "write-tree").decode().strip()
        finally:
            partial.unlink(missing_ok=True)

    def _refuse_too_large(self) -> None:
        """Before a session's first whole snapshot of the root: refuse the home directory, ``/``
        and a tree of more than ``MAX_FILES`` files (a checkpoint would copy all of it). The
        refusal is remembered: the tree is not walked again at every command."""
        if self._refusal is not None:
            raise ShadowError(self._refusal)
        if self.index.exists():
            return
        real = self.root.resolve()
        if real == Path(real.anchor) or real == _home():
            self._refusal = f"{self.root} is not snapshotted whole (the home directory or /)"
        elif self.git("ls-files", "-z", "--others", "--exclude-standard").count(b"\0") > MAX_FILES:
            self._refusal = f"{self.root} has more than {MAX_FILES} files: not snapshotted whole"
        if self._refusal is not None:
            raise ShadowError(self._refusal)

    def _with(
        self, variables: dict[str, str], *args: str, input_bytes: bytes | None = None
    ) -> bytes:
        saved = self._env
        self._env = {**saved, **variables}
        try:
            return self.git(*args, input_bytes=input_bytes)
        finally:
            self._env = saved

    def _not_ignored(self, paths: Sequence[str]) -> list[str]:
        if not paths:
            return []
        listed = self.git(
            "check-ignore",
            "-z",
            "--no-index",
            "--stdin",
            input_bytes=b"".join(os.fsencode(p) + b"\0" for p in paths),
            ok=(0, 1),
        )
        ignored = {os.fsdecode(p) for p in listed.split(b"\0") if p}
        return [p for p in paths if p not in ignored]

    def _entry(self, path: str) -> bytes:
        """One ``--index-info`` line for ``path``: its blob written as it is on disk."""
        blob = self.write_blob(self.root / path)
        return f"{blob.mode} {blob.sha}\t".encode() + os.fsencode(path) + b"\n"

    def write_blob(self, path: Path) -> Blob:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            data, mode = os.fsencode(os.readlink(path)), SYMLINK
        else:
            data = path.read_bytes()
            mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR
        sha = self.git("hash-object", "-w", "--no-filters", "--stdin", input_bytes=data)
        return Blob(mode, sha.decode().strip())

    # -- reading ----------------------------------------------------------------------------

    def changed(self, before: str, after: str) -> list[str]:
        """The paths whose content or mode differs between two trees."""
        if before == after:
            return []
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", before, after)
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def files(self, tree: str, paths: Iterable[str]) -> dict[str, Blob | None]:
        """Each of ``paths`` as ``tree`` holds it (``None``: not in it; a gitlink is ``None``)."""
        wanted = list(paths)
        found: dict[str, Blob | None] = dict.fromkeys(wanted)
        if not wanted or tree == EMPTY_TREE:
            return found
        out = self.git("ls-tree", "-z", "--full-tree", tree, "--", *wanted)
        for line in out.split(b"\0"):
            if not line:
                continue
            meta, _, name = line.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            if kind == "blob":
                found[os.fsdecode(name)] = Blob(mode, sha)
        return found

    def blob_bytes(self, sha: str) -> bytes:
        return self.git("cat-file", "blob", sha)

    # -- keeping ----------------------------------------------------------------------------

    def keep(self, session_id: str, trees: Iterable[str]) -> None:
        """Refs that keep ``trees`` reachable for ``session_id``."""
        lines = b"".join(
            f"update refs/sessions/{session_id}/{tree} {tree}\n".encode()
            for tree in set(trees)
            if tree != EMPTY_TREE
        )
        if lines:
            self.git("update-ref", "--stdin", input_bytes=lines)

    def forget(self, session_id: str) -> None:
        """Drop ``session_id``'s refs and index (its session was deleted)."""
        if not (self.git_dir / "HEAD").is_file():
            return
        refs = self.git("for-each-ref", "--format=%(refname)", f"refs/sessions/{session_id}/")
        lines = b"".join(b"delete " + ref + b"\n" for ref in refs.split(b"\n") if ref)
        if lines:
            self.git("update-ref", "--stdin", input_bytes=lines)
        self.index.unlink(missing_ok=True)


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except RuntimeError:  # no HOME, no passwd entry
        return None


def blob_id(data: bytes) -> str:
    """git's blob id of ``data`` (SHA-1), computed here: comparing a file with a checkpoint
    needs no git process."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def current(path: Path) -> Blob | None:
    """``path`` as a tree would hold it now (``None``: missing, or not a file or link)."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return Blob(SYMLINK, blob_id(os.fsencode(os.readlink(path))))
        if not stat.S_ISREG(info.st_mode):
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return Blob(EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR, blob_id(data))


def keep_for(state_dir: Path, session_id: str, checkpoints: Iterable[Checkpoint]) -> None:
    """Refs of ``session_id`` for every tree of ``checkpoints`` (a fork's copied events: the
    child keeps them reachable even once its parent is deleted)."""
    by_root: dict[str, set[str]] = {}
    for checkpoint in checkpoints:
        by_root.setdefault(checkpoint.root, set()).update((checkpoint.before, checkpoint.after))
    for root, trees in by_root.items():
        shadow = Shadow(state_dir, Path(root), session_id)
        if (shadow.git_dir / "HEAD").is_file():
            shadow.keep(session_id, trees)


def forget_everywhere(state_dir: Path, session_id: str) -> None:
    """Drop ``session_id``'s refs and indexes in every shadow repository (it was deleted); a
    failure is logged, the rest is still dropped."""
    top = state_dir / "checkpoints"
    if not top.is_dir():
        return
    for git_dir in sorted(top.iterdir()):
        shadow = Shadow(state_dir, git_dir, session_id, git_dir=git_dir)
        try:
            shadow.forget(session_id)
        except ShadowError as exc:
            log.warning("checkpoint_refs_not_dropped", session_id=session_id, error=str(exc))
