"""``python -m bench``: acp-agent's benchmarks, each figure a ratio against a baseline.

Every figure is measured against a baseline taken *in the same run, interleaved* with it (one
sample of ours, one of the baseline, repeated; the order flips each round), after warm-up
rounds that are thrown away, and summarized by medians (and p99 where asked). The machine is
shared, so absolute numbers drift from run to run; the ratios are what the report stands on.

Modules: ``wire`` (the client that drives every agent the same way), ``stats`` (interleaving,
medians, the ``Figure`` row), ``cases/*`` (one module per measured area), ``report``
(``docs/benchmarks.md`` and ``docs/benchmarks.json``). The child programs the baselines need
are ``sdk_agent`` (an echo agent on the official Python SDK), ``bare_writer`` (an encode-and-write
loop) and ``idle_tasks`` (bare anyio tasks). ``bench.peers`` (``python -m bench.peers``, ``make
bench-peers``) is apart: acp-agent side by side with the agents users would pick instead.
"""
