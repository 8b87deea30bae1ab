// A client written with the official TypeScript SDK (@agentclientprotocol/sdk 2.x: the `client()`
// app and `connectWith`), driving the real agent. test_ts_sdk.py runs it and asserts on the JSON
// summary it prints on stdout.
//
//   node ts_client.mjs <npm prefix> <workspace> <agent argv as JSON> <second agent argv as JSON>
//
// The SDK is imported from the npm prefix `make install` fills (.cache/acp-sdk), resolved the way
// a package there would resolve it.
//
// Connection 1: initialize, session/new (SessionBuilder), a prompt whose tool calls make the agent
// call fs/read_text_file, session/request_permission and fs/write_text_file (answered here), a
// prompt cancelled while it streams, the extension methods _acp_agent/inject, _session/steering
// during a running turn and while idle, and _acp_agent/when_idle. Connection 2 (a new agent
// process): session/load, collecting the replay. Every raw line each agent wrote and every message
// this client sent is in the summary, for the test to validate against the ACP schema.

import { readFileSync, writeFileSync } from "node:fs";

import { importSdk, startAgent, text, untilStop, untilUpdate } from "./ts_support.mjs";

const [prefix, workspace, agentJson, secondAgentJson] = process.argv.slice(2);
const acp = await importSdk(prefix, "");

function clientApp(log) {
  return acp
    .client({ name: "acp-agent-ts-test" })
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
      try {
        return { content: readFileSync(params.path, "utf8") };
      } catch {
        throw acp.RequestError.resourceNotFound(params.path);
      }
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      log.writes.push(params.path);
      writeFileSync(params.path, params.content);
      return {};
    });
}

const capabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
const clientInfo = { name: "acp-agent-ts-test", version: acp.PROTOCOL_VERSION.toString() };

async function firstConnection() {
  const log = { updates: [], permissions: [], reads: [], writes: [] };
  const agent = startAgent(acp, JSON.parse(agentJson));
  const summary = await clientApp(log).connectWith(agent.stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: capabilities,
      clientInfo,
    });
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

    // 3. extension methods: inject while idle; steer a running turn; steer while idle.
    const injected = await ctx.request("_acp_agent/inject", {
      sessionId,
      content: "The user prefers tabs.",
    });
    const runningPrompt = session.prompt("a long job");
    const running = await untilUpdate(session, "agent_message_chunk");
    const steeredRunning = await ctx.request("_session/steering", {
      sessionId,
      prompt: [{ type: "text", text: "also mention tabs" }],
    });
    const steeredTurn = await untilStop(session, running.seen);
    const steeredResponse = await runningPrompt;
    const steeredIdle = await ctx.request("_session/steering", {
      sessionId,
      prompt: [{ type: "text", text: "and one more thing" }],
    });
    const idle = await ctx.request("_acp_agent/when_idle", { sessionId });
    let unknown;
    try {
      await ctx.request("_acp_agent/no_such_method", { sessionId });
      unknown = { error: null };
    } catch (error) {
      unknown = { error: { code: error.code, message: error.message } };
    }
    session.dispose();
    return {
      init,
      sessionId,
      newSession: session.newSessionResponse,
      tools: {
        stopReason: toolsResponse.stopReason,
        viaQueue: toolsDone.stopReason,
        kinds: toolsDone.seen.map((u) => u.sessionUpdate),
        statuses: toolsDone.seen
          .filter((u) => u.sessionUpdate === "tool_call_update")
          .map((u) => [u.toolCallId, u.status ?? null]),
        text: text(toolsDone.seen),
      },
      cancel: {
        stopReason: cancelResponse.stopReason,
        viaQueue: cancelled.stopReason,
        text: text(cancelled.seen),
      },
      inject: injected,
      steering: {
        running: steeredRunning,
        turnStopReason: steeredResponse.stopReason,
        turnText: text(steeredTurn.seen),
        turnUpdates: steeredTurn.seen,
        idle: steeredIdle,
        whenIdle: idle,
      },
      unknownExtension: unknown,
    };
  });
  const exitCode = await agent.stop(); // the agent exits 0 at EOF (docs/contract.md §1)
  return { ...summary, log, exitCode, wire: agent.wire };
}

async function secondConnection(sessionId) {
  const log = { updates: [], permissions: [], reads: [], writes: [] };
  const agent = startAgent(acp, JSON.parse(secondAgentJson));
  const summary = await clientApp(log).connectWith(agent.stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: capabilities,
      clientInfo,
    });
    if (!init.agentCapabilities?.loadSession) throw new Error("agent does not advertise load");
    const response = await ctx.request("session/load", {
      sessionId,
      cwd: workspace,
      mcpServers: [],
    });
    const replay = [...log.updates];
    return { response, replay };
  });
  const exitCode = await agent.stop(); // the agent exits 0 at EOF (docs/contract.md §1)
  return { ...summary, exitCode, wire: agent.wire };
}

const first = await firstConnection();
const second = await secondConnection(first.sessionId);
process.stdout.write(JSON.stringify({ sdk: "2.x", first, second }) + "\n");
