// The schemathesis helper runs the real CLI from the cache against small APIs served on
// 127.0.0.1: one that keeps its OpenAPI promises and one that fails with a server error on odd ids.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSchemathesis } from '../helpers/schemathesis.js';

const KEY = 'st-helper-secret-key';

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'items', version: '1' },
  paths: {
    '/api/items/{id}': {
      get: {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
        responses: {
          200: {
            description: 'the item',
            content: { 'application/json': { schema: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } } } },
          },
          401: { description: 'no key', content: { 'application/json': { schema: { type: 'object' } } } },
          405: { description: 'other methods', content: { 'application/json': { schema: { type: 'object' } } } },
          422: { description: 'not an integer', content: { 'application/json': { schema: { type: 'object' } } } },
        },
      },
    },
  },
};

function itemsApi(failOnOddIds: boolean): http.Server {
  return http.createServer((req, res) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/openapi.json') return send(200, DOCUMENT);
    const match = /^\/api\/items\/([^/]*)$/.exec(url.pathname);
    if (!match) return send(404, { detail: 'Not Found' });
    if (req.method !== 'GET') return send(405, { detail: 'Method Not Allowed' }, { allow: 'GET' });
    if (req.headers['x-session-api-key'] !== KEY) return send(401, { detail: 'Unauthorized' });
    const raw = decodeURIComponent(match[1] ?? '');
    const id = Number(raw);
    if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(id)) return send(422, { detail: 'id must be an integer' });
    if (failOnOddIds && Math.abs(id % 2) === 1) return send(500, { detail: 'boom' });
    return send(200, { id });
  });
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let good: http.Server;
let broken: http.Server;
let goodUrl: string;
let brokenUrl: string;

beforeAll(async () => {
  good = itemsApi(false);
  broken = itemsApi(true);
  goodUrl = await listen(good);
  brokenUrl = await listen(broken);
});

afterAll(async () => {
  await Promise.all([good, broken].map((s) => new Promise((resolve) => s?.close(resolve))));
});

describe('schemathesis helper', () => {
  it('passes an API that keeps its document, counting operations, cases and checks', { timeout: 120_000 }, async () => {
    const result = await runSchemathesis({
      name: 'helper-good',
      schemaUrl: `${goodUrl}/openapi.json`,
      headers: { 'X-Session-API-Key': KEY },
      maxExamples: 30,
      seed: 1,
    });
    expect(result.failures, result.output).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(result.operations).toMatchObject({ total: 1, selected: 1, tested: 1 });
    expect(result.testCases.generated).toBeGreaterThan(0);
    expect(result.checksRun).toBeGreaterThanOrEqual(result.testCases.generated);
  });

  it('reports a server error with its code, and never prints the key', { timeout: 120_000 }, async () => {
    const result = await runSchemathesis({
      name: 'helper-broken',
      schemaUrl: `${brokenUrl}/openapi.json`,
      headers: { 'X-Session-API-Key': KEY },
      maxExamples: 30,
      seed: 1,
    });
    expect(result.exitCode).toBe(1);
    expect(result.failures.map((f) => f.code)).toContain('ST101');
    expect(result.output).toContain('[Filtered]');
    expect(result.output).not.toContain(KEY);
  });
});
