// Open an exported page in headless Chromium (playwright-core, executablePath: Debian's
// chromium) and print one JSON object: console messages and page errors, every request the page
// made besides itself, what the structure holds, and where the screenshot went.
//
//   node browser_check.mjs PLAYWRIGHT_DIR CHROMIUM PAGE.html SHOT.png USER_DATA_DIR [viewport]
//
// "viewport": the screenshot holds the first screen only (a whole page of a thousand turns is
// taller than Chromium captures in one go).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [playwrightDir, chromium, page_path, shot, userData, extent] = process.argv.slice(2);
const require = createRequire(pathToFileURL(playwrightDir + "/").href);
const { chromium: browserType } = require("playwright-core");

const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

const context = await browserType.launchPersistentContext(userData, {
  executablePath: chromium, headless: true, args: ARGS, viewport: { width: 1100, height: 900 },
});
const console_messages = [];
const page_errors = [];
const requests = [];
const url = pathToFileURL(page_path).href;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => console_messages.push({ type: m.type(), text: m.text() }));
  page.on("pageerror", (e) => page_errors.push(String(e)));
  context.on("request", (r) => { if (r.url() !== url && !r.url().startsWith("data:")) requests.push(r.url()); });
  await page.goto(url, { waitUntil: "load" });
  const structure = await page.evaluate(() => {
    const all = (s) => Array.from(document.querySelectorAll(s));
    return {
      title: document.title,
      turns: all("article.turn").map((a) => a.id),
      messages: all("main > section.message").map((s) => ({ id: s.id, source: s.querySelector(".source")?.textContent })),
      tools: all("section.tool .name").map((n) => n.textContent),
      thoughts_folded: all("details.thought").map((d) => !d.open),
      thought_text_visible: all("details.thought p").some((p) => p.checkVisibility()),
      images: all("img").map((i) => ({ loaded: i.complete && i.naturalWidth > 0, src: i.src.slice(0, 22) })),
      diffs: all("pre.diff").length,
      timeline: all("nav.timeline li a").map((a) => a.getAttribute("href")),
      scripts: all("script").length,
      injected: all("[data-injected], b.injected, img[src^='x'], iframe, object, embed").length,
      body_width: document.body.scrollWidth,
    };
  });
  await page.screenshot({ path: shot, fullPage: extent !== "viewport" });
  // Unfolding a thought shows its text (after the screenshot, which shows them folded).
  let unfolded = null;
  if (structure.thoughts_folded.length) {
    await page.click("details.thought summary");
    unfolded = await page.evaluate(() => document.querySelector("details.thought p").checkVisibility());
  }
  console.log(JSON.stringify({ console: console_messages, page_errors, requests, structure, unfolded, shot }));
} finally {
  await context.close();
}
