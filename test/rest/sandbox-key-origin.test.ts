// A sandbox's session key opens its secrets and its webhooks only from this machine when local
// sandboxes have networks of their own: they reach the service from 127.0.0.1 (their network's
// relay), so a key that leaked elsewhere opens nothing from another address. The service listens
// on every address here, and the same call is made through loopback and through the machine's
// own address on another interface. Listing the secrets' names (no value) stays open: the SDK's
// workspace asks for them from the user's own machine.
import os from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

let app: TestApp;
afterAll(async () => app?.stop());
beforeAll(async () => {
  app = await startTestApp('sandbox-key-origin', { HOST: '0.0.0.0' }, { specs: [FAKE_AGENT_SPEC] });
});

const otherAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

it('answers a sandbox key from loopback, and refuses it from another address of the machine', async () => {
  expect(otherAddress, 'this test needs a non-loopback IPv4 address on the machine').toBeDefined();
  const key = await app.keyFor('alice');
  await call(app, 'POST', '/api/secrets', { key, body: { name: 'NPM_TOKEN', value: 'npm-value' } });
  const { id, session_api_key } = (await call(app, 'POST', '/api/v1/sandboxes', { key, body: {} })).body;
  await eventually(
    'the sandbox to run',
    async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0].status === 'RUNNING',
  );
  const port = new URL(app.url).port;
  const secret = (host: string) =>
    fetch(`http://${host}:${port}/api/v1/sandboxes/${id}/settings/secrets/NPM_TOKEN`, {
      headers: { 'x-session-api-key': session_api_key },
    });
  const local = await secret('127.0.0.1');
  expect(local.status).toBe(200);
  expect(await local.text()).toBe('npm-value');
  const remote = await secret(otherAddress!);
  expect(remote.status).toBe(401);
  expect(await remote.text()).not.toContain('npm-value');
  // The names (no value) stay listed for the SDK workspace on the user's own machine.
  const names = await fetch(`http://${otherAddress}:${port}/api/v1/sandboxes/${id}/settings/secrets`, {
    headers: { 'x-session-api-key': session_api_key },
  });
  expect(names.status).toBe(200);
  expect(JSON.stringify(await names.json())).toContain('NPM_TOKEN');
  // A webhook with the key, from elsewhere, is refused the same way.
  const hook = await fetch(`http://${otherAddress}:${port}/api/v1/webhooks/conversations`, {
    method: 'POST',
    headers: { 'x-session-api-key': session_api_key, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(hook.status).toBe(401);
});
