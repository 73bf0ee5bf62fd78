// Sandbox grouping (settings sandbox_grouping_strategy): the reference's choice per strategy
// (the unit table mirrors its own test: a sandbox at the bound is never picked), and over HTTP
// with the fake agent server: a grouped start joins its owner's running sandbox (no new slot,
// source "existing"), never another user's, a new one past SANDBOX_MAX_CONVERSATIONS or for
// NO_GROUPING, and deleting one conversation of a shared sandbox leaves the sandbox to the others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxGroupingStrategy } from '../../contract/settings-v1.schema.js';
import { pickSandbox } from '../../src/conversations/start/sandbox-grouping.js';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';

describe('the choice of sandbox per strategy', () => {
  const running = [
    { id: 'older', createdAt: '2026-11-29T10:00:00.000Z', conversations: 2 },
    { id: 'newer', createdAt: '2026-11-29T10:04:00.000Z', conversations: 1 },
    { id: 'full', createdAt: '2026-11-29T10:02:00.000Z', conversations: 3 },
  ];
  it.each<[SandboxGroupingStrategy, string | null]>([
    ['NO_GROUPING', null],
    ['ADD_TO_ANY', 'older'],
    ['GROUP_BY_NEWEST', 'newer'],
    ['LEAST_RECENTLY_USED', 'older'],
    ['FEWEST_CONVERSATIONS', 'newer'],
  ])('%s picks %s (a sandbox at the bound never)', (strategy, expected) => {
    expect(pickSandbox(strategy, running, 3)).toBe(expected);
  });

  it('picks none when every running sandbox is at the bound, or none runs', () => {
    expect(pickSandbox('ADD_TO_ANY', running, 1)).toBeNull();
    expect(pickSandbox('GROUP_BY_NEWEST', [], 20)).toBeNull();
  });
});

describe('grouped starts over HTTP', () => {
  let app: ConversationApp;
  beforeAll(async () => {
    app = await startConversationApp('sandbox-grouping', { SANDBOX_MAX_CONVERSATIONS: '2' });
  });
  afterAll(() => app?.close());

  const group = (key: string, strategy: SandboxGroupingStrategy) =>
    call(app, 'POST', '/api/v1/settings', { key, body: { sandbox_grouping_strategy: strategy } });
  const sandboxOf = async (key: string, conversationId: string) =>
    (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body[0].sandbox_id as string;

  it("joins the owner's running sandbox up to the bound, then starts a new one; FEWEST_CONVERSATIONS fills the emptier", async () => {
    const key = await app.user('grouped');
    const first = await app.startConversation(key);
    expect(first.status, first.detail ?? '').toBe('READY');
    await group(key, 'GROUP_BY_NEWEST');
    const second = await app.startConversation(key);
    expect(second).toMatchObject({ status: 'READY', sandbox_id: first.sandbox_id });
    const [task] = (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${second.id}`, { key })).body;
    expect(task.sandbox_source).toBe('existing');
    expect(await sandboxOf(key, second.app_conversation_id)).toBe(first.sandbox_id);
    // Two conversations: the bound (2) is reached, so the next one gets a sandbox of its own.
    const third = await app.startConversation(key);
    expect(third.status).toBe('READY');
    expect(third.sandbox_id).not.toBe(first.sandbox_id);
    await group(key, 'FEWEST_CONVERSATIONS');
    expect((await app.startConversation(key)).sandbox_id).toBe(third.sandbox_id);
    // Deleting a conversation of a shared sandbox keeps the sandbox for the other one.
    expect((await call(app, 'DELETE', `/api/v1/app-conversations/${second.app_conversation_id}`, { key })).status).toBe(200);
    const [kept] = (await call(app, 'GET', `/api/v1/sandboxes?id=${first.sandbox_id}`, { key })).body;
    expect(kept).toMatchObject({ id: first.sandbox_id, status: 'RUNNING' });
  });

  it("never joins another user's sandbox, and NO_GROUPING (the default) always starts a new one", async () => {
    const alice = await app.user('alice');
    const bob = await app.user('bob');
    const hers = await app.startConversation(alice);
    await group(bob, 'ADD_TO_ANY');
    const his = await app.startConversation(bob);
    expect(his.status).toBe('READY');
    expect(his.sandbox_id).not.toBe(hers.sandbox_id);
    const again = await app.startConversation(alice);
    expect(again.sandbox_id).not.toBe(hers.sandbox_id);
  });

  it('leaves a paused sandbox out: the start gets a new one', async () => {
    const key = await app.user('paused');
    await group(key, 'ADD_TO_ANY');
    const first = await app.startConversation(key);
    expect((await call(app, 'POST', `/api/v1/sandboxes/${first.sandbox_id}/pause`, { key })).status).toBe(200);
    const next = await app.startConversation(key);
    expect(next.status).toBe('READY');
    expect(next.sandbox_id).not.toBe(first.sandbox_id);
  });
});
