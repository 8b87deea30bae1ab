// The items ACP made stable in @agentclientprotocol/sdk 2.4.0, driven with the SDK's *stable*
// entrypoint against the real agent. test_ts_protocol.py runs it and asserts on the JSON summary
// it prints; every raw agent line and client message is in it, for schema validation.
//
//   node ts_protocol_stable.mjs <npm prefix> <workspace> <state dir> <agents as JSON>
//
// agents: {main, retry, faults, fallback}: the argv of each agent process.
//   main     script model; tool names, ask_user through elicitation/create (accept, decline,
//            cancelled by the turn), $/cancel_request for a permission request and an fs read,
//            a client $/cancel_request for a prompt, session/delete (busy, ok, unknown)
//   retry    an OpenAI-compatible model behind a loopback server that answers 429 first: the
//            notice of the retry
//   faults   the journal's first flush fails: _acp_agent/journal_error, and a notice for a
//            client with session.notices, none for one without
//   fallback loads a session whose saved model is not offered there: the notice of the fallback

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { failure, importSdk, startAgent, until, waitForever } from "./ts_support.mjs";

const [prefix, workspace, stateDir, agentsJson] = process.argv.slice(2);
const acp = await importSdk(prefix, "");
const agents = JSON.parse(agentsJson);
const clientInfo = { name: "acp-agent-ts-protocol", version: "1" };
const full = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  session: { notices: {} },
  elicitation: { form: {} },
};

function newLog() {
  return {
    updates: [],
    elicitations: [],
    permissions: [],
    reads: [],
    pending: [],
    aborted: [],
    terminals: [],
  };
}

function clientApp(log, answers) {
  return acp
    .client({ name: clientInfo.name })
    .onNotification("session/update", ({ params }) => {
      log.updates.push(params);
    })
    .onRequest("elicitation/create", ({ params, signal }) => {
      log.elicitations.push(params);
      const answer = answers.shift();
      if (answer === "wait") return waitForever(log, "elicitation/create", params, signal);
      return answer;
    })
    .onRequest("session/request_permission", ({ params, signal }) => {
      log.permissions.push(params);
      if (params.toolCall.toolCallId === "x1") {
        return { outcome: { outcome: "selected", optionId: "allow_once" } };
      }
      return waitForever(log, "session/request_permission", params, signal);
    })
    .onRequest("terminal/create", ({ params }) => {
      log.terminals.push(["create", params.command]);
      return { terminalId: "t1" };
    })
    .onRequest("terminal/wait_for_exit", ({ params, signal }) => {
      log.terminals.push(["wait_for_exit", params.terminalId]);
      return waitForever(log, "terminal/wait_for_exit", params, signal);
    })
    .onRequest("terminal/kill", ({ params }) => {
      log.terminals.push(["kill", params.terminalId]);
      return {};
    })
    .onRequest("terminal/release", ({ params }) => {
      log.terminals.push(["release", params.terminalId]);
      return {};
    })
    .onRequest("terminal/output", () => ({ output: "", truncated: false }))
    .onRequest("fs/read_text_file", ({ params, signal }) => {
      log.reads.push(params.path);
      if (params.path.endsWith("slow.txt")) {
        return waitForever(log, "fs/read_text_file", params, signal);
      }
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest("fs/write_text_file", () => ({}));
}

const updatesOf = (log, sessionId) =>
  log.updates.filter((p) => p.sessionId === sessionId).map((p) => p.update);

async function initialize(ctx, capabilities) {
  return ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: capabilities,
    clientInfo,
  });
}

async function newSession(ctx) {
  return (await ctx.request("session/new", { cwd: workspace, mcpServers: [] })).sessionId;
}

const prompt = (ctx, sessionId, text, options) =>
  ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, options);

// A prompt that ends up waiting on a client request; cancelled with session/cancel once the
// agent's request arrived.
async function cancelWhileWaiting(ctx, log, sessionId, text, method) {
  const before = log.pending.length;
  const answer = prompt(ctx, sessionId, text);
  await until(() => log.pending.length > before, `the agent's ${method}`);
  const waiting = log.pending[log.pending.length - 1].method;
  await ctx.notify("session/cancel", { sessionId });
  const response = await answer;
  await until(() => log.aborted.includes(method), `$/cancel_request for ${method}`);
  return { waiting, stopReason: response.stopReason };
}

