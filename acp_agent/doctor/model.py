"""The model selection and whether its providers answer.

The selection is resolved by the server's own ``ModelCatalog``: the default spec (``--model``,
``ACP_AGENT_MODEL``, else the first ``models`` entry of the config) and the specs a session may
switch to. For every provider among them: whether its key variable is set (the *name* only;
the key is never printed) and one ``GET <base_url>/models`` with the key and a short timeout,
reported with its status and latency. ``/models`` is part of the OpenAI API; a server without
it still answered, which is reported as a note. A ``gguf:`` model is loaded once, as the agent
would load it, and stopped again (``acp_agent/model/gguf.py``): a model that does not load (no
``[local]`` extra, no such file, not GGUF, llama.cpp refuses it) is a problem.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from acp_agent.config_file import ConfigError
from acp_agent.doctor.report import Finding, Section, Status
from acp_agent.model.base import ModelError
from acp_agent.model.config import ProvidersConfig
from acp_agent.model.gguf import CHAT_TEMPLATE_ENV, GgufSettings, spec_path, try_load
from acp_agent.model.openai.settings import Endpoint
from acp_agent.model.registry import (
    BUILTINS,
    BadModelSpec,
    ModelCatalog,
    ProviderKind,
    resolve_providers,
)

MODEL_ENV = "ACP_AGENT_MODEL"


def model_section(
    spec: str | None,
    providers: ProvidersConfig | None,
    env: Mapping[str, str],
    *,
    timeout_s: float | None,
) -> Section:
    """``timeout_s=None``: do not contact the providers (``--offline``)."""
    findings = [_keys_in_env(env)]
    if providers is None:
        message = "not checked: the config file cannot be used (above)"
        return Section(
            "model", "model", [*findings, Finding(Status.PROBLEM, "model.spec", message)]
        )
    try:
        catalog = ModelCatalog(spec, providers, env)
        endpoints = {name: p.endpoint for name, p in resolve_providers(providers, env).items()}
    except (BadModelSpec, ConfigError) as exc:
        return Section(
            "model", "model", [*findings, Finding(Status.PROBLEM, "model.spec", str(exc))]
        )
    findings.append(_selection(catalog, spec, env))
    specs = [catalog.parse(choice) for choice in catalog.choices()]
    for spec_read in specs:
        if spec_read.kind is ProviderKind.SCRIPT:
            findings.append(_script(Path(spec_read.rest)))
        elif spec_read.kind is ProviderKind.GGUF:
            findings += _gguf(spec_read.rest, env)
    for name in dict.fromkeys(s.name for s in specs if s.kind is ProviderKind.HTTP):
        findings += _provider(endpoints[name], timeout_s)
    return Section("model", "model", findings)


def _keys_in_env(env: Mapping[str, str]) -> Finding:
    names = [builtin.key_env for builtin in BUILTINS.values()]
    said = ", ".join(f"{n} {'set' if env.get(n, '').strip() else 'not set'}" for n in names)
    return Finding(Status.OK, "model.env", f"environment: {said}")


def _selection(catalog: ModelCatalog, spec: str | None, env: Mapping[str, str]) -> Finding:
    default = catalog.default
    if default is None:
        message = (
            f"no model configured: every prompt fails; pass --model SPEC or set {MODEL_ENV} "
            "(openai:MODEL, deepseek:MODEL, NAME:MODEL of [providers.NAME], script:PATH)"
        )
        return Finding(Status.PROBLEM, "model.spec", message)
    if spec is None:
        source = "the first model listed in the config file"
    else:
        source = MODEL_ENV if env.get(MODEL_ENV) == spec else "--model"
    others = [c for c in catalog.choices() if c != default]
    offered = f"; also offered: {', '.join(others)}" if others else ""
    return Finding(Status.OK, "model.spec", f"{default} (from {source}){offered}")


def _script(path: Path) -> Finding:
    if path.is_file():
        return Finding(Status.OK, "model.script", f"script model file {path} exists")
    return Finding(Status.PROBLEM, "model.script", f"script model file {path} not found")


def _gguf(rest: str, env: Mapping[str, str]) -> list[Finding]:
    """Load the model once (seconds, its size in RAM), ask whether its template has tools."""
    path = spec_path(rest)  # the catalog accepted the spec, so this holds
    try:
        loaded = try_load(path, GgufSettings.from_env(env))
    except ModelError as exc:
        return [Finding(Status.PROBLEM, "model.gguf", str(exc), str(path))]
    message = f"loads in {loaded.load_s * 1000:.0f} ms (llama.cpp via xllamacpp {loaded.version})"
    findings = [Finding(Status.OK, "model.gguf", message, str(path))]
    if loaded.supports_tools is False:
        note = (
            "its chat template has no tool support, so llama.cpp drops the tools and the model "
            f"never calls one; {CHAT_TEMPLATE_ENV}=/abs/template.jinja replaces the template"
        )
        findings.append(Finding(Status.NOTE, "model.gguf_tools", note, str(path)))
    return findings


def _provider(endpoint: Endpoint, timeout_s: float | None) -> list[Finding]:
    findings = [_key(endpoint)]
    if timeout_s is None:
        message = f"{endpoint.base_url}: not contacted (--offline)"
        findings.append(Finding(Status.NOTE, "model.reachable", message, endpoint.name))
    else:
        findings.append(probe(endpoint, timeout_s))
    return findings


def _key(endpoint: Endpoint) -> Finding:
    name, env_name = endpoint.name, endpoint.api_key_env
    if env_name is None:
        return Finding(Status.OK, "model.key", "needs no key", name)
    if endpoint.api_key is None:
        message = f"the key variable {env_name} is not set: sessions on this provider fail (-32000)"
        return Finding(Status.PROBLEM, "model.key", message, name)
    return Finding(Status.OK, "model.key", f"key variable {env_name} is set", name)


def probe(endpoint: Endpoint, timeout_s: float) -> Finding:
    """``GET <base_url>/models`` once; the key goes only into the ``Authorization`` header."""
    import httpx

    url = endpoint.base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {endpoint.api_key.reveal()}"} if endpoint.api_key else {}
    started = time.monotonic()
    try:
        with httpx.Client(timeout=timeout_s) as client:
            status = client.get(url, headers=headers).status_code
    except httpx.HTTPError as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if endpoint.api_key is not None:
            reason = endpoint.api_key.scrub(reason)
        message = f"GET {url} failed: {reason}"
        return Finding(Status.PROBLEM, "model.reachable", message, endpoint.name)
    took = f"GET {url}: HTTP {status} in {(time.monotonic() - started) * 1000:.0f} ms"
    verdict, check, hint = _verdict(status, endpoint)
    return Finding(verdict, check, took + hint, endpoint.name)


def _verdict(status: int, endpoint: Endpoint) -> tuple[Status, str, str]:
    if status in (401, 403):
        key = endpoint.api_key_env or "the key variable"
        return Status.PROBLEM, "model.key_refused", f": the server refused the key; check {key}"
    if status >= 500:
        return Status.PROBLEM, "model.reachable", ": the server failed"
    if status >= 400:  # it answered, it just has no /models
        return Status.NOTE, "model.reachable", ": reachable, but it does not list models"
    return Status.OK, "model.reachable", ""
