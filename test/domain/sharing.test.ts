// Sharing through the procedures (sharing.*): a conversation its owner made public is readable,
// with its events, by another user of the service who has its id; private (the default, or made
// private again) it answers as absent — null in the list, NOT_FOUND for its events — and nothing
// of another user's unshared conversation shows. The REST paths are in test/conversations/conversation-events.test.ts.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const SANDBOX = 'sb-sharing'; // no such sandbox: its owner is the user named with each report
let domain: TestDomain;
let counter = 0;
const hex = () => `5${(++counter).toString(16).padStart(31, '0')}`;
const dashed = (id: string) => `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;

/** A conversation of `user` reported by its sandbox, with a user message and the agent's answer. */
async function reportedRun(user: string, text: string): Promise<string> {
  const id = hex();
  const callbacks = domain.deps.services.agentCallbacks;
  await callbacks.conversation(SANDBOX, user, { id: dashed(id), execution_status: 'idle' });
  const message = (source: string, role: string, body: string) => ({
    id: crypto.randomUUID(),
    timestamp: new Date().toISOString().replace('Z', ''),
    source,
    kind: 'MessageEvent',
    llm_message: { role, content: [{ type: 'text', text: body }] },
  });
  await callbacks.events(SANDBOX, user, id, [message('user', 'user', text), message('agent', 'assistant', `Done: ${text}`)] as never);
  return id;
}

const alice = () => domain.as('share-alice');
const bob = () => domain.as('share-bob');
let shared: string;
let unshared: string;

beforeAll(async () => {
  domain = await startTestDomain('sharing');
  shared = await reportedRun('share-alice', 'Shared work');
  unshared = await reportedRun('share-alice', 'Private work');
  await alice().appConversationActions.update({ conversation_id: shared, title: 'Shared work' });
});
afterAll(() => domain?.stop());

describe('shared conversations', () => {
  it('answer as absent until their owner makes them public', async () => {
    expect(await bob().sharing.conversations({ ids: [shared, unshared] })).toEqual([null, null]);
    expect(await refusal(bob().sharing.searchEvents({ conversation_id: shared }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'conversation_not_found',
    });
  });

  it('are read, with their events, by another user once public; the unshared one stays absent', async () => {
    await alice().appConversationActions.update({ conversation_id: shared, public: true });
    const [conversation, other] = await bob().sharing.conversations({ ids: [dashed(shared), unshared] });
    expect(other).toBeNull();
    expect(conversation).toMatchObject({ id: shared, created_by_user_id: 'share-alice', title: 'Shared work', sub_conversation_ids: [] });
    const events = await bob().sharing.searchEvents({ conversation_id: dashed(shared) });
    expect(
      events.items.map((e) => (e as unknown as { llm_message: { content: { text: string }[] } }).llm_message.content[0]!.text),
    ).toEqual(['Shared work', 'Done: Shared work']);
    const firstOnly = await bob().sharing.searchEvents({ conversation_id: shared, limit: 1 });
    expect(firstOnly.items).toHaveLength(1);
    expect(firstOnly.next_page_id).not.toBeNull();
    expect(await refusal(bob().sharing.searchEvents({ conversation_id: unshared }))).toMatchObject({ code: 'NOT_FOUND' });
    // Read-only: the shared id opens none of the owner's routes to him.
    expect(await bob().appConversations.batchGet({ ids: [shared] })).toEqual([null]);
    expect(await refusal(bob().appConversationActions.update({ conversation_id: shared, title: 'Mine now' }))).toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('answer as absent again at once when made private', async () => {
    await alice().appConversationActions.update({ conversation_id: shared, public: false });
    expect(await bob().sharing.conversations({ ids: [shared] })).toEqual([null]);
    expect(await refusal(bob().sharing.searchEvents({ conversation_id: shared }))).toMatchObject({ code: 'NOT_FOUND' });
  });
});
