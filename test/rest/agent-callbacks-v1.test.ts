// The agent servers' 2026 webhooks: POST /api/v1/webhooks/conversations and
// /api/v1/webhooks/events/{conversation_id}, identified by the sandbox's session key alone
// (found through the key's hash, never a scan), beside the d6 routes that name the sandbox.
// Over real HTTP with the fake agent server running in process sandboxes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto.js';
import { call } from '../helpers/app.js';
import { startConversationApp, v0, type ConversationApp, type StartedTask } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let alice: string;
let task: StartedTask;
let aliceKey: string;

beforeAll(async () => {
  app = await startConversationApp('webhooks-v1');
  alice = await app.user('hooks-alice');
  task = await app.startConversation(alice, { initial_message: { content: [{ type: 'text', text: 'Report by key' }] } });
  aliceKey = await sandboxKey(alice, task.sandbox_id);
  await eventually('the first events', async () => (await count(alice, task.app_conversation_id)) === 4);
}, 60_000);
afterAll(() => app?.close());

async function sandboxKey(key: string, sandboxId: string): Promise<string> {
  return (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0].session_api_key;
}
const count = async (key: string, id: string) => (await call(app, 'GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key })).body;
const hook = (path: string, body: unknown, sessionKey?: string) =>
  call(app, 'POST', `/api/v1/webhooks/${path}`, { body, headers: sessionKey === undefined ? {} : { 'x-session-api-key': sessionKey } });
const event = (n: number, text: string) => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  kind: 'MessageEvent',
  source: 'agent',
  timestamp: new Date().toISOString(),
  llm_message: { role: 'assistant', content: [{ type: 'text', text }] },
});

