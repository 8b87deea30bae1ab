"""Request options from the config file, as they reach the wire: the output bound (window,
``max_output_tokens``, per model over per provider), ``tool_choice``, the thinking level, the
DeepSeek switches, prices, and a request too long for its window refused before it is sent."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, source
from acp_agent.model.base import (
    ContextOverflow,
    ModelRequest,
    StreamEvent,
    ToolSpec,
    Usage,
    UserTurn,
    context_window_of,
)
from acp_agent.model.config import parse_providers
from acp_agent.model.openai import (
    DEFAULT_CONTEXT_WINDOW,
    Endpoint,
    ModelSettings,
    OpenAICompatible,
)
from acp_agent.model.openai.wire import encode_parts
from acp_agent.model.registry import ModelCatalog
from tests.model.loopback import LoopbackServer, Reply, loopback

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})


def request(text: str = "hi", *, effort: str | None = None) -> ModelRequest:
    prompt = UserTurn([TextContent(text=text)], source(SourceKind.USER))
    return ModelRequest("s", 1, 1, [prompt], [READ], system="Be brief.", reasoning_effort=effort)


def estimate(req: ModelRequest) -> int:
    return encode_parts(req).estimated_tokens


@asynccontextmanager
async def catalog_over(
    config: str, *replies: Reply, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ModelCatalog, LoopbackServer]]:
    async with loopback(*(replies or (Reply("usage.sse"),))) as server:
        text = config.replace("BASE", server.base_url)
        catalog = ModelCatalog(None, parse_providers(text, Path("c.toml")), env or {})
        try:
            yield catalog, server
        finally:
            await catalog.aclose()


async def one_body(
    config: str, spec: str, req: ModelRequest | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    async with catalog_over(config, env=env) as (catalog, server):
        [_ async for _ in catalog.provider(spec).stream(req or request())]
    body: dict[str, Any] = server.requests[0].json()
    return body


LOCAL = """
[providers.local]
base_url = "BASE"
api_key_env = ""
context_window = 8000
max_output_tokens = 3000

[providers.local.model_options."small"]
context_window = 1000

[providers.local.model_options."capped"]
max_output_tokens = 50
"""


async def test_the_bound_is_what_is_left_of_the_window_per_model_over_per_provider() -> None:
    req = request()
    used = estimate(req)
    small = await one_body(LOCAL, "local:small", req)
    assert small["max_tokens"] == 1000 - used  # the model's window, less than its output cap
    other = await one_body(LOCAL, "local:other", req)
    assert other["max_tokens"] == 3000  # the provider's cap, below 8000 - used
    capped = await one_body(LOCAL, "local:capped", req)
    assert capped["max_tokens"] == 50  # the model's cap wins over the provider's 3000
    assert "max_completion_tokens" not in other


async def test_the_window_is_per_model_then_per_provider_then_the_process_default() -> None:
    async with catalog_over(LOCAL + '\n[providers.bare]\nbase_url = "BASE"\n') as (catalog, _):
        assert context_window_of(catalog.provider("local:small")) == 1000
        assert context_window_of(catalog.provider("local:other")) == 8000
        assert context_window_of(catalog.provider("bare:m")) == DEFAULT_CONTEXT_WINDOW
    endpoint = Endpoint("x", "http://127.0.0.1:9/v1")
    assert OpenAICompatible(endpoint, "m", context_window=4096).context_window == 4096
    configured = OpenAICompatible(endpoint, "m", settings=ModelSettings(context_window=512))
    assert configured.context_window == 512


async def test_a_request_longer_than_the_window_is_not_sent() -> None:
    config = '[providers.tiny]\nbase_url = "BASE"\ncontext_window = 50\n'
    long = request("word " * 100)
    async with catalog_over(config) as (catalog, server):
        with pytest.raises(ContextOverflow, match="the context window was exceeded"):
            [_ async for _ in catalog.provider("tiny:m").stream(long)]
        assert server.requests == []
        # exactly full (nothing left for the answer) is refused too; one token left is sent
        used, endpoint = estimate(request()), Endpoint("tiny", server.base_url)
        exact = OpenAICompatible(endpoint, "m", settings=ModelSettings(context_window=used))
        with pytest.raises(ContextOverflow):
            [_ async for _ in exact.stream(request())]
        one_left = OpenAICompatible(endpoint, "m", settings=ModelSettings(context_window=used + 1))
        [_ async for _ in one_left.stream(request())]
        await one_left.aclose()
    assert server.requests[0].json()["max_tokens"] == 1


async def test_builtins_openai_bounds_max_completion_tokens_deepseek_max_tokens() -> None:
    # OpenAI's reasoning models accept only max_completion_tokens
    # (https://platform.openai.com/docs/api-reference/chat/create); DeepSeek documents
    # max_tokens (https://api-docs.deepseek.com/api/create-chat-completion).
    async with loopback(Reply("usage.sse"), Reply("usage.sse")) as server:
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "k",
            "DEEPSEEK_BASE_URL": server.base_url,
            "DEEPSEEK_API_KEY": "k",
        }
        catalog = ModelCatalog(None, {}, env)
        for spec in ("openai:gpt-4.1", "deepseek:deepseek-flash"):
            [_ async for _ in catalog.provider(spec).stream(request())]
        await catalog.aclose()
    openai, deepseek = (r.json() for r in server.requests)
    assert openai["max_completion_tokens"] == 32_768 and "max_tokens" not in openai
    assert deepseek["max_tokens"] == DEFAULT_CONTEXT_WINDOW - estimate(request())


async def test_tool_choice_thinking_level_and_switch_from_the_config() -> None:
    config = """
