// The real OpenHands automation service (PyPI, installed into the cache), started by the service
// itself (AUTOMATIONS=on; AUTOMATION_URL takes one run elsewhere the same way): users reach it
// through the one origin with whatever credential they hold here, it learns who they are from users/me (UUID aliases, the two permissions) and gets their
// keys from the service-key route; each user sees their own automations only; a member removed
// from a team gets no key there any more. Runs (a sandbox per run, the SDK inside):
// automation-runs.test.ts.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userAlias } from '../../src/automations/automation-access.js';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { signIn } from '../helpers/session.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';
import { eventually } from '../helpers/eventually.js';
import { deliverGithubEvent, githubPush, onGithubPush } from '../helpers/github-event.js';
import { sandboxRunning } from '../helpers/real-sandbox.js';
import { loadTsClient } from '../helpers/ts-client.js';

const SERVICE_KEY = crypto.randomBytes(32).toString('hex');
const WEBHOOK_SECRET = crypto.randomBytes(16).toString('hex');
let app: TestApp;
let port: number;
let databasePort: number;
let alice: string;
let bob: string;

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  // AUTOMATIONS=on: the service starts the automation service itself; its own AUTOMATION_*
  // variables pass on to it (runs are made but not dispatched here: a run's sandbox side is not built).
  [port, databasePort] = await Promise.all([freePort(), freePort()]);
  app = await startTestApp('automations', {
    AUTOMATIONS: 'on',
    AUTOMATION_PORT: String(port),
    AUTOMATION_DB_PORT: String(databasePort),
    AUTOMATION_SERVICE_KEY: SERVICE_KEY,
    AUTOMATION_WEBHOOK_SECRET: WEBHOOK_SECRET,
    AUTOMATION_DISPATCHER_INTERVAL_SECONDS: '3600',
    ADMIN_USERS: 'alice-automations', // she creates the team below
    SANDBOX_SPECS_FILE: writeSpecsFile(fs.mkdtempSync(path.join(os.tmpdir(), 'acp-automation-specs-')), [FAKE_AGENT_SPEC]),
  });
  [alice, bob] = await Promise.all([app.keyFor('alice-automations'), app.keyFor('bob-automations')]);
  await eventually(
    'the automation service to be ready',
    async () => (await call(app, 'GET', '/api/automation/health', bearer(alice))).body?.status === 'ok',
    5 * 60_000,
  );
}, 6 * 60_000);

afterAll(async () => {
  await app?.stop();
});

const nightly = { name: 'nightly report', prompt: 'Say hello', trigger: { type: 'cron', schedule: '0 3 * * *' } };

