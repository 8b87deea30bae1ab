"""``python -m bench.html_markdown``: the HTML-to-Markdown libraries ``web_fetch`` could use,
measured on the saved pages of ``tests/tools/pages/`` (a Python docs page, a GitHub README page,
an MDN page).

Each library runs as configured with its own options for the job (links made absolute, no line
wrapping, images skipped, and where it can, scripts, styles and navigation dropped). A page's
checks: its headings kept as Markdown headings, its links kept and made absolute, its code
blocks fenced with their code intact, its tables kept as Markdown tables, and none of its script,
style or navigation text left. Then the time per page (median of ``ROUNDS``), the import cost
(a fresh interpreter importing the library, median of 3) and the wheel's size (from pip's
record of the installed files). Prints one Markdown table. The candidates need installing
first (``pip install markdownify==1.2.3 html2text==2025.4.15 html-to-markdown==3.19.0``).
"""

from __future__ import annotations

import importlib.metadata
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1] / "tests" / "tools" / "pages"
ROUNDS = 20


@dataclass(frozen=True)
class Page:
    file: str
    url: str
    headings: tuple[str, ...]
    links: tuple[str, ...]
    code: tuple[str, ...]
    table_cells: tuple[str, ...]
    dropped: tuple[str, ...]


PAGE_CHECKS = (
    Page(
        "python-docs-json.html",
        "https://docs.python.org/3.11/library/json.html",
        ("Basic Usage", "Encoders and Decoders", "Character Encodings", "Command line options"),
        ("https://docs.python.org/3.11/library/marshal.html#module-marshal", "https://json.org"),
        (">>> json.dumps(['foo', {'bar': ('baz', None, 1.0, 2)}])", "$ python -m json.tool"),
        ("dict", "object"),
        ("Previous topic", "Quick search", "Theme", "_bootstrap", "sphinxsidebar"),
    ),
    Page(
        "github-readme.html",
        "https://github.com/encode/httpx",
        ("Features", "Dependencies", "Clients", "Release Information"),
        ("https://www.python-httpx.org/compatibility/", "https://github.com/encode/httpx/blob/master/CHANGELOG.md"),
        ("$ pip install httpx", ">>> r = httpx.get('https://www.example.org/')", "with httpx.Client() as client:"),
        ("The underlying transport implementation", "`httpx[http2]`"),
        ("Pricing", "Sign up", "featureFlags", "__GH_BOOT__", ".markdown-body .anchor", "Terms"),
    ),
    Page(
        "mdn-array-map.html",
        "https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/map",
        ("Array.prototype.map()", "Syntax", "Parameters", "Mapping an array of numbers"),
        ("https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/forEach",),
        ("const roots = numbers.map((num) => Math.sqrt(num));", "map(callbackFn, thisArg)"),
        ("ECMAScript® 2026 Language Specification", "0.10.0"),
        ("localStorage", "Open main menu", "Your blueprint for a better internet", "sidebar-inner", "Array.prototype.concat()"),
    ),
)  # fmt: skip

Convert = Callable[[str, str], str]
EXCLUDED = [
    "nav", "aside", "form", "footer", "[role=navigation]", "[role=banner]", "[role=contentinfo]",
    "[role=search]",
]  # fmt: skip


def html_to_markdown_lib(html: str, url: str) -> str:
    import html_to_markdown as h

    options = h.ConversionOptions(
        base_url=url,
        preprocessing=h.PreprocessingOptions(),
        skip_images=True,
        extract_metadata=False,
        exclude_selectors=EXCLUDED,
    )
    return h.convert(html, options).content or ""


def markdownify_lib(html: str, url: str) -> str:
    import markdownify

    text: str = markdownify.markdownify(
        html, heading_style="ATX", strip=["script", "style", "img"], code_language=""
    )
    return text


def html2text_lib(html: str, url: str) -> str:
    import html2text

    converter = html2text.HTML2Text(baseurl=url)
    converter.body_width = 0
    converter.ignore_images = True
    converter.mark_code = False
    return str(converter.handle(html))


CANDIDATES: dict[str, tuple[str, str, Convert]] = {
    "html-to-markdown": ("html-to-markdown", "html_to_markdown", html_to_markdown_lib),
    "markdownify": ("markdownify", "markdownify", markdownify_lib),
    "html2text": ("html2text", "html2text", html2text_lib),
}


def checks(page: Page, text: str) -> dict[str, tuple[int, int]]:
    lines = text.splitlines()
    headings = [line for line in lines if line.lstrip().startswith("#")]
    fenced = _fenced(lines)
    table_lines = [line for line in lines if line.lstrip().startswith("|")]
    return {
        "headings": _count(page.headings, lambda h: any(h in line for line in headings)),
        "links": _count(page.links, lambda link: f"]({link}" in text or f"<{link}>" in text),
        "code": _count(page.code, lambda code: any(code in block for block in fenced)),
        "tables": _count(page.table_cells, lambda c: any(c in line for line in table_lines)),
        "dropped": _count(page.dropped, lambda junk: junk not in text),
    }


def _count(wanted: tuple[str, ...], test: Callable[[str], bool]) -> tuple[int, int]:
    return sum(1 for item in wanted if test(item)), len(wanted)


def _fenced(lines: list[str]) -> list[str]:
    blocks: list[str] = []
    current: list[str] | None = None
    for line in lines:
        if line.strip().startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def import_ms(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(3)]
    return 1000 * statistics.median(runs)


def installed_kib(distribution: str) -> float:
    files = importlib.metadata.distribution(distribution).files or []
    return sum(f.size or 0 for f in files if f.size) / 1024


def main() -> None:
    pages = [(page, (PAGES / page.file).read_text(encoding="utf-8")) for page in PAGE_CHECKS]
    header = "| library | headings | links | code blocks | tables | junk dropped | ms per page (3 pages) | import ms | installed KiB |"
    print(header + "\n|---|---|---|---|---|---|---:|---:|---:|")
    for name, (distribution, module, convert) in CANDIDATES.items():
        totals: dict[str, list[int]] = {}
        for page, html in pages:
            for key, (got, of) in checks(page, convert(html, page.url)).items():
                sums = totals.setdefault(key, [0, 0])
                sums[0] += got
                sums[1] += of
        times = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            for page, html in pages:
                convert(html, page.url)
            times.append((time.perf_counter() - started) / len(pages))
        cells = [f"{got}/{of}" for got, of in totals.values()]
        version = importlib.metadata.version(distribution)
        print(
            f"| {name} {version} | {' | '.join(cells)} | {1000 * statistics.median(times):.1f} "
            f"| {import_ms(module):.0f} | {installed_kib(distribution):,.0f} |"
        )


if __name__ == "__main__":
    main()
