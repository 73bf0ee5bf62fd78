import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let key: string;
let userId: string;

beforeAll(async () => {
  app = await startTestApp('secrets');
  userId = 'secret-owner';
  key = await app.keyFor(userId);
});
afterAll(() => app.stop());

describe('/api/secrets', () => {
  it('creates (201), lists names only, renames, and deletes a secret', async () => {
    expect((await call(app, 'GET', '/api/secrets', { key })).body).toEqual({ custom_secrets: [] });

    const created = await call(app, 'POST', '/api/secrets', {
      key,
      body: { name: 'OPENAI_KEY', value: 'sk-custom-123', description: 'for tests' },
    });
    expect(created).toMatchObject({ status: 201, body: { message: 'Secret created successfully' } });
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'NO_DESC', value: 'v2' } });

    const listed = await call(app, 'GET', '/api/secrets', { key });
    expect(listed.body).toEqual({
      custom_secrets: [
        { name: 'OPENAI_KEY', description: 'for tests' },
        { name: 'NO_DESC', description: '' },
      ],
    });
    expect(listed.text).not.toContain('sk-custom-123');

    const renamed = await call(app, 'PUT', '/api/secrets/OPENAI_KEY', { key, body: { name: 'LLM_KEY', description: 'renamed' } });
    expect(renamed).toMatchObject({ status: 200, body: { message: 'Secret updated successfully' } });
    const resolved = await app.server.deps.services.secrets.resolve(userId);
    expect(resolved).toContainEqual({ name: 'LLM_KEY', value: 'sk-custom-123', description: 'renamed' });

    const deleted = await call(app, 'DELETE', '/api/secrets/LLM_KEY', { key });
    expect(deleted).toMatchObject({ status: 200, body: { message: 'Secret deleted successfully' } });
    expect((await call(app, 'GET', '/api/secrets', { key })).body.custom_secrets.map((s: { name: string }) => s.name)).toEqual(['NO_DESC']);
  });

  it('keeps values encrypted in the raw collection', async () => {
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'RAW_CHECK', value: 'plain-value-xyz' } });
    const raw = await app.rawCollection('custom_secrets').find({ userId }).toArray();
    expect(JSON.stringify(raw)).not.toContain('plain-value-xyz');
    expect(raw.find((d) => d.name === 'RAW_CHECK')?.value).toMatch(/^enc:v1:/);
  });

  it('answers 400 {"message"} for a duplicate name and on a rename collision', async () => {
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'DUP', value: '1' } });
    const dup = await call(app, 'POST', '/api/secrets', { key, body: { name: 'DUP', value: '2' } });
    expect(dup).toMatchObject({ status: 400, body: { message: 'Secret DUP already exists' } });
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'OTHER', value: '3' } });
    const collision = await call(app, 'PUT', '/api/secrets/OTHER', { key, body: { name: 'DUP' } });
    expect(collision).toMatchObject({ status: 400, body: { message: 'Secret DUP already exists' } });
    const value = (await app.server.deps.services.secrets.resolve(userId)).find((s) => s.name === 'DUP')?.value;
    expect(value).toBe('1');
  });

  it('answers 404 {"error"} for an unknown secret on update and delete', async () => {
    expect(await call(app, 'PUT', '/api/secrets/NOPE', { key, body: { name: 'X' } })).toMatchObject({
      status: 404,
      body: { error: 'Secret with ID NOPE not found' },
    });
    expect(await call(app, 'DELETE', '/api/secrets/NOPE', { key })).toMatchObject({
      status: 404,
      body: { error: 'Secret with ID NOPE not found' },
    });
  });

  it('validates the body: name and value are required', async () => {
    const res = await call(app, 'POST', '/api/secrets', { key, body: { description: 'x' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 'name'], type: 'missing' }),
        expect.objectContaining({ loc: ['body', 'value'], type: 'missing' }),
      ]),
    );
  });

  it('handles names with URL-special characters in the path', async () => {
    const name = 'my secret/with.dots';
    expect((await call(app, 'POST', '/api/secrets', { key, body: { name, value: 'v' } })).status).toBe(201);
    expect((await call(app, 'DELETE', `/api/secrets/${encodeURIComponent(name)}`, { key })).status).toBe(200);
  });
});
