import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

describe('logger redaction', () => {
  it('redacts auth headers and secret fields at any logged depth', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger('info', sink);
    log.info({
      req: { headers: { 'x-session-api-key': 'ohk_secret_header', authorization: 'Bearer t0k' } },
      input: { llm_api_key: 'sk-leak', provider_tokens: { github: { token: 'ghp_leak' } } },
      secret: { value: 'custom-leak' },
      token: 'top-level-leak',
    });
    const out = lines.join('');
    for (const leaked of ['ohk_secret_header', 'Bearer t0k', 'sk-leak', 'ghp_leak', 'custom-leak', 'top-level-leak']) {
      expect(out).not.toContain(leaked);
    }
    expect(out).toContain('[redacted]');
  });
});
