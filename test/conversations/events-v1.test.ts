// The 2026 events routes (/api/v1/conversation/{id}/events/search, /count, and the batch get)
// over real HTTP with Bearer keys, from the events the fake agent server reported by webhook:
// the filters, both orders and paging, the count, events by id (null for unknown ones), the
// conversation id dashed or not, another user's conversation empty, and the d6 routes beside.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let alice: string;
let bob: string;
let id: string;
let all: { id: string; kind: string; timestamp: string; source: string }[];

const as = (key: string, path: string) => call(app, 'GET', path, { headers: { authorization: `Bearer ${key}` } });
const events = (suffix = '', conversationId = id) => `/api/v1/conversation/${conversationId}/events${suffix}`;
const dashed = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

beforeAll(async () => {
  app = await startConversationApp('events-v1');
  alice = await app.user('alice');
  bob = await app.user('bob');
  const task = await app.startConversation(alice, { initial_message: { content: [{ type: 'text', text: 'Count to three' }] } });
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
  // The fake agent's run reports four events (and a full_state snapshot, which is not kept).
  all = await eventually('the events of the run to be stored', async () => {
    const page = (await as(alice, events('/search'))).body;
    return page.items.length === 4 ? page.items : null;
  });
}, 60_000);
afterAll(async () => {
  await app?.close();
});

describe('GET /api/v1/conversation/{id}/events/search', () => {
  it('pages the events in timestamp order, either way', async () => {
    expect(all.map((e) => e.kind)).toEqual([
      'MessageEvent',
      'ConversationStateUpdateEvent',
      'MessageEvent',
      'ConversationStateUpdateEvent',
    ]);
    const first = (await as(alice, events('/search?limit=3'))).body;
    expect(first.items).toEqual(all.slice(0, 3));
    const second = (await as(alice, events(`/search?limit=3&page_id=${first.next_page_id}`))).body;
    expect(second).toEqual({ items: all.slice(3), next_page_id: null });
    const newest = (await as(alice, events('/search?limit=50&sort_order=TIMESTAMP_DESC'))).body;
    expect(newest.items).toEqual([...all].reverse());
  });

  it('filters by kind and timestamp, by the conversation id dashed too', async () => {
    const messages = (await as(alice, events('/search?kind__eq=MessageEvent', dashed(id)))).body.items;
    expect(messages.map((e: { source: string }) => e.source)).toEqual(['user', 'agent']);
    const since = encodeURIComponent(all[2]!.timestamp);
    expect((await as(alice, events(`/search?timestamp__gte=${since}`))).body.items.length).toBeGreaterThanOrEqual(1);
    expect((await as(alice, events(`/search?timestamp__lt=2000-01-01T00:00:00Z`))).body.items).toEqual([]);
  });

  it('refuses limit over 100, an unknown sort order and a malformed id with 422', async () => {
    expect((await as(alice, events('/search?limit=101'))).status).toBe(422);
    expect((await as(alice, events('/search?sort_order=NEWEST'))).status).toBe(422);
    const malformed = await as(alice, events('/search', 'not-a-uuid'));
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['path', 'conversation_id']);
  });
});

describe('GET /api/v1/conversation/{id}/events/count and the batch get', () => {
  it('counts all events, or those of a kind', async () => {
    expect((await as(alice, events('/count'))).body).toBe(4);
    expect((await as(alice, events('/count?kind__eq=ConversationStateUpdateEvent'))).body).toBe(2);
  });

  it('gets events by id in the order asked, null for an id it does not keep; one id is a list too', async () => {
    const asked = [all[2]!.id, 'no-such-event', all[0]!.id];
    const got = (await as(alice, events(`?${asked.map((e) => `id=${e}`).join('&')}`))).body;
    expect(got).toEqual([all[2], null, all[0]]);
    expect((await as(alice, events(`?id=${all[1]!.id}`))).body).toEqual([all[1]]);
    expect((await as(alice, events(''))).status).toBe(422);
  });
});

describe("another user's conversation", () => {
  it('has no events: an empty page, a count of 0, nulls', async () => {
    expect((await as(bob, events('/search'))).body).toEqual({ items: [], next_page_id: null });
    expect((await as(bob, events('/count'))).body).toBe(0);
    expect((await as(bob, events(`?id=${all[0]!.id}`))).body).toEqual([null]);
  });
});

describe('the d6 routes', () => {
  it('still serve the same events', async () => {
    expect((await as(alice, `/api/v1/events/search?conversation_id__eq=${id}`)).body.items).toEqual(all);
    expect((await as(alice, `/api/v1/events/count?conversation_id__eq=${id}`)).body).toBe(4);
  });
});
