// A conversation's events through the procedures (createCaller, no HTTP, no sandbox): the
// batches an agent server's webhooks deliver (here handed to the agent-callback service as the
// webhook procedures do, in the fake agent server's two batches of a run) are kept in order
// without full_state snapshots, paged both ways, filtered by kind and time, counted alike, got by
// id, capped at EVENTS_MAX_PER_CONVERSATION (oldest dropped; a retried batch ignored), removed
// with their conversation, and another user's conversation has none. Both the 2026 procedures
// (the conversation named in the path) and the d6 ones (conversation_id__eq). The wire forms
// (query strings, path ids, 422 shapes) are in test/conversations/conversation-events.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const SANDBOX = 'sb-events'; // no such sandbox: its owner is the user named with each report
const ALICE = 'events-alice';
const BOB = 'events-bob';

let domain: TestDomain;
let counter = 0;
const hex = () => `e${(++counter).toString(16).padStart(31, '0')}`;
const dashed = (id: string) => `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;

/** Zone-less timestamps a millisecond apart, as the agent server writes them. */
let clock = Date.parse('2030-01-01T10:00:00Z');
const at = () => new Date(clock++).toISOString().replace('Z', '');
const event = (fields: Record<string, unknown>) => ({ id: crypto.randomUUID(), timestamp: at(), ...fields });

/** A conversation reported by its sandbox, and the events of its run as the fake agent server sends them. */
async function reportedRun(user: string, text: string): Promise<string> {
  const id = hex();
  const callbacks = domain.deps.services.agentCallbacks;
  await callbacks.conversation(SANDBOX, user, { id: dashed(id), execution_status: 'idle' });
  const first = event({ source: 'user', kind: 'MessageEvent', llm_message: { role: 'user', content: [{ type: 'text', text }] } });
  const running = event({ source: 'environment', kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: 'running' });
  const answer = event({
    source: 'agent',
    kind: 'MessageEvent',
    llm_message: { role: 'assistant', content: [{ type: 'text', text: 'Hello from the fake agent.' }] },
  });
  const finished = event({ source: 'environment', kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: 'finished' });
  const fullState = event({
    source: 'environment',
    kind: 'ConversationStateUpdateEvent',
    key: 'full_state',
    value: { execution_status: 'finished' },
  });
  await callbacks.events(SANDBOX, user, id, [first, running, fullState] as never);
  await callbacks.events(SANDBOX, user, id, [answer, finished] as never);
  return id;
}

type Event = { id: string; kind: string; key?: string; timestamp: string; source: string };
let id: string;
let all: Event[];

beforeAll(async () => {
  domain = await startTestDomain('events', { EVENTS_MAX_PER_CONVERSATION: '20' });
  id = await reportedRun(ALICE, 'Count to three');
  all = (await domain.as(ALICE).events.searchInConversation({ conversation_id: id })).items as Event[];
});
afterAll(() => domain?.stop());

describe('the events of a conversation', () => {
  it('are what the webhooks delivered, in order, without full_state snapshots', async () => {
    expect(all.map((e) => `${e.kind}${e.key ? `:${e.key}` : ''}`)).toEqual([
      'MessageEvent',
      'ConversationStateUpdateEvent:execution_status',
      'MessageEvent',
      'ConversationStateUpdateEvent:execution_status',
    ]);
    expect(all[0]).toMatchObject({ source: 'user', llm_message: { content: [{ type: 'text', text: 'Count to three' }] } });
    // The UUID in any form names the same conversation.
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: dashed(id).toUpperCase() })).toBe(4);
  });

  it('page in timestamp order, either way', async () => {
    const alice = domain.as(ALICE);
    const first = await alice.events.searchInConversation({ conversation_id: id, limit: 3 });
    expect(first.items).toEqual(all.slice(0, 3));
    const second = await alice.events.searchInConversation({ conversation_id: id, limit: 3, page_id: first.next_page_id });
    expect(second).toEqual({ items: all.slice(3), next_page_id: null });
    const newest = await alice.events.searchInConversation({ conversation_id: id, limit: 50, sort_order: 'TIMESTAMP_DESC' });
    expect(newest.items).toEqual([...all].reverse());
    const newestOne = await alice.events.search({ conversation_id__eq: id, sort_order: 'TIMESTAMP_DESC', limit: 1 });
    expect(newestOne.items).toEqual([all[3]]);
  });

  it('filter by kind and timestamp, by the conversation id dashed too, and count the same way', async () => {
    const alice = domain.as(ALICE);
    const messages = (await alice.events.searchInConversation({ conversation_id: dashed(id), kind__eq: 'MessageEvent' })).items;
    expect(messages.map((e) => e.source)).toEqual(['user', 'agent']);
    expect(await alice.events.countInConversation({ conversation_id: id, kind__eq: 'MessageEvent' })).toBe(2);
    expect(await alice.events.countInConversation({ conversation_id: id, kind__eq: 'ConversationStateUpdateEvent' })).toBe(2);
    expect(await alice.events.countInConversation({ conversation_id: id })).toBe(4);
    const since = all[2]!.timestamp;
    const later = (await alice.events.searchInConversation({ conversation_id: id, timestamp__gte: since })).items;
    expect(later).toEqual(all.slice(2));
    expect(await alice.events.count({ conversation_id__eq: id, timestamp__gte: since })).toBe(2);
    expect((await alice.events.searchInConversation({ conversation_id: id, timestamp__lt: '2000-01-01T00:00:00Z' })).items).toEqual([]);
    expect(await alice.events.count({ conversation_id__eq: id, timestamp__lt: '2000-01-01T00:00:00Z' })).toBe(0);
  });

  it('are got by id in the order asked, null for an id it does not keep', async () => {
    const alice = domain.as(ALICE);
    const got = await alice.events.batchGetInConversation({ conversation_id: id, id: [all[2]!.id, 'no-such-event', all[0]!.id] });
    expect(got).toEqual([all[2], null, all[0]]);
    expect(await alice.events.batchGetInConversation({ conversation_id: id, id: [all[1]!.id] })).toEqual([all[1]]);
  });

  it('are the same through the d6 procedures (conversation_id__eq)', async () => {
    expect((await domain.as(ALICE).events.search({ conversation_id__eq: id })).items).toEqual(all);
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: id })).toBe(4);
  });

  it('refuse a limit outside 1..100, an unknown sort order, a malformed or missing id, a bad kind or datetime (BAD_REQUEST)', async () => {
    const alice = domain.as(ALICE);
    const refusals: [() => Promise<unknown>, string][] = [
      () => alice.events.searchInConversation({ conversation_id: id, limit: 101 }),
      () => alice.events.search({ conversation_id__eq: id, limit: 0 }),
      () => alice.events.searchInConversation({ conversation_id: id, sort_order: 'NEWEST' as never }),
      () => alice.events.searchInConversation({ conversation_id: 'not-a-uuid' }),
      () => alice.events.search({ conversation_id__eq: 'nope' }),
      () => alice.events.count({} as never),
      () => alice.events.search({ conversation_id__eq: id, timestamp__gte: 'yesterday' }),
      () => alice.events.search({ conversation_id__eq: id, kind__eq: 'a b' }),
      () => alice.events.batchGetInConversation({ conversation_id: id } as never),
    ].map((call, i) => [
      call,
      ['limit', 'limit', 'sort_order', 'conversation_id', 'conversation_id__eq', 'conversation_id__eq', 'timestamp__gte', 'kind__eq', 'id'][
        i
      ]!,
    ]);
    for (const [call, field] of refusals) {
      expect(await refusal(call()), field).toMatchObject({ code: 'BAD_REQUEST', paths: [[field]] });
    }
  });
});

describe("another user's conversation", () => {
  it('has no events: an empty page, a count of 0, nulls; an unknown conversation counts 0', async () => {
    const bob = domain.as(BOB);
    expect(await bob.events.searchInConversation({ conversation_id: id })).toEqual({ items: [], next_page_id: null });
    expect(await bob.events.search({ conversation_id__eq: id })).toEqual({ items: [], next_page_id: null });
    expect(await bob.events.countInConversation({ conversation_id: id })).toBe(0);
    expect(await bob.events.batchGetInConversation({ conversation_id: id, id: [all[0]!.id] })).toEqual([null]);
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: 'a'.repeat(32) })).toBe(0);
  });
});

describe('the events kept', () => {
  it('are at most EVENTS_MAX_PER_CONVERSATION, the oldest dropped, and a retried batch is ignored', async () => {
    const own = await reportedRun(ALICE, 'Count my events');
    const batch = Array.from({ length: 25 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      kind: 'ObservationEvent',
      source: 'environment',
      timestamp: `2030-01-02T00:00:${String(i).padStart(2, '0')}`,
    }));
    await domain.deps.services.agentCallbacks.events(SANDBOX, ALICE, own, batch as never);
    await domain.deps.services.agentCallbacks.events(SANDBOX, ALICE, own, batch.slice(20) as never);
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: own })).toBe(20);
    const kept = (await domain.as(ALICE).events.search({ conversation_id__eq: own })).items.map((e) => e.id);
    expect(kept).toEqual(batch.slice(5).map((e) => e.id));
  });

  it('are removed with their conversation', async () => {
    const doomed = await reportedRun(ALICE, 'Forget me');
    const buckets = () => domain.deps.db.models.EventBucket.collection.countDocuments({ _id: { $regex: `^${doomed}:` } as never });
    expect(await buckets()).toBeGreaterThan(0);
    expect(await domain.as(ALICE).conversations.delete({ conversation_id: doomed })).toBe(true);
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: doomed })).toBe(0);
    expect(await domain.deps.db.models.EventLog.collection.countDocuments({ _id: doomed as never })).toBe(0);
    expect(await buckets()).toBe(0);
    // The other conversation's events stay.
    expect(await domain.as(ALICE).events.count({ conversation_id__eq: id })).toBe(4);
  });
});
