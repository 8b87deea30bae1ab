"""The ``bwrap`` command line that confines one command.

Theory of operation
-------------------
The sandbox is a new mount namespace built from nothing but these steps, in this order (a later
mount covers an earlier one):

1. ``--ro-bind / /``: the whole file system, read-only.
2. ``--dev /dev``, ``--proc /proc``: a minimal ``/dev`` and the sandbox's own ``/proc`` (with
   ``--unshare-pid`` it shows only the sandbox's processes: the agent's ``/proc/PID/environ``,
   which holds its keys, is out of sight).
3. ``--tmpfs /tmp``: a private, empty ``/tmp``, writable under every confined policy, gone
   when the command ends.
4. Each session root, bound at its own path: writable under ``workspace-write(-network)``,
   read-only under ``read-only`` (bound even then, since a root inside ``/tmp`` would
   otherwise be covered by step 3).
5. Each hidden directory (the agent's state directory: every session's journal) covered by an
   empty tmpfs with mode ``0000``, remounted read-only: neither readable nor writable, even when
   it lies inside a root (it comes after step 4 for that). Each hidden file (the config file)
   covered by ``/dev/null``, on a ``nodev`` mount, so opening it is refused. Hidden paths that do not exist are skipped: bwrap could not make
   their mount point on a read-only tree.

Then ``--unshare-net`` (a network namespace with only its own loopback: no host, and not the
host's loopback either) unless the policy has the network; ``--unshare-pid`` and
``--die-with-parent`` (killing ``bwrap`` kills everything inside, ``setsid`` or not);
``--new-session`` (no controlling terminal to inject keystrokes into); ``--unshare-ipc``;
``--cap-drop ALL`` (as root, bwrap would otherwise keep capabilities, ``CAP_SYS_ADMIN`` among
them, enough to remount ``/`` writable); ``--chdir`` to the command's cwd; ``TMPDIR=/tmp``.

Paths are resolved (``realpath``) by the caller: bwrap mounts at the path it is given.
If you add a mount here, also add its test in ``tests/sandbox/test_confinement.py``.
"""

from __future__ import annotations

import msgspec

from acp_agent.sandbox.policy import SandboxPolicy


class Layout(msgspec.Struct, frozen=True):
    roots: tuple[str, ...]
    cwd: str
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()


def sandbox_argv(bwrap: str, policy: SandboxPolicy, layout: Layout) -> list[str]:
    """``bwrap`` and its options, ending with ``--``: the command's argv follows."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/tmp"]
    bind = "--bind" if policy.writes_roots else "--ro-bind"
    for root in layout.roots:
        argv += [bind, root, root]
    for hidden in layout.hidden_dirs:
        argv += ["--perms", "0000", "--tmpfs", hidden, "--remount-ro", hidden]
    for hidden in layout.hidden_files:
        argv += ["--ro-bind", "/dev/null", hidden]
    argv += ["--chdir", layout.cwd, "--setenv", "TMPDIR", "/tmp", "--"]
    return argv
