"""acp-agent: an ACP agent server with a durable journal and explicit turns."""

__version__ = "0.1.0"
