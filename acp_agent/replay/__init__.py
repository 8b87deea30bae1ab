"""Recorded-fixture replays: drive the real server from a fixture, compare normalized outputs.

A fixture (``fixtures/replays/<name>/``) holds the client side (``client.jsonl``), the model
side (``model.jsonl``, script-model lines), optional ``config.toml`` / ``env.json`` / ``files/``
and the expected, normalized outputs (``frames.jsonl``, ``journal/*.jsonl``,
``requests.jsonl``). ``acp-agent replay run`` and ``tests/replay/test_fixtures.py`` replay them;
``acp-agent replay record`` writes new ones from any provider. The format is in
``docs/replays.md``.

Modules: ``steps`` (the client steps), ``fixture`` (the directory and its placeholders),
``server`` (one server process and the waits), ``driver`` (carrying out the steps),
``normalize`` / ``outputs`` (expected files, diffs), ``checks`` (schemas), ``runner`` (one
fixture end to end), ``recording`` / ``record`` (the recorder), ``cli``.
"""
