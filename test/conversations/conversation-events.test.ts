// Conversations from their first moment, the events their agent servers report, and which
// sandbox may report what: over real HTTP with the fake agent server in process sandboxes
// (it "runs" a new conversation and sends its webhooks like the real one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, v0, waitForTask, type ConversationApp, type StartedTask } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let app: ConversationApp;
let provider: FakeGitProvider;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_events');
  app = await startConversationApp('events', { GITHUB_API_URL: provider.url, EVENTS_MAX_PER_CONVERSATION: '20' });
}, 60_000);

afterAll(async () => {
  await app.close();
  await provider.close();
});

const sandboxKey = async (key: string, sandboxId: string) =>
  (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0].session_api_key as string;
const count = async (key: string, id: string, query = '') =>
  (await call(app, 'GET', `/api/v1/events/count?conversation_id__eq=${id}${query}`, { key })).body;
const search = async (key: string, id: string, query = '') =>
  (await call(app, 'GET', `/api/v1/events/search?conversation_id__eq=${id}${query}`, { key })).body;
const webhook = (sandboxId: string, key: string, suffix: string, body: unknown) =>
  call(app, 'POST', `/api/v1/webhooks/${sandboxId}/${suffix}`, { body, headers: { 'x-session-api-key': key } });

describe('a conversation from its first moment', () => {
  it('is listed, readable and renamable while it starts, then becomes RUNNING with its title kept', async () => {
    const key = await app.user('early');
    const slow = (await call(app, 'POST', '/api/v1/sandboxes?sandbox_spec_id=fake-agent-slow', { key })).body;
    const started = await call(app, 'POST', '/api/v1/app-conversations', {
      key,
      body: { sandbox_id: slow.id, initial_message: { content: [{ type: 'text', text: 'Start slowly' }] } },
    });
    const listed = (await call(app, 'GET', '/api/conversations?limit=10', { key })).body.results;
    expect(listed).toHaveLength(1);
    const id = listed[0].conversation_id as string;
    expect(listed[0]).toMatchObject({ status: 'STARTING', conversation_version: 'V1', title: `Conversation ${id.slice(0, 5)}`, url: null });
    expect(await v0(app, key, id)).toMatchObject({ conversation_id: id, status: 'STARTING', conversation_version: 'V1' });
    expect((await call(app, 'PATCH', `/api/conversations/${id}`, { key, body: { title: 'Named early' } })).body).toBe(true);
    const [v1] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
    expect(v1).toMatchObject({ id, sandbox_status: 'STARTING', conversation_url: null, execution_status: null });
    expect((await call(app, 'GET', '/api/v1/app-conversations/count', { key })).body).toBe(1);

    const task = await waitForTask(app, key, started.body.id);
    expect(task).toMatchObject({ status: 'READY', app_conversation_id: id, sandbox_id: slow.id });
    expect(await v0(app, key, id)).toMatchObject({ status: 'RUNNING', title: 'Named early', url: expect.stringContaining(id) });
    // The title from the first user message does not replace the user's own.
    await eventually('the webhooks', async () => (await count(key, id)) === 4);
    expect((await v0(app, key, id)).title).toBe('Named early');
  });

  it('shows a failed start as ERROR, deletable', async () => {
    const key = await app.keyFor('no-settings-user');
    const started = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    await waitForTask(app, key, started.body.id);
    // The conversation is marked failed just after its task's ERROR is written.
    const failed = await eventually('the conversation to read ERROR', async () => {
      const [listed] = (await call(app, 'GET', '/api/conversations', { key })).body.results;
      return listed?.status === 'ERROR' ? listed : null;
    });
    expect(failed).toMatchObject({ status: 'ERROR', conversation_version: 'V1' });
    expect((await call(app, 'DELETE', `/api/conversations/${failed.conversation_id}`, { key })).body).toBe(true);
    expect((await call(app, 'GET', '/api/conversations', { key })).body.results).toEqual([]);
  });
});

