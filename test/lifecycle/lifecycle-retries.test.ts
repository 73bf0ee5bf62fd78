// A lifecycle decision that could not be carried out is taken again by a later pass: the pass
// gives its claim back (claims otherwise hold for an hour, src/db/claims.ts). Found at scale: one
// idle sandbox of 500 stayed claimed and running after its write timed out under load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionClaims } from '../../src/db/claims.js';
import type { SandboxRuntime } from '../../src/sandbox/runtime.js';
import { IdlePauser } from '../../src/services/sandbox-lifecycle/idle-pauser.js';
import { Reconciler } from '../../src/services/sandbox-lifecycle/reconciler.js';
import { startTestDomain, type TestDomain } from '../helpers/domain.js';

let domain: TestDomain;
beforeAll(async () => {
  domain = await startTestDomain('lifecycle-retries');
});
afterAll(() => domain.stop());

/** A runtime whose calls fail `failures` times, then succeed; it records what it did. */
function flakyRuntime(failures: number, present: string[] = []) {
  const done: string[] = [];
  const attempt = async (what: string) => {
    if (failures-- > 0) throw new Error('the API server is unavailable');
    done.push(what);
  };
  const runtime = {
    pause: (id: string) => attempt(`pause ${id}`),
    remove: (id: string) => attempt(`remove ${id}`),
    list: async () => present,
    state: async () => ({ status: 'RUNNING' }),
  } as unknown as SandboxRuntime;
  return { runtime, done };
}

describe('lifecycle decisions that failed', () => {
  it('an idle pause whose pod deletion failed is retried by the next pass', async () => {
    const { models } = domain.deps.db;
    const id = `idle-retry-${Date.now()}`;
    await models.Sandbox.create({
      _id: id,
      userId: 'idle-retry-user',
      specId: 'spec',
      runtime: 'process',
      sessionApiKey: 'ciphertext',
      desired: 'running',
      lastUsedAt: new Date(Date.now() - 3_600_000),
    });
    const { runtime, done } = flakyRuntime(1);
    const { metrics, log } = domain.deps;
    const pauser = new IdlePauser({
      models,
      runtime,
      claims: new DecisionClaims(models),
      metrics,
      log,
      releaseSlot: async () => {},
      idlePauseMs: 60_000,
    });

    expect(await pauser.pass()).toEqual([]);
    expect((await models.Sandbox.findOne({ _id: id }).lean())?.desired).toBe('running');
    expect(await pauser.pass()).toEqual([id]);
    expect(done).toEqual([`pause ${id}`]);
    expect(await models.Sandbox.findOne({ _id: id }).lean()).toMatchObject({ desired: 'paused', pausedBy: 'idle' });
    expect(await pauser.pass()).toEqual([]); // decided once
  });

  it('an orphan whose removal failed is removed by a later pass', async () => {
    const { models } = domain.deps.db;
    const orphan = `orphan-retry-${Date.now()}`;
    const { runtime, done } = flakyRuntime(1, [orphan]);
    const { metrics, log } = domain.deps;
    const reconciler = new Reconciler({
      models,
      runtime,
      claims: new DecisionClaims(models),
      onGone: async () => {},
      releaseSlot: async () => {},
      metrics,
      log,
      intervalMs: 60_000,
    });
    expect((await reconciler.pass()).orphans).toEqual([]); // first seen: a suspect
    await expect(reconciler.pass()).rejects.toThrow('the API server is unavailable');
    expect((await reconciler.pass()).orphans).toEqual([orphan]);
    expect(done).toEqual([`remove ${orphan}`]);
  });
});
