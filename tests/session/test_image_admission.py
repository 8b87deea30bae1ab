"""An image block whose data is not base64 of an image of its ``mimeType`` is refused at
admission: -32602, ``data.path`` naming the block's data, nothing journaled (contract §11)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from acp_agent.images import image_problem
from tests.model.harness import in_process_agent
from tests.session.test_images_and_links import PIXEL
from tests.session.test_shelf import new_session, script_catalog

JPEG = base64.b64encode(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00").decode()
GIF = base64.b64encode(b"GIF89a\x01\x00\x01\x00").decode()
WEBP = base64.b64encode(b"RIFF\x1a\x00\x00\x00WEBPVP8 ").decode()


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PIXEL, "image/png"),
        (JPEG, "image/jpeg"),
        (JPEG, "image/jpg"),
        (GIF, "image/gif"),
        (WEBP, "image/webp"),
    ],
)
def test_real_images_of_their_type_pass(data: str, mime: str) -> None:
    assert image_problem(data, mime) is None


@pytest.mark.parametrize(
    ("data", "mime", "says"),
    [
        ("not base64!!", "image/png", "not valid base64"),
        (PIXEL[:-2], "image/png", "not valid base64"),  # padding cut
        (PIXEL[:8] + "\n" + PIXEL[8:], "image/png", "not valid base64"),
        (base64.b64encode(b"<html>hello</html>").decode(), "image/png", "not a image/png image"),
        (JPEG, "image/png", "not a image/png image"),
        (PIXEL, "image/jpeg", "not a image/jpeg image"),
        (PIXEL, "image/x-evil", "not supported"),
        ("", "image/png", "not a image/png image"),
    ],
)
def test_a_lying_image_is_named(data: str, mime: str, says: str) -> None:
    problem = image_problem(data, mime)
    assert problem is not None and says in problem


async def test_a_bad_image_is_refused_at_admission_and_the_session_goes_on(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with in_process_agent(script_catalog(tmp_path, {"text": "a pixel"}), state) as agent:
        sid = await new_session(agent, tmp_path)
        text = {"type": "text", "text": "what is it?"}
        fake = {"type": "image", "mimeType": "image/png", "data": JPEG}
        refused = await agent.request("session/prompt", {"sessionId": sid, "prompt": [text, fake]})
        inject = {"sessionId": sid, "content": [fake]}
        refused_inject = await agent.request("_acp_agent/inject", inject)
        real = {"type": "image", "mimeType": "image/png", "data": PIXEL}
        answered = await agent.request("session/prompt", {"sessionId": sid, "prompt": [text, real]})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"] == {"path": "$.prompt[1].data"}
    assert "not a image/png image" in refused["error"]["message"]
    assert refused_inject["error"]["data"] == {"path": "$.content[0].data"}
    assert answered["result"]["stopReason"] == "end_turn"
