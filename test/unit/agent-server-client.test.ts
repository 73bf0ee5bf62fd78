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

describe('agent-server error summaries never carry what was sent', () => {
  const key = 'sk-live-LEAK-0123456789abcdefghij';
  it('redacts every sent string of some length wherever the message quotes it', () => {
    const body = JSON.stringify({ exception: `AuthenticationError: invalid api key ${key} for model openai/x`, detail: 'x' });
    const summary = errorSummary(body, [key, 'openai/x', 'abc']);
    expect(summary).not.toContain(key);
    expect(summary).toBe(': AuthenticationError: invalid api key [redacted] for model [redacted]');
    const short = JSON.stringify({ detail: [{ loc: ['body', 'secrets', 'PW'], msg: 'Value error, hunter22 is weak', input: 'hunter22' }] });
    expect(errorSummary(short, ['hunter22'])).toBe(': body.secrets.PW: Value error, [redacted] is weak');
  });

  it('redacts key-like runs that were not sent (derived or re-encoded credentials)', () => {
    const summary = errorSummary(JSON.stringify({ detail: 'token Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6 rejected' }));
    expect(summary).toBe(': token [redacted] rejected');
  });
});
