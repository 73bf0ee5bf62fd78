// Hostile input over real HTTP, REST and tRPC alike: whatever a client sends, the answer is
// a 4xx in the contract's shape, never a 500, and nothing unstorable reaches the database.
// The service's own request counter (/metrics) proves no 5xx was answered along the way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;

beforeAll(async () => {
  app = await startTestApp('hostile', { MAX_JSON_DEPTH: '64', TRPC_MAX_BATCH: '20' });
  key = await app.keyFor('hostile-user');
});
afterAll(() => app.stop());

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);
const deepObject = (depth: number): unknown => (depth === 0 ? 1 : { a: deepObject(depth - 1) });
const processors = (...items: unknown[]) => ({ processors: items });
const stdioEnv = (env: string) => `{"mcp_config":{"stdio_servers":[{"name":"s","command":"c","env":${env}}]}}`;

// [case, method, path, raw JSON body (or undefined), expected status, expected loc of the first detail]
const REST_CASES: [string, string, string, string | undefined, number, unknown[]?][] = [
  [
    'processor key with a dot',
    'POST',
    '/api/v1/app-conversations',
    JSON.stringify(processors({ kind: 'k', 'a.b': 1 })),
    422,
    ['body', 'processors', 0, 'a.b'],
  ],
  [
    'processor key with $',
    'POST',
    '/api/v1/app-conversations',
    JSON.stringify(processors({ kind: 'k', $set: { x: 1 } })),
    422,
    ['body', 'processors', 0, '$set'],
  ],
  ['processor key with NUL', 'POST', '/api/v1/app-conversations', JSON.stringify(processors({ kind: 'k', 'a\u0000b': 1 })), 422],
  [
    'nested key with $',
    'POST',
    '/api/v1/app-conversations',
    JSON.stringify(processors({ kind: 'k', x: { y: { $gt: 1 } } })),
    422,
    ['body', 'processors', 0, 'x', 'y', '$gt'],
  ],
  [
    'nested arrays in a processor',
    'POST',
    '/api/v1/app-conversations',
    JSON.stringify(processors({ kind: 'k', m: [[1, 2]] })),
    422,
    ['body', 'processors', 0, 'm', 0],
  ],
  ['processor nested 30 levels', 'POST', '/api/v1/app-conversations', JSON.stringify(processors({ kind: 'k', d: deepObject(30) })), 422],
  [
    '__proto__ key in a processor',
    'POST',
    '/api/v1/app-conversations',
    '{"processors":[{"kind":"k","__proto__":{"polluted":true}}]}',
    422,
    ['body', 'processors', 0, '__proto__'],
  ],
  ['constructor key in a processor', 'POST', '/api/v1/app-conversations', '{"processors":[{"kind":"k","constructor":{"name":"x"}}]}', 422],
  [
    'bad processors on stream-start',
    'POST',
    '/api/v1/app-conversations/stream-start',
    JSON.stringify(processors({ kind: 'k', 'a.b': 1 })),
    422,
  ],
  [
    'MCP env key constructor',
    'POST',
    '/api/settings',
    stdioEnv('{"constructor":"x"}'),
    422,
    ['body', 'mcp_config', 'stdio_servers', 0, 'env', 'constructor'],
  ],
  [
    'MCP env key __proto__',
    'POST',
    '/api/settings',
    stdioEnv('{"__proto__":"x"}'),
    422,
    ['body', 'mcp_config', 'stdio_servers', 0, 'env', '__proto__'],
  ],
  ['MCP env string with __proto__', 'POST', '/api/settings', stdioEnv('"__proto__=x,A=b"'), 422],
  ['__proto__ at the top of a body', 'POST', '/api/secrets', '{"name":"N","value":"v","__proto__":{"x":1}}', 422, ['body', '__proto__']],
  [
    'provider host that is no host',
    'POST',
    '/api/add-git-providers',
    '{"provider_tokens":{"bitbucket":{"token":"t","host":"a b"}}}',
    422,
    ['body', 'provider_tokens', 'bitbucket', 'host'],
  ],
  ['V0 create with a constructor key', 'POST', '/api/conversations', '{"constructor":{"x":1}}', 422],
  ['JSON nested 6000 levels (settings)', 'POST', '/api/settings', `{"a":${nested(6000)}}`, 422, ['body']],
  ['JSON nested 6000 levels (secrets)', 'POST', '/api/secrets', `{"name":${nested(6000, '{"a":', '}')}}`, 422, ['body']],
  ['JSON nested 6000 levels (app conversation)', 'POST', '/api/v1/app-conversations', nested(6000), 422, ['body']],
  ['JSON nested 6000 levels (webhook events)', 'POST', '/api/v1/webhooks/abc/events/def', nested(6000), 422, ['body']],
  ['JSON nested 65 levels', 'POST', '/api/settings', `{"a":${nested(65)}}`, 422, ['body']],
  ['empty limit', 'GET', '/api/v1/sandboxes/search?limit=', undefined, 422, ['query', 'limit']],
  ['empty limit (V0 list)', 'GET', '/api/conversations?limit=', undefined, 422, ['query', 'limit']],
  ['limit twice', 'GET', '/api/v1/app-conversations/search?limit=1&limit=2', undefined, 422, ['query', 'limit']],
  ['NUL in a path parameter', 'DELETE', '/api/secrets/a%00b', undefined, 422, ['path', 'secret_id']],
  ['NUL in a query value', 'GET', '/api/v1/sandboxes?id=a%00b', undefined, 422],
];

