// Agent profiles (/api/agent-profiles): what Agent Canvas awaits before every start and the
// automation service reads and writes, persisted per user, and tied to the LLM profiles they
// name (a rename follows; a named LLM profile cannot be deleted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('agent-profiles');
});
afterAll(() => app.stop());

const user = async (name: string) => {
  const key = await app.keyFor(`${name}-${Math.random().toString(36).slice(2, 8)}`);
  return (method: string, path: string, body?: unknown) =>
    call(app, method, path, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });
};

describe('/api/agent-profiles', () => {
  it('lists none for a new user (200, so a start goes on), then saves, reads, renames, activates and deletes', async () => {
    const as = await user('agent');
    expect((await as('GET', '/api/agent-profiles')).body).toEqual({ profiles: [], active_agent_profile_id: null });
    await as('POST', '/api/v1/settings/profiles/fast', { llm: { model: 'openai/gpt-4o-mini', api_key: 'sk-fast' } });

    const saved = await as('POST', '/api/agent-profiles/reviewer', {
      agent_kind: 'openhands',
      llm_profile_ref: 'fast',
      system_message_suffix: 'Review only.',
      mcp_server_refs: [],
    });
    expect(saved).toMatchObject({ status: 201, body: { name: 'reviewer', message: "Agent profile 'reviewer' saved" } });
    const { profile } = (await as('GET', '/api/agent-profiles/reviewer')).body;
    expect(profile).toMatchObject({
      name: 'reviewer',
      agent_kind: 'openhands',
      revision: 1,
      llm_profile_ref: 'fast',
      system_message_suffix: 'Review only.',
      agent: 'CodeActAgent',
      tool_concurrency_limit: 1,
    });
    expect(profile.id).toMatch(/^[0-9a-f-]{36}$/);

    // An overwrite keeps the id (also when the client echoes identity fields) and bumps the revision.
    await as('POST', '/api/agent-profiles/reviewer', { ...profile, system_message_suffix: 'Review twice.' });
    const again = (await as('GET', '/api/agent-profiles/reviewer')).body.profile;
    expect(again).toMatchObject({ id: profile.id, revision: 2, system_message_suffix: 'Review twice.' });

    expect((await as('POST', `/api/agent-profiles/${profile.id}/activate`, {})).body).toEqual({
      id: profile.id,
      message: `Agent profile '${profile.id}' activated`,
      agent_settings_applied: false,
    });
    await as('POST', '/api/agent-profiles/writer', { agent_kind: 'openhands' });
    expect(await as('POST', '/api/agent-profiles/reviewer/rename', { new_name: 'writer' })).toMatchObject({ status: 409 });
    expect(await as('POST', '/api/agent-profiles/reviewer/rename', { new_name: 'critic' })).toMatchObject({
      status: 200,
      body: { name: 'critic' },
    });
    const list = (await as('GET', '/api/agent-profiles')).body;
    expect(list.active_agent_profile_id).toBe(profile.id);
    expect(list.profiles.map((p: { name: string; id: string }) => [p.name, p.id === profile.id])).toEqual([
      ['critic', true],
      ['writer', false],
    ]);
    expect((await as('POST', '/api/agent-profiles/nobody/activate', {})).status).toBe(404);
    expect(await as('DELETE', '/api/agent-profiles/critic')).toMatchObject({ status: 200, body: { name: 'critic' } });
    expect((await as('GET', '/api/agent-profiles')).body.active_agent_profile_id).toBeNull();
    expect((await as('GET', '/api/agent-profiles/critic')).status).toBe(404);
    expect((await as('DELETE', '/api/agent-profiles/critic')).status).toBe(200); // idempotent
  });

  it('follows a rename of the LLM profile it names, and keeps that profile from being deleted', async () => {
    const as = await user('refs');
    await as('POST', '/api/v1/settings/profiles/base', { llm: { model: 'openai/gpt-4.1' } });
    await as('POST', '/api/agent-profiles/main', { agent_kind: 'openhands', llm_profile_ref: 'base' });
    expect((await as('POST', '/api/v1/settings/profiles/base/rename', { new_name: 'renamed' })).status).toBe(200);
    expect((await as('GET', '/api/agent-profiles/main')).body.profile.llm_profile_ref).toBe('renamed');
    expect(await as('DELETE', '/api/v1/settings/profiles/renamed')).toMatchObject({
      status: 409,
      body: { detail: expect.stringContaining('main') },
    });
    await as('DELETE', '/api/agent-profiles/main');
    expect((await as('DELETE', '/api/v1/settings/profiles/renamed')).status).toBe(200);
  });

  it('resolves a profile for a start with its LLM profile key opened (for the start workflow only)', async () => {
    const as = await user('start');
    await as('POST', '/api/v1/settings/profiles/keyed', { llm: { model: 'openai/gpt-4o', api_key: 'sk-keyed-start', temperature: 0.3 } });
    await as('POST', '/api/agent-profiles/run', { agent_kind: 'openhands', llm_profile_ref: 'keyed' });
    const { profiles } = (await as('GET', '/api/agent-profiles')).body;
    const userId = (await app.rawCollection('settings').findOne({ 'agentProfiles.name': 'run' }))!.userId as string;
    const resolved = await app.server.deps.services.agentProfiles.forStart(userId, profiles[0].id);
    expect(resolved.llm).toEqual({ model: 'openai/gpt-4o', api_key: 'sk-keyed-start', base_url: null, temperature: 0.3 });
    expect(JSON.stringify((await as('GET', '/api/agent-profiles/run')).body)).not.toContain('sk-keyed-start');
  });

  it.each([
    ['an ACP profile (no ACP agents here)', { agent_kind: 'acp' }],
    ['an unknown key', { agent_kind: 'openhands', surprise: true }],
    ['a bad LLM profile name', { llm_profile_ref: 'has space' }],
    ['a storage-unsafe key in free-form JSON', { condenser: { $where: 1 } }],
  ])('refuses %s with 422', async (_label, body) => {
    const as = await user('bad');
    expect((await as('POST', '/api/agent-profiles/p', body)).status).toBe(422);
    expect((await as('GET', '/api/agent-profiles')).body.profiles).toEqual([]);
  });

  it("keeps one user's profiles from another", async () => {
    const alice = await user('alice');
    const bob = await user('bob');
    await alice('POST', '/api/agent-profiles/secret-plan', { agent_kind: 'openhands' });
    const id = (await alice('GET', '/api/agent-profiles')).body.profiles[0].id;
    expect((await bob('GET', '/api/agent-profiles')).body.profiles).toEqual([]);
    expect((await bob('GET', '/api/agent-profiles/secret-plan')).status).toBe(404);
    expect((await bob('POST', `/api/agent-profiles/${id}/activate`, {})).status).toBe(404);
    expect((await bob('POST', '/api/agent-profiles/secret-plan/rename', { new_name: 'mine' })).status).toBe(404);
    await bob('DELETE', '/api/agent-profiles/secret-plan');
    expect((await alice('GET', '/api/agent-profiles/secret-plan')).status).toBe(200);
  });
});
