// Shared by the TypeScript SDK client scripts (tests/clients, and tests/remote's network client):
// import the SDK, spawn the agent, keep every raw line it writes and every message the client sends
// (the tests validate them against the ACP schema), and wait for conditions on what arrived.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";

// The SDK from the npm prefix `make install` fills (.cache/acp-sdk); `entry` is "" (stable v1),
// "/unstable" (v1 with the unstable features) or an experimental entry ("/experimental/ws-client").
export async function importSdk(prefix, entry) {
  const resolve = createRequire(join(prefix, "package.json")).resolve;
  const path = resolve(`@agentclientprotocol/sdk${entry}`);
  return import(pathToFileURL(path).href);
}

export function startAgent(acp, argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const wire = { agent: [], client: [] };
  const decoder = new TextDecoder();
  let partial = "";
  let cancelled = false;
  const input = new ReadableStream({
    cancel() {
      cancelled = true;
    },
    start(controller) {
      child.stdout.on("data", (chunk) => {
        partial += decoder.decode(chunk, { stream: true });
        let at;
        while ((at = partial.indexOf("\n")) >= 0) {
          wire.agent.push(partial.slice(0, at + 1));
          partial = partial.slice(at + 1);
        }
        if (!cancelled) controller.enqueue(new Uint8Array(chunk));
      });
      child.stdout.on("end", () => {
        if (partial) wire.agent.push(partial);
        if (!cancelled) controller.close();
      });
    },
  });
  const raw = acp.ndJsonStream(Writable.toWeb(child.stdin), input);
  const writer = raw.writable.getWriter();
  const writable = new WritableStream({
    async write(message) {
      wire.client.push(message);
      await writer.write(message);
    },
    async close() {
      await writer.close();
    },
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  async function stop() {
    child.stdin.end(); // the agent exits 0 at EOF (docs/contract.md §1)
    return exited;
  }
  return { stream: { readable: raw.readable, writable }, wire, child, stop };
}

// Resolves once `predicate()` holds (checked every 20 ms); rejects after `ms`.
export async function until(predicate, what, ms = 15000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// A request's error as plain data (or null when it succeeded).
export async function failure(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return { code: error.code, message: error.message, data: error.data ?? null };
  }
}

// A client handler that never answers by itself: it records the request, and when the agent
// cancels it with `$/cancel_request` (the SDK aborts the handler's signal) it records that and
// rejects, so the SDK answers -32800.
export function waitForever(log, method, params, signal) {
  log.pending.push({ method, params });
  return new Promise((_, reject) => {
    signal.addEventListener("abort", () => {
      log.aborted.push(method);
      reject(signal.reason);
    });
  });
}

// A session's updates up to the first of `kind` (or the end of its turn: then `stop` is set).
export async function untilUpdate(session, kind) {
  const seen = [];
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return { seen, stop: message.stopReason };
    seen.push(message.update);
    if (message.update.sessionUpdate === kind) return { seen, stop: null };
  }
}

// A session's updates up to the end of its turn, after those already `seen`.
export async function untilStop(session, seen = []) {
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return { seen, stopReason: message.stopReason };
    seen.push(message.update);
  }
}

// The text of the agent's message chunks among `updates`.
export const text = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");
