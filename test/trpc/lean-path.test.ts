// The lean /trpc path (src/http/trpc-calls.ts) keeps tRPC's HTTP rules: every request below is
// sent to the service and to tRPC's own node:http adapter serving the same router on the same
// dependencies (the oracle), and both must answer alike: the status, the headers tRPC decides
// (content type, Vary, Allow, Retry-After) and the body, error messages and shapes included.
// The service also answers in one write with a Content-Length (tRPC's adapter streams chunks).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appRouter } from '../../routers/index.js';
import { createRequestContext } from '../../src/http/request-context.js';
import { createPipeline, factsOf } from '../../src/http/pipeline.js';
import { keepingVary } from '../../src/http/trpc.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let oracle: http.Server;
let oracleUrl: string;
let key: string;

beforeAll(async () => {
  app = await startTestApp('trpc-lean', { RATE_LIMIT_PER_IP: 'off', RATE_LIMIT_PER_USER: 'off', TRPC_MAX_BATCH: '3' });
  const deps = app.server.deps;
  const begin = createPipeline(deps);
  const requestContext = createRequestContext(deps, 'trpc');
  oracle = http.createServer((req, res) => {
    if (!begin(req, res)) return;
    void nodeHTTPRequestHandler({
      router: appRouter,
      createContext: ({ req, res }) => requestContext(req, res),
      maxBatchSize: deps.config.http.trpcMaxBatch,
      req,
      res: keepingVary(res), // as the service's mount gives it
      path: factsOf(req).path.replace(/^\/trpc\/?/i, ''),
    });
  });
  await new Promise<void>((resolve) => oracle.listen(0, '127.0.0.1', resolve));
  oracleUrl = `http://127.0.0.1:${(oracle.address() as AddressInfo).port}`;
  key = await app.keyFor('lean');
  const saved = await fetch(`${app.url}/trpc/settings.save`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-api-key': key },
    body: JSON.stringify({ json: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-lean', mcp_config: { stdio_servers: [] } } }),
  });
  expect(saved.status).toBe(200);
});
afterAll(async () => {
  await new Promise((resolve) => oracle?.close(resolve));
  await app?.stop();
});

const input = (value: unknown) => encodeURIComponent(JSON.stringify(value));
const one = input({ json: {} });
const two = input({ 0: { json: {} }, 1: { json: {} } });
const JSON_TYPE = { 'content-type': 'application/json' };

interface Case {
  name: string;
  method: 'GET' | 'POST' | 'HEAD' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  anonymous?: boolean;
  /** Compared as text (not one JSON document). */
  text?: boolean;
}

const CASES: Case[] = [
  { name: 'a query', method: 'GET', path: `/trpc/settings.get?input=${one}` },
  { name: 'a query without input', method: 'GET', path: '/trpc/secrets.list' },
  { name: 'a batch of one', method: 'GET', path: `/trpc/settings.get?batch=1&input=${input({ 0: { json: {} } })}` },
  { name: 'a batch of two', method: 'GET', path: `/trpc/settings.get,secrets.list?batch=1&input=${two}` },
  { name: 'a batch with an unknown procedure (207)', method: 'GET', path: `/trpc/settings.get,nope.nothing?batch=1&input=${two}` },
  { name: 'an unknown procedure', method: 'GET', path: `/trpc/nope.nothing?input=${one}` },
  { name: 'a batch path sent without batch=1', method: 'GET', path: `/trpc/settings.get,secrets.list?input=${one}` },
  { name: 'a mutation by GET (405)', method: 'GET', path: `/trpc/settings.save?input=${one}` },
  { name: 'a query by POST (405)', method: 'POST', path: '/trpc/settings.get', headers: JSON_TYPE, body: '{"json":{}}' },
  { name: 'a batch of mutations by GET', method: 'GET', path: `/trpc/settings.save,secrets.create?batch=1&input=${two}` },
  { name: 'a mutation', method: 'POST', path: '/trpc/settings.save', headers: JSON_TYPE, body: '{"json":{"language":"en"}}' },
  {
    name: 'a mutation with invalid input (field errors)',
    method: 'POST',
    path: '/trpc/settings.save',
    headers: JSON_TYPE,
    body: JSON.stringify({ json: { mcp_config: { stdio_servers: [{ name: 'bad name', command: 'x' }] } } }),
  },
  {
    name: 'a batch of mutations, one refused (207)',
    method: 'POST',
    path: '/trpc/settings.save,settings.save?batch=1',
    headers: JSON_TYPE,
    body: JSON.stringify({ 0: { json: { language: 'en' } }, 1: { json: { max_iterations: 'many' } } }),
  },
  { name: 'a mutation with an empty body', method: 'POST', path: '/trpc/settings.save', headers: JSON_TYPE, body: '' },
  {
    name: 'a mutation with a charset',
    method: 'POST',
    path: '/trpc/settings.save',
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: '{"json":{}}',
  },
  { name: 'a mutation without its envelope', method: 'POST', path: '/trpc/settings.save', headers: JSON_TYPE, body: '{"language":"en"}' },
  { name: 'a mutation without a content type (415)', method: 'POST', path: '/trpc/settings.save', body: '{"json":{}}' },
  {
    name: 'a mutation as text (415)',
    method: 'POST',
    path: '/trpc/settings.save',
    headers: { 'content-type': 'text/plain' },
    body: '{"json":{}}',
  },
  { name: 'mixed procedure types in a batch', method: 'GET', path: `/trpc/settings.get,settings.save?batch=1&input=${two}` },
  { name: 'a batch over TRPC_MAX_BATCH', method: 'GET', path: `/trpc/${Array(4).fill('settings.get').join(',')}?batch=1` },
  { name: 'input that is not JSON', method: 'GET', path: '/trpc/settings.get?input=%7Bnot' },
  { name: 'a batch input that is not an object', method: 'GET', path: `/trpc/settings.get,secrets.list?batch=1&input=${input([1, 2])}` },
  {
    name: 'a batch with one input missing',
    method: 'GET',
    path: `/trpc/settings.get,secrets.list?batch=1&input=${input({ 1: { json: {} } })}`,
  },
  { name: 'a path that is not URL-encoding', method: 'GET', path: '/trpc/settings.%E0%A4%A' },
  {
    name: 'a query with a content type on GET',
    method: 'GET',
    path: `/trpc/settings.get?input=${one}`,
    headers: { 'content-type': 'text/plain' },
  },
  { name: 'no key (401)', method: 'GET', path: `/trpc/settings.get?input=${one}`, anonymous: true },
  { name: 'no key, a batch', method: 'GET', path: `/trpc/settings.get,secrets.list?batch=1&input=${two}`, anonymous: true },
  // Left to tRPC's adapter by the service: its answers must stay tRPC's.
  {
    name: 'a streamed batch (trpc-accept: application/jsonl)',
    method: 'GET',
    path: `/trpc/settings.get,secrets.list?batch=1&input=${two}`,
    headers: { 'trpc-accept': 'application/jsonl' },
    text: true,
  },
  { name: 'a HEAD request', method: 'HEAD', path: `/trpc/settings.get?input=${one}`, text: true },
  { name: 'a PUT request', method: 'PUT', path: '/trpc/settings.save', headers: JSON_TYPE, body: '{"json":{}}' },
  { name: 'superjson meta in the input', method: 'GET', path: `/trpc/secrets.list?input=${input({ json: {}, meta: { values: {} } })}` },
];

async function answer(base: string, c: Case) {
  const headers = { ...c.headers, ...(c.anonymous ? {} : { 'x-session-api-key': key }) };
  // A Buffer body: fetch adds no content type of its own.
  const res = await fetch(base + c.path, { method: c.method, headers, body: c.body === undefined ? undefined : Buffer.from(c.body) });
  const text = await res.text();
  const decided = Object.fromEntries(['content-type', 'vary', 'allow', 'retry-after'].map((name) => [name, res.headers.get(name)]));
  const body = c.text ? text : (JSON.parse(text) as unknown);
  return { status: res.status, headers: decided, body, contentLength: res.headers.get('content-length') };
}

/**
 * A streamed batch (jsonl) as the values it resolves to: each call's lines are sent as it
 * resolves, so which call gets which chunk number depends on timing, not on the server.
 */
function streamedValues(body: string): unknown {
  type Ref = [key: string | null, kind: number, chunk: number];
  const lines = body
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { json: unknown }).json);
  const chunks = new Map((lines.slice(1) as [number, number, [unknown[], ...Ref[]]][]).map((l) => [l[0], l]));
  const resolve = (id: number): unknown => {
    const [, status, [[value], ...refs]] = chunks.get(id)!;
    const resolved = structuredClone(value) as Record<string, unknown>;
    for (const [key, , child] of refs) resolved[key!] = resolve(child);
    return { status, value: resolved };
  };
  const head = lines[0] as Record<string, [unknown[], Ref]>;
  return Object.fromEntries(Object.entries(head).map(([call, [, [, , chunk]]]) => [call, resolve(chunk)]));
}

