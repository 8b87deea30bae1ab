"""Text that characters ÷ 4 undercounts 2.7-6.2x with real tokenizers (issue 28): CSV numbers,
hex, JSON log lines and Chinese, each made to about ``chars`` characters, deterministically."""

from __future__ import annotations

import json


def csv_numbers(chars: int) -> str:
    rows = (
        f"{i},{i * 37 % 1000}.{i % 97:02d},{-i * 13 % 577},{i * i % 9973}" for i in range(10**6)
    )
    return _fill(rows, chars)


def hex_dump(chars: int) -> str:
    rows = (f"{i * 16:08x}: " + " ".join(f"{(i * 31 + k * 7) % 256:02x}" for k in range(16))
            for i in range(10**6))  # fmt: skip
    return _fill(rows, chars)


def json_logs(chars: int) -> str:
    rows = (
        json.dumps({"ts": 1767225600 + i, "lvl": "info", "id": f"{i * 7919:x}", "ms": i % 250})
        for i in range(10**6)
    )
    return _fill(rows, chars)


def chinese(chars: int) -> str:
    sentence = "上下文窗口的大小决定了模型一次能看到多少内容\uff0c超过它的请求会被服务器拒绝。"
    return (sentence * (chars // len(sentence) + 1))[:chars]


KINDS = {"csv": csv_numbers, "hex": hex_dump, "json-logs": json_logs, "chinese": chinese}


def _fill(rows: object, chars: int) -> str:
    out: list[str] = []
    size = 0
    for row in rows:  # type: ignore[attr-defined]
        if size >= chars:
            break
        out.append(row)
        size += len(row) + 1
    return "\n".join(out)
