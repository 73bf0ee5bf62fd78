// The operator's lifecycle webhook endpoints (docs/webhooks.md): registered with the CLI (a
// real child process writing the database), they hear every user's events, delivered by the
// running service; users neither see nor reach them; the CLI refuses a URL the SSRF rules refuse.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { runCli } from '../helpers/processes.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-hooks-ops-'));
/** The service and the CLI: one database, one encryption key, one host rule. */
const env = {
  MONGODB_URI: testDatabaseUri(uniqueDbName('hooks-operator')),
  ENCRYPTION_KEY: generateKeyText(),
  DATA_DIR: path.join(tmp, 'data'),
  WEBHOOK_HOSTS: '127.0.0.1',
};
let app: TestApp;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  app = await startTestApp('hooks-operator', {
    ...env,
    WEBHOOK_RETRY_SCHEDULE: '100ms',
    WEBHOOK_POLL_MS: '100',
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
  });
});

afterAll(async () => {
  await app.stop();
  await receiver.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const cli = async (...args: string[]) => {
  const result = await runCli(['webhooks', ...args], env);
  return { ...result, lines: result.stdout.trim().split('\n') };
};

describe("the operator's webhook endpoints", () => {
  it("hear every user's events, out of users' sight", { timeout: 120_000 }, async () => {
    const added = await cli('add', '--url', `${receiver.url}/ops`, '--events', 'sandbox.paused,webhook.test', '--description', 'audit');
    expect(added.code, added.stderr).toBe(0);
    const endpointId = /created endpoint (ep_\w+)/.exec(added.lines[0]!)![1]!;
    const secret = added.lines.at(-1)!;
    expect(secret).toMatch(/^whsec_/);
    receiver.setSecrets(secret);
    const listed = await cli('list');
    expect(listed.lines).toEqual([expect.stringMatching(new RegExp(`^${endpointId}\t${receiver.url}/ops\tsandbox.paused,webhook.test\t`))]);
    expect(listed.stdout).not.toContain(secret);

    const users = ['ops-ada', 'ops-bo'];
    const sandboxes: string[] = [];
    for (const user of users) {
      const key = await app.keyFor(user);
      // The operator's endpoint is no user's: not listed, not reachable.
      expect((await call(app, 'GET', '/api/v1/webhook-endpoints/search', { key })).body.items).toEqual([]);
      expect((await call(app, 'POST', `/api/v1/webhook-endpoints/${endpointId}/test`, { key })).status).toBe(404);
      const sandbox = (await call(app, 'POST', '/api/v1/sandboxes', { key })).body;
      sandboxes.push(sandbox.id);
      await eventually(
        'the sandbox to run',
        async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${sandbox.id}`, { key })).body[0]?.status === 'RUNNING',
      );
      expect((await call(app, 'POST', `/api/v1/sandboxes/${sandbox.id}/pause`, { key })).status).toBe(200);
      expect((await call(app, 'DELETE', `/api/v1/sandboxes/${sandbox.id}`, { key })).status).toBe(200);
    }
    const paused = await eventually('both users’ pauses', async () => {
      const events = receiver.uniqueEvents().filter((e) => e.type === 'sandbox.paused');
      return events.length === 2 ? events : null;
    });
    expect(paused.map((e) => [e.data.id, e.data.created_by_user_id])).toEqual(sandboxes.map((id, i) => [id, users[i]]));
    // Only the types asked for: the deletions went to nobody.
    expect(receiver.receipts.filter((r) => r.body.type === 'sandbox.deleted')).toEqual([]);

    const tested = await cli('test', endpointId);
    expect(tested.code, tested.stderr).toBe(0);
    const eventId = /queued (msg_\w+)/.exec(tested.lines[0]!)![1]!;
    await eventually('the test event', async () => receiver.uniqueEvents().some((e) => e.id === eventId));
    expect(receiver.receipts.every((r) => r.verified)).toBe(true);
    const history = await cli('deliveries', endpointId);
    expect(history.lines).toHaveLength(3);
    expect(history.lines.every((line) => /\tdelivered\t1 attempts\t?$/.test(line))).toBe(true);
    expect(history.lines[0]).toContain('webhook.test');

    const rotated = await cli('rotate-secret', endpointId);
    expect(rotated.code).toBe(0);
    expect(rotated.lines.at(-1)).toMatch(/^whsec_/);
    expect(rotated.lines.at(-1)).not.toBe(secret);
    expect((await cli('remove', endpointId)).lines).toEqual([`removed ${endpointId}`]);
    expect((await cli('list')).stdout.trim()).toBe('');
  });

  it('refuses a URL the SSRF rules refuse, and unknown event types, with a message', async () => {
    const internal = await cli('add', '--url', 'http://10.0.0.5/in');
    expect(internal.code).not.toBe(0);
    expect(internal.stderr).toContain('is not allowed here (WEBHOOK_HOSTS)');
    const unknown = await cli('add', '--url', `${receiver.url}/ops`, '--events', 'sandbox.exploded');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('event_types');
    expect(await app.rawCollection('webhook_endpoints').countDocuments({})).toBe(0);
  });
});
