"""acp-agent: an ACP agent server with a durable journal and explicit turns."""

from acp_agent import lean_imports

lean_imports.apply()

__version__ = "0.1.0"
