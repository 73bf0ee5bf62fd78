// Conversations from their first moment, the events routes' wire forms, and which sandbox may
// report what: over real HTTP with the fake agent server in process sandboxes (it "runs" a new
// conversation and sends its webhooks like the real one). What the events are (kept, paged,
// filtered, counted, capped, removed, another user's absent) is tested through the procedures
// in test/domain/events.test.ts.
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
  app = await startConversationApp('events', { GITHUB_API_URL: provider.url });
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

  describe("the events routes, on alice's conversation", () => {
    const dashed = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

    it('answer a page as {"items", "next_page_id"}, a count as a number, repeated ids as a list, the id dashed in the path', async () => {
      const id = aliceTask.app_conversation_id;
      const all = (await search(alice, id)).items as { id: string }[];
      expect(all).toHaveLength(4);
      const first = await search(alice, id, '&limit=3');
      expect(first).toEqual({ items: all.slice(0, 3), next_page_id: expect.any(String) });
      expect(await search(alice, id, `&limit=3&page_id=${first.next_page_id}`)).toEqual({ items: all.slice(3), next_page_id: null });
      expect(await count(alice, id, '&kind__eq=MessageEvent')).toBe(2);
      const v1 = (suffix: string, conversationId = id) =>
        call(app, 'GET', `/api/v1/conversation/${conversationId}/events${suffix}`, { headers: { authorization: `Bearer ${alice}` } });
      expect((await v1(`?id=${all[2]!.id}&id=no-such-event&id=${all[0]!.id}`)).body).toEqual([all[2], null, all[0]]);
      expect((await v1(`?id=${all[1]!.id}`)).body).toEqual([all[1]]); // one id is a list too
      expect((await v1('/count', dashed(id).toUpperCase())).body).toBe(4);
      expect((await v1('/search?limit=2&sort_order=TIMESTAMP_DESC')).body.items).toEqual([all[3], all[2]]);
    });

    it('validate their query and path with 422 in the FastAPI shape', async () => {
      const id = aliceTask.app_conversation_id;
      for (const query of ['', `?conversation_id__eq=${id}&limit=101`, `?conversation_id__eq=${id}&timestamp__gte=yesterday`]) {
        expect((await call(app, 'GET', `/api/v1/events/search${query}`, { key: alice })).status, query).toBe(422);
      }
      expect((await call(app, 'GET', '/api/v1/events/count', { key: alice })).body.detail[0]).toMatchObject({
        loc: ['query', 'conversation_id__eq'],
      });
      const malformed = await call(app, 'GET', '/api/v1/conversation/not-a-uuid/events/search', { key: alice });
      expect(malformed.status).toBe(422);
      expect(malformed.body.detail[0].loc).toEqual(['path', 'conversation_id']);
      expect((await call(app, 'GET', `/api/v1/conversation/${id}/events`, { key: alice })).status).toBe(422); // no id
    });
  });

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

describe('shared conversations over REST (what Agent Canvas’s shared page calls)', () => {
  it('serves a public conversation, its events and its page to another user and to anyone with the link, null and 404 {detail} once private', async () => {
    const owner = await app.user('sharer');
    const viewer = await app.user('viewer');
    const task = await app.startConversation(owner);
    expect(task.status, task.detail ?? '').toBe('READY');
    const id = task.app_conversation_id as string;
    await eventually('the webhooks', async () => (await count(owner, id)) === 4);

    const unshared = await call(app, 'GET', `/api/shared-conversations?ids=${id}`, { key: viewer });
    expect(unshared.status).toBe(200);
    expect(unshared.body).toEqual([null]);
    const hidden = await call(app, 'GET', `/api/shared-events/search?conversation_id=${id}`, { key: viewer });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ detail: 'Conversation not found' });

    expect((await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key: owner, body: { public: true } })).status).toBe(200);
    const [shared] = (await call(app, 'GET', `/api/shared-conversations?ids=${id}&ids=${'0'.repeat(32)}`, { key: viewer })).body;
    expect(shared).toMatchObject({ id, created_by_user_id: expect.stringMatching(/^sharer/), sub_conversation_ids: [] });
    const events = await call(app, 'GET', `/api/shared-events/search?conversation_id=${id}&limit=2`, { key: viewer });
    expect(events.status).toBe(200);
    expect(events.body.items).toEqual((await search(owner, id, '&limit=2')).items);
    expect(events.body.next_page_id).not.toBeNull();
    // The link is enough (docs/decisions/0013-public-links.md): no credential, the same answers.
    expect((await call(app, 'GET', `/api/shared-conversations?ids=${id}`, {})).body).toEqual([shared]);
    expect((await call(app, 'GET', `/api/shared-conversations/${id}`, {})).body).toEqual(shared);
    expect((await call(app, 'GET', `/api/shared-events/search?conversation_id=${id}&limit=2`, {})).body).toEqual(events.body);
    // Its page, in any browser: the messages the events hold, escaped.
    const page = await fetch(`${app.url}/shared/conversations/${id}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    const texts = (await search(owner, id, '&kind__eq=MessageEvent')).items.flatMap(
      (e: { llm_message: { content: { text?: string }[] } }) => e.llm_message.content.map((c) => c.text ?? ''),
    );
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(html).toContain(text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'));

    expect((await call(app, 'PATCH', `/api/v1/app-conversations/${id}`, { key: owner, body: { public: false } })).status).toBe(200);
    expect((await call(app, 'GET', `/api/shared-conversations?ids=${id}`, { key: viewer })).body).toEqual([null]);
    expect((await call(app, 'GET', `/api/shared-conversations?ids=${id}`, {})).body).toEqual([null]);
    const single = await call(app, 'GET', `/api/shared-conversations/${id}`, {});
    expect([single.status, single.body]).toEqual([404, { detail: 'Conversation not found' }]);
    expect((await call(app, 'GET', `/api/shared-events/search?conversation_id=${id}`, { key: viewer })).status).toBe(404);
    expect((await call(app, 'GET', `/api/shared-events/search?conversation_id=${id}`, {})).status).toBe(404);
    const gone = await fetch(`${app.url}/shared/conversations/${id}`);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toContain('does not exist or is not shared');
    // Nothing else opens without a credential.
    expect((await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, {})).status).toBe(401);
    expect((await call(app, 'GET', `/api/v1/conversation/${id}/events/search`, {})).status).toBe(401);
  });
});
