"""Checkpoints: the state of the files the agent's tools change, recorded before each change in a
shadow git repository under the state directory, and put back by ``/undo`` and
``_acp_agent/rewind {restoreFiles: true}``.

- ``shadow.py``: the shadow repository of a root (never the workspace's own ``.git``);
- ``recorder.py``: a session's recorder, called by the edit tools and local commands;
- ``plan.py``: which files a restore puts back, derived from the journal (pure);
- ``restore.py``: checking and writing them back.

See docs/checkpoints.md.
"""
