"""``gguf:`` without a model run: spec checks, clear errors, the doctor's problem lines.

Not marked ``live``: nothing here loads a model, so it runs in ``make test`` whether or not the
``[local]`` extra is installed (a missing extra is simulated by shadowing ``xllamacpp``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent.model.base import ModelError, ModelRequest, context_window_of
from acp_agent.model.gguf import MISSING_EXTRA, GgufModel, GgufSettings, spec_path
from acp_agent.model.registry import BadModelSpec, ModelCatalog


def doctor(tmp_path: Path, spec: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``acp-agent doctor --json --model SPEC``: the report, with the exit code in it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "XDG_"))}
    result = subprocess.run(
        [sys.executable, "-m", "acp_agent", "doctor", "--json", "--model", spec],
        capture_output=True,
        text=True,
        env={**base, "HOME": str(home), **(env or {})},
        timeout=60,
        check=False,
    )
    report: dict[str, Any] = json.loads(result.stdout)
    report["exit_code"] = result.returncode
    return report


def model_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    (found,) = [s["findings"] for s in report["sections"] if s["name"] == "model"]
    return list(found)


async def first_request(model: GgufModel) -> None:
    request = ModelRequest(session_id="s", turn=1, step=1, messages=[], tools=[])
    async for _ in model.stream(request):
        pass


def test_a_gguf_spec_needs_an_absolute_path() -> None:
    assert spec_path("/models/x.gguf") == Path("/models/x.gguf")
    assert spec_path("~/x.gguf") == Path.home() / "x.gguf"
    for bad in ("", "x.gguf", "models/x.gguf"):
        with pytest.raises(ValueError, match="absolute path"):
            spec_path(bad)
    with pytest.raises(BadModelSpec, match="absolute path"):
        ModelCatalog("gguf:relative.gguf", {}, {})


def test_the_catalog_makes_a_gguf_provider_that_needs_no_key(tmp_path: Path) -> None:
    catalog = ModelCatalog(f"gguf:{tmp_path}/m.gguf", {}, {})
    assert catalog.key_needed(catalog.default) is None
    assert catalog.offers_selector()
    provider = catalog.provider(catalog.default)
    assert isinstance(provider, GgufModel)
    assert provider.name == f"gguf:{tmp_path}/m.gguf"
    assert provider.settings.context_window == 4096
    assert context_window_of(provider) == 4096  # what the session compacts and bounds for


async def test_a_missing_file_is_a_clear_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"gguf: model file .*nope\.gguf not found"):
        await first_request(GgufModel(tmp_path / "nope.gguf"))


async def test_a_file_that_is_no_gguf_is_a_clear_model_error(tmp_path: Path) -> None:
    path = tmp_path / "text.gguf"
    path.write_text("not a model\n", encoding="utf-8")
    with pytest.raises(ModelError, match="is not a GGUF file"):
        await first_request(GgufModel(path))


async def test_a_missing_extra_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import xllamacpp now fails
    with pytest.raises(ModelError) as caught:
        await first_request(GgufModel(path))
    assert str(caught.value) == MISSING_EXTRA


def test_the_chat_template_and_tool_choice_come_from_the_environment(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    assert GgufSettings.from_env({}) == GgufSettings()
    settings = GgufSettings.from_env(
        {"ACP_AGENT_GGUF_CHAT_TEMPLATE": str(template), "ACP_AGENT_GGUF_TOOL_CHOICE": "required"}
    )
    assert (settings.chat_template, settings.tool_choice) == (template, "required")
    with pytest.raises(ValueError, match="ACP_AGENT_GGUF_TOOL_CHOICE"):
        GgufSettings.from_env({"ACP_AGENT_GGUF_TOOL_CHOICE": "always"})


def test_a_bad_tool_choice_fails_at_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_AGENT_GGUF_TOOL_CHOICE", "always")
    with pytest.raises(BadModelSpec, match="ACP_AGENT_GGUF_TOOL_CHOICE"):
        ModelCatalog(f"gguf:{tmp_path}/m.gguf", {}, {})


def test_doctor_reports_a_missing_model_file_as_a_model_problem(tmp_path: Path) -> None:
    report = doctor(tmp_path, f"gguf:{tmp_path}/nope.gguf")
    assert report["exit_code"] == 1
    assert any(
        p.startswith("model: ") and "nope.gguf not found" in p for p in report["problems"]
    ), report["problems"]


def test_doctor_reports_a_relative_path_as_a_model_problem(tmp_path: Path) -> None:
    report = doctor(tmp_path, "gguf:model.gguf")
    assert report["exit_code"] == 1
    assert [f["check"] for f in model_findings(report) if f["status"] == "problem"] == [
        "model.spec"
    ]


def test_doctor_names_the_extra_when_xllamacpp_is_missing(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "xllamacpp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('simulated')\n", encoding="utf-8")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    report = doctor(tmp_path, f"gguf:{model}", {"PYTHONPATH": str(shadow.parent)})
    assert report["exit_code"] == 1
    assert f"model: {model}: {MISSING_EXTRA}" in report["problems"], report["problems"]


def test_a_spec_s_query_sets_the_window_threads_and_seed(tmp_path: Path) -> None:
    spec = f"gguf:{tmp_path / 'm.gguf'}?ctx=2048&threads=1&seed=7"
    provider = ModelCatalog(spec, {}, {}).provider(spec)
    assert isinstance(provider, GgufModel)
    assert provider.path == tmp_path / "m.gguf"
    assert (provider.settings.context_window, provider.settings.threads) == (2048, 1)
    assert provider.settings.seed == 7
    assert context_window_of(provider) == 2048


def test_context_window_sets_a_gguf_window_unless_the_spec_does(tmp_path: Path) -> None:
    plain, chosen = f"gguf:{tmp_path / 'm.gguf'}", f"gguf:{tmp_path / 'm.gguf'}?ctx=1024"
    catalog = ModelCatalog(plain, {}, {}, context_window=8192)
    assert context_window_of(catalog.provider(plain)) == 8192  # no longer ignored
    assert (
        context_window_of(ModelCatalog(chosen, {}, {}, context_window=8192).provider(chosen))
        == 1024
    )


@pytest.mark.parametrize(
    ("query", "said"),
    [("ctx=0", "ctx expects"), ("threads=two", "threads expects"), ("n_gpu=1", "unknown option")],
)
def test_a_bad_spec_option_is_refused_naming_it(query: str, said: str, tmp_path: Path) -> None:
    with pytest.raises(BadModelSpec, match=said):
        ModelCatalog(f"gguf:{tmp_path / 'm.gguf'}?{query}", {}, {})