function assertSafe(body: unknown, text: string) {
  expect(text).not.toMatch(/stack|Mongo|FerretDB|ECONN|at \w+ \(/);
  expect(body).toBeDefined();
}

describe('hostile input: REST', () => {
  it.each(REST_CASES)('%s → 4xx', async (_name, method, path, rawBody, status, loc) => {
    const res = await call(app, method, path, {
      key,
      ...(rawBody === undefined ? {} : { rawBody, headers: { 'content-type': 'application/json' } }),
    });
    expect(res.status, res.text.slice(0, 300)).toBe(status);
    assertSafe(res.body, res.text);
    if (loc) expect(res.body.detail[0].loc).toEqual(loc);
  });

  it('answers 415 for look-alike JSON content types and reads application/*+json as JSON', async () => {
    for (const type of ['application/jsonx', 'application/json-seq', 'text/json', 'application/x-json']) {
      const res = await call(app, 'POST', '/api/settings', { key, rawBody: '{"llm_model":"x"}', headers: { 'content-type': type } });
      expect(res.status, type).toBe(415);
      expect(res.body.detail).toContain('content-type');
    }
    const vendor = await call(app, 'POST', '/api/settings', {
      key,
      rawBody: '{"llm_model":"vendor-json"}',
      headers: { 'content-type': 'application/vnd.api+json; charset=utf-8' },
    });
    expect(vendor.status).toBe(200);
  });

  it('ignores unknown keys of initial_message, as the reference does: they are not stored', async () => {
    const res = await call(app, 'POST', '/api/v1/app-conversations', {
      key,
      rawBody: '{"initial_message":{"content":[],"$where":"1","a.b":2}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.body.request.initial_message).toEqual({ role: 'user', content: [], run: false });
    const stored = await app.rawCollection('start_tasks').findOne({ _id: res.body.id } as never);
    expect(stored?.request.initial_message).toEqual({ role: 'user', content: [], run: false });
    await app.rawCollection('start_tasks').deleteMany({});
  });

  it('stored nothing from the refused requests', async () => {
    expect(await app.rawCollection('start_tasks').countDocuments({})).toBe(0);
    expect(await app.rawCollection('custom_secrets').countDocuments({})).toBe(0);
    expect({} as Record<string, unknown>).not.toHaveProperty('polluted');
  });
});

const trpc = (path: string, body: string, extra: Record<string, string> = {}) =>
  call(app, 'POST', `/trpc/${path}`, { key, rawBody: body, headers: { 'content-type': 'application/json', ...extra } });

describe('hostile input: tRPC', () => {
  it.each([
    ['processor key with $', 'appConversations.start', JSON.stringify({ json: processors({ kind: 'k', $set: 1 }) }), 'BAD_REQUEST'],
    ['nested arrays', 'appConversations.start', JSON.stringify({ json: processors({ kind: 'k', m: [[1]] }) }), 'BAD_REQUEST'],
    ['constructor env key', 'settings.save', `{"json":${stdioEnv('{"constructor":"x"}')}}`, 'BAD_REQUEST'],
    ['__proto__ env key', 'settings.save', `{"json":${stdioEnv('{"__proto__":"x"}')}}`, 'BAD_REQUEST'],
    ['JSON nested 6000 levels', 'settings.save', `{"json":{"a":${nested(6000)}}}`, 'UNPROCESSABLE_CONTENT'],
    [
      'superjson meta naming a bigint',
      'secrets.create',
      '{"json":{"name":"N","value":"v"},"meta":{"values":{"name":["bigint"]}}}',
      'BAD_REQUEST',
    ],
    [
      'superjson meta polluting a prototype',
      'secrets.create',
      '{"json":{"name":"N","value":"v"},"meta":{"referentialEqualities":{"name":["__proto__.polluted"]}}}',
      'BAD_REQUEST',
    ],
  ])('%s → 4xx with a typed code', async (_name, path, body, code) => {
    const res = await trpc(path, body);
    expect(res.status, res.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.error.json.data.code).toBe(code);
    assertSafe(res.body, res.text);
    expect({} as Record<string, unknown>).not.toHaveProperty('polluted');
  });

  it('refuses JSON nested too deeply in a GET query input', async () => {
    const input = encodeURIComponent(`{"json":{"a":${nested(1000)}}}`);
    const res = await call(app, 'GET', `/trpc/settings.get?input=${input}`, { key });
    expect(res.status).toBe(422);
    expect(res.body.error.json.data.code).toBe('UNPROCESSABLE_CONTENT');
  });

  it('refuses a batch larger than TRPC_MAX_BATCH before running any call', async () => {
    const calls = Array.from({ length: 21 }, () => 'secrets.create');
    const inputs = Object.fromEntries(calls.map((_, i) => [i, { json: { name: `B${i}`, value: 'v' } }]));
    const res = await trpc(`${calls.join(',')}?batch=1`, JSON.stringify(inputs));
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('Batch call exceeds maximum size');
    expect(await app.rawCollection('custom_secrets').countDocuments({})).toBe(0);
    const allowed = await trpc(
      `${calls.slice(0, 20).join(',')}?batch=1`,
      JSON.stringify(Object.fromEntries(Object.entries(inputs).slice(0, 20))),
    );
    expect(allowed.status).toBe(200);
    expect(await app.rawCollection('custom_secrets').countDocuments({})).toBe(20);
  });
});

describe('hostile input: no server error along the way', () => {
  it('counted no 5xx answer', async () => {
    const metrics = (await call(app, 'GET', '/metrics')).text;
    const lines = metrics.split('\n').filter((l) => l.startsWith('http_requests_total{'));
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.filter((l) => /status="5\d\d"/.test(l))).toEqual([]);
  });
});
