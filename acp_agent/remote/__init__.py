"""ACP beyond one process: WebSocket and streamable HTTP listeners (docs/remote.md).

``acp-agent serve --listen ws://HOST:PORT`` or ``--listen http://HOST:PORT``. Only ``flags``
is imported by the CLI in every run (it adds the flags, and imports nothing); the rest, with
uvicorn and websockets (the ``remote`` extra), only in listen mode.

- ``flags.py`` / ``options.py``: the listen URL, the token, the allowed origins; refusal to
  start.
- ``run.py``: the process, as ``launch.run_server`` is for stdio.
- ``batching.py``: uvicorn's WebSocket protocol, writing a batch of frames at once.
- ``gate.py``: who may come in (path, ``Authorization: Bearer``, ``Origin``).
- ``hub.py``: the process: connections, their sessions, signals and the shutdown deadline.
- ``claims.py``: which connection drives which session.
- ``websocket.py`` / ``streamable.py``: the two transports, as byte source and sink of a
  ``transport.connection.Connection`` each, exactly like stdio.
- ``server.py``: the ASGI app and the uvicorn server it runs in.
"""
