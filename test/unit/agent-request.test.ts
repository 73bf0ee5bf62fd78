// The agent server's start request names the SDK's tools as the sandbox's agent server registers
// them: the terminal tool is `terminal` since 1.0.0 and `bash` in the 1.0.0a releases (the d6 web
// UI's generation, src/sandbox/service/sandbox-specs.service.ts), each with the module that registers it.
import { describe, expect, it } from 'vitest';
import { startConversationRequest, type AgentRequestParts } from '../../src/conversations/start/agent-request.js';

const parts = (agentServerVersion: string | null): AgentRequestParts => ({
  conversationId: 'c1',
  request: { initial_message: null } as unknown as AgentRequestParts['request'],
  settings: {
    confirmation_mode: false,
    registered_marketplaces: [],
    title_generation_prompt: null,
  } as unknown as AgentRequestParts['settings'],
  llm: { model: 'openai/stub' },
  tools: ['terminal', 'file_editor', 'task_tracker'],
  mcp: null,
  projectDir: '/workspace/project',
  secrets: [],
  gitTokenLookup: null,
  agentServerVersion,
});

describe('the tools of a start request', () => {
  it.each([null, '1.58.0', '1.1.0', '1.0.0'])('agent server %s: the terminal tool is `terminal`', (version) => {
    const request = startConversationRequest(parts(version));
    expect(request.agent.tools.map((t) => t.name)).toEqual(['terminal', 'file_editor', 'task_tracker']);
    expect(request.tool_module_qualnames).toMatchObject({ terminal: 'openhands.tools.terminal.definition' });
  });

  it('agent server 1.0.0a6: the terminal tool is `bash`, registered by execute_bash', () => {
    const request = startConversationRequest(parts('1.0.0a6'));
    expect(request.agent.tools.map((t) => t.name)).toEqual(['bash', 'file_editor', 'task_tracker']);
    expect(request.tool_module_qualnames).toEqual({
      bash: 'openhands.tools.execute_bash.definition',
      file_editor: 'openhands.tools.file_editor.definition',
      task_tracker: 'openhands.tools.task_tracker.definition',
    });
  });
});
