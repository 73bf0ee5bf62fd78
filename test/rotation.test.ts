// Key rotation: `cli encryption rotate` re-encrypts every stored secret under the new
// ENCRYPTION_KEY while the old one is listed in ENCRYPTION_KEY_PREVIOUS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointSecretContext } from '../models/index.js';
import { ConversationStore, sealContext } from '../src/conversations/records/store.js';
import { generateKeyText, SecretBox } from '../src/crypto.js';
import { envContext, keyContext, openEnv, openSecretKey, secretKeyContext } from '../src/sandbox/service/sandbox-records.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from './helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from './helpers/fake-git-provider.js';
import { runCli } from './helpers/processes.js';

const oldKey = generateKeyText();
const newKey = generateKeyText();
const dbName = uniqueDbName('rotation');
let provider: FakeGitProvider;
let app: TestApp;
let webhook: { id: string; secret: string; previous: string };
let orgId: string;
let automationKey: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_rotate');
  app = await startTestApp('rotation', {
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: oldKey,
    GITHUB_API_URL: provider.url,
    ADMIN_USERS: 'rotor',
  });
  const key = await app.keyFor('rotor');
  // An organisation's LLM key (rotor is an administrator: ADMIN_USERS).
  const org = await call(app, 'POST', '/api/organizations', { key, body: { name: 'Rotating' } });
  orgId = org.body.id;
  await call(app, 'PATCH', `/api/organizations/${orgId}/settings`, { key, body: { llm_api_key: 'sk-org-rotate' } });
  await call(app, 'POST', `/api/organizations/${orgId}/secrets`, { key, body: { name: 'ORG_ROT', value: 'org-secret-rotate' } });
  await call(app, 'POST', '/api/settings', {
    key,
    body: { llm_api_key: 'sk-rotate', mcp_config: { sse_servers: [{ url: 'https://m.example.com', api_key: 'mcp-rotate' }] } },
  });
  await call(app, 'POST', '/api/v1/settings/profiles/rot', {
    key,
    body: { llm: { model: 'openai/gpt-4o', api_key: 'sk-profile-rotate' } },
  });
  await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_rotate' } } } });
  await call(app, 'POST', '/api/secrets', { key, body: { name: 'ROT', value: 'custom-rotate' } });
  // The key automations act with (kept sealed to be handed out again).
  automationKey = await app.server.deps.services.automations.keyFor('rotor', 'rotor');
  // A webhook endpoint whose secret was rotated: its current and its previous secret.
  const endpoint = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: 'https://hooks.example.com/in' } });
  const rotatedSecret = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.body.id}/rotate-secret`, { key, body: {} });
  webhook = { id: endpoint.body.id, secret: rotatedSecret.body.secret, previous: endpoint.body.secret };
  // A live sandbox's session key and a start task's MCP override are secrets too; seeded as the
  // service writes them (same associated data), since starting a real sandbox is not the point here.
  const old = SecretBox.fromStrings(oldKey);
  const now = new Date();
  await app.rawCollection('sandboxes').insertOne({
    _id: 'sbxrotate' as never,
    userId: 'rotor',
    specId: 'default',
    runtime: 'process',
    sessionApiKey: old.encrypt('session-rotate', keyContext('sbxrotate')),
    secretKey: old.encrypt('sealing-rotate', secretKeyContext('sbxrotate')),
    sealedEnv: old.encrypt(JSON.stringify({ FINISH_TOKEN: 'env-rotate' }), envContext('sbxrotate')),
    desired: 'paused',
    createdAt: now,
    updatedAt: now,
  });
  await app.rawCollection('start_tasks').insertOne({
    _id: 'taskrotate' as never,
    userId: 'rotor',
    status: 'ERROR',
    request: {},
    mcpConfig: old.encrypt(
      JSON.stringify({ sse_servers: [{ url: 'https://o.example.com', api_key: 'override-rotate' }] }),
      sealContext('taskrotate', 'mcpConfig'),
    ),
    requestSecrets: old.encrypt(JSON.stringify({ GIVEN: 'request-rotate' }), sealContext('taskrotate', 'requestSecrets')),
    conversationId: 'c'.repeat(32),
    createdAt: now,
    updatedAt: now,
  });
  await app.stop();
});
afterAll(() => provider.close());

describe('encryption key rotation', () => {
  it('re-encrypts every secret under the new key, after which the old key is not needed', async () => {
    const env = { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: newKey, ENCRYPTION_KEY_PREVIOUS: oldKey };
    const rotated = await runCli(['encryption', 'rotate'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    // settings (the LLM key, the MCP server's key, the LLM profile's key, the GitHub token), a custom
    // secret, a webhook endpoint's two secrets, an organisation's LLM key and secret, a sandbox's session key,
    // sealing key and environment, a start task's MCP override and request secrets, an automation key
    expect(rotated.stdout).toMatch(/re-encrypted 15 values in 8 documents/);

    const after = await startTestApp('rotation-after', { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: newKey });
    try {
      const services = after.server.deps.services;
      expect((await services.settings.resolve('rotor'))?.llm_api_key).toBe('sk-rotate');
      expect((await services.settings.resolve('rotor'))?.mcp_config?.sse_servers[0]?.api_key).toBe('mcp-rotate');
      expect((await services.gitProviders.resolve('rotor')).github?.token).toBe('ghp_rotate');
      expect((await services.llmProfiles.asKwargs('rotor', true)).profiles.rot?.api_key).toBe('sk-profile-rotate');
      expect(await services.secrets.resolve('rotor')).toEqual([{ name: 'ROT', value: 'custom-rotate', description: '' }]);
      expect((await services.sandboxes.credentials('sbxrotate'))?.sessionKey).toBe('session-rotate');
      const sandbox = (await after.rawCollection('sandboxes').findOne({ _id: 'sbxrotate' as never })) as never;
      expect(openSecretKey(SecretBox.fromStrings(newKey), sandbox)).toBe('sealing-rotate');
      expect(openEnv(SecretBox.fromStrings(newKey), sandbox)).toEqual({ FINISH_TOKEN: 'env-rotate' });
      const store = new ConversationStore(after.server.deps.db, SecretBox.fromStrings(newKey));
      const task = (await store.task('rotor', 'taskrotate'))!;
      expect(store.unseal(task, 'mcpConfig')?.sse_servers[0]?.api_key).toBe('override-rotate');
      expect(store.unseal(task, 'requestSecrets')).toEqual({ GIVEN: 'request-rotate' });
      // Whatever kind of secret exists now or later: no ciphertext under the old key is left anywhere.
      const currentId = SecretBox.fromStrings(newKey).currentKeyId;
      const collections = await after.server.deps.db.connection.db!.listCollections().toArray();
      const ciphertexts: string[] = [];
      for (const { name } of collections) {
        ciphertexts.push(...(JSON.stringify(await after.rawCollection(name).find({}).toArray()).match(/enc:v1:[0-9a-f]{8}/g) ?? []));
      }
      const endpoint = await after.rawCollection('webhook_endpoints').findOne({ _id: webhook.id as never });
      const box = SecretBox.fromStrings(newKey);
      expect(box.decrypt(endpoint!.secret, endpointSecretContext(webhook.id))).toBe(webhook.secret);
      expect(box.decrypt(endpoint!.previousSecret, endpointSecretContext(webhook.id))).toBe(webhook.previous);
      expect((await services.organizations.llmDefaults(orgId))?.apiKey).toBe('sk-org-rotate');
      expect((await services.orgSecrets.resolve(orgId)).map((s) => s.value)).toEqual(['org-secret-rotate']);
      expect(await services.automations.keyFor('rotor', 'rotor')).toBe(automationKey);
      expect(ciphertexts.length).toBe(15);
      expect(ciphertexts.filter((m) => !m.endsWith(currentId))).toEqual([]);

      const again = await runCli(['encryption', 'rotate'], env);
      expect(again.stdout).toMatch(/re-encrypted 0 values/);
    } finally {
      await after.stop();
    }
  });

  it('refuses to start against an external database without ENCRYPTION_KEY', async () => {
    const result = await runCli(['keys', 'list'], { MONGODB_URI: testDatabaseUri(dbName) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ENCRYPTION_KEY: is required when MONGODB_URI is set');
  });
});
