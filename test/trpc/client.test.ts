// The typed tRPC client over real HTTP, as a Next.js app would use it.
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('trpc');
});
afterAll(() => app.stop());

const clientFor = (key: string | null) =>
  createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${app.url}/trpc`, transformer, headers: () => (key ? { 'x-session-api-key': key } : {}) })],
  });

describe('tRPC client', () => {
  it('saves and loads settings and secrets through typed procedures', async () => {
    const trpc = clientFor(await app.keyFor('trpc-user'));
    await expect(trpc.settings.get.query({})).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await trpc.settings.save.mutate({ llm_model: 'openai/gpt-4o', llm_api_key: 'sk-trpc', confirmation_mode: true });
    const settings = await trpc.settings.get.query({});
    expect(settings).toMatchObject({ llm_model: 'openai/gpt-4o', llm_api_key: null, llm_api_key_set: true, confirmation_mode: true });

    await trpc.secrets.create.mutate({ name: 'T', value: 'v' });
    expect(await trpc.secrets.list.query({})).toEqual({ custom_secrets: [{ name: 'T', description: '' }] });
  });

  it('sees what the REST API stored and vice versa (one behaviour, two transports)', async () => {
    const key = await app.keyFor('both-transports');
    await call(app, 'POST', '/api/settings', { key, body: { git_user_name: 'Rest' } });
    const trpc = clientFor(key);
    expect((await trpc.settings.get.query({})).git_user_name).toBe('Rest');
    await trpc.settings.save.mutate({ git_user_email: 'trpc@example.com' });
    expect((await call(app, 'GET', '/api/settings', { key })).body).toMatchObject({
      git_user_name: 'Rest',
      git_user_email: 'trpc@example.com',
    });
  });

  it('answers the web UI options as REST does (/api/options/config)', async () => {
    const key = await app.keyFor('trpc-options');
    const rest = await call(app, 'GET', '/api/options/config', { key });
    expect(rest.status).toBe(200);
    expect(await clientFor(key).options.config.query({})).toEqual(rest.body);
    expect(rest.body.APP_MODE).toBe('oss');
  });

  it('returns typed validation errors with field paths', async () => {
    const trpc = clientFor(await app.keyFor('trpc-validation'));
    const error = await trpc.settings.save
      .mutate({ mcp_config: { stdio_servers: [{ name: 'bad name', command: 'x' }] } } as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const data = (error as TRPCClientError<AppRouter>).data;
    expect(data?.code).toBe('BAD_REQUEST');
    expect(data?.fieldErrors).toContainEqual(expect.objectContaining({ path: ['mcp_config', 'stdio_servers', 0, 'name'] }));
    expect(JSON.stringify(data)).not.toContain('stack');
  });

  it('answers UNAUTHORIZED without a key', async () => {
    await expect(clientFor(null).secrets.list.query({})).rejects.toMatchObject({ data: { code: 'UNAUTHORIZED', httpStatus: 401 } });
  });

  it('stays strict about booleans after REST requests (no shared-schema coercion)', async () => {
    // trpc-to-openapi mutates schemas it coerces (a known pitfall of it): prove tRPC is unaffected.
    const key = await app.keyFor('coercion');
    const trpc = clientFor(key);
    const before = await trpc.settings.save.mutate({ confirmation_mode: 'false' as never }).catch((e: unknown) => e);
    expect(before).toBeInstanceOf(TRPCClientError);
    await call(app, 'POST', '/api/settings', { key, body: { confirmation_mode: false, max_iterations: 3 } });
    await call(app, 'POST', '/api/settings', { key, body: { confirmation_mode: 'false' } });
    const after = await trpc.settings.save.mutate({ confirmation_mode: 'false' as never }).catch((e: unknown) => e);
    expect(after).toBeInstanceOf(TRPCClientError);
    const afterNumber = await trpc.settings.save.mutate({ max_iterations: '7' as never }).catch((e: unknown) => e);
    expect(afterNumber).toBeInstanceOf(TRPCClientError);
    expect((await trpc.settings.get.query({})).confirmation_mode).toBe(false);
  });
});
