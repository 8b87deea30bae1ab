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
  const updates = [];
  let text = "";
  for await (const update of session.prompt(prompt)) {
    updates.push(update);
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      text += update.content.text;
    }
  }
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