describe('the lean /trpc path', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('answers %s as tRPC itself does', async (_name, c) => {
    const lean = await answer(app.url, c);
    const trpc = await answer(oracleUrl, c);
    const streamed = (body: unknown) => (c.headers?.['trpc-accept'] === 'application/jsonl' ? streamedValues(String(body)) : body);
    expect({ status: lean.status, headers: lean.headers, body: streamed(lean.body) }).toEqual({
      status: trpc.status,
      headers: trpc.headers,
      body: streamed(trpc.body),
    });
  });

  it("keeps the pipeline's Vary: Origin (CORS) beside tRPC's own, on the lean path and on tRPC's adapter", async () => {
    const streamedCase = CASES.find((c) => c.headers?.['trpc-accept'] === 'application/jsonl')!;
    // CORS varies on Origin when it allows one (a localhost page by default).
    const fromPage = (c: Case): Case => ({ ...c, headers: { ...c.headers, origin: 'http://localhost:3000' } });
    for (const c of [CASES[0]!, streamedCase].map(fromPage)) {
      const names = (await answer(app.url, c)).headers.vary!.split(',').map((name) => name.trim());
      expect(names[0]).toBe('Origin');
      expect(names).toContain('trpc-accept');
      expect(new Set(names).size).toBe(names.length);
    }
  });

  it('answers in one piece, with its length', async () => {
    const lean = await answer(app.url, CASES[0]!);
    expect(lean.status).toBe(200);
    expect(Number(lean.contentLength)).toBeGreaterThan(0);
    expect((lean.body as { result: { data: { json: { llm_model: string } } } }).result.data.json.llm_model).toBe('openai/gpt-4o');
  });
});

