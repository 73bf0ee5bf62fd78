import { describe, expect, it } from 'vitest';
import { errorSummary } from '../../src/agent-server/client.js';

describe('agent-server error summaries', () => {
  it('keeps the messages and drops the echoed input of validation errors', () => {
    const body = JSON.stringify({
      detail: [
        { type: 'string_type', loc: ['body', 'agent', 'llm', 'api_key'], msg: 'Input should be a valid string', input: 'sk-secret-key' },
      ],
    });
    const summary = errorSummary(body);
    expect(summary).toBe(': body.agent.llm.api_key: Input should be a valid string');
    expect(summary).not.toContain('sk-secret-key');
  });
  it('keeps a plain detail or exception, and nothing from a non-JSON body', () => {
    expect(errorSummary('{"detail":"Conversation already running"}')).toBe(': Conversation already running');
    expect(errorSummary('{"detail":"Internal Server Error","exception":"ToolDefinition x is not registered"}')).toBe(
      ': ToolDefinition x is not registered',
    );
    expect(errorSummary('<html>sk-secret</html>')).toBe('');
  });
});
