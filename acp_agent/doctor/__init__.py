"""``acp-agent doctor``: one page on whether this installation can serve, and what to fix.

It takes the options of ``serve`` (so the arguments an editor passes can be pasted after
``doctor``), reads everything the server would read, contacts the configured providers once
(unless ``--offline``) and writes nothing but one temporary file to test the state dir.

Sections, in order: config file (``config.py``), model (``model.py``), state dir
(``state.py``), journals (``journals.py``). The page is plain text; ``--json`` prints the same
report as one JSON object (``report.py``). ``options.py`` holds the flags (imported by
``cli.py`` at every start, so it stays light); ``run.py`` puts the sections together. Exit
code 0 when no finding is a problem, else 1.
"""
