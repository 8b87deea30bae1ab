"""What a session learned of its model's window and tokenizer, so no request of it is sized
blindly.

Theory of operation
-------------------
The session counts a request as its characters ÷ 4 (``model.base.tokens_of``) — an estimate
that undercounts real tokens 2.7 to 6.2 times for CSV numbers, hex, JSON logs and Chinese, and a window
that, with nothing configured, is assumed (``DEFAULT_CONTEXT_WINDOW``). ``Learned`` corrects
both, from what the server says:

- *the window*: the one the provider declares (``Capabilities.context_window``: a ``gguf:``
  model's ``n_ctx``) is the configured one; an overflow error that names the real window
  (llama.cpp's ``n_ctx``, "maximum context length is N tokens": ``ContextOverflow.window``)
  replaces it for the rest of the session;
- *the ratio*: real tokens per estimated token, measured on every request whose ``Usage`` the
  server reports (prompt tokens ÷ the request's estimate), and on an overflow that counts the
  refused prompt. Every budget of the session (automatic compaction, the summary request,
  trimming a tool loop, the provider's output bound) multiplies its estimate by it. It is never
  below 1: an estimate that overcounts is left alone, the safe side.

Kept per session and per model (a change of model starts over), and saved with the session's
settings (``session/settings.py``) so a reload keeps it.
"""

from __future__ import annotations

import math
from typing import Final

import msgspec

MAX_RATIO: Final = 12.0
"""A measured ratio above this is taken as this (a server that counts something else)."""


class Learned(msgspec.Struct, frozen=True, omit_defaults=True):
    model: str = ""
    """The model (``ModelProvider.name``) it was learned of; another model learns anew."""
    context_window: int | None = None
    """Tokens, as a server's overflow error named it."""
    token_ratio: float | None = None
    """Real prompt tokens per chars-÷-4 token, as last measured."""

    def of(self, model: str) -> Learned:
        return self if self.model == model else Learned(model)

    def window(self, configured: int) -> int:
        return self.context_window or configured

    @property
    def ratio(self) -> float:
        return max(self.token_ratio or 1.0, 1.0)

    def tokens(self, estimated: int) -> int:
        """``estimated`` (chars ÷ 4) as real tokens, by the ratio measured."""
        return math.ceil(estimated * self.ratio)

    def estimate_of(self, tokens: int) -> int:
        """The chars-÷-4 estimate that is ``tokens`` real tokens (a budget for ``fit.py``)."""
        return max(int(tokens / self.ratio), 1)

    def calibrated(self, estimated: int, reported: int) -> Learned:
        """With the ratio of a request estimated at ``estimated`` that the server counted as
        ``reported`` prompt tokens."""
        if estimated <= 0 or reported <= 0:
            return self
        ratio = round(min(reported / estimated, MAX_RATIO), 3)
        return msgspec.structs.replace(self, token_ratio=ratio)

    def windowed(self, window: int | None) -> Learned:
        if window is None or window <= 0:
            return self
        return msgspec.structs.replace(self, context_window=window)