describe('events', () => {
  let key: string;
  let task: StartedTask;
  let id: string;

  beforeAll(async () => {
    key = await app.user('events');
    task = await app.startConversation(key, { initial_message: { content: [{ type: 'text', text: 'Count my events' }] } });
    id = task.app_conversation_id;
    // A batch claims its numbers first and writes its events after: wait for the events, not the count.
    await eventually('the events webhook', async () => (await search(key, id)).items?.length === 4);
  });

  it('keeps what the webhooks delivered, in order, without full_state snapshots', async () => {
    const page = await search(key, id);
    expect(page.next_page_id).toBeNull();
    expect(page.items.map((e: { kind: string; key?: string }) => `${e.kind}${e.key ? `:${e.key}` : ''}`)).toEqual([
      'MessageEvent',
      'ConversationStateUpdateEvent:execution_status',
      'MessageEvent',
      'ConversationStateUpdateEvent:execution_status',
    ]);
    expect(page.items[0]).toMatchObject({ source: 'user', llm_message: { content: [{ type: 'text', text: 'Count my events' }] } });
    // The UUID in any form names the same conversation.
    const dashed = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
    expect(await count(key, dashed.toUpperCase())).toBe(4);
  });

  it('pages both ways, filters by kind and time, and counts the same way', async () => {
    const first = await search(key, id, '&limit=3');
    expect(first.items).toHaveLength(3);
    const rest = await search(key, id, `&limit=3&page_id=${first.next_page_id}`);
    expect(rest).toMatchObject({ items: [expect.objectContaining({ kind: 'ConversationStateUpdateEvent' })], next_page_id: null });
    const newest = await search(key, id, '&sort_order=TIMESTAMP_DESC&limit=1');
    expect(newest.items[0].id).toBe(rest.items[0].id);
    expect((await search(key, id, '&kind__eq=MessageEvent')).items.map((e: { source: string }) => e.source)).toEqual(['user', 'agent']);
    expect(await count(key, id, '&kind__eq=MessageEvent')).toBe(2);
    const all = (await search(key, id)).items;
    const second = all[1].timestamp as string;
    expect(await count(key, id, `&timestamp__gte=${encodeURIComponent(second)}`)).toBe(
      all.filter((e: { timestamp: string }) => e.timestamp >= second).length,
    );
    expect(await count(key, id, '&timestamp__lt=2000-01-01T00:00:00Z')).toBe(0);
  });

  it('validates its query: a UUID conversation id (required), a kind, datetimes, limit 1..100', async () => {
    for (const query of [
      '',
      '?conversation_id__eq=nope',
      `?conversation_id__eq=${id}&limit=101`,
      `?conversation_id__eq=${id}&limit=0`,
      `?conversation_id__eq=${id}&timestamp__gte=yesterday`,
      `?conversation_id__eq=${id}&kind__eq=a%20b`,
    ]) {
      expect((await call(app, 'GET', `/api/v1/events/search${query}`, { key })).status, query).toBe(422);
    }
    expect((await call(app, 'GET', '/api/v1/events/count', { key })).body.detail[0]).toMatchObject({
      loc: ['query', 'conversation_id__eq'],
    });
  });

  it("shows nothing of another user's conversation, and 0 for an unknown one", async () => {
    const other = await app.user('other');
    expect(await count(other, id)).toBe(0);
    expect(await search(other, id)).toEqual({ items: [], next_page_id: null });
    expect(await count(key, 'a'.repeat(32))).toBe(0);
  });

  it('keeps at most EVENTS_MAX_PER_CONVERSATION, dropping the oldest, and ignores a retried batch', async () => {
    const hookKey = await sandboxKey(key, task.sandbox_id);
    const batch = Array.from({ length: 25 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      kind: 'ObservationEvent',
      source: 'environment',
      timestamp: `2030-01-01T00:00:${String(i).padStart(2, '0')}`,
    }));
    expect((await webhook(task.sandbox_id, hookKey, `events/${id}`, batch)).status).toBe(200);
    expect((await webhook(task.sandbox_id, hookKey, `events/${id}`, batch.slice(20))).status).toBe(200);
    expect(await count(key, id)).toBe(20);
    const kept = (await search(key, id)).items.map((e: { id: string }) => e.id);
    expect(kept).toEqual(batch.slice(5).map((e) => e.id));
  });

  it('removes the events with the conversation', async () => {
    const buckets = () => app.rawCollection('event_buckets').countDocuments({ _id: { $regex: `^${id}:` } as never });
    expect(await buckets()).toBeGreaterThan(0);
    expect((await call(app, 'DELETE', `/api/conversations/${id}`, { key })).body).toBe(true);
    expect(await count(key, id)).toBe(0);
    expect(await app.rawCollection('event_logs').countDocuments({ _id: id as never })).toBe(0);
    expect(await buckets()).toBe(0);
  });
});

