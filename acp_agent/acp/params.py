"""What a request's params must hold beyond their types: checked here, answered -32602 naming
the offending path (``$.prompt[1]``, ``$.additionalDirectories[0]``)."""

from __future__ import annotations

import os
from pathlib import Path

from acp_agent.acp.schema import SystemPromptParam
from acp_agent.content import AudioContent, ContentBlock, ImageContent, TextContent
from acp_agent.errors import InvalidParams
from acp_agent.images import image_problem
from acp_agent.session.system_prompt import PromptMode, SessionPrompt


def absolute_cwd(cwd: str) -> str:
    if not os.path.isabs(cwd):
        raise InvalidParams("cwd must be an absolute path", {"path": "$.cwd"})
    return cwd


def valid_roots(directories: list[str]) -> list[Path]:
    """``additionalDirectories``: absolute paths, each an extra root for the session's tools."""
    for index, directory in enumerate(directories):
        if not os.path.isabs(directory):
            raise InvalidParams(
                "additional directories must be absolute paths",
                {"path": f"$.additionalDirectories[{index}]"},
            )
    return [Path(directory) for directory in directories]


def prompt_blocks(blocks: list[ContentBlock]) -> list[ContentBlock]:
    """A prompt holds at least one block, and only kinds ``initialize`` advertised (text,
    images, resource links, embedded resources: not audio); an image's data must be base64 of
    an image of its ``mimeType`` (``images.py``)."""
    for index, block in enumerate(nonempty(blocks)):
        if isinstance(block, AudioContent):
            raise InvalidParams(
                f"{block.__class__.__name__} blocks are not supported (not advertised)",
                {"path": f"$.prompt[{index}]"},
            )
    return checked_images(blocks, "$.prompt")


def content_blocks(value: list[ContentBlock] | str) -> list[ContentBlock]:
    blocks: list[ContentBlock] = [TextContent(text=value)] if isinstance(value, str) else value
    return checked_images(nonempty(blocks, "$.content"), "$.content")


def checked_images(blocks: list[ContentBlock], path: str) -> list[ContentBlock]:
    """``blocks``, if each image block's data is what its ``mimeType`` says; else -32602 with
    ``data.path`` ``PATH[N].data``."""
    for index, block in enumerate(blocks):
        if isinstance(block, ImageContent):
            problem = image_problem(block.data, block.mimeType)
            if problem is not None:
                raise InvalidParams(problem, {"path": f"{path}[{index}].data"})
    return blocks


def nonempty(blocks: list[ContentBlock], path: str = "$.prompt") -> list[ContentBlock]:
    if not blocks:
        raise InvalidParams("content must hold at least one block", {"path": path})
    return blocks


def session_prompt(param: SystemPromptParam | None) -> SessionPrompt | None:
    """``systemPrompt``: a mode we advertise and text blocks only (the unstable schema says an
    agent must refuse anything else rather than create the session)."""
    if param is None:
        return None
    modes = ", ".join(PromptMode)
    if param.mode not in tuple(PromptMode):
        message = f"unsupported systemPrompt mode {param.mode!r}; one of {modes}"
        raise InvalidParams(message, {"path": "$.systemPrompt.mode"})
    texts = []
    for index, block in enumerate(nonempty(param.content, "$.systemPrompt.content")):
        if not isinstance(block, TextContent):
            path = f"$.systemPrompt.content[{index}]"
            raise InvalidParams("systemPrompt content must be text blocks", {"path": path})
        texts.append(block.text)
    return SessionPrompt(PromptMode(param.mode), "\n\n".join(texts))
