"""Images and linked files in a prompt (docs/contract.md §8 "Images", "Resource links").

The real router and session layer on the in-memory wire; the model is the real OpenAI-compatible
provider against the loopback HTTP server, so the bodies asserted are what a server receives
(Chat Completions ``image_url`` content parts with a ``data:`` URI, as OpenAI's vision guide
documents them).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from acp_agent.api import Agent, Placement, SourceKind, source
from acp_agent.content import ImageContent, TextContent
from acp_agent.model.base import Capabilities, Finish, ModelRequest, StreamEvent, TextDelta
from acp_agent.model.config import ModelOptions, ProviderEntry
from acp_agent.model.openai.wire import IMAGE_NOTE
from acp_agent.model.registry import ModelCatalog
from acp_agent.session.wiring import NullObserver
from tests.integration.support import check_journal
from tests.model.harness import in_process_agent
from tests.model.loopback import Reply, loopback

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="


async def prompt_with(tmp_path: Path, blocks: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    """One prompt; the initialize answer, the request bodies and the session's journal."""
    async with loopback(Reply("text.sse")) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        catalog = ModelCatalog("openai:gpt-test", {}, env)
        async with in_process_agent(catalog, tmp_path / "state") as agent:
            init = await agent.request("initialize", {"protocolVersion": 1})
            new = {
                "cwd": str(tmp_path / "ws"),
                "mcpServers": [],
                "_meta": {"acp_agent": {"sessionId": "s"}},
            }
            assert "result" in await agent.request("session/new", new)
            answer = await agent.request("session/prompt", {"sessionId": "s", "prompt": blocks})
            assert answer["result"]["stopReason"] == "end_turn", answer
        bodies = [json.loads(r.body) for r in server.requests]
    return init["result"], bodies


async def test_an_image_reaches_the_model_as_an_image_url_part(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    image = {"type": "image", "mimeType": "image/png", "data": PIXEL}
    init, (body,) = await prompt_with(tmp_path, [{"type": "text", "text": "what is it?"}, image])
    assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
    user = body["messages"][-1]
    assert user["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
    ]
    journal = check_journal(tmp_path / "state", "s", tmp_path / "ws")
    (prompt,) = [m for m in journal.of_type("user/message") if m["source"]["kind"] == "user"]
    assert prompt["content"][1] == image  # journaled with the prompt, as sent


async def test_a_linked_file_in_the_roots_is_read_into_the_prompt(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("ship the journal first\n")
    (tmp_path / "secret.txt").write_text("outside the roots\n")
    inside = f"file://{workspace}/notes.md"
    outside = f"file://{tmp_path}/secret.txt"
    blocks = [
        {"type": "text", "text": "read these"},
        {"type": "resource_link", "uri": inside, "name": "notes.md"},
        {"type": "resource_link", "uri": outside, "name": "secret.txt"},
    ]
    _, (body,) = await prompt_with(tmp_path, blocks)
    sent = body["messages"][-1]["content"]
    assert "ship the journal first" in sent
    assert "outside the roots" not in sent and f"[{outside}]" in sent
    journal = check_journal(tmp_path / "state", "s", workspace)
    (prompt,) = [m for m in journal.of_type("user/message") if m["source"]["kind"] == "user"]
    assert prompt["content"][2] == {
        "type": "resource",
        "resource": {"uri": inside, "text": "ship the journal first\n"},
    }  # the file's text is history now: a later load sends the same, whatever the file holds
    assert [b["type"] for b in prompt["content"]] == [
        "text",
        "resource_link",
        "resource",
        "resource_link",
    ]


async def test_a_link_to_a_fifo_is_not_read_and_the_prompt_goes_on(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "pipe")
    link = {"type": "resource_link", "uri": f"file://{workspace}/pipe", "name": "pipe"}
    _, (body,) = await prompt_with(tmp_path, [{"type": "text", "text": "read"}, link])
    assert f"[file://{workspace}/pipe]" in body["messages"][-1]["content"]


async def test_a_model_without_images_gets_a_note_and_the_user_is_told(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    image = {"type": "image", "mimeType": "image/png", "data": PIXEL}
    async with loopback(Reply("text.sse")) as server:
        text_only = ModelOptions(images=False)
        entry = ProviderEntry(base_url=server.base_url, api_key_env="", models=["m"])
        config = {"local": msgspec.structs.replace(entry, model_options={"m": text_only})}
        async with in_process_agent(
            ModelCatalog("local:m", config, env={}), tmp_path / "s"
        ) as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            new = {"cwd": str(tmp_path / "ws"), "mcpServers": []}
            sid = (await agent.request("session/new", new))["result"]["sessionId"]
            blocks = [{"type": "text", "text": "look"}, image]
            answer = await agent.request("session/prompt", {"sessionId": sid, "prompt": blocks})
            assert answer["result"]["stopReason"] == "end_turn"
            notes = [
                u["content"]["text"]
                for u in agent.updates(sid)
                if u["sessionUpdate"] == "agent_message_chunk"
                and u.get("_meta", {}).get("acp_agent", {}).get("note")
            ]
        (body,) = [json.loads(r.body) for r in server.requests]
    assert body["messages"][-1]["content"] == f"look\n{IMAGE_NOTE}"
    assert len(notes) == 1 and "does not take images" in notes[0]


class TextOnly:
    """A provider whose model takes no images (as ``images = false`` makes one)."""

    name = "text-only"
    capabilities = Capabilities(images=False)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield TextDelta("ok")
        yield Finish()


class Notes(NullObserver):
    def __init__(self) -> None:
        self.notes: list[str] = []

    async def note(self, text: str) -> None:
        self.notes.append(text)


async def test_every_way_an_image_enters_tells_the_user_once(tmp_path: Path) -> None:
    """Prompt, injected context and steering alike: the session tells, not a front door."""
    observer = Notes()
    image = ImageContent(data=PIXEL, mimeType="image/png")
    async with Agent.open(tmp_path / "s", TextOnly(), observer=lambda _: observer) as agent:
        session = await agent.new_session(tmp_path)
        await session.inject([image], source(SourceKind.CLIENT))
        await (await session.send([TextContent(text="look"), image])).outcome()
        await session.steer([image])  # no turn: it becomes a prompt
        await session.when_idle()
        assert await session.steer_running([image]) is Placement.PROMPT_REQUIRED  # not admitted
        await session.send("no image here")
        await session.when_idle()
    assert len(observer.notes) == 3
    assert all("does not take images" in note for note in observer.notes)
