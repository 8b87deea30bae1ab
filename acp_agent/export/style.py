"""The exported page's style sheet: inline in the page, allowed by its hash in the page's CSP.

System fonts only (no web font to fetch), light and dark schemes, nothing positioned so that
the page prints and reads without the sheet too.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

CSS: Final = """
:root{color-scheme:light dark;--bg:#f7f7f5;--card:#fff;--ink:#1d1f23;--muted:#6a6f78;
--line:#dfe1e5;--accent:#3659c9;--ctx:#fff7e0;--ctx-line:#e8c35a;--user:#eef3ff;
--ok:#1f7a3f;--bad:#b3261e;--add:#e6f6ea;--del:#fdecea;--code:#f3f4f6;--thought:#f4f1fb}
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--card:#1f2228;--ink:#e6e7ea;
--muted:#9aa0aa;--line:#343841;--accent:#8fa8ff;--ctx:#2c2716;--ctx-line:#8a7430;
--user:#1d2740;--ok:#6fcf8f;--bad:#ff8a80;--add:#15301f;--del:#3a1d1b;--code:#262a31;
--thought:#272235}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif}
.page{display:grid;grid-template-columns:minmax(180px,260px) minmax(0,1fr);gap:24px;
max-width:1200px;margin:0 auto;padding:24px}
@media (max-width:800px){.page{grid-template-columns:1fr}}
header.session{grid-column:1/-1;border-bottom:1px solid var(--line);padding-bottom:12px}
header.session h1{margin:0 0 6px;font-size:24px;overflow-wrap:anywhere}
dl.meta{display:flex;flex-wrap:wrap;gap:4px 20px;margin:0;color:var(--muted);font-size:13px}
dl.meta div{display:flex;gap:6px}dl.meta dt{font-weight:600}dl.meta dd{margin:0;
overflow-wrap:anywhere}
nav.timeline{font-size:13px}
nav.timeline h2{font-size:13px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);
margin:0 0 8px}
nav.timeline ol{list-style:none;margin:0;padding:0 0 0 10px;border-left:2px solid var(--line)}
nav.timeline li{margin:0 0 8px;padding-left:10px;position:relative}
nav.timeline li::before{content:"";position:absolute;left:-16px;top:6px;width:8px;height:8px;
border-radius:50%;background:var(--accent)}
nav.timeline li.t-message::before{background:var(--ctx-line)}
nav.timeline li.t-compaction::before{background:var(--muted)}
nav.timeline a{color:var(--accent);text-decoration:none;font-weight:600}
nav.timeline .sub{display:block;color:var(--muted);overflow-wrap:anywhere}
main{min-width:0}
article.turn{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:14px 18px;margin:0 0 18px}
article.turn>header{display:flex;flex-wrap:wrap;align-items:baseline;gap:10px;
border-bottom:1px solid var(--line);padding-bottom:8px;margin-bottom:10px}
article.turn>header h2{margin:0;font-size:17px}
.reason{font-size:12px;padding:1px 8px;border-radius:999px;border:1px solid currentColor}
.reason.completed{color:var(--ok)}.reason.error,.reason.interrupted,.reason.open{color:var(--bad)}
.reason.cancelled,.reason.max_tokens,.reason.max_turn_requests{color:var(--muted)}
.when{color:var(--muted);font-size:12px}
.usage{color:var(--muted);font-size:12px;margin-left:auto}
.label{font-size:12px;font-weight:600;color:var(--muted);text-transform:uppercase;
letter-spacing:.04em;margin:0 0 4px}
.prompt{background:var(--user);border-radius:8px;padding:8px 12px;margin:0 0 10px}
.said{margin:10px 0}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
section.message{background:var(--ctx);border-left:4px solid var(--ctx-line);border-radius:6px;
padding:8px 12px;margin:0 0 18px}
article.turn section.message{margin:10px 0}
.source{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;
background:var(--code);border-radius:4px;padding:0 5px;text-transform:none;letter-spacing:0}
details.thought{background:var(--thought);border-radius:6px;padding:6px 12px;margin:10px 0}
details.thought summary{cursor:pointer;color:var(--muted);font-size:13px}
section.tool{border:1px solid var(--line);border-radius:8px;margin:10px 0;overflow:hidden}
section.tool>header{display:flex;flex-wrap:wrap;gap:8px;align-items:baseline;padding:6px 12px;
background:var(--code);font-size:13px}
section.tool>header .name{font-weight:700;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
section.tool>header .status{margin-left:auto;font-weight:600}
section.tool.ok .status{color:var(--ok)}section.tool.failed .status{color:var(--bad)}
section.tool .part{padding:6px 12px;border-top:1px solid var(--line)}
section.tool details summary{cursor:pointer;font-size:12px;color:var(--muted);font-weight:600}
pre{margin:4px 0;padding:8px 10px;background:var(--code);border-radius:6px;overflow-x:auto;
font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;
overflow-wrap:anywhere}
pre.diff{white-space:pre}
pre.diff span{display:block}pre.diff .add{background:var(--add)}pre.diff .del{background:var(--del)}
pre.diff .hunk{color:var(--accent)}pre.diff .file{color:var(--muted)}
.failure{color:var(--bad);border:1px solid var(--bad);border-radius:6px;padding:6px 12px;
margin:10px 0}
section.compaction{border:1px dashed var(--line);border-radius:8px;padding:8px 12px;
margin:0 0 18px;color:var(--muted)}
img.image{max-width:100%;max-height:420px;border:1px solid var(--line);border-radius:6px;
display:block;margin:6px 0}
.note{color:var(--muted);font-style:italic}
footer.page-end{grid-column:1/-1;color:var(--muted);font-size:12px;border-top:1px solid
var(--line);padding-top:10px}
"""

CSS_HASH: Final = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()

CSP: Final = (
    f"default-src 'none'; style-src '{CSS_HASH}'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
"""No script, no fetch, no frame, no font: only this sheet and ``data:`` images."""
