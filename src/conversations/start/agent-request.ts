// The StartConversationRequest the agent server (OpenHands agent SDK) expects: the agent
// with its LLM, tools and MCP servers, the workspace, the confirmation policy and secrets.
import type { AppConversationStartRequest } from '../../../contract/app-conversations.schema.js';
import { agentServerMap } from '../../services/settings/mcp-servers.js';
import type { McpWith } from '../../services/settings/settings-secrets.js';
import type { AgentLlm } from '../../llm-gateway/agent-llm.js';
import type { Marketplace } from '../../../contract/settings-v1.schema.js';
import type { ResolvedSettings } from '../../services/settings/settings.service.js';
import { planPath, PLANNING_BOUNDARIES, withPluginParameters } from './start-request.js';

/** Where the SDK's tools register themselves (tool names as the SDK registers them). */
const TOOL_MODULES: Record<string, string> = {
  terminal: 'openhands.tools.terminal.definition',
  file_editor: 'openhands.tools.file_editor.definition',
  task_tracker: 'openhands.tools.task_tracker.definition',
  glob: 'openhands.tools.glob.definition',
  grep: 'openhands.tools.grep.definition',
  planning_file_editor: 'openhands.tools.planning_file_editor.definition',
  bash: 'openhands.tools.execute_bash.definition',
};
/** The terminal tool's name in agent server 1.0.0a* (1.0.0 renamed it), which the d6 web UI's OpenHands 0.62 pins. */
const toolNameFor = (name: string, agentServerVersion: string | null) =>
  name === 'terminal' && agentServerVersion?.startsWith('1.0.0a') ? 'bash' : name;
/** A planning agent's tools (the SDK's planning preset): it reads the code and writes only its plan. */
const PLANNING_TOOLS = ['glob', 'grep', 'planning_file_editor'];

export interface AgentRequestParts {
  conversationId: string;
  /** The start request: its first message, system message suffix, plugins, observability and agent type. */
  request: AppConversationStartRequest;
  settings: ResolvedSettings;
  /** The agent's LLM: through the gateway (its URL and the conversation's token) or the owner's own (src/llm-gateway/agent-llm.ts). */
  llm: AgentLlm;
  tools: string[];
  mcp: McpWith<string | null> | null;
  projectDir: string;
  /** Custom secrets by name, with their values. */
  secrets: { name: string; value: string }[];
  /** GIT_TOKEN as a lookup, so the agent always gets the user's current token. */
  gitTokenLookup: { url: string; accessToken: string } | null;
  /** The sandbox spec's agent-server version, where it names one. */
  agentServerVersion: string | null;
  /** The project's hooks (.openhands/hooks.json, read by the agent server): run only when the request carries them. */
  hookConfig?: Record<string, unknown> | null;
}

export function startConversationRequest(parts: AgentRequestParts) {
  const { settings, request } = parts;
  const secrets: Record<string, unknown> = {};
  for (const secret of parts.secrets) secrets[secret.name] = { kind: 'StaticSecret', value: secret.value };
  if (parts.gitTokenLookup) {
    secrets.GIT_TOKEN = {
      kind: 'LookupSecret',
      url: parts.gitTokenLookup.url,
      headers: { 'X-Access-Token': parts.gitTokenLookup.accessToken },
    };
  }
  const planning = request.agent_type === 'plan';
  const tools = planning
    ? PLANNING_TOOLS.map((name) =>
        name === 'planning_file_editor'
          ? { name, params: { plan_path: planPath(parts.projectDir, request.git_provider) } }
          : { name, params: {} },
      )
    : parts.tools.map((name) => ({ name: toolNameFor(name, parts.agentServerVersion), params: {} }));
  const suffix = [planning ? PLANNING_BOUNDARIES : null, request.system_message_suffix || null].filter(Boolean).join('\n\n');
  const initialMessage = withPluginParameters(request.initial_message, request.plugins);
  return {
    conversation_id: parts.conversationId,
    agent: {
      kind: 'Agent',
      llm: {
        // The nested settings' further LLM keyword arguments (temperature…) first: the three below win.
        ...settings.llm_extra,
        usage_id: 'agent',
        ...parts.llm,
      },
      tools,
      mcp_config: agentServerMap(parts.mcp),
      ...agentContext(suffix, parts.agentServerVersion, settings.registered_marketplaces),
      ...(planning ? { system_prompt_filename: 'system_prompt_planning.j2' } : {}),
    },
    workspace: { kind: 'LocalWorkspace', working_dir: parts.projectDir },
    // The agent server imports these to register the tools (it may run with OH_PRELOAD_TOOLS=false).
    tool_module_qualnames: Object.fromEntries(tools.flatMap(({ name }) => (TOOL_MODULES[name] ? [[name, TOOL_MODULES[name]]] : []))),
    confirmation_policy: { kind: settings.confirmation_mode ? 'AlwaysConfirm' : 'NeverConfirm' },
    ...(settings.max_iterations ? { max_iterations: settings.max_iterations } : {}),
    // The title prompt (settings title_generation_prompt): the SDK names it `prompt`; 1.0.0a6 has none.
    ...(settings.title_generation_prompt && !legacyAgentServer(parts.agentServerVersion)
      ? { prompt: settings.title_generation_prompt }
      : {}),
    ...(initialMessage ? { initial_message: initialMessage } : {}),
    ...(request.plugins?.length
      ? { plugins: request.plugins.map((p) => ({ source: p.source, ref: p.ref ?? null, repo_path: p.repo_path ?? null })) }
      : {}),
    ...(parts.hookConfig ? { hook_config: parts.hookConfig } : {}),
    ...(request.observability_span_name ? { observability_span_name: request.observability_span_name } : {}),
    ...(request.observability_tags?.length ? { observability_tags: request.observability_tags } : {}),
    ...(request.observability_metadata ? { observability_metadata: request.observability_metadata } : {}),
    secrets,
  };
}

/**
 * The agent's context: the system message's suffix, and the user's own skills (~/.openhands/skills
 * in the sandbox, what a user or an earlier conversation of the sandbox put there) loaded by the
 * 2026 agent servers (the SDK's default leaves them out; agent server 1.0.0a6 has no such field).
 */
function agentContext(
  suffix: string,
  agentServerVersion: string | null,
  marketplaces: readonly Marketplace[],
): { agent_context?: Record<string, unknown> } {
  const legacy = legacyAgentServer(agentServerVersion);
  const context = {
    ...(suffix ? { system_message_suffix: suffix } : {}),
    ...(legacy ? {} : { load_user_skills: true }),
    ...(legacy || marketplaces.length === 0 ? {} : { registered_marketplaces: marketplaces }),
  };
  return Object.keys(context).length > 0 ? { agent_context: context } : {};
}

/** Agent server 1.0.0a6 (the d6 web UI's): no user skills, marketplaces or title prompt. */
export const legacyAgentServer = (version: string | null) => version?.startsWith('1.0.0a') ?? false;
