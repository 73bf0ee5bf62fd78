// The real `@openhands/typescript-client` CloudClient (npm, pinned in scripts/setup-ts-client.sh,
// installed into the cache) against the real service: its settings, profile, organisation,
// key, search and automation methods, unchanged, as Agent Canvas and other clients call them.
// Each checks what the client returns to its caller, not only that the call succeeded.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const SETUP = fileURLToPath(new URL('../../scripts/setup-ts-client.sh', import.meta.url));

// The client is loaded at run time from the cache: typed loosely here.
let CloudClient: any;
let app: TestApp;
let key: string;
let client: any;

beforeAll(async () => {
  const dir = execFileSync('bash', [SETUP], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .trim()
    .split('\n')
    .pop()!;
  const entry = path.join(dir, 'node_modules/@openhands/typescript-client/dist/clients.js');
  ({ CloudClient } = await import(pathToFileURL(entry).href));
  app = await startTestApp('cloud-client');
  key = await app.keyFor('canvas-user');
  client = new CloudClient({ host: app.url, apiKey: key, timeout: 30_000 });
}, 180_000);
afterAll(() => app?.stop());

describe('CloudClient 1.39.0 against the service', () => {
  it('getCurrentApiKey, getOrganizations, getOrganizationMe: connected, with the personal organisation', async () => {
    const current = await client.getCurrentApiKey();
    expect(current).toMatchObject({ user_id: 'canvas-user', org_id: 'canvas-user' });
    expect(await client.getOrganizations()).toEqual({
      items: [expect.objectContaining({ id: 'canvas-user', name: 'canvas-user', is_personal: true })],
      currentOrgId: 'canvas-user',
    });
    // Agent Canvas treats org_id === user_id as the personal workspace.
    expect(await client.getOrganizationMe('canvas-user')).toMatchObject({ orgId: 'canvas-user', userId: 'canvas-user', role: 'owner' });
  });

  it('getSettings reads the defaults before the first save (as Cloud answers); saveSettings then getSettingsWithDerivedFields', async () => {
    expect(await client.getSettings()).toMatchObject({ agent_settings: { llm: { model: null, api_key: null } }, llm_api_key_set: false });
    await client.saveSettings({
      agent_settings_diff: { llm: { model: 'anthropic/claude-sonnet-4-5', api_key: 'sk-canvas-1' }, agent_context: null },
      conversation_settings_diff: { max_iterations: 50 },
      app_preferences: { language: 'en', enable_sound_notifications: true },
    });
    const settings = await client.getSettingsWithDerivedFields();
    expect(settings.agent_settings.llm).toMatchObject({ model: 'anthropic/claude-sonnet-4-5', api_key: null });
    expect(settings.conversation_settings).toMatchObject({ max_iterations: 50 });
    expect(settings).toMatchObject({ llm_api_key_set: true, search_api_key_set: false, language: 'en', enable_sound_notifications: true });
  });

  it('getSettingsSchema and getConversationSettingsSchema return renderable schemas', async () => {
    const agent = await client.getSettingsSchema();
    expect(agent.model_name).toBe('AgentSettings');
    expect(agent.sections.map((s: { key: string }) => s.key)).toEqual(['general', 'llm', 'condenser']);
    const conversation = await client.getConversationSettingsSchema();
    expect(conversation.sections.flatMap((s: { fields: { key: string }[] }) => s.fields.map((f) => f.key))).toContain('max_iterations');
  });

  it('saveProfile, listProfiles, getProfile, activateProfile, renameProfile, deleteProfile', async () => {
    expect(await client.saveProfile('work', { llm: { model: 'openai/gpt-4.1', api_key: 'sk-canvas-2' } })).toEqual({
      name: 'work',
      message: "Profile 'work' saved",
    });
    expect(await client.listProfiles()).toEqual({
      profiles: [{ name: 'work', model: 'openai/gpt-4.1', base_url: null, api_key_set: true }],
      active_profile: null,
    });
    const profile = await client.getProfile('work');
    expect(profile).toMatchObject({ name: 'work', api_key_set: true, config: { model: 'openai/gpt-4.1', api_key: null } });
    expect(await client.activateProfile('work')).toEqual({ name: 'work', message: "Switched to profile 'work'", llm_applied: true });
    expect((await client.getSettings()).agent_settings.llm.model).toBe('openai/gpt-4.1');
    expect(await client.renameProfile('work', 'job')).toMatchObject({ name: 'job' });
    expect((await client.listProfiles()).active_profile).toBe('job');
    await client.deleteProfile('job');
    expect((await client.listProfiles()).profiles).toEqual([]);
    await expect(client.getProfile('job')).rejects.toMatchObject({ status: 404 });
  });

  it('routes the profile methods through the organisation once orgId is set (as Agent Canvas does after picking it)', async () => {
    const inOrg = new CloudClient({ host: app.url, apiKey: key, orgId: 'canvas-user', timeout: 30_000 });
    await inOrg.saveProfile('org-one', { llm: { model: 'openai/gpt-4o' } });
    expect((await client.listProfiles()).profiles.map((p: { name: string }) => p.name)).toEqual(['org-one']);
    expect((await inOrg.getProfile('org-one')).config.model).toBe('openai/gpt-4o');
    const elsewhere = new CloudClient({ host: app.url, apiKey: key, orgId: 'someone-else', timeout: 30_000 });
    await expect(elsewhere.listProfiles()).rejects.toMatchObject({ status: 404 });
  });

  it('listSkills, searchModels, searchProviders and getAutomationHealth answer what the client pages through', async () => {
    expect(await client.listSkills()).toEqual([]);
    const models = await client.searchModels({ limit: 100, provider__eq: 'openhands' });
    expect(models.items.length).toBeGreaterThan(0);
    expect(models.items[0]).toMatchObject({ provider: 'openhands', verified: true });
    expect((await client.searchProviders({ limit: 100 })).items[0]).toMatchObject({ verified: true });
    expect(await client.getAutomationHealth()).toMatchObject({ status: 'error' });
  });

  it('surfaces a missing or wrong key as the HttpError 401', async () => {
    const anonymous = new CloudClient({ host: app.url, apiKey: 'ohk_AAAAAAAAAAAA_' + 'A'.repeat(40), timeout: 30_000 });
    await expect(anonymous.getCurrentApiKey()).rejects.toMatchObject({ status: 401 });
  });
});
