// Client mistakes get clear 4xx answers in the contract's shapes, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;

beforeAll(async () => {
  app = await startTestApp('errors', { MAX_BODY_SIZE: '16kb' });
  key = await app.keyFor('errors-user');
});
afterAll(() => app.stop());

describe('request errors', () => {
  it('answers 413 JSON for a body over the configured limit', async () => {
    const res = await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'x'.repeat(20_000) } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: 'Request body too large (limit 16kb)' });
  });

  it('answers 413 on tRPC too', async () => {
    const res = await call(app, 'POST', '/trpc/settings.save', { key, body: { json: { llm_model: 'x'.repeat(20_000) } } });
    expect(res.status).toBe(413);
  });

  it('answers 422 json_invalid for malformed JSON', async () => {
    const res = await call(app, 'POST', '/api/settings', {
      key,
      rawBody: '{"llm_model": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'json_invalid', loc: ['body'], msg: 'JSON decode error' }] });
  });

  it('answers 422 when the JSON body is not an object', async () => {
    for (const rawBody of ['[1,2]', '"text"', 'null', '42']) {
      const res = await call(app, 'POST', '/api/settings', { key, rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status, rawBody).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body'], type: 'model_attributes_type' });
    }
  });

  it('parses a body sent without a content type as JSON, as the reference does', async () => {
    const res = await call(app, 'POST', '/api/settings', { key, rawBody: '{"llm_model":"no-content-type"}' });
    expect(res.status).toBe(200);
    expect((await call(app, 'GET', '/api/settings', { key })).body.llm_model).toBe('no-content-type');
  });

  it('answers 415 for a non-JSON content type', async () => {
    const res = await call(app, 'POST', '/api/settings', {
      key,
      rawBody: 'llm_model=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ detail: expect.stringContaining('content-type') });
  });

  it('answers 404 JSON for unknown routes, with or without a key', async () => {
    for (const path of ['/api/nope', '/nope', '/api/v9/things']) {
      const res = await call(app, 'GET', path, { key });
      expect(res).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
    }
  });

  it('rejects strings with NUL characters as a validation error with the field path', async () => {
    const res = await call(app, 'POST', '/api/secrets', { key, body: { name: 'A\u0000B', value: 'v' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ type: 'value_error', loc: ['body', 'name'], msg: 'String should not contain NUL characters' }]);
    const nested = await call(app, 'POST', '/api/settings', {
      key,
      body: { mcp_config: { stdio_servers: [{ name: 'a', command: 'b', args: ['\u0000'] }] } },
    });
    expect(nested.body.detail[0].loc).toEqual(['body', 'mcp_config', 'stdio_servers', 0, 'args', 0]);
  });

  it('sets the no-cache headers of the reference on API responses', async () => {
    const res = await call(app, 'GET', '/api/secrets', { key });
    expect(res.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate, max-age=0');
  });

  it('allows CORS from localhost origins by default and not from others', async () => {
    const allowed = await call(app, 'OPTIONS', '/api/settings', {
      headers: {
        origin: 'http://localhost:3001',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-session-api-key',
      },
    });
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://localhost:3001');
    const foreign = await call(app, 'GET', '/alive', { headers: { origin: 'https://evil.example.com' } });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });
});
