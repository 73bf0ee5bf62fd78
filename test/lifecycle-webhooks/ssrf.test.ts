// Webhook endpoint URLs obey the git providers' SSRF rules (docs/webhooks.md): with the default
// configuration (WEBHOOK_HOSTS unset: public addresses only) a user cannot register an internal
// address in any spelling (422), and a name that resolves to one is registered but never
// connected to: its deliveries fail at the address check, and the internal service sees nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

let app: TestApp;
let internal: WebhookReceiver;
let key: string;

beforeAll(async () => {
  internal = await startWebhookReceiver();
  app = await startTestApp('webhook-ssrf', { WEBHOOK_RETRY_SCHEDULE: '50ms', WEBHOOK_POLL_MS: '100' });
  key = await app.keyFor('ssrf-user');
});

afterAll(async () => {
  await app.stop();
  await internal.close();
});

describe('webhook URLs and the SSRF rules', () => {
  it('refuses internal addresses in every spelling, at registration and on change', async () => {
    const port = new URL(internal.url).port;
    const refused = [
      `http://127.0.0.1:${port}/in`,
      `http://127.1:${port}/in`,
      `http://0x7f000001:${port}/in`,
      `http://[::1]:${port}/in`,
      `http://[::ffff:127.0.0.1]:${port}/in`,
      `http://0.0.0.0:${port}/in`,
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/in',
      'http://192.168.1.1/in',
      'http://[fd00:ec2::254]/in',
    ];
    for (const url of refused) {
      const answer = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body: { url } });
      expect(answer.status, url).toBe(422);
      expect(answer.body.detail[0]).toMatchObject({
        loc: ['body', 'url'],
        msg: expect.stringContaining('is not allowed here (WEBHOOK_HOSTS)'),
      });
    }
    const allowed = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: 'https://hooks.example.com/in' } });
    expect(allowed.status).toBe(201);
    const moved = await call(app, 'PATCH', `/api/v1/webhook-endpoints/${allowed.body.id}`, {
      key,
      body: { url: `http://127.0.0.1:${port}/in` },
    });
    expect(moved.status).toBe(422);
    expect((await call(app, 'GET', `/api/v1/webhook-endpoints/${allowed.body.id}`, { key })).body.url).toBe('https://hooks.example.com/in');
    expect(await app.rawCollection('webhook_endpoints').countDocuments({ userId: 'ssrf-user' })).toBe(1);
  });

  it('never connects to a name that resolves to an internal address', async () => {
    const port = new URL(internal.url).port;
    const created = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: `http://localhost:${port}/in` } });
    expect(created.status).toBe(201); // a name: its addresses are checked at each connection
    const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${created.body.id}/test`, { key });
    const failed = await eventually('the delivery to be given up', async () => {
      const page = await call(app, 'GET', `/api/v1/webhook-endpoints/${created.body.id}/deliveries`, { key });
      return page.body.items.find((d: { id: string; status: string }) => d.id === queued.body.id && d.status === 'failed');
    });
    expect(failed.attempts.map((a: { status_code: number | null; error: string }) => [a.status_code, a.error])).toEqual([
      [null, 'The URL resolves to an address not allowed here (WEBHOOK_HOSTS)'],
      [null, 'The URL resolves to an address not allowed here (WEBHOOK_HOSTS)'],
    ]);
    expect(internal.receipts).toEqual([]);
  });
});
