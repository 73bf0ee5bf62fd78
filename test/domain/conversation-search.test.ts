// The 2026 conversation search, its count and PATCH through the procedures (createCaller, no
// HTTP, no sandbox): the orders of sort_order, the filters (title, sandbox, dates), what PATCH
// sets and clears (a cleared title read as the reference names a new conversation), the
// refusals of values outside the contract, and another user's conversations absent. The
// conversations are reported by their sandboxes as agent servers do (one sandbox each). DELETE
// (the conversation's sandbox goes with it) and the credentials these routes refuse are tested
// over HTTP with real sandboxes in test/conversations/conversations-v1.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const BOB = 'search-bob';
const ALICE = 'search-alice';
let domain: TestDomain;
let ids: string[];
const sandboxOf = (id: string) => `sb-${id.slice(-6)}`;

/** Resolves once the clock has moved past now: records written after it are strictly later. */
async function nextMillisecond(): Promise<void> {
  const now = Date.now();
  while (Date.now() <= now) await new Promise((resolve) => setImmediate(resolve));
}

beforeAll(async () => {
  domain = await startTestDomain('conversation-search');
  ids = ['beta', 'alpha', 'gamma'].map((_, i) => `c0ffee${String(i).padStart(26, '0')}`);
  for (const id of ids) {
    await nextMillisecond();
    await domain.deps.services.agentCallbacks.conversation(sandboxOf(id), BOB, { id, execution_status: 'idle' });
  }
  // Titles as the user sets them, in this order.
  for (const [i, title] of ['beta', 'alpha', 'gamma'].entries()) {
    await nextMillisecond();
    await domain.as(BOB).appConversationActions.update({ conversation_id: ids[i]!, title });
  }
});
afterAll(() => domain?.stop());

const titles = async (sort_order: string) =>
  (await domain.as(BOB).appConversations.search({ limit: 20, sort_order: sort_order as never })).items.map((c) => c.title);

describe('the conversation search', () => {
  it('orders by sort_order (CREATED_AT[_DESC], UPDATED_AT[_DESC], TITLE[_DESC])', async () => {
    expect(await titles('CREATED_AT')).toEqual(['beta', 'alpha', 'gamma']);
    expect(await titles('CREATED_AT_DESC')).toEqual(['gamma', 'alpha', 'beta']);
    expect(await titles('TITLE')).toEqual(['alpha', 'beta', 'gamma']);
    expect(await titles('TITLE_DESC')).toEqual(['gamma', 'beta', 'alpha']);
    expect(await titles('UPDATED_AT_DESC')).toEqual(['gamma', 'alpha', 'beta']);
    expect(await titles('UPDATED_AT')).toEqual(['beta', 'alpha', 'gamma']);
    await nextMillisecond();
    await domain.as(BOB).appConversationActions.update({ conversation_id: ids[0]!, public: false });
    expect((await titles('UPDATED_AT_DESC'))[0]).toBe('beta');
    expect(await refusal(titles('SIDEWAYS'))).toMatchObject({ code: 'BAD_REQUEST', paths: [['sort_order']] });
  });

  it('filters by title__contains, sandbox_id__eq and dates, counts alike, and refuses a limit over 100', async () => {
    const bob = domain.as(BOB);
    expect((await bob.appConversations.search({ title__contains: 'ALP' })).items.map((c) => c.id)).toEqual([ids[1]]);
    expect((await bob.appConversations.search({ sandbox_id__eq: sandboxOf(ids[2]!) })).items.map((c) => c.id)).toEqual([ids[2]]);
    expect(await bob.appConversations.count({ sandbox_id__eq: sandboxOf(ids[2]!) })).toBe(1);
    expect(await bob.appConversations.count({ title__contains: 'a' })).toBe(3);
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await bob.appConversations.search({ created_at__gte: future })).items).toEqual([]);
    expect(await bob.appConversations.count({ created_at__lt: future })).toBe(3);
    expect(await refusal(bob.appConversations.search({ limit: 101 }))).toMatchObject({ code: 'BAD_REQUEST', paths: [['limit']] });
    expect((await bob.appConversations.search({ limit: 20, include_sub_conversations: true })).items).toHaveLength(3);
  });
});

describe('PATCH (appConversationActions.update)', () => {
  it('sets title, public, repository, branch and provider, null clears, and answers the conversation', async () => {
    const bob = domain.as(BOB);
    const patched = await bob.appConversationActions.update({
      conversation_id: ids[1]!,
      public: true,
      selected_repository: 'acme/widgets',
      selected_branch: 'main',
      git_provider: 'gitlab',
    });
    expect(patched).toMatchObject({
      id: ids[1],
      title: 'alpha',
      public: true,
      selected_repository: 'acme/widgets',
      selected_branch: 'main',
      git_provider: 'gitlab',
    });
    const cleared = await bob.appConversationActions.update({ conversation_id: ids[1]!, selected_branch: null, title: null });
    // A conversation without a title is called as the reference names a new one, never blank.
    expect(cleared).toMatchObject({
      title: `Conversation ${ids[1]!.slice(0, 5)}`,
      selected_branch: null,
      selected_repository: 'acme/widgets',
      public: true,
    });
    expect(await domain.deps.db.models.AppConversation.collection.findOne({ _id: ids[1] } as never)).toMatchObject({ title: null });
    expect(await refusal(bob.appConversationActions.update({ conversation_id: ids[1]!, git_provider: 'svn' as never }))).toMatchObject({
      code: 'BAD_REQUEST',
      paths: [['git_provider']],
    });
  });
});

describe("another user's conversations", () => {
  it('are absent: NOT_FOUND on PATCH and DELETE, missing from searches and counts, and left as they were', async () => {
    const alice = domain.as(ALICE);
    expect(await refusal(alice.appConversationActions.update({ conversation_id: ids[0]!, title: 'mine now' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'conversation_not_found',
    });
    expect(await refusal(alice.appConversationActions.delete({ conversation_id: ids[0]! }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'conversation_not_found',
    });
    expect((await alice.appConversations.search({ limit: 100 })).items.map((c) => c.id)).not.toContain(ids[0]);
    expect(await alice.appConversations.count({})).toBe(0);
    expect(await alice.appConversations.batchGet({ ids: [ids[0]!] })).toEqual([null]);
    expect((await domain.as(BOB).appConversations.batchGet({ ids: [ids[0]!] }))[0]?.title).toBe('beta');
  });
});
