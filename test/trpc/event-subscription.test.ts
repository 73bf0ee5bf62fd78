// A conversation live over tRPC (server-sent events; issue 40): events.watch gives a subscriber on
// one replica, in order and once each, what the agent server's webhooks store on the other
// replica, and reconnecting with the last event id (what tRPC's subscription link sends) resumes
// exactly after it; appConversations.watch and sandboxes.watch push the conversation and the
// sandbox each time they change, whichever replica changed them; another user's is NOT_FOUND.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpSubscriptionLink, TRPCClientError } from '@trpc/client';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { generateKeyText } from '../../src/crypto.js';
import { transformer } from '../../src/trpc/transformer.js';
import { uniqueDbName } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-event-subscription-'));
let writer: ConversationApp;
let reader: ConversationApp;
let key: string;
let userId: string;
let conversationId: string;

beforeAll(async () => {
  const env = { DATA_DIR: tmp, ENCRYPTION_KEY: generateKeyText() };
  const dbName = uniqueDbName('event-subscription');
  writer = await startConversationApp('event-subscription-a', env, { dbName });
  reader = await startConversationApp('event-subscription-b', env, { dbName });
  key = await writer.user('watcher');
  userId = (await writer.server.deps.services.apiKeys.authenticateApiKey(key))!.userId;
  const task = await writer.startConversation(key);
  expect(task.status, task.detail ?? '').toBe('READY');
  conversationId = task.app_conversation_id;
}, 120_000);

afterAll(async () => {
  await reader?.close({ keepSandboxes: true });
  await writer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const client = (on: ConversationApp, as: string) =>
  createTRPCClient<AppRouter>({
    links: [
      httpSubscriptionLink({
        url: `${on.url}/trpc`,
        transformer,
        EventSource,
        eventSourceOptions: () => ({
          fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, authorization: `Bearer ${as}` } }),
        }),
      }),
    ],
  });

/** The test's own events, as the agent server's webhook batches carry them. */
const message = (n: number) => ({
  kind: 'MessageEvent',
  id: `test-event-${n}`,
  timestamp: new Date().toISOString(),
  source: 'agent',
  llm_message: { role: 'assistant', content: [{ type: 'text', text: `message ${n}` }] },
});

/** Subscribes on `on` (after `lastEventId`), collecting events until `until` says enough. */
function collect(on: ConversationApp, lastEventId: string | null, until: (ids: string[]) => boolean) {
  const seen: { id: string; eventId: string }[] = [];
  return new Promise<typeof seen>((resolve, reject) => {
    const subscription = client(on, key).events.watch.subscribe(
      { conversation_id: conversationId, lastEventId },
      {
        onData: (tracked) => {
          seen.push({ id: String((tracked.data as { id?: unknown }).id), eventId: tracked.id });
          if (until(seen.map((s) => s.id))) {
            subscription.unsubscribe();
            resolve(seen);
          }
        },
        onError: reject,
      },
    );
  });
}

const ours = (seen: { id: string }[]) => seen.map((s) => s.id).filter((id) => id.startsWith('test-event-'));

describe('events.watch', () => {
  it('delivers what another replica stores, in order, once each, and resumes after the last event id', async () => {
    const record = (from: number, to: number) =>
      writer.server.deps.services.events.record(
        userId,
        conversationId,
        Array.from({ length: to - from + 1 }, (_, i) => message(from + i)),
      );
    const first = collect(reader, null, (ids) => ids.includes('test-event-3'));
    // Stored while the subscriber listens on the other replica, in two webhook batches, one sent twice.
    await record(1, 2);
    await record(1, 2);
    await record(3, 3);
    const seen = await first;
    expect(ours(seen)).toEqual(['test-event-1', 'test-event-2', 'test-event-3']);
    const positions = seen.map((s) => Number(s.eventId));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(positions.length);

    // Gone for a while: what was stored meanwhile comes after the last event id, nothing before it.
    await record(4, 6);
    const resumed = await collect(reader, seen.at(-1)!.eventId, (ids) => ids.includes('test-event-6'));
    expect(ours(resumed)).toEqual(['test-event-4', 'test-event-5', 'test-event-6']);
    expect(Math.min(...resumed.map((s) => Number(s.eventId)))).toBe(Number(seen.at(-1)!.eventId) + 1);
  });

  it("answers NOT_FOUND for another user's conversation", async () => {
    const stranger = await reader.user('stranger');
    const failure = await new Promise<unknown>((resolve) => {
      const subscription = client(reader, stranger).events.watch.subscribe(
        { conversation_id: conversationId },
        {
          onData: () => {},
          onError: (error) => {
            subscription.unsubscribe();
            resolve(error);
          },
        },
      );
    });
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect((failure as TRPCClientError<AppRouter>).data).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('pushes the conversation each time another replica changes it, once per change', async () => {
    const titles: string[] = [];
    const states: string[] = [];
    const changed = new Promise<void>((resolve, reject) => {
      const subscription = client(reader, key).appConversations.watch.subscribe(
        { conversation_id: conversationId },
        {
          onData: (conversation) => {
            titles.push(String(conversation.title));
            states.push(JSON.stringify(conversation));
            if (conversation.title === 'Renamed on the other replica') {
              subscription.unsubscribe();
              resolve();
            }
          },
          onError: reject,
        },
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // subscribed and first pushed
    const renamed = await fetch(`${writer.url}/api/v1/app-conversations/${conversationId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Renamed on the other replica' }),
    });
    expect(renamed.status).toBe(200);
    await changed;
    expect(titles.at(-1)).toBe('Renamed on the other replica');
    // A push is a change: never the same state twice in a row.
    expect(states.filter((state, i) => i > 0 && state === states[i - 1])).toEqual([]);
  });

  it("pushes the sandbox's status as another replica pauses and resumes it; NOT_FOUND for another user's", async () => {
    const sandboxId = (await writer.server.deps.services.appConversations.get(userId, conversationId))!.sandbox_id!;
    const statuses: string[] = [];
    const resumedAgain = new Promise<void>((resolve, reject) => {
      const subscription = client(reader, key).sandboxes.watch.subscribe(
        { sandbox_id: sandboxId },
        {
          onData: (sandbox) => {
            statuses.push(sandbox.status);
            if (statuses.includes('PAUSED') && sandbox.status === 'RUNNING') {
              subscription.unsubscribe();
              resolve();
            }
          },
          onError: reject,
        },
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // subscribed and first pushed
    const act = (what: string) =>
      fetch(`${writer.url}/api/v1/sandboxes/${sandboxId}/${what}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{}',
      });
    expect((await act('pause')).status).toBe(200);
    // Seen paused before it is resumed (read every second).
    for (let i = 0; i < 50 && !statuses.includes('PAUSED'); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await act('resume')).status).toBe(200);
    await resumedAgain;
    expect(statuses[0]).toBe('RUNNING');
    expect(statuses).toContain('PAUSED');

    const stranger = await reader.user('sandbox-stranger');
    const failure = await new Promise<unknown>((resolve) => {
      const subscription = client(reader, stranger).sandboxes.watch.subscribe(
        { sandbox_id: sandboxId },
        {
          onError: (error) => {
            subscription.unsubscribe();
            resolve(error);
          },
        },
      );
    });
    expect((failure as TRPCClientError<AppRouter>).data).toMatchObject({ code: 'NOT_FOUND' });
  });
});
