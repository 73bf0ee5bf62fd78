// The pause's handoff (src/sandbox/pause-handoff.ts): the agent server is asked first, and one
// that hangs, fails or is gone never holds up the pause beyond the handoff's timeout.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { PauseHandoffRuntime } from '../../src/sandbox/pause-handoff.js';
import type { SandboxRuntime } from '../../src/sandbox/runtime.js';

let agent: http.Server;
let url: string;
const asked: string[] = [];

beforeAll(async () => {
  agent = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url} ${req.headers['x-session-api-key']}`);
    if (req.url?.startsWith('/hang')) return; // never answers
    if (req.url?.startsWith('/old')) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(agent.address() as AddressInfo).port}`;
});
afterAll(async () => {
  agent.closeAllConnections();
  await new Promise((resolve) => agent.close(resolve));
});

function runtime(paused: string[]): SandboxRuntime {
  return { kind: 'process', pause: async (id: string) => void paused.push(id) } as unknown as SandboxRuntime;
}

describe('a pause hands the conversations over first', () => {
  it('asks the agent server with its key, then pauses', async () => {
    const paused: string[] = [];
    await new PauseHandoffRuntime(runtime(paused), async () => ({ url, sessionKey: 'sk-sandbox' }), createLogger('silent')).pause('s1');
    expect(asked.at(-1)).toBe('POST /api/conversations/prepare-for-sandbox-pause sk-sandbox');
    expect(paused).toEqual(['s1']);
  });

  it('pauses anyway when the agent server hangs, is older (404) or is not running', async () => {
    const paused: string[] = [];
    const started = Date.now();
    for (const [id, agentOf] of [
      ['hung', async () => ({ url: `${url}/hang`, sessionKey: 'k' })],
      ['old', async () => ({ url: `${url}/old`, sessionKey: 'k' })],
      ['stopped', async () => null],
      ['unreadable', async () => Promise.reject(new Error('database down'))],
    ] as const) {
      await new PauseHandoffRuntime(runtime(paused), agentOf, createLogger('silent'), 300).pause(id);
    }
    expect(paused).toEqual(['hung', 'old', 'stopped', 'unreadable']);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