describe('the automation service behind the service', () => {
  it('creates, lists, reads and deletes a user’s automation through the one origin, and shows it to nobody else', async () => {
    const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', { ...bearer(alice), body: nightly });
    expect(created.status, created.text).toBeLessThan(300);
    const id = created.body.id as string;
    const listed = await call(app, 'GET', '/api/automation/v1', bearer(alice));
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.automations.map((a: { id: string }) => a.id)).toContain(id);
    expect((await call(app, 'GET', `/api/automation/v1/${id}`, bearer(alice))).body).toMatchObject({ id, name: nightly.name });
    // Canvas shows whom it runs as by looking its user_id (Alice's alias there) up as a member.
    const runsAs = await call(app, 'GET', `/api/organizations/alice-automations/members/${created.body.user_id}`, bearer(alice));
    expect(runsAs).toMatchObject({ status: 200, body: { user_id: 'alice-automations', role: 'owner' } });
    expect((await call(app, 'GET', `/api/organizations/bob-automations/members/${created.body.user_id}`, bearer(bob))).status).toBe(404);
    // Bob: none of Alice's.
    const bobs = await call(app, 'GET', '/api/automation/v1', bearer(bob));
    expect(bobs.status).toBe(200);
    expect(bobs.body.automations.map((a: { id: string }) => a.id)).not.toContain(id);
    expect((await call(app, 'GET', `/api/automation/v1/${id}`, bearer(bob))).status).toBe(404);
    expect((await call(app, 'GET', `/api/automation/v1/${id}/runs`, bearer(alice))).status).toBe(200);
    expect((await call(app, 'DELETE', `/api/automation/v1/${id}`, bearer(alice))).status).toBeLessThan(300);
    expect((await call(app, 'GET', `/api/automation/v1/${id}`, bearer(alice))).status).toBe(404);
  });

  it("answers the SDK version runs install without a credential (a run's setup asks before it holds one), as upstream does", async () => {
    const answer = await fetch(`${app.url}/api/automation/sdk-version`);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { version: string; sdk_version: string };
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.sdk_version).toBe(body.version);
  });

  it('takes the browser session too (the automation service itself would not), and refuses anyone signed out', async () => {
    const { cookie } = await signIn(app, alice);
    const listed = await fetch(`${app.url}/api/automation/v1`, { headers: { cookie, origin: app.url } });
    expect(listed.status).toBe(200);
    expect((await fetch(`${app.url}/api/automation/v1`)).status).toBe(401);
    // A state change by another site's page is refused before it leaves the service.
    const foreign = await fetch(`${app.url}/api/automation/v1/preset/prompt`, {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify(nightly),
    });
    expect(foreign.status).toBe(403);
  });

  it('acts with one automation key per user, listed with their keys and revocable like them', async () => {
    await call(app, 'GET', '/api/automation/v1', bearer(alice));
    await call(app, 'GET', '/api/automation/v1', bearer(alice));
    const keys = (await call(app, 'GET', '/api/keys', bearer(alice))).body as { id: string; name: string }[];
    const automationKeys = keys.filter((k) => k.name === 'automation');
    expect(automationKeys).toHaveLength(1);
    expect((await call(app, 'DELETE', `/api/keys/${automationKeys[0]!.id}`, bearer(alice))).status).toBeLessThan(300);
    // Revoked, it stops her automations: the automation service gets no key for her (its runs
    // cannot start), until she uses automations again.
    const me = userAlias('alice-automations');
    const ask = () =>
      call(app, 'POST', `/api/service/users/${me}/orgs/${me}/api-keys`, { headers: { 'x-service-api-key': SERVICE_KEY }, body: {} });
    expect((await ask()).status).toBe(404);
    // The next call of hers makes a new one; the old one opens nothing any more.
    expect((await call(app, 'GET', '/api/automation/v1', bearer(alice))).status).toBe(200);
    const after = ((await call(app, 'GET', '/api/keys', bearer(alice))).body as { id: string; name: string }[]).filter(
      (k) => k.name === 'automation',
    );
    expect(after.map((k) => k.id)).not.toContain(automationKeys[0]!.id);
    expect(after).toHaveLength(1);
    expect((await ask()).status).toBe(200);
  });

  it('hands the automation service a user’s key by their aliases and the service key only, the same key each time', async () => {
    const me = userAlias('alice-automations');
    const mint = (userId: string, orgId: string, key: string, body: object = { name: 'automation' }) =>
      call(app, 'POST', `/api/service/users/${userId}/orgs/${orgId}/api-keys`, { headers: { 'x-service-api-key': key }, body });
    const first = await mint(me, me, SERVICE_KEY);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ key: expect.stringMatching(/^ohk_/), user_id: me, org_id: me, name: 'automation' });
    expect((await mint(me, me, SERVICE_KEY)).body.key).toBe(first.body.key);
    // That key is Alice's, and users/me answers it as the automation service reads it.
    const seen = await call(app, 'GET', '/api/v1/users/me', bearer(first.body.key));
    expect(seen.body).toMatchObject({ id: me, org_id: me, role: 'owner', permissions: ['view_automations', 'manage_automations'] });
    // It opens only what runs use (it sits in their sandboxes, beside an agent's code): not her
    // settings, conversations, keys or automations, over REST or tRPC, and it signs no browser in.
    const refused = [
      ['GET', '/api/settings'],
      ['GET', '/api/v1/app-conversations/search'],
      ['GET', '/api/keys'],
      ['POST', '/api/keys'],
      ['GET', '/api/automation/v1'],
      ['POST', '/api/automation/v1/preset/prompt'],
      ['GET', '/trpc/settings.get'],
    ] as const;
    for (const [method, path] of refused) {
      const answer = await call(app, method, path, { ...bearer(first.body.key), ...(method === 'POST' ? { body: { name: 'x' } } : {}) });
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(403);
    }
    expect((await call(app, 'POST', '/api/auth/session', { body: { api_key: first.body.key } })).status).toBe(401);
    // It opens no secret (it sits in her runs' sandboxes): beside the key of a run's sandbox (one
    // it started), which opens them for her own key, it gets the LLM gateway and a token for that
    // sandbox instead; beside her other sandboxes' keys, nothing.
    await call(app, 'POST', '/api/settings', { ...bearer(alice), body: { llm_model: 'openai/x', llm_api_key: 'sk-alice-automation' } });
    const sandbox = (await call(app, 'POST', '/api/v1/sandboxes', bearer(first.body.key))).body;
    const ordinary = (await call(app, 'POST', '/api/v1/sandboxes', bearer(alice))).body;
    const running = await sandboxRunning(app, alice, sandbox.id, 60_000);
    const exposing = (key: string) =>
      call(app, 'GET', '/api/v1/users/me?expose_secrets=true', {
        headers: { authorization: `Bearer ${key}`, 'x-session-api-key': running.session_api_key },
      });
    expect((await exposing(alice)).body.llm_api_key).toBe('sk-alice-automation');
    const gateway = await exposing(first.body.key);
    expect(gateway.status, gateway.text).toBe(200);
    expect(gateway.text).not.toContain('sk-alice-automation');
    expect(gateway.body).toMatchObject({ llm_model: 'openai/x', llm_api_key: expect.stringMatching(/^ohg_/) });
    expect(gateway.body.llm_base_url).toMatch(/\/llm\/v1$/);
    // The same token on each ask (one route per sandbox); without a sandbox's key, or with another's, nothing.
    expect((await exposing(first.body.key)).body.llm_api_key).toBe(gateway.body.llm_api_key);
    const bare = await call(app, 'GET', '/api/v1/users/me?expose_secrets=true', bearer(first.body.key));
    expect(bare.status).toBe(403);
    const ordinaryRunning = await sandboxRunning(app, alice, ordinary.id, 60_000);
    const notARun = await call(app, 'GET', '/api/v1/users/me?expose_secrets=true', {
      headers: { authorization: `Bearer ${first.body.key}`, 'x-session-api-key': ordinaryRunning.session_api_key },
    });
    expect(notARun.status).toBe(403);
    await call(app, 'DELETE', `/api/v1/sandboxes/${ordinary.id}`, bearer(alice));
    const bobs = (await call(app, 'POST', '/api/v1/sandboxes', bearer(bob))).body;
    const bobRunning = await sandboxRunning(app, bob, bobs.id, 60_000);
    const crossed = await call(app, 'GET', '/api/v1/users/me?expose_secrets=true', {
      headers: { authorization: `Bearer ${first.body.key}`, 'x-session-api-key': bobRunning.session_api_key },
    });
    expect(crossed.status).toBe(403);
    expect(crossed.text).not.toMatch(/ohg_|sk-alice/);
    await call(app, 'DELETE', `/api/v1/sandboxes/${bobs.id}`, bearer(bob));
    await call(app, 'DELETE', `/api/v1/sandboxes/${sandbox.id}`, bearer(alice));
    // Her own key still reads her own id, without the automation fields.
    const own = (await call(app, 'GET', '/api/v1/users/me', bearer(alice))).body;
    expect(own.id).toBe('alice-automations');
    expect(own).not.toHaveProperty('permissions');
    // Refused: a wrong or missing service key, an unknown user, another organisation, another key name.
    expect((await mint(me, me, 'x'.repeat(64))).status).toBe(401);
    expect((await call(app, 'POST', `/api/service/users/${me}/orgs/${me}/api-keys`, { body: {} })).status).toBe(401);
    const stranger = userAlias('nobody-here');
    expect((await mint(stranger, stranger, SERVICE_KEY)).status).toBe(404);
    expect((await mint(me, crypto.randomUUID(), SERVICE_KEY)).status).toBe(404);
    expect((await mint(me, me, SERVICE_KEY, { name: 'something-else' })).status).toBe(422);
  });

  it("stops a member's automations in a team when they are removed from it: the key route has no key for them there", async () => {
    for (const [key, email] of [
      [alice, 'alice@example.com'],
      [bob, 'bob@example.com'],
    ] as const) {
      await call(app, 'POST', '/api/v1/settings', { ...bearer(key), body: { email } });
    }
    const team = (await call(app, 'POST', '/api/organizations', { ...bearer(alice), body: { name: 'Automations Team' } })).body
      .id as string;
    const invited = await call(app, 'POST', `/api/organizations/${team}/members/invite`, {
      ...bearer(alice),
      body: { emails: ['bob@example.com'], role: 'member' },
    });
    const token = new URL(invited.body.successful[0].invite_url).searchParams.get('token')!;
    expect((await call(app, 'POST', '/api/organizations/members/invite/accept', { ...bearer(bob), body: { token } })).status).toBe(200);
    // He uses automations there (his key, acting in the team), which makes his automation key there.
    expect((await call(app, 'POST', `/api/organizations/${team}/switch`, bearer(bob))).status).toBe(200);
    expect((await call(app, 'GET', '/api/automation/v1', bearer(bob))).status).toBe(200);
    const ask = () =>
      call(app, 'POST', `/api/service/users/${userAlias('bob-automations')}/orgs/${team}/api-keys`, {
        headers: { 'x-service-api-key': SERVICE_KEY },
        body: { name: 'automation' },
      });
    const held = await ask(); // as when the automation service dispatches a run of his there
    expect(held.status, held.text).toBe(200);
    expect((await call(app, 'GET', '/api/v1/users/me', bearer(held.body.key))).status).toBe(200);
    expect((await call(app, 'DELETE', `/api/organizations/${team}/members/bob-automations`, bearer(alice))).status).toBe(200);
    // His key there is revoked, and none is made for him: the automation service cannot start his runs.
    expect((await call(app, 'GET', '/api/v1/users/me', bearer(held.body.key))).status).toBe(401);
    expect((await ask()).status).toBe(404);
  });

  it('serves CloudClient’s automation methods, unchanged: list, read, update, runs, the tarball, delete, health', async () => {
    const ts = await loadTsClient();
    const client = new ts.CloudClient({ host: app.url, apiKey: alice, timeout: 30_000 });
    const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', {
      ...bearer(alice),
      body: { ...nightly, name: 'via client' },
    });
    const id = created.body.id as string;
    const listed = (await client.listAutomations()) as { automations: { id: string }[] };
    expect(listed.automations.map((a) => a.id)).toContain(id);
    expect(await client.getAutomation(id)).toMatchObject({ id, name: 'via client' });
    expect(await client.updateAutomation(id, { name: 'renamed by the client' })).toMatchObject({ id, name: 'renamed by the client' });
    expect(await client.listAutomationRuns(id)).toMatchObject({ runs: [] });
    // The prompt preset's generated code, as a gzipped tarball.
    const tarball = Buffer.from(await (await client.downloadAutomationTarball(id)).arrayBuffer());
    expect([...tarball.subarray(0, 2)]).toEqual([0x1f, 0x8b]);
    expect(await client.getAutomationHealth()).toMatchObject({ status: 'ok' });
    // The web client's configuration turns the Automations pages on.
    expect((await call(app, 'GET', '/api/v1/web-client/config', bearer(alice))).body.feature_flags.enable_automations).toBe(true);
    await client.deleteAutomation(id);
    expect(((await client.listAutomations()) as { automations: { id: string }[] }).automations.map((a) => a.id)).not.toContain(id);
  });

  it('passes a provider’s signed event on without a user’s credential, and it makes a run of the automation it matches', async () => {
    const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', {
      ...bearer(alice),
      body: {
        name: 'on push',
        prompt: 'Review the push',
        trigger: onGithubPush('acme/*'),
      },
    });
    expect(created.status, created.text).toBeLessThan(300);
    const push = githubPush('acme/repo');
    const deliver = (orgId: string, delivery: string, signature?: string) =>
      deliverGithubEvent(app.url, orgId, push, { secret: WEBHOOK_SECRET, delivery, ...(signature ? { signature } : {}) });
    const aliceOrg = userAlias('alice-automations');
    const received = await deliver(aliceOrg, 'delivery-1');
    expect(received.status).toBe(200);
    expect(await received.json()).toMatchObject({ matched: 1, runs_created: [expect.any(String)] });
    const runs = await call(app, 'GET', `/api/automation/v1/${created.body.id}/runs`, bearer(alice));
    expect(runs.body.runs).toHaveLength(1);
    // A wrong signature is refused by the automation service; Bob's organisation has no such automation.
    expect((await deliver(aliceOrg, 'delivery-2', `sha256=${'0'.repeat(64)}`)).status).toBeGreaterThanOrEqual(400);
    expect(await (await deliver(userAlias('bob-automations'), 'delivery-3')).json()).toMatchObject({ matched: 0 });
  });

  it('starts the automation service again when it dies, and answers 502 meanwhile, never a hang', async () => {
    const [pid] = processesNaming('openhands.automation.app:app', `\0${port}`);
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');
    const down = await call(app, 'GET', '/api/automation/v1', bearer(alice));
    expect([200, 502]).toContain(down.status); // 200 only if it was back already
    await eventually(
      'the automation service back',
      async () => (await call(app, 'GET', '/api/automation/v1', bearer(alice))).status === 200,
      120_000,
    );
  });

  it('runs its PostgreSQL, starts it again when it dies, and keeps what was stored', async () => {
    const created = await call(app, 'POST', '/api/automation/v1/preset/prompt', { ...bearer(alice), body: { ...nightly, name: 'kept' } });
    expect(created.status, created.text).toBeLessThan(300);
    const [postgres] = processesNaming('postgres', `\0${databasePort}`);
    expect(postgres).toBeDefined();
    // PostgreSQL refuses root: from a root service it runs as nobody in a user namespace of its own.
    if (process.getuid?.() === 0) {
      expect(fs.readlinkSync(`/proc/${postgres}/ns/user`)).not.toBe(fs.readlinkSync('/proc/self/ns/user'));
      expect(fs.readFileSync(`/proc/${postgres}/uid_map`, 'utf8').trim().split(/\s+/)).toEqual(['65534', '0', '1']);
    }
    // Only on loopback, and only with the password made at the first start (kept owner-only).
    const password = path.join(app.server.deps.config.dataDir, 'automations', 'postgres.password');
    expect(fs.statSync(password).mode & 0o077).toBe(0);
    process.kill(postgres!, 'SIGKILL');
    await eventually(
      'the automation database back',
      async () => {
        const [again] = processesNaming('postgres', `\0${databasePort}`);
        return again !== undefined && again !== postgres;
      },
      60_000,
    );
    await eventually(
      'the automation read again',
      async () => (await call(app, 'GET', `/api/automation/v1/${created.body.id}`, bearer(alice))).body?.name === 'kept',
      120_000,
    );
  });
});

/** Pids of the processes whose command line holds every one of `parts`. */
function processesNaming(...parts: string[]): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return parts.every((part) => cmdline.includes(part));
      } catch {
        return false;
      }
    })
    .map(Number);
}
