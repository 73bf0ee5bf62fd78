// The profile seams (src/conversations/profiles.ts) with stores plugged in as the settings side
// will plug in its own: a start naming an agent profile runs on its settings over the user's and
// records which profile (and revision) launched it; a start naming none uses the user's active
// profile; a profile gone by the time the start runs fails it with the reason; switch_profile
// hands the agent server the named LLM profile in full and records its model.
import { upstreamOf } from '../helpers/llm-test-env.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProfile, AgentProfiles, LlmProfiles } from '../../src/conversations/profiles.js';
import { call } from '../helpers/app.js';
import { startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';

let app: ConversationApp;
let alice: string;
let carol: string;
let aliceId: string;
const hello = { initial_message: { content: [{ type: 'text', text: 'Hello' }] } };
/** Profiles that exist only for the request's check: gone by the time the start runs. */
const vanishing = new Map<string, number>();

const PROFILES: Record<string, AgentProfile> = {
  careful: { id: 'careful', revision: 3, settings: { llm_model: 'openai/careful-model', max_iterations: 7, confirmation_mode: true } },
  active: { id: 'active', revision: 1, settings: { llm_model: 'openai/active-model' } },
  vanishing: { id: 'vanishing', revision: 1, settings: {} },
};
const agentProfiles: AgentProfiles = {
  async resolve(userId, profileId) {
    if (profileId === null) return userId === aliceId ? null : PROFILES.active!;
    if (profileId === 'vanishing') {
      const seen = (vanishing.get(userId) ?? 0) + 1;
      vanishing.set(userId, seen);
      return seen === 1 ? PROFILES.vanishing! : null;
    }
    return PROFILES[profileId] ?? null;
  },
};
const llmProfiles: LlmProfiles = {
  llm: async (_userId, name) => (name === 'fast' ? { model: 'openai/fast', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-fast' } : null),
};

const as = (key: string, method: string, path: string, body?: unknown) =>
  call(app, method, path, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });

async function agentSide(key: string, conversationId: string) {
  const [conversation] = (await as(key, 'GET', `/api/v1/app-conversations?ids=${conversationId}`)).body;
  const res = await fetch(conversation.conversation_url, { headers: { 'x-session-api-key': conversation.session_api_key } });
  return { conversation, agent: (await res.json()) as any };
}

beforeAll(async () => {
  app = await startConversationApp('profiles', {}, { profiles: { agent: agentProfiles, llm: llmProfiles } });
  aliceId = `alice-${Date.now()}`;
  alice = await app.keyFor(aliceId);
  await call(app, 'POST', '/api/settings', { key: alice, body: { llm_model: 'openai/stub', llm_api_key: 'sk-user' } });
  carol = await app.user('carol'); // has an active profile
}, 60_000);
afterAll(async () => {
  await app?.close();
});

describe('agent profiles at the start', () => {
  it('runs on the named profile over the user settings and records it as launched_agent_profile', async () => {
    const started = await as(alice, 'POST', '/api/v1/app-conversations', { ...hello, agent_profile_id: 'careful' });
    const task = await waitForTask(app, alice, started.body.id);
    expect(task.status, task.detail ?? '').toBe('READY');
    const { conversation, agent } = await agentSide(alice, task.app_conversation_id);
    expect(agent.request.agent.llm).toMatchObject({ model: 'openai/careful-model', api_key: expect.stringMatching(/^ohg_/) });
    expect(await upstreamOf(app.server.deps, agent.request.agent.llm.api_key)).toMatchObject({
      model: 'openai/careful-model',
      apiKey: 'sk-user',
    });
    expect(agent.request).toMatchObject({ max_iterations: 7, confirmation_policy: { kind: 'AlwaysConfirm' } });
    expect(conversation).toMatchObject({
      llm_model: 'openai/careful-model',
      launched_agent_profile: { agent_profile_id: 'careful', revision: 3 },
      tags: { agentprofileid: 'careful', agentprofilerevision: '3' },
    });
  });

  it("uses the user's active profile when the start names none", async () => {
    const started = await as(carol, 'POST', '/api/v1/app-conversations', hello);
    expect(started.body.request.agent_profile_id).toBe('active');
    const task = await waitForTask(app, carol, started.body.id);
    expect(task.status, task.detail ?? '').toBe('READY');
    const { conversation, agent } = await agentSide(carol, task.app_conversation_id);
    expect(agent.request.agent.llm.model).toBe('openai/active-model');
    expect(conversation.launched_agent_profile).toEqual({ agent_profile_id: 'active', revision: 1 });
  });

  it('fails the start with the reason when the profile is gone by the time it runs', async () => {
    const started = await as(alice, 'POST', '/api/v1/app-conversations', { ...hello, agent_profile_id: 'vanishing' });
    expect(started.status).toBe(200);
    expect(await waitForTask(app, alice, started.body.id)).toMatchObject({
      status: 'ERROR',
      detail: 'Agent profile vanishing no longer exists',
    });
  });
});

describe('switch_profile', () => {
  it('hands the agent server the LLM profile in full and records its model on the conversation', async () => {
    const started = await as(alice, 'POST', '/api/v1/app-conversations', hello);
    const task = await waitForTask(app, alice, started.body.id);
    expect(
      await as(alice, 'POST', `/api/v1/app-conversations/${task.app_conversation_id}/switch_profile`, { profile_name: 'fast' }),
    ).toMatchObject({
      status: 200,
      body: { success: true },
    });
    const { conversation, agent } = await agentSide(alice, task.app_conversation_id);
    expect(agent.llm).toEqual({ model: 'openai/fast', usage_id: expect.stringMatching(/^profile:fast:[0-9a-f]{12}$/), has_api_key: true });
    expect(conversation.llm_model).toBe('openai/fast');
    // The conversation's token (the one its start gave the agent) now opens the profile's upstream.
    expect(await upstreamOf(app.server.deps, agent.request.agent.llm.api_key)).toEqual({
      model: 'openai/fast',
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'sk-fast',
    });
    expect(
      (await as(alice, 'POST', `/api/v1/app-conversations/${task.app_conversation_id}/switch_profile`, { profile_name: 'slow' })).status,
    ).toBe(404);
  });
});
