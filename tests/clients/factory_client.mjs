// acp-factory (npm, pinned in the Makefile) drives the agent: spawn it as a registered agent
// type, create a session, prompt, answer the permission request through the library's
// callback, and print one JSON object with what the client saw.
//
//   node factory_client.mjs NPM_TOOLS_NODE_MODULES WORKSPACE PROMPT OPTION_ID -- AGENT_ARGV...
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [modules, workspace, prompt, optionId, dashes, ...agentArgv] = process.argv.slice(2);
if (dashes !== "--" || agentArgv.length === 0) throw new Error("usage: ... -- AGENT_ARGV...");
const require = createRequire(pathToFileURL(modules + "/").href);
const { AgentFactory } = require("acp-factory");

const permissions = [];
AgentFactory.register("acp-agent", { command: agentArgv[0], args: agentArgv.slice(1), env: {} });
const agent = await AgentFactory.spawn("acp-agent", {
  env: process.env,
  permissionMode: "callback",
  onPermissionRequest: async (request) => {
    permissions.push({
      toolCall: request.toolCall,
      options: request.options.map((o) => ({ optionId: o.optionId, kind: o.kind })),
    });
    return { outcome: { outcome: "selected", optionId } };
  },
});
try {
  const session = await agent.createSession(workspace);
  // What the library received, recorded at its handler: acp-factory 0.1.14's session.prompt()
  // races the prompt's answer against a pending updateIterator.next() and, when the answer
  // wins, drops the update that pending next() then takes (the last chunk, about 2 runs in 5
  // here). The agent sends every update before the answer; the handler sees them all.
  const updates = [];
  const handler = session.clientHandler;
  const received = handler.sessionUpdate.bind(handler);
  handler.sessionUpdate = async (params) => {
    if (params.sessionId === session.id) updates.push(params.update);
    return received(params);
  };
  for await (const update of session.prompt(prompt)) {
    void update; // the library's own stream, drained as a caller would
  }
  const text = updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");
  console.log(JSON.stringify({
    sessionId: session.id,
    capabilities: agent.capabilities,
    modes: session.modes,
    permissions,
    updates,
    text,
  }));
} finally {
  await agent.close();
}
