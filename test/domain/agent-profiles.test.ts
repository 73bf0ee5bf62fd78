// Agent profiles through the procedures (createCaller, no HTTP): what Agent Canvas awaits before
// every start and the automation service reads and writes, persisted per user, tied to the LLM
// profiles they name (a rename follows; a named LLM profile cannot be deleted), resolved for a
// start with the LLM profile's key opened, refused input storing nothing, and one user's
// profiles out of another's reach. The 201 of a save is checked in test/rest/settings.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

let domain: TestDomain;
beforeAll(async () => {
  domain = await startTestDomain('agent-profiles');
});
afterAll(() => domain?.stop());

let counter = 0;
const freshUser = (name: string) => `${name}-${++counter}`;

describe('agent profiles', () => {
  it('lists none for a new user (so a start goes on), then saves, reads, renames, activates and deletes', async () => {
    const user = domain.as(freshUser('agent'));
    expect(await user.agentProfiles.list()).toEqual({ profiles: [], active_agent_profile_id: null });
    await user.settingsV1.profilesSave({ name: 'fast', llm: { model: 'openai/gpt-4o-mini', api_key: 'sk-fast' } });

    const saved = await user.agentProfiles.save({
      name: 'reviewer',
      agent_kind: 'openhands',
      llm_profile_ref: 'fast',
      system_message_suffix: 'Review only.',
      mcp_server_refs: [],
    });
    expect(saved).toMatchObject({ name: 'reviewer', message: "Agent profile 'reviewer' saved" });
    const { profile } = await user.agentProfiles.get({ name: 'reviewer' });
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
    await user.agentProfiles.save({ ...profile, system_message_suffix: 'Review twice.' } as never);
    expect((await user.agentProfiles.get({ name: 'reviewer' })).profile).toMatchObject({
      id: profile.id,
      revision: 2,
      system_message_suffix: 'Review twice.',
    });

    expect(await user.agentProfiles.activate({ profile_id: profile.id })).toEqual({
      id: profile.id,
      message: `Agent profile '${profile.id}' activated`,
      agent_settings_applied: false,
    });
    await user.agentProfiles.save({ name: 'writer', agent_kind: 'openhands' });
    expect(await refusal(user.agentProfiles.rename({ name: 'reviewer', new_name: 'writer' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'agent_profile_exists',
    });
    expect(await user.agentProfiles.rename({ name: 'reviewer', new_name: 'critic' })).toMatchObject({ name: 'critic' });
    const list = await user.agentProfiles.list();
    expect(list.active_agent_profile_id).toBe(profile.id);
    expect(list.profiles.map((p) => [p.name, p.id === profile.id])).toEqual([
      ['critic', true],
      ['writer', false],
    ]);
    expect(await refusal(user.agentProfiles.activate({ profile_id: 'nobody' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'agent_profile_not_found',
    });
    expect(await user.agentProfiles.delete({ name: 'critic' })).toMatchObject({ name: 'critic' });
    expect((await user.agentProfiles.list()).active_agent_profile_id).toBeNull();
    expect(await refusal(user.agentProfiles.get({ name: 'critic' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'agent_profile_not_found',
    });
    expect(await user.agentProfiles.delete({ name: 'critic' })).toMatchObject({ name: 'critic' }); // idempotent
  });

  it('follows a rename of the LLM profile it names, and keeps that profile from being deleted', async () => {
    const user = domain.as(freshUser('refs'));
    await user.settingsV1.profilesSave({ name: 'base', llm: { model: 'openai/gpt-4.1' } });
    await user.agentProfiles.save({ name: 'main', agent_kind: 'openhands', llm_profile_ref: 'base' });
    await user.settingsV1.profilesRename({ name: 'base', new_name: 'renamed' });
    expect((await user.agentProfiles.get({ name: 'main' })).profile.llm_profile_ref).toBe('renamed');
    expect(await refusal(user.settingsV1.profilesDelete({ name: 'renamed' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'llm_profile_referenced',
      message: expect.stringContaining('main'),
    });
    await user.agentProfiles.delete({ name: 'main' });
    expect(await user.settingsV1.profilesDelete({ name: 'renamed' })).toMatchObject({ name: 'renamed' });
    expect((await user.settingsV1.profilesList({})).profiles).toEqual([]);
  });

  it('resolves a profile for a start with its LLM profile key opened (for the start workflow only)', async () => {
    const id = freshUser('start');
    const user = domain.as(id);
    await user.settingsV1.profilesSave({ name: 'keyed', llm: { model: 'openai/gpt-4o', api_key: 'sk-keyed-start', temperature: 0.3 } });
    await user.agentProfiles.save({ name: 'run', agent_kind: 'openhands', llm_profile_ref: 'keyed' });
    const { profiles } = await user.agentProfiles.list();
    const resolved = await domain.deps.services.agentProfiles.forStart(id, profiles[0]!.id);
    expect(resolved.llm).toEqual({ model: 'openai/gpt-4o', api_key: 'sk-keyed-start', base_url: null, temperature: 0.3 });
    expect(JSON.stringify(await user.agentProfiles.get({ name: 'run' }))).not.toContain('sk-keyed-start');
  });

  it.each([
    ['an ACP profile (no ACP agents here)', { agent_kind: 'acp' }, ['agent_kind']],
    ['an unknown key', { agent_kind: 'openhands', surprise: true }, []],
    ['a bad LLM profile name', { llm_profile_ref: 'has space' }, ['llm_profile_ref']],
    ['a storage-unsafe key in free-form JSON', { condenser: { $where: 1 } }, ['condenser']],
  ])('refuses %s (BAD_REQUEST naming the field), storing nothing', async (_label, body, field) => {
    const user = domain.as(freshUser('bad'));
    const refused = await refusal(user.agentProfiles.save({ name: 'p', ...body } as never));
    expect(refused.code).toBe('BAD_REQUEST');
    expect(refused.paths[0]?.slice(0, field.length)).toEqual(field);
    expect((await user.agentProfiles.list()).profiles).toEqual([]);
  });

  it("keeps one user's profiles from another", async () => {
    const alice = domain.as(freshUser('alice'));
    const bob = domain.as(freshUser('bob'));
    await alice.agentProfiles.save({ name: 'secret-plan', agent_kind: 'openhands' });
    const id = (await alice.agentProfiles.list()).profiles[0]!.id;
    expect((await bob.agentProfiles.list()).profiles).toEqual([]);
    for (const call of [
      () => bob.agentProfiles.get({ name: 'secret-plan' }),
      () => bob.agentProfiles.activate({ profile_id: id }),
      () => bob.agentProfiles.rename({ name: 'secret-plan', new_name: 'mine' }),
    ]) {
      expect(await refusal(call())).toMatchObject({ code: 'NOT_FOUND', reason: 'agent_profile_not_found' });
    }
    await bob.agentProfiles.delete({ name: 'secret-plan' });
    expect((await alice.agentProfiles.get({ name: 'secret-plan' })).profile.id).toBe(id);
  });
});