describe('which sandbox may report a conversation', () => {
  let alice: string;
  let bob: string;
  let aliceTask: StartedTask;
  let bobTask: StartedTask;

  beforeAll(async () => {
    alice = await app.user('alice');
    bob = await app.user('bob');
    [aliceTask, bobTask] = await Promise.all([app.startConversation(alice), app.startConversation(bob)]);
    // Let the fake agent servers' own reports of these runs arrive first (events, then their effect on the record).
    const reported = async (key: string, task: StartedTask) =>
      (await count(key, task.app_conversation_id)) === 4 && (await stored(task.app_conversation_id))?.execution_status === 'finished';
    await eventually('the runs reported', async () => (await reported(alice, aliceTask)) && (await reported(bob, bobTask)), 60_000);
  });

  const info = (id: string, title: string) => ({ id, title, execution_status: 'running', agent: { llm: { model: 'openai/x' } } });
  const stored = async (id: string) => app.rawCollection('app_conversations').findOne({ _id: id as never });

  it("refuses another user's sandbox, and the same user's other sandbox, for conversations and events", async () => {
    const id = aliceTask.app_conversation_id;
    const before = await stored(id);
    const bobKey = await sandboxKey(bob, bobTask.sandbox_id);
    expect(await webhook(bobTask.sandbox_id, bobKey, 'conversations', info(id, 'hijacked'))).toMatchObject({
      status: 401,
      body: { detail: 'Unauthorized' },
    });
    expect((await webhook(bobTask.sandbox_id, bobKey, `events/${id}`, [{ id: 'e1', kind: 'MessageEvent' }])).status).toBe(401);

    const second = await app.startConversation(alice);
    const otherKey = await sandboxKey(alice, second.sandbox_id);
    expect((await webhook(second.sandbox_id, otherKey, 'conversations', info(id, 'moved'))).status).toBe(401);
    expect((await webhook(second.sandbox_id, otherKey, `events/${id}`, [{ id: 'e2', kind: 'MessageEvent' }])).status).toBe(401);
    // (updatedAt may still move: the fake run's last report can land meanwhile)
    const { updatedAt: _before, ...unchanged } = before!;
    expect(await stored(id)).toMatchObject(unchanged);
    expect(await search(alice, id, '&kind__eq=MessageEvent')).toMatchObject({ items: [expect.anything(), expect.anything()] });

    // Its own sandbox still may.
    const ownKey = await sandboxKey(alice, aliceTask.sandbox_id);
    expect((await webhook(aliceTask.sandbox_id, ownKey, 'conversations', info(id, 'Renamed by the agent'))).status).toBe(200);
    expect((await stored(id))?.title).toBe('Renamed by the agent');
  });

  it('protects a conversation id from its first moment, before its start has a sandbox', async () => {
    const nobody = await app.keyFor('sandboxless');
    const started = await call(app, 'POST', '/api/v1/app-conversations', { key: nobody, body: {} });
    // The conversation record exists at once; this start never gets a sandbox (no settings).
    const id = (await call(app, 'GET', '/api/conversations', { key: nobody })).body.results[0].conversation_id as string;
    for (const [task, key] of [
      [bobTask, bob],
      [aliceTask, alice],
    ] as const) {
      expect((await webhook(task.sandbox_id, await sandboxKey(key, task.sandbox_id), 'conversations', info(id, 'mine'))).status).toBe(401);
    }
    await waitForTask(app, nobody, started.body.id);
    const record = await stored(id);
    expect(record).toMatchObject({ userId: expect.stringContaining('sandboxless'), sandboxId: null, title: null });
  });

  it('lets a sandbox report a conversation it started itself, for its own user', async () => {
    const bobKey = await sandboxKey(bob, bobTask.sandbox_id);
    const fresh = 'b'.repeat(32);
    expect((await webhook(bobTask.sandbox_id, bobKey, 'conversations', info(fresh, 'Direct'))).status).toBe(200);
    expect(await stored(fresh)).toMatchObject({ userId: expect.stringContaining('bob'), sandboxId: bobTask.sandbox_id, title: 'Direct' });
    expect((await v0(app, bob, fresh)).title).toBe('Direct');
    expect(await v0(app, alice, fresh)).toBeNull();
    // A deleted conversation's last report ('deleting') does not bring it back.
    expect((await call(app, 'DELETE', `/api/conversations/${fresh}`, { key: bob })).body).toBe(true);
    expect(
      (await webhook(bobTask.sandbox_id, bobKey, 'conversations', { ...info(fresh, 'Direct'), execution_status: 'deleting' })).status,
    ).toBe(200);
    expect(await stored(fresh)).toBeNull();
  });
});

