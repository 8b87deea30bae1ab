"""MCP servers handed over by the client in ``session/new`` (and load, resume, fork).

Theory of operation
-------------------
``config.py`` decodes ``mcpServers`` at the ACP boundary (stdio and http; ``sse`` is not
advertised and is refused with -32602 before anything is created). A session's servers live in
one ``McpHub`` (``hub.py``), which the session's ``ToolRunner`` (``turn/toolrun.py``) asks
for tools after its built-in ones: nothing connects at ``session/new``;
the session's first model request calls ``prepare``, which connects every server not yet
connected (concurrently, bounded by ``CONNECT_TIMEOUT_S``) and lists its tools. Each
connection is owned by one long-lived task (``client.py``; the SDK's transports must be entered
and left by the same task), reused by every later turn, and stopped by ``aclose`` when the
session is closed or disposed, or the process shuts down.

``client.py`` is the only module that imports the ``mcp`` package (and through it pydantic,
httpx2, starlette); it is imported on the first ``prepare`` of a session that has servers, so
``initialize`` and ``session/new`` stay fast (a subprocess test checks it).

Tools are offered as ``mcp__<server>__<tool>`` (``names.py``) and run as ``McpTool``
(``tool.py``): permission by mode (``tools/permissions.py``), then ``tools/call``. A server that
fails to start is logged (``mcp_server_failed``, name and reason, never env or header values)
and simply contributes no tools; it is not tried again until the client states the servers
again (load, resume or fork). A connection that breaks later is reopened at the next request.
"""