describe('key-only webhooks', () => {
  it("refuse a request without a key, with an unknown one, and with a user's API key", async () => {
    for (const path of ['conversations', `events/${task.app_conversation_id}`]) {
      const body = path === 'conversations' ? { id: task.app_conversation_id } : [];
      expect(await hook(path, body)).toMatchObject({ status: 401, body: { detail: 'X-Session-API-Key header is required' } });
      expect(await hook(path, body, '')).toMatchObject({ status: 401, body: { detail: 'X-Session-API-Key header is required' } });
      expect(await hook(path, body, 'x'.repeat(43))).toMatchObject({ status: 401, body: { detail: 'Invalid session API key' } });
      expect(await hook(path, body, alice)).toMatchObject({ status: 401, body: { detail: 'Invalid session API key' } });
    }
  });

  it('keep the conversation and its events current for the sandbox the key belongs to', async () => {
    const id = task.app_conversation_id;
    const info = await hook('conversations', { id, execution_status: 'finished', title: 'Reported by key' }, aliceKey);
    expect(info).toMatchObject({ status: 200, body: { success: true } });
    expect(await v0(app, alice, id)).toMatchObject({ title: 'Reported by key' });
    const [v1] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key: alice })).body;
    expect(v1.execution_status).toBe('finished');

    const before = await count(alice, id);
    const batch = await hook(`events/${id}`, [event(1, 'one'), event(2, 'two')], aliceKey);
    expect(batch).toMatchObject({ status: 200, body: { success: true } });
    expect(await count(alice, id)).toBe(before + 2);
    // The same id in its dashed form names the same conversation.
    const dashed = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
    expect((await hook(`events/${dashed}`, [event(3, 'three')], aliceKey)).status).toBe(200);
    expect(await count(alice, id)).toBe(before + 3);
    // The body is the agent server's JSON array; anything else is a validation error, and so is
    // what the database could not store as it is kept (a NUL in a stored field).
    expect((await hook(`events/${id}`, { events: [] }, aliceKey)).status).toBe(422);
    expect((await hook(`events/${id}`, [{ ...event(4, 'x'), kind: 'Message\u0000Event' }], aliceKey)).status).toBe(422);
    expect((await hook('conversations', { id, title: 'bad\u0000title' }, aliceKey)).status).toBe(422);
    expect(await count(alice, id)).toBe(before + 3);
  });

  it('keep the tags the agent sets (they replace its earlier ones), never its launch profile, nothing invalid', async () => {
    const id = task.app_conversation_id;
    const tagsOf = async () => (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key: alice })).body[0].tags;
    // As a start from an agent profile leaves it (profiles.ts PROFILE_TAGS).
    await app.server.deps.db.tables.conversations.update(id, {}, { $set: { tags: { agentprofileid: 'p1', agentprofilerevision: '3' } } });
    const report = (tags: unknown) => hook('conversations', { id, tags }, aliceKey);
    expect((await report({ team: 'ui', agentprofileid: 'forged' })).status).toBe(200);
    expect(await tagsOf()).toEqual({ team: 'ui', agentprofileid: 'p1', agentprofilerevision: '3' });
    // A state update event replaces them as the agent server does.
    const update = {
      id: '00000000-0000-4000-8000-0000000000aa',
      kind: 'ConversationStateUpdateEvent',
      source: 'environment',
      key: 'tags',
      value: { ticket: '42' },
    };
    expect((await hook(`events/${id}`, [update], aliceKey)).status).toBe(200);
    expect(await tagsOf()).toEqual({ ticket: '42', agentprofileid: 'p1', agentprofilerevision: '3' });
    // What the SDK would refuse is not kept.
    for (const bad of [{ Team: 'x' }, { team: 'x'.repeat(257) }, ['team'], 'team', { team: 7 }])
      expect((await report(bad)).status).toBe(200);
    expect(await tagsOf()).toEqual({ ticket: '42', agentprofileid: 'p1', agentprofilerevision: '3' });
  });

  it("let no other sandbox's key report this conversation, the owner's other sandbox's nor another user's", async () => {
    const id = task.app_conversation_id;
    const own = (await call(app, 'POST', '/api/v1/sandboxes', { key: alice })).body;
    const bob = await app.user('hooks-bob');
    const bobs = (await call(app, 'POST', '/api/v1/sandboxes', { key: bob })).body;
    const before = await count(alice, id);
    for (const key of [own.session_api_key as string, bobs.session_api_key as string]) {
      expect((await hook('conversations', { id, title: 'Hijacked' }, key)).status).toBe(401);
      expect((await hook(`events/${id}`, [event(9, 'hijack')], key)).status).toBe(401);
    }
    expect(await count(alice, id)).toBe(before);
    expect((await v0(app, alice, id)).title).toBe('Reported by key');
    // Bob's key reports only into bob's records.
    const bobsOwn = 'b'.repeat(32);
    expect((await hook('conversations', { id: bobsOwn, title: 'Bob here' }, bobs.session_api_key)).status).toBe(200);
    expect(await v0(app, bob, bobsOwn)).toMatchObject({ title: 'Bob here' });
    expect(await v0(app, alice, bobsOwn)).toBeNull(); // unknown to alice (V0 answers null)
  });

  it('ignore a conversation being deleted', async () => {
    const id = task.app_conversation_id;
    await app.rawCollection('app_conversations').updateOne({ _id: id as never }, { $set: { execution_status: 'deleting' } });
    const before = await count(alice, id);
    expect((await hook('conversations', { id, title: 'Back from the dead', execution_status: 'running' }, aliceKey)).status).toBe(200);
    expect((await hook(`events/${id}`, [event(20, 'late')], aliceKey)).status).toBe(200);
    const record = await app.rawCollection('app_conversations').findOne({ _id: id as never });
    expect(record).toMatchObject({ execution_status: 'deleting', title: 'Reported by key' });
    expect(await count(alice, id)).toBe(before);
    await app.rawCollection('app_conversations').updateOne({ _id: id as never }, { $set: { execution_status: 'finished' } });
  });

  it('keep a title the user set over the titles reported after it, and name an untitled one from its first message', async () => {
    const id = task.app_conversation_id;
    const titleUpdate = (title: string) => ({ ...event(40, ''), kind: 'ConversationStateUpdateEvent', key: 'title', value: title });
    const userMessage = (n: number, text: string) => ({
      ...event(n, text),
      source: 'user',
      llm_message: { role: 'user', content: [{ type: 'text', text }] },
    });
    const title = async () => (await v0(app, alice, id)).title;
    expect((await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key: alice, body: { title: 'Named by Alice' } })).status).toBe(
      200,
    );
    // Reports that left the agent server before the rename reached it.
    expect((await hook('conversations', { id, title: 'Late report' }, aliceKey)).status).toBe(200);
    expect((await hook(`events/${id}`, [titleUpdate('Late event')], aliceKey)).status).toBe(200);
    expect(await title()).toBe('Named by Alice');
    // Cleared by the user: the agent's titles apply again, and a first message names none over them.
    expect((await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key: alice, body: { title: '' } })).status).toBe(200);
    expect((await hook(`events/${id}`, [userMessage(41, 'From the first message')], aliceKey)).status).toBe(200);
    expect(await title()).toBe('From the first message');
    expect((await hook(`events/${id}`, [userMessage(42, 'Another message')], aliceKey)).status).toBe(200);
    expect(await title()).toBe('From the first message');
    expect((await hook('conversations', { id, title: 'Reported by key' }, aliceKey)).status).toBe(200);
    expect(await title()).toBe('Reported by key');
  });

  it('find the sandbox by the hash of its key in one indexed query, and fill in hashes of older records at start-up', async () => {
    const record = await app.rawCollection('sandboxes').findOne({ _id: task.sandbox_id as never });
    expect(record?.sessionKeyHash).toBe(sha256(aliceKey).toString('hex'));
    expect(JSON.stringify(record)).not.toContain(aliceKey);
    const lookups = app.commands.filter(
      (c) =>
        c.commandName === 'find' &&
        (c.command as { filter?: object }).filter &&
        'sessionKeyHash' in (c.command as { filter: object }).filter,
    );
    expect(lookups.length).toBeGreaterThan(0);
    // A record written before the hash existed.
    await app.rawCollection('sandboxes').updateOne({ _id: task.sandbox_id as never }, { $set: { sessionKeyHash: null } });
    expect((await hook('conversations', { id: task.app_conversation_id }, aliceKey)).status).toBe(401);
    expect(await app.server.deps.services.sandboxKeys.indexSessionKeys()).toBeGreaterThanOrEqual(1);
    expect((await hook('conversations', { id: task.app_conversation_id }, aliceKey)).status).toBe(200);
  });

  it('leave the d6 routes that name the sandbox working', async () => {
    const id = task.app_conversation_id;
    const before = await count(alice, id);
    expect((await hook(`${task.sandbox_id}/events/${id}`, [event(30, 'd6')], aliceKey)).status).toBe(200);
    expect(await count(alice, id)).toBe(before + 1);
    expect((await hook(`${task.sandbox_id}/conversations`, { id, title: 'Via d6' }, aliceKey)).status).toBe(200);
    expect((await v0(app, alice, id)).title).toBe('Via d6');
  });
});
