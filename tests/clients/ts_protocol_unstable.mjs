// The unstable session methods of @agentclientprotocol/sdk 2.4.0, driven with the SDK's
// `/unstable` entrypoint against the real agent. test_ts_protocol.py runs it and asserts on the
// JSON summary; every raw agent line and client message is in it, for schema validation.
//
//   node ts_protocol_unstable.mjs <npm prefix> <workspace> <agent argv> <second agent argv>
//
// Connection 1: PromptResponse.usage; session/set_title (normalized, empty, unknown, then a
// first prompt that must not replace it); session/status (open, saved after session/close,
// unknown); session/archive of an open session, session/list with each `archived` filter and
// a bad one, archiving twice, an unknown id. Connection 2 (a new agent process): the archive
// state survived; session/unarchive.

import { failure, importSdk, startAgent } from "./ts_support.mjs";

const [prefix, workspace, agentJson, secondJson] = process.argv.slice(2);
const acp = await importSdk(prefix, "/unstable");
const clientInfo = { name: "acp-agent-ts-unstable", version: "1" };

function clientApp(log) {
  return acp.client({ name: clientInfo.name }).onNotification("session/update", ({ params }) => {
    log.updates.push(params);
  });
}

async function initialize(ctx) {
  return ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo,
  });
}

const prompt = (ctx, sessionId, text) =>
  ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

async function listed(ctx, archived) {
  const params = archived === undefined ? {} : { archived };
  const { sessions } = await ctx.request("session/list", params);
  return sessions.map((s) => [s.sessionId, s.archived]);
}

async function firstConnection() {
  const log = { updates: [] };
  const agent = startAgent(acp, JSON.parse(agentJson));
  const summary = await clientApp(log).connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    const sessionId = (await ctx.request("session/new", { cwd: workspace, mcpServers: [] }))
      .sessionId;
    const otherId = (await ctx.request("session/new", { cwd: workspace, mcpServers: [] }))
      .sessionId;
    const usage = (await prompt(ctx, sessionId, "hello")).usage;

    const titled = await ctx.request("session/set_title", {
      sessionId: otherId,
      title: "  Renamed   by the client \n",
    });
    const emptyTitle = await failure(
      ctx.request("session/set_title", { sessionId: otherId, title: " \t " }),
    );
    const unknownTitle = await failure(
      ctx.request("session/set_title", { sessionId: "no-such-session", title: "x" }),
    );
    await prompt(ctx, otherId, "a first prompt, which would title a session");
    const { sessions } = await ctx.request("session/list", { archived: "include" });
    const titleAfterPrompt = sessions.find((s) => s.sessionId === otherId).title;

    const open = (await ctx.request("session/status", { sessionId })).status;
    await ctx.request("session/close", { sessionId });
    const closed = (await ctx.request("session/status", { sessionId })).status;
    const unknownStatus = await failure(
      ctx.request("session/status", { sessionId: "no-such-session" }),
    );

    const answer = await ctx.request("session/archive", { sessionId: otherId });
    const statusAfter = (await ctx.request("session/status", { sessionId: otherId })).status;
    const lists = {
      default: await listed(ctx),
      include: await listed(ctx, "include"),
      only: await listed(ctx, "only"),
    };
    const badFilter = await failure(ctx.request("session/list", { archived: "_bogus" }));
    const again = await ctx.request("session/archive", { sessionId: otherId });
    const unknown = await failure(
      ctx.request("session/archive", { sessionId: "no-such-session" }),
    );
    return {
      init,
      sessionId,
      otherId,
      usage,
      titled,
      emptyTitle,
      unknownTitle,
      titleAfterPrompt,
      status: { open, closed },
      unknownStatus,
      archive: { answer, statusAfter, lists, badFilter, again, unknown },
    };
  });
  const exitCode = await agent.stop();
  return { ...summary, log, exitCode, wire: agent.wire };
}

async function secondConnection(otherId) {
  const log = { updates: [] };
  const agent = startAgent(acp, JSON.parse(secondJson));
  const summary = await clientApp(log).connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const only = await listed(ctx, "only");
    const unarchived = await ctx.request("session/unarchive", { sessionId: otherId });
    const fallback = await listed(ctx);
    return { only, unarchived, default: fallback };
  });
  const exitCode = await agent.stop();
  return { ...summary, log, exitCode, wire: agent.wire };
}

const first = await firstConnection();
const second = await secondConnection(first.otherId);
process.stdout.write(JSON.stringify({ first, second }) + "\n");
