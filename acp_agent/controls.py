"""Control characters in text the agent shows or stores as one line (session titles).

C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F) controls can move a terminal's cursor,
rewrite what it shows or carry escape sequences (ESC, CSI U+009B, OSC U+009D), so a title from
a model or a client could paint over a user's terminal when ``journal list`` prints it.
``without_controls`` replaces each with a space (titles are stored without any);
``escaped_controls`` shows each as ``\\xNN`` (what the CLI prints of text it did not make).
"""

from __future__ import annotations

import re
from typing import Final

CONTROLS: Final = re.compile("[\x00-\x1f\x7f-\x9f]")


def without_controls(text: str) -> str:
    return CONTROLS.sub(" ", text)


def escaped_controls(text: str) -> str:
    return CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