async function mainConnection() {
  const log = newLog();
  const answers = [{ action: "accept", content: { answer: "tabs" } }, { action: "decline" }, "wait"];
  const agent = startAgent(acp, agents.main);
  const summary = await clientApp(log, answers).connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx, full);
    const sessionId = await newSession(ctx);
    const kept = await newSession(ctx); // loaded again by the fallback agent

    const asked = await prompt(ctx, sessionId, "read, then ask");
    const cancelledAsk = await cancelWhileWaiting(
      ctx, log, sessionId, "ask and wait", "elicitation/create",
    );
    const cancelledPermission = await cancelWhileWaiting(
      ctx, log, sessionId, "write something", "session/request_permission",
    );
    const cancelledRead = await cancelWhileWaiting(
      ctx, log, sessionId, "read slowly", "fs/read_text_file",
    );
    const cancelledTerminal = await cancelWhileWaiting(
      ctx, log, sessionId, "run it", "terminal/wait_for_exit",
    );

    // The client cancels its own prompt request with $/cancel_request.
    const controller = new AbortController();
    const seen = updatesOf(log, sessionId).length;
    const cancellable = prompt(ctx, sessionId, "a long answer", {
      cancellationSignal: controller.signal,
    });
    await until(() => updatesOf(log, sessionId).length > seen, "the long answer's first chunk");
    controller.abort();
    const cancelledByRequest = await cancellable;

    // session/delete: refused while a turn runs, then done, then the id is unknown.
    const busy = prompt(ctx, sessionId, "keep busy");
    const seenBusy = updatesOf(log, sessionId).length;
    await until(() => updatesOf(log, sessionId).length > seenBusy, "the busy turn's chunk");
    const refused = await failure(ctx.request("session/delete", { sessionId }));
    await ctx.notify("session/cancel", { sessionId });
    const busyStop = (await busy).stopReason;
    const deleted = await ctx.request("session/delete", { sessionId });
    const listed = await ctx.request("session/list", {});
    const again = await failure(ctx.request("session/delete", { sessionId }));
    return {
      init,
      sessionId,
      kept,
      asked: asked.stopReason,
      cancelledAsk,
      cancelledPermission,
      cancelledRead,
      cancelledTerminal,
      cancelledByRequest: cancelledByRequest.stopReason,
      delete: {
        refused,
        busyStop,
        deleted,
        listed: listed.sessions.map((s) => s.sessionId),
        again,
      },
    };
  });
  const exitCode = await agent.stop();
  return { ...summary, log, exitCode, wire: agent.wire };
}

async function oneTurn(argv, capabilities, text) {
  const log = newLog();
  const agent = startAgent(acp, argv);
  const summary = await clientApp(log, []).connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, capabilities);
    const sessionId = await newSession(ctx);
    const response = await prompt(ctx, sessionId, text);
    return { sessionId, stopReason: response.stopReason };
  });
  const exitCode = await agent.stop();
  return { ...summary, log, exitCode, wire: agent.wire };
}

async function fallbackConnection(sessionId) {
  // The session as a differently configured agent left it: its saved model is not offered here.
  const settings = join(stateDir, "sessions", sessionId, "settings.json");
  const saved = { mode: "ask", model: "openai:not-offered-here" };
  writeFileSync(settings, JSON.stringify(saved), { mode: 0o600 });
  const log = newLog();
  const agent = startAgent(acp, agents.fallback);
  const summary = await clientApp(log, []).connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, full);
    await ctx.request("session/load", { sessionId, cwd: workspace, mcpServers: [] });
    await until(
      () => updatesOf(log, sessionId).some((u) => u.sessionUpdate === "notice"),
      "the fallback notice",
    );
    return { sessionId };
  });
  const exitCode = await agent.stop();
  return { ...summary, log, exitCode, wire: agent.wire };
}

const main = await mainConnection();
const retry = await oneTurn(agents.retry, full, "hello");
const faults = await oneTurn(agents.faults, { ...full, elicitation: undefined }, "hello");
const noNotices = await oneTurn(agents.faults, { fs: full.fs, terminal: false }, "hello");
const fallback = await fallbackConnection(main.kept);
process.stdout.write(JSON.stringify({ main, retry, faults, noNotices, fallback }) + "\n");
