// A client written with the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) over its
// experimental network transports, driving the real agent started with `serve --listen`.
// test_ts_remote.py runs it and asserts on the JSON summary it prints on stdout.
//
//   node [--experimental-websocket] ts_remote_client.mjs <npm prefix> <workspace> <ws|http> <url> <token>
//
// Transports: `experimental/ws-client` (createWebSocketStream, with Node's WebSocket given the
// Authorization header) and `experimental/http-client` (createHttpStream, headers on every
// POST/GET/DELETE). Connection 1: initialize, session/new, a prompt whose tools make the agent
// call fs/read_text_file, session/request_permission and fs/write_text_file (answered here), a
// prompt cancelled while it streams, then a prompt left running while the connection is closed
// (the agent cancels it). Connection 2 (the reconnect rule of ws-stream.d.ts: a new stream,
// initialize, check loadSession, session/load): the replay, then one more prompt. Every message
// the agent sent and every one this client sent is in the summary, for the schema check.

import { readFileSync, writeFileSync } from "node:fs";

import { importSdk, text, untilStop, untilUpdate } from "../clients/ts_support.mjs";

const [prefix, workspace, transport, url, token] = process.argv.slice(2);
const acp = await importSdk(prefix, "");
const headers = { Authorization: `Bearer ${token}` };

// Node's WebSocket (undici) takes headers in its init object, not a third argument.
class AuthorizedWebSocket extends WebSocket {
  constructor(target, protocols, options) {
    super(target, { protocols: protocols ?? [], headers: options?.headers ?? {} });
  }
}

async function openStream() {
  if (transport === "ws") {
    const { createWebSocketStream } = await importSdk(prefix, "/experimental/ws-client");
    return createWebSocketStream(url, { headers, WebSocket: AuthorizedWebSocket });
  }
  const { createHttpStream } = await importSdk(prefix, "/experimental/http-client");
  return createHttpStream(url, { headers });
}

// The stream, with every message in both directions kept on the way.
async function recorded() {
  const stream = await openStream();
  const wire = { agent: [], client: [] };
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        wire.agent.push(JSON.stringify(message) + "\n");
        controller.enqueue(message);
      },
    }),
  );
  const writer = stream.writable.getWriter();
  const writable = new WritableStream({
    async write(message) {
      wire.client.push(message);
      await writer.write(message);
    },
    async close() {
      await writer.close();
    },
    async abort() {
      await writer.close();
    },
  });
  return { stream: { readable, writable }, wire };
}

function clientApp(log) {
  return acp
    .client({ name: "acp-agent-ts-remote-test" })
    .onNotification("session/update", ({ params }) => {
      log.updates.push(params.update);
    })
    .onRequest("session/request_permission", ({ params }) => {
      log.permissions.push(params);
      const allow = params.options.find((option) => option.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      log.reads.push(params.path);
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      log.writes.push(params.path);
      writeFileSync(params.path, params.content);
      return {};
    });
}

const capabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
const clientInfo = { name: "acp-agent-ts-remote-test", version: "1" };
const newLog = () => ({ updates: [], permissions: [], reads: [], writes: [] });

async function initialize(ctx) {
  return ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: capabilities,
    clientInfo,
  });
}

async function firstConnection() {
  const log = newLog();
  const { stream, wire } = await recorded();
  let dropped;
  const summary = await clientApp(log).connectWith(stream, async (ctx) => {
    const init = await initialize(ctx);
    const session = await ctx.buildSession(workspace).start();
    const sessionId = session.sessionId;

    // 1. tools: read (fs), write (permission, then fs), then streamed text.
    const toolsPrompt = session.prompt("use the tools");
    const toolsDone = await untilStop(session);
    const toolsResponse = await toolsPrompt;

    // 2. cancel while the model streams (the script hangs after its chunks).
    const slowPrompt = session.prompt("take your time");
    const beforeCancel = await untilUpdate(session, "agent_message_chunk");
    await ctx.notify("session/cancel", { sessionId });
    const cancelled = await untilStop(session, beforeCancel.seen);
    const cancelResponse = await slowPrompt;

    // 3. a prompt left running when the connection goes away.
    dropped = session.prompt("still running when I leave");
    dropped.catch(() => undefined);
    const running = await untilUpdate(session, "agent_message_chunk");
    return {
      init,
      sessionId,
      tools: {
        stopReason: toolsResponse.stopReason,
        statuses: toolsDone.seen
          .filter((u) => u.sessionUpdate === "tool_call_update")
          .map((u) => [u.toolCallId, u.status ?? null]),
        text: text(toolsDone.seen),
      },
      cancel: { stopReason: cancelResponse.stopReason, text: text(cancelled.seen) },
      runningText: text(running.seen),
    };
  });
  // connectWith closed the stream: the WebSocket closes, or the HTTP connection is DELETEd.
  return { ...summary, log, wire };
}

async function secondConnection(sessionId) {
  const log = newLog();
  const { stream, wire } = await recorded();
  const summary = await clientApp(log).connectWith(stream, async (ctx) => {
    const init = await initialize(ctx);
    if (!init.agentCapabilities?.loadSession) throw new Error("agent does not advertise load");
    const response = await ctx.request("session/load", {
      sessionId,
      cwd: workspace,
      mcpServers: [],
    });
    // Over HTTP the replay travels on the session stream, the answer on the connection's
    // (server.js pendingResponseRoute): wait for the replay's last agent text to arrive.
    for (let i = 0; i < 200 && !text(log.updates).includes("partial"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const replay = [...log.updates];
    // With a detach grace (§13) the turn left running goes on and the answer says so: stop it.
    const runningTurn = response?._meta?.acp_agent?.runningTurn ?? null;
    if (runningTurn) await ctx.notify("session/cancel", { sessionId });
    const after = await ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "after the reconnect" }],
    });
    return { response, replay, runningTurn, afterStopReason: after.stopReason };
  });
  return { ...summary, log, wire };
}

const first = await firstConnection();
const second = await secondConnection(first.sessionId);
process.stdout.write(JSON.stringify({ transport, first, second }) + "\n");
process.exit(0);
