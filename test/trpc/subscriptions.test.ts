// The start-task subscription (tRPC over server-sent events) refuses a request without a
// valid key with 401 before any stream starts, and answers an unknown or another user's
// task with NOT_FOUND (never INTERNAL_SERVER_ERROR), over raw HTTP and the real tRPC client.
import { createTRPCClient, httpSubscriptionLink, TRPCClientError } from '@trpc/client';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('subscriptions');
});
afterAll(() => app.stop());

const watchUrl = (taskId: string) =>
  `/trpc/appConversations.watchStartTask?input=${encodeURIComponent(JSON.stringify({ json: { task_id: taskId } }))}`;

function subscriber(key: string | null) {
  const headers: Record<string, string> = key ? { 'x-session-api-key': key } : {};
  return createTRPCClient<AppRouter>({
    links: [
      httpSubscriptionLink({
        url: `${app.url}/trpc`,
        transformer,
        EventSource,
        eventSourceOptions: () => ({ fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...headers } }) }),
      }),
    ],
  });
}

/** The first error the subscription reports: as an error, or as a failed connection attempt. */
function firstFailure(key: string | null, taskId: string): Promise<unknown> {
  return new Promise((resolve) => {
    const subscription = subscriber(key).appConversations.watchStartTask.subscribe(
      { task_id: taskId },
      {
        onError: (error) => {
          subscription.unsubscribe();
          resolve(error);
        },
        onConnectionStateChange: (state) => {
          if (state.state === 'connecting' && state.error) {
            subscription.unsubscribe();
            resolve(state.error);
          }
        },
      },
    );
  });
}

describe('watchStartTask', () => {
  it('refuses a request without a key, or with an unknown one, with 401 before streaming', async () => {
    for (const key of [undefined, 'ohk_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB']) {
      const res = await call(app, 'GET', watchUrl('0'.repeat(32)), key ? { key } : {});
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body.error.json).toMatchObject({ message: 'Unauthorized', data: { code: 'UNAUTHORIZED', httpStatus: 401 } });
    }
  });

  it('tells the tRPC client the connection was refused with 401', async () => {
    const failure = await firstFailure(null, '0'.repeat(32));
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect(JSON.stringify((failure as TRPCClientError<AppRouter>).cause ?? failure)).toContain('401');
  });

  it('answers NOT_FOUND for an unknown task and for another user’s task', async () => {
    const owner = await app.keyFor('owner');
    const other = await app.keyFor('other');
    const task = (await call(app, 'POST', '/api/v1/app-conversations', { key: owner, body: {} })).body;
    for (const taskId of ['f'.repeat(32), task.id as string]) {
      const failure = (await firstFailure(other, taskId)) as TRPCClientError<AppRouter>;
      expect(failure).toBeInstanceOf(TRPCClientError);
      expect(failure.data).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
      expect(failure.message).toBe('Start task not found');
    }
    // The owner sees the task (it ends in ERROR: no settings were saved).
    const snapshots: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const subscription = subscriber(owner).appConversations.watchStartTask.subscribe(
        { task_id: task.id },
        {
          onData: (snapshot) => {
            snapshots.push(snapshot.status);
            if (snapshot.status === 'ERROR' || snapshot.status === 'READY') {
              subscription.unsubscribe();
              resolve();
            }
          },
          onError: reject,
        },
      );
    });
    expect(snapshots.at(-1)).toBe('ERROR');
  });
});
