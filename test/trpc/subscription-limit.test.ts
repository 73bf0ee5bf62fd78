// Open subscriptions per user are bounded (TRPC_MAX_SUBSCRIPTIONS_PER_USER, per replica): each
// holds a socket and a place in the event feed's reads. One past the bound is refused in the
// stream as tRPC refuses (TOO_MANY_REQUESTS, what the client's onError gets); other users are not
// concerned, and a closed one makes room at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let alice: string;
let conversationId: string;

beforeAll(async () => {
  app = await startConversationApp('subscription-limit', { TRPC_MAX_SUBSCRIPTIONS_PER_USER: '2' });
  alice = await app.user('alice');
  const task = await app.startConversation(alice);
  expect(task.status, task.detail ?? '').toBe('READY');
  conversationId = task.app_conversation_id;
}, 60_000);
afterAll(() => app?.close());

/** Opens events.watch as a browser's EventSource would; resolves with the stream's first message past `connected`. */
function subscribe(key: string) {
  const abort = new AbortController();
  const input = encodeURIComponent(JSON.stringify({ json: { conversation_id: conversationId } }));
  const first = fetch(`${app.url}/trpc/events.watch?input=${input}`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    signal: abort.signal,
  }).then(async (res) => {
    const reader = res.body!.getReader();
    let text = '';
    while (!/\n\n(event: (?!connected)|data: )/.test(text.slice(text.indexOf('connected')))) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    return text;
  });
  return { first, close: () => abort.abort() };
}

describe('open subscriptions per user', () => {
  it('refuses the one past the bound with TOO_MANY_REQUESTS, counts users apart and frees a place on close', async () => {
    const one = subscribe(alice);
    const two = subscribe(alice);
    // Both open and streaming the conversation's stored events.
    expect(await one.first).toContain('data: ');
    expect(await two.first).toContain('data: ');
    const three = subscribe(alice);
    const refused = await three.first;
    expect(refused).toContain('event: serialized-error');
    expect(refused).toContain('TOO_MANY_REQUESTS');
    expect(refused).toContain('Too many open subscriptions for this user (at most 2)');
    // Another user is not concerned (the conversation is not hers: NOT_FOUND, not a refusal for the count).
    const bob = subscribe(await app.user('bob'));
    const bobs = await bob.first;
    expect(bobs).toContain('NOT_FOUND');
    expect(bobs).not.toContain('TOO_MANY_REQUESTS');
    // Closed, a place is free again.
    one.close();
    await eventually('a place freed', async () => {
      const again = subscribe(alice);
      const text = await again.first;
      again.close();
      return !text.includes('TOO_MANY_REQUESTS');
    });
    two.close();
    three.close();
    bob.close();
  });
});
