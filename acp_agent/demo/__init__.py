"""The bundled demo session that ``make run`` shows (``python -m acp_agent.demo``)."""