describe('microagent management', () => {
  it("lists a repository's microagent conversations whose last pull request is still open", async () => {
    const key = await app.user('microagents');
    const userId = (await app.server.deps.services.apiKeys.authenticateApiKey(key))!.userId;
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_events' } } } });
    provider.pullStates.set('acme/widgets#7', 'open');
    provider.pullStates.set('acme/widgets#8', 'closed');
    const record = (id: string, fields: Record<string, unknown>) => ({
      _id: id,
      userId,
      sandboxId: null,
      startState: 'ready',
      title: id,
      selected_repository: 'acme/widgets',
      git_provider: 'github',
      trigger: 'microagent_management',
      pr_number: [],
      createdAt: new Date(Date.now() - Number(id.slice(-1)) * 1000),
      updatedAt: new Date(),
      ...fields,
    });
    // Through the service's own record table, so that the embedded default's lists hold them too.
    const conversations = app.server.deps.db.tables.conversations;
    for (const r of [
      record('c'.repeat(31) + '1', {}),
      record('c'.repeat(31) + '2', { pr_number: [7] }),
      record('c'.repeat(31) + '3', { pr_number: [8] }),
      record('c'.repeat(31) + '4', { trigger: 'gui' }),
      record('c'.repeat(31) + '5', { selected_repository: 'acme/other' }),
    ]) {
      await conversations.insert(r as never);
    }
    const listed = await call(app, 'GET', '/api/microagent-management/conversations?selected_repository=acme/widgets&limit=100', { key });
    expect(listed.status).toBe(200);
    expect(listed.body.results.map((c: { conversation_id: string }) => c.conversation_id)).toEqual([
      'c'.repeat(31) + '1',
      'c'.repeat(31) + '2',
    ]);
    expect(listed.body.next_page_id).toBeNull();
    expect((await call(app, 'GET', '/api/microagent-management/conversations', { key })).status).toBe(422);
    const stranger = await app.user('stranger');
    expect(
      (await call(app, 'GET', '/api/microagent-management/conversations?selected_repository=acme/widgets', { key: stranger })).body.results,
    ).toEqual([]);
  });
});
