// The daily conversation limit (DAILY_CONVERSATION_LIMIT) and GET /api/quota/status over HTTP
// with the fake agent server: starts counted per user and UTC day, the one past the limit
// refused with 429 in the reference's detail shape and Retry-After until midnight (V1 and V0
// alike), a deleted conversation giving nothing back, concurrent starts never passing the limit,
// other users untouched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';

let app: ConversationApp;
beforeAll(async () => {
  app = await startConversationApp('daily-limit', { DAILY_CONVERSATION_LIMIT: '2' });
});
afterAll(() => app?.close());

const nextMidnight = () => new Date(Math.floor(Date.now() / 86_400_000 + 1) * 86_400_000).toISOString();
const status = async (key: string) => (await call(app, 'GET', '/api/quota/status', { key })).body;

describe('the daily conversation limit', () => {
  it('counts starts, refuses the one past the limit with 429 and when it resets, and gives nothing back for a deletion', async () => {
    const key = await app.user('daily');
    expect(await status(key)).toEqual({
      daily_limit: 2,
      used_today: 0,
      remaining: 2,
      reset_at: nextMidnight(),
      work_email: null,
      work_email_verified: false,
      latest_request_status: null,
      latest_request_requested_limit: null,
    });
    const first = await app.startConversation(key);
    expect(first.status, first.detail ?? '').toBe('READY');
    expect(await status(key)).toMatchObject({ used_today: 1, remaining: 1 });
    await app.startConversation(key);
    const refused = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      detail: {
        code: 'daily_conversation_limit_reached',
        message: 'You have reached your limit of 2 conversations for today',
        limit: 2,
        used: 2,
        reset_at: nextMidnight(),
      },
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    // The V0 start is the same start.
    expect((await call(app, 'POST', '/api/conversations', { key, body: { initial_user_msg: 'hi' } })).status).toBe(429);
    expect((await call(app, 'DELETE', `/api/v1/app-conversations/${first.app_conversation_id}`, { key })).status).toBe(200);
    expect(await status(key)).toMatchObject({ used_today: 2, remaining: 0 });
    expect((await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} })).status).toBe(429);
    // Another user has a day of their own.
    expect(await status(await app.user('other'))).toMatchObject({ used_today: 0, remaining: 2 });
  });

  it('lets exactly the limit through when starts come at once', async () => {
    const key = await app.user('burst');
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(app, 'POST', '/api/v1/app-conversations', { key, body: {} })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429, 429, 429]);
    expect(await status(key)).toMatchObject({ used_today: 2, remaining: 0 });
  });
});