[providers.ds]
base_url = "BASE"
tool_choice = "auto"
thinking = "enabled"
reasoning_effort_field = "reasoning.effort"
max_tokens_field = "max_completion_tokens"

[providers.ds.model_options."fast"]
tool_choice = "required"
thinking = "disabled"
reasoning_effort_field = "reasoning_effort"
"""
    fast = await one_body(config, "ds:fast", request(effort="high"))
    assert (fast["tool_choice"], fast["thinking"], fast["reasoning_effort"]) == (
        "required",
        {"type": "disabled"},
        "high",
    )
    other = await one_body(config, "ds:other", request(effort="low"))
    assert (other["tool_choice"], other["thinking"], other["reasoning"]) == (
        "auto",
        {"type": "enabled"},
        {"effort": "low"},
    )
    assert "max_completion_tokens" in other
    plain = await one_body(config, "ds:other", request())
    assert "reasoning" not in plain and "reasoning_effort" not in plain


def test_options_resolve_per_model_then_per_provider_then_builtin() -> None:
    config = """
[providers.deepseek]
images = false
think_tags = true
input_price = 0.14

[providers.deepseek.model_options."deepseek-v4-pro"]
reasoning_echo = false
images = true
output_price = 0.87
"""
    catalog = ModelCatalog(None, parse_providers(config, Path("c.toml")), {})
    flash = catalog.provider("deepseek:deepseek-flash")
    pro = catalog.provider("deepseek:deepseek-v4-pro")
    assert isinstance(flash, OpenAICompatible) and isinstance(pro, OpenAICompatible)
    assert (flash.settings.reasoning_echo, flash.images, flash.think_tags) == (True, False, True)
    assert (pro.settings.reasoning_echo, pro.images, pro.think_tags) == (False, True, True)
    assert (pro.settings.input_price, pro.settings.output_price) == (0.14, 0.87)
    assert ModelSettings().reasoning_details_echo is True
    openai = catalog.provider("openai:gpt-4.1")
    assert isinstance(openai, OpenAICompatible)
    assert openai.settings.reasoning_echo is False and openai.images is True


def test_prices_give_a_cost_only_when_the_server_sent_none() -> None:
    settings = ModelSettings(input_price=2.0, output_price=8.0)
    priced = settings.priced(Usage(input_tokens=1_000_000, output_tokens=500_000))
    assert priced.cost is not None and math.isclose(priced.cost, 6.0)
    reported = Usage(input_tokens=10, output_tokens=10, cost=0.5)
    assert settings.priced(reported).cost == 0.5  # OpenRouter's usage.cost is kept
    assert ModelSettings().priced(Usage(input_tokens=10, output_tokens=10)).cost is None


async def test_the_provider_prices_the_usage_it_streams() -> None:
    config = '[providers.p]\nbase_url = "BASE"\ninput_price = 1.0\noutput_price = 4.0\n'
    async with catalog_over(config) as (catalog, _):
        events: list[StreamEvent] = [e async for e in catalog.provider("p:m").stream(request())]
    (usage,) = [e for e in events if isinstance(e, Usage)]
    expected = (usage.input_tokens * 1.0 + usage.output_tokens * 4.0) / 1_000_000
    assert usage.cost is not None and math.isclose(usage.cost, expected)
