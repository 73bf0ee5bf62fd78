// The sandbox runtime contract, run over the service's real HTTP API against each runtime
// (process and Kubernetes). Each runtime supplies how to prove its workspace survived.
import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

export interface RuntimeUnderTest {
  app: TestApp;
  /** Spec whose sandboxes become healthy. */
  healthySpec: string;
  /** Spec whose sandboxes never become healthy (the app runs with a short start-up timeout). */
  neverHealthySpec: string;
  /** The app's SANDBOX_MAX_RUNNING_PER_USER. */
  maxRunning: number;
  /** Leaves a mark in the sandbox's workspace, and later tells whether it is still there. */
  markWorkspace(sandboxId: string): Promise<void>;
  workspaceMarked(sandboxId: string): Promise<boolean>;
}

export function describeSandboxContract(runtime: string, get: () => RuntimeUnderTest): void {
  describe(`sandbox runtime contract: ${runtime}`, () => {
    let t: RuntimeUnderTest;
    const user = (name: string) => `${name}-${crypto.randomBytes(3).toString('hex')}`;
    let ownerKey: string;
    let strangerKey: string;

    beforeAll(async () => {
      t = get();
      ownerKey = await t.app.keyFor(user('owner'));
      strangerKey = await t.app.keyFor(user('stranger'));
    });

    const start = async (key: string, spec: string) =>
      call(t.app, 'POST', `/api/v1/sandboxes?sandbox_spec_id=${encodeURIComponent(spec)}`, { key });
    const read = async (key: string, id: string) => (await call(t.app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
    const waitFor = (key: string, id: string, status: string) =>
      eventually(`${runtime} sandbox ${status}`, async () => {
        const info = await read(key, id);
        return info?.status === status ? info : null;
      });

    it('starts → RUNNING, pause → PAUSED with the workspace kept, resume → RUNNING, delete → gone', async () => {
      const started = await start(ownerKey, t.healthySpec);
      expect(started.status).toBe(200);
      const id = started.body.id as string;
      const running = await waitFor(ownerKey, id, 'RUNNING');
      expect(running.exposed_urls).toContainEqual({ name: 'AGENT_SERVER', url: expect.any(String) });
      expect(running.session_api_key).toEqual(started.body.session_api_key);

      await t.markWorkspace(id);
      expect((await call(t.app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key: ownerKey })).body).toEqual({ success: true });
      const paused = await waitFor(ownerKey, id, 'PAUSED');
      expect(paused.exposed_urls).toBeNull();
      expect((await call(t.app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key: ownerKey })).status).toBe(200);

      expect((await call(t.app, 'POST', `/api/v1/sandboxes/${id}/resume`, { key: ownerKey })).body).toEqual({ success: true });
      await waitFor(ownerKey, id, 'RUNNING');
      expect(await t.workspaceMarked(id)).toBe(true);
      expect((await call(t.app, 'POST', `/api/v1/sandboxes/${id}/resume`, { key: ownerKey })).status).toBe(200);

      expect((await call(t.app, 'DELETE', `/api/v1/sandboxes/${id}`, { key: ownerKey })).body).toEqual({ success: true });
      expect(await read(ownerKey, id)).toBeNull();
      expect((await call(t.app, 'DELETE', `/api/v1/sandboxes/${id}`, { key: ownerKey })).status).toBe(404);
    });

    it('answers 404 / null for unknown ids', async () => {
      const unknown = crypto.randomBytes(16).toString('hex');
      expect((await call(t.app, 'GET', `/api/v1/sandboxes?id=${unknown}`, { key: ownerKey })).body).toEqual([null]);
      for (const action of ['pause', 'resume']) {
        expect(await call(t.app, 'POST', `/api/v1/sandboxes/${unknown}/${action}`, { key: ownerKey })).toMatchObject({
          status: 404,
          body: { detail: 'Not Found' },
        });
      }
      expect((await call(t.app, 'DELETE', `/api/v1/sandboxes/${unknown}`, { key: ownerKey })).status).toBe(404);
    });

    it("keeps users apart: another user's sandbox is absent for them", async () => {
      const id = (await start(ownerKey, t.healthySpec)).body.id as string;
      try {
        expect(await read(strangerKey, id)).toBeNull();
        const listed = (await call(t.app, 'GET', '/api/v1/sandboxes/search', { key: strangerKey })).body.items;
        expect(listed.map((s: { id: string }) => s.id)).not.toContain(id);
        for (const action of ['pause', 'resume']) {
          expect((await call(t.app, 'POST', `/api/v1/sandboxes/${id}/${action}`, { key: strangerKey })).status).toBe(404);
        }
        expect((await call(t.app, 'DELETE', `/api/v1/sandboxes/${id}`, { key: strangerKey })).status).toBe(404);
        expect(await read(ownerKey, id)).not.toBeNull();
      } finally {
        await call(t.app, 'DELETE', `/api/v1/sandboxes/${id}`, { key: ownerKey });
      }
    });

    it('refuses a start over the per-user limit with 429 and Retry-After, pausing nothing', async () => {
      const key = await t.app.keyFor(user('limited'));
      const ids: string[] = [];
      try {
        for (let i = 0; i < t.maxRunning; i++) ids.push((await start(key, t.healthySpec)).body.id);
        const refused = await start(key, t.healthySpec);
        expect(refused.status).toBe(429);
        expect(refused.body).toEqual({ detail: `Sandbox limit reached (${t.maxRunning} running)` });
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        for (const id of ids) expect((await read(key, id)).status).toMatch(/STARTING|RUNNING/);
        // A paused sandbox frees a slot; resuming it over the limit is refused the same way.
        await call(t.app, 'POST', `/api/v1/sandboxes/${ids[0]}/pause`, { key });
        await waitFor(key, ids[0]!, 'PAUSED');
        const third = await start(key, t.healthySpec);
        expect(third.status).toBe(200);
        ids.push(third.body.id);
        expect((await call(t.app, 'POST', `/api/v1/sandboxes/${ids[0]}/resume`, { key })).status).toBe(429);
      } finally {
        for (const id of ids) await call(t.app, 'DELETE', `/api/v1/sandboxes/${id}`, { key });
      }
    });

    it('ends a start that never becomes healthy in ERROR with the reason', async () => {
      const key = await t.app.keyFor(user('unlucky'));
      const started = await start(key, t.neverHealthySpec);
      expect(started.status).toBe(200);
      try {
        const failed = await waitFor(key, started.body.id, 'ERROR');
        expect(failed.status_reason).toMatch(/did not become (healthy|ready) within \d+ s/);
      } finally {
        await call(t.app, 'DELETE', `/api/v1/sandboxes/${started.body.id}`, { key });
      }
    });
  });
}
