// What a conversation start hands the agent from the 2026 settings: the nested shape's LLM
// keyword arguments beyond model, key and base URL (stored only through /api/v1/settings) reach
// the agent's LLM, and an activated LLM profile is the LLM the agent gets.
import { upstreamOf } from '../helpers/llm-test-env.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';

let app: ConversationApp;
beforeAll(async () => {
  app = await startConversationApp('settings-v1-start');
});
afterAll(() => app.close());

async function sentLlm(key: string) {
  const task = (await app.startConversation(key)) as unknown as { status: string; agent_server_url: string; app_conversation_id: string };
  expect(task.status).toBe('READY');
  const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${task.app_conversation_id}`, { key })).body;
  const response = await fetch(`${task.agent_server_url}/api/conversations?ids=${task.app_conversation_id}`, {
    headers: { 'x-session-api-key': conversation.session_api_key },
  });
  return ((await response.json()) as { request: { agent: { llm: Record<string, unknown> } } }[])[0]!.request.agent.llm;
}

describe('a start after /api/v1/settings saves', () => {
  it('passes the nested LLM keyword arguments, and an activated profile, to the agent', { timeout: 60_000 }, async () => {
    const key = await app.user('nested');
    const bearer = { authorization: `Bearer ${key}` };
    await call(app, 'POST', '/api/v1/settings', {
      headers: bearer,
      body: { agent_settings_diff: { llm: { temperature: 0.25, max_output_tokens: 2048 } } },
    });
    // The agent gets the LLM gateway and its conversation's token; the key and base URL stay with the gateway.
    const first = await sentLlm(key);
    expect(first).toEqual({
      usage_id: 'agent',
      model: 'openai/stub',
      base_url: expect.stringMatching(/\/llm\/v1$/),
      api_key: expect.stringMatching(/^ohg_/),
      temperature: 0.25,
      max_output_tokens: 2048,
    });
    expect(await upstreamOf(app.server.deps, String(first.api_key))).toEqual({
      model: 'openai/stub',
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'sk-page-test',
    });
    await call(app, 'POST', '/api/v1/settings/profiles/other', {
      headers: bearer,
      body: { llm: { model: 'openai/other', api_key: 'sk-other-profile', base_url: 'http://127.0.0.1:9/v2', top_p: 0.5 } },
    });
    await call(app, 'POST', '/api/v1/settings/profiles/other/activate', { headers: bearer, body: {} });
    const second = await sentLlm(key);
    expect(second).toEqual({
      usage_id: 'agent',
      model: 'openai/other',
      base_url: expect.stringMatching(/\/llm\/v1$/),
      api_key: expect.stringMatching(/^ohg_/),
      top_p: 0.5,
    });
    expect(await upstreamOf(app.server.deps, String(second.api_key))).toEqual({
      model: 'openai/other',
      baseUrl: 'http://127.0.0.1:9/v2',
      apiKey: 'sk-other-profile',
    });
  });
});
