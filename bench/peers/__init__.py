"""``python -m bench.peers`` (``make bench-peers``): acp-agent side by side with its peers.

Modules: ``agents`` (who is compared, pinned, and how each is configured and started),
``fake_model`` (the one OpenAI-compatible model they all talk to), ``run`` (one sample of an
agent: its processes and figures), ``request`` (what an agent sends for a first ``hi``),
``report`` (the table in ``docs/benchmarks.md`` and ``docs/benchmarks-peers.json``).
"""
