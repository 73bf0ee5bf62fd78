// A lifecycle decision that could not be carried out is taken again: the pass (or the start,
// for a warm sandbox) gives its claim back; claims otherwise hold for an hour (src/db/claims.ts).
// Found at scale: an idle sandbox of 500 stayed claimed and running after its write timed out,
// and all ten warm sandboxes of the pool ended claimed yet still in the pool.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WARM_POOL_OWNER } from '../../models/index.js';
import { DecisionClaims } from '../../src/db/claims.js';
import type { SandboxRuntime } from '../../src/sandbox/runtime.js';
import { IdlePauser } from '../../src/sandbox/lifecycle/idle-pauser.js';
import { Reconciler } from '../../src/sandbox/lifecycle/reconciler.js';
import { Retention } from '../../src/sandbox/lifecycle/retention.js';
import { WarmPool } from '../../src/sandbox/lifecycle/warm-pool.js';
import type { SandboxesService } from '../../src/sandbox/service/sandboxes.service.js';
import type { SandboxSpecsService } from '../../src/sandbox/service/sandbox-specs.service.js';
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

/** What a lifecycle pass needs besides its own settings, around `runtime`. */
function passDeps(runtime: SandboxRuntime) {
  const { models, tables } = domain.deps.db;
  const { metrics, log } = domain.deps;
  return { models, tables, runtime, claims: new DecisionClaims(models), onGone: async () => {}, releaseSlot: async () => {}, metrics, log };
}

/** A sandbox record of a process-runtime sandbox, in the state `fields` give. */
function createSandbox(id: string, fields: Record<string, unknown>) {
  return domain.deps.db.models.Sandbox.create({
    _id: id,
    userId: `${id}-user`,
    specId: 'spec',
    runtime: 'process',
    sessionApiKey: 'ciphertext',
    ...fields,
  });
}

describe('lifecycle decisions that failed', () => {
  it('an idle pause whose pod deletion failed is retried by the next pass', async () => {
    const { models } = domain.deps.db;
    const id = `idle-retry-${Date.now()}`;
    await createSandbox(id, { desired: 'running', lastUsedAt: new Date(Date.now() - 3_600_000) });
    const { runtime, done } = flakyRuntime(1);
    const pauser = new IdlePauser({ ...passDeps(runtime), idlePauseMs: 60_000 });

    expect(await pauser.pass()).toEqual([]);
    expect((await models.Sandbox.findOne({ _id: id }).lean())?.desired).toBe('running');
    expect(await pauser.pass()).toEqual([id]);
    expect(done).toEqual([`pause ${id}`]);
    expect(await models.Sandbox.findOne({ _id: id }).lean()).toMatchObject({ desired: 'paused', pausedBy: 'idle' });
    expect(await pauser.pass()).toEqual([]); // decided once
  });

  it('an orphan whose removal failed is removed by a later pass', async () => {
    const orphan = `orphan-retry-${Date.now()}`;
    const { runtime, done } = flakyRuntime(1, [orphan]);
    const reconciler = new Reconciler({ ...passDeps(runtime), intervalMs: 60_000 });
    expect((await reconciler.pass()).orphans).toEqual([]); // first seen: a suspect
    await expect(reconciler.pass()).rejects.toThrow('the API server is unavailable');
    expect((await reconciler.pass()).orphans).toEqual([orphan]);
    expect(done).toEqual([`remove ${orphan}`]);
  });

  it('a stuck removal whose take-over failed is finished by the next pass', async () => {
    const { models } = domain.deps.db;
    const id = `stuck-retry-${Date.now()}`;
    // Its replica died an hour ago, half-way through removing it.
    await createSandbox(id, { desired: 'deleting', desiredSince: new Date(Date.now() - 3_600_000) });
    const { runtime, done } = flakyRuntime(0);
    const retention = new Retention({ ...passDeps(runtime), retentionMs: 0 });
    const takeOver = vi.spyOn(models.Sandbox, 'findOneAndUpdate').mockImplementationOnce(() => {
      throw new Error('the database is unavailable');
    });
    await expect(retention.pass()).rejects.toThrow('the database is unavailable');
    takeOver.mockRestore();
    await retention.pass();
    expect(done).toEqual([`remove ${id}`]);
    expect(await models.Sandbox.findById(id).lean()).toBeNull();
  });

  it('a warm sandbox whose claim failed half-way is handed to the next start, not left claimed in the pool', async () => {
    const { models, tables } = domain.deps.db;
    const id = `warm-retry-${Date.now()}`;
    const table = tables.sandboxes;
    await table.insert({
      _id: id,
      userId: WARM_POOL_OWNER,
      specId: 'warm-spec',
      runtime: 'process',
      sessionApiKey: 'ciphertext',
      desired: 'running',
    });
    const { runtime } = flakyRuntime(0);
    const { metrics, log } = domain.deps;
    const pool = new WarmPool({
      models,
      tables,
      runtime,
      claims: new DecisionClaims(models),
      sandboxes: {} as SandboxesService,
      specs: { default: { id: 'warm-spec' } } as SandboxSpecsService,
      metrics,
      log,
      size: 1,
    });
    // The move out of the pool fails once (a write that timed out under load).
    const update = vi.spyOn(table, 'update').mockRejectedValueOnce(new Error('a write to sandboxes waited over 5000 ms for its turn'));
    try {
      await expect(pool.claim('first-user', 'warm-spec')).rejects.toThrow('waited over 5000 ms');
      expect((await pool.claim('second-user', 'warm-spec'))?._id).toBe(id);
    } finally {
      update.mockRestore();
    }
    expect(await table.get(id)).toMatchObject({ userId: 'second-user' });
    expect(await pool.claim('third-user', 'warm-spec')).toBeNull(); // handed out once
  });
});
