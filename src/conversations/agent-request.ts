// The StartConversationRequest the agent server (OpenHands agent SDK) expects: the agent
// with its LLM, tools and MCP servers, the workspace, the confirmation policy and secrets.
import type { SendMessageRequest } from '../../contract/app-conversations.schema.js';
import type { McpConfig } from '../../contract/mcp.schema.js';
import type { ResolvedSettings } from '../services/settings.service.js';

/** Where the SDK's tools register themselves (tool names as the SDK registers them). */
const TOOL_MODULES: Record<string, string> = {
  terminal: 'openhands.tools.terminal.definition',
  file_editor: 'openhands.tools.file_editor.definition',
  task_tracker: 'openhands.tools.task_tracker.definition',
};

export interface AgentRequestParts {
  conversationId: string;
  settings: ResolvedSettings;
  model: string;
  tools: string[];
  mcp: McpConfig | null;
  projectDir: string;
  initialMessage: SendMessageRequest | null | undefined;
  /** Custom secrets by name, with their values. */
  secrets: { name: string; value: string }[];
  /** GIT_TOKEN as a lookup, so the agent always gets the user's current token. */
  gitTokenLookup: { url: string; accessToken: string } | null;
}

export function startConversationRequest(parts: AgentRequestParts) {
  const { settings } = parts;
  const secrets: Record<string, unknown> = {};
  for (const secret of parts.secrets) secrets[secret.name] = { kind: 'StaticSecret', value: secret.value };
  if (parts.gitTokenLookup) {
    secrets.GIT_TOKEN = {
      kind: 'LookupSecret',
      url: parts.gitTokenLookup.url,
      headers: { 'X-Access-Token': parts.gitTokenLookup.accessToken },
    };
  }
  return {
    conversation_id: parts.conversationId,
    agent: {
      kind: 'Agent',
      llm: {
        // The nested settings' further LLM keyword arguments (temperature…) first: the three below win.
        ...settings.llm_extra,
        usage_id: 'agent',
        model: parts.model,
        ...(settings.llm_base_url ? { base_url: settings.llm_base_url } : {}),
        ...(settings.llm_api_key ? { api_key: settings.llm_api_key } : {}),
      },
      tools: parts.tools.map((name) => ({ name, params: {} })),
      mcp_config: toAgentMcpConfig(parts.mcp),
    },
    workspace: { kind: 'LocalWorkspace', working_dir: parts.projectDir },
    // The agent server imports these to register the tools (it may run with OH_PRELOAD_TOOLS=false).
    tool_module_qualnames: Object.fromEntries(parts.tools.flatMap((name) => (TOOL_MODULES[name] ? [[name, TOOL_MODULES[name]]] : []))),
    confirmation_policy: { kind: settings.confirmation_mode ? 'AlwaysConfirm' : 'NeverConfirm' },
    ...(settings.max_iterations ? { max_iterations: settings.max_iterations } : {}),
    ...(parts.initialMessage ? { initial_message: parts.initialMessage } : {}),
    secrets,
  };
}

/** Our MCP settings in the SDK's shape: {name: MCPServer}. */
function toAgentMcpConfig(mcp: McpConfig | null): Record<string, unknown> {
  if (!mcp) return {};
  const servers: Record<string, unknown> = {};
  mcp.sse_servers.forEach((s, i) => {
    servers[`sse_${i}`] = { url: s.url, transport: 'sse', ...(s.api_key ? { headers: { Authorization: `Bearer ${s.api_key}` } } : {}) };
  });
  mcp.shttp_servers.forEach((s, i) => {
    servers[`shttp_${i}`] = {
      url: s.url,
      transport: 'streamable-http',
      ...(s.timeout ? { timeout: s.timeout } : {}),
      ...(s.api_key ? { headers: { Authorization: `Bearer ${s.api_key}` } } : {}),
    };
  });
  for (const s of mcp.stdio_servers) servers[s.name] = { command: s.command, args: s.args, env: s.env };
  return servers;
}