// Subscriptions by GET take the lean path too (src/http/trpc-subscriptions.ts): the same event
// stream as tRPC's adapter writes, byte for byte, for the ends a stream can have here.
describe('the lean subscription path', () => {
  const subscribe = async (base: string, path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/trpc/${path}`, { headers: { 'x-session-api-key': key, ...headers } });
    return { status: res.status, type: res.headers.get('content-type'), cache: res.headers.get('cache-control'), body: await res.text() };
  };
  const CASES: [string, string, Record<string, string>?][] = [
    [
      'an unknown start task (NOT_FOUND from the procedure)',
      `appConversations.watchStartTask?input=${input({ json: { task_id: 'f'.repeat(32) } })}`,
    ],
    ['an input the schema refuses', `appConversations.watchStartTask?input=${input({ json: { task: 1 } })}`],
    ['an input that is no JSON', 'events.watch?input=%7Bnot-json'],
    [
      'a resume (Last-Event-Id into the input)',
      `events.watch?input=${input({ json: { conversation_id: 'a'.repeat(32) } })}`,
      { 'last-event-id': '7' },
    ],
    ['a resume named in the query', `events.watch?input=${input({ json: { conversation_id: 'a'.repeat(32) } })}&lastEventId=oops`],
  ];
  it.each(CASES)('streams %s as tRPC itself does', async (_name, path, headers) => {
    const lean = await subscribe(app.url, path, headers);
    const trpc = await subscribe(oracleUrl, path, headers);
    expect(lean).toEqual(trpc);
    expect(lean.body).toMatch(/^event: connected\ndata: \{\}\n\n\n/);
    expect(lean.body).toContain('event: serialized-error');
  });

  it('gives the schema the resume id sent as Last-Event-Id', async () => {
    const path = `events.watch?input=${input({ json: { conversation_id: 'a'.repeat(32) } })}`;
    expect((await subscribe(app.url, path, { 'last-event-id': 'not-a-position' })).body).toContain('lastEventId');
  });
});
