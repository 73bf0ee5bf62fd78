// Sandbox lifecycle beyond start/pause/resume/delete on request: idle auto-pause, transparent
// resume, retention, reconcile and a warm pool (docs/sandboxes.md). Each policy is
// a small pass run by a PeriodicJob; this wires them from configuration.
import type { Models, SandboxRecord } from '../../../models/index.js';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxRuntime } from '../runtime.js';
import type { SandboxSpecsService } from '../service/sandbox-specs.service.js';
import type { SandboxesService } from '../service/sandboxes.service.js';
import type { DecisionClaims } from '../../db/claims.js';
import type { RecordTables } from '../../db/record-lists/record-tables.js';
import { SandboxResumer, type SandboxConnection } from './ensure-running.js';
import { IdlePauser } from './idle-pauser.js';
import { PASS_SKIPPED, PeriodicJob } from './periodic.js';
import { Reconciler } from './reconciler.js';
import type { SandboxGoneListener } from './removal.js';
import { Retention } from './retention.js';
import { SandboxUsage } from './usage.js';
import { WarmPool } from './warm-pool.js';

export type { SandboxConnection } from './ensure-running.js';
export type { SandboxGoneListener } from './removal.js';

export interface SandboxLifecycleDeps {
  models: Models;
  /** The database's record tables (database.ts). */
  tables: RecordTables;
  runtime: SandboxRuntime;
  sandboxes: SandboxesService;
  specs: SandboxSpecsService;
  /** Exclusive decisions across replicas (also pruned by the retention job). */
  claims: DecisionClaims;
  metrics: Metrics;
  log: Logger;
  config: Config['lifecycle'];
  startupTimeoutMs: number;
  /** Tells the conversations of a removed sandbox why their workspace is gone. */
  onGone: SandboxGoneListener;
  now?: () => number;
}

export type LifecycleJobName = 'idle-pause' | 'retention' | 'reconcile' | 'warm-pool';

export class SandboxLifecycle {
  readonly usage: SandboxUsage;
  private readonly resumer: SandboxResumer;
  private readonly jobs = new Map<LifecycleJobName, PeriodicJob>();

  constructor(deps: SandboxLifecycleDeps) {
    const { models, tables, runtime, claims, metrics, config, now } = deps;
    const log = deps.log.child({ component: 'sandbox-lifecycle' });
    // A removed sandbox's conversations learn why, and the lifecycle webhooks hear of it.
    const onGone: SandboxGoneListener = async (sandboxId, reason) => {
      await deps.onGone(sandboxId, reason);
      const record = await models.Sandbox.findOne({ _id: sandboxId }).lean();
      if (record) await deps.sandboxes.events.deleted(record, reason);
    };
    const releaseSlot = (userId: string, sandboxId: string) => deps.sandboxes.slots.release(userId, sandboxId);
    const removal = { models, tables, runtime, claims, onGone, releaseSlot, log };
    this.usage = new SandboxUsage(models, config.idlePauseMs, now);
    this.resumer = new SandboxResumer(deps.sandboxes, this.usage, metrics, {
      attempts: config.resumeAttempts,
      backoffMs: config.resumeBackoffMs,
      startupTimeoutMs: deps.startupTimeoutMs,
      ...(now ? { now } : {}),
    });

    // A pass left to another replica counts as a pass (the job ran) but has no duration.
    const passed = (job: LifecycleJobName) => (seconds: number, skipped: boolean) => {
      metrics.lifecyclePasses.inc({ job });
      if (!skipped) metrics.lifecyclePassDuration.observe({ job }, seconds);
    };
    const add = (name: LifecycleJobName, intervalMs: number, pass: () => Promise<unknown>) =>
      this.jobs.set(name, new PeriodicJob(name, intervalMs, pass, log, passed(name)));
    // The passes that read every sandbox run once per interval across all replicas: the first
    // replica to claim the interval's window runs it (each decision is still claimed on its own),
    // so the database's work per interval does not grow with the replicas.
    const shared = (name: LifecycleJobName, intervalMs: number, pass: () => Promise<unknown>) =>
      add(name, intervalMs, async () => {
        const window = Math.floor((now ?? Date.now)() / intervalMs);
        // A claim that failed (the database slow or away) ran no pass: a turn, not a pass with a duration.
        const won = await claims.claim(`pass:${name}:${window}`).catch((error: unknown) => {
          log.warn({ err: error, job: name }, 'claiming the pass window failed');
          return false;
        });
        return won ? pass() : PASS_SKIPPED;
      });
    if (config.idlePauseMs > 0) {
      const onPaused = (record: SandboxRecord) => deps.sandboxes.events.paused(record);
      const pauser = new IdlePauser({ models, runtime, claims, metrics, log, releaseSlot, idlePauseMs: config.idlePauseMs, now, onPaused });
      shared('idle-pause', config.intervalMs, () => pauser.pass());
    }
    // Always on: with retention off it still finishes removals another replica left half-done.
    const retention = new Retention({ ...removal, metrics, retentionMs: config.pausedRetentionMs, now });
    shared('retention', config.intervalMs, () => retention.pass());
    if (config.reconcileIntervalMs > 0) {
      const reconciler = new Reconciler({ ...removal, metrics, intervalMs: config.reconcileIntervalMs, now });
      shared('reconcile', config.reconcileIntervalMs, () => reconciler.pass());
    }
    // With size 0 the pass still discards warm sandboxes left from a larger configuration.
    const pool = new WarmPool({ ...removal, sandboxes: deps.sandboxes, specs: deps.specs, metrics, size: config.warmPoolSize, now });
    add('warm-pool', config.intervalMs, () => pool.pass());
    pool.onClaimed = () => this.jobs.get('warm-pool')?.kick();
    if (config.warmPoolSize > 0) deps.sandboxes.useWarmPool(pool);
  }

  /** The user's sandbox, running and reachable (resumed with retries if it is not); `current` saves a read. */
  ensureRunning(userId: string, sandboxId: string, current?: SandboxConnection): Promise<SandboxConnection> {
    return this.resumer.ensureRunning(userId, sandboxId, current);
  }

  /** Starts the background jobs; the warm pool fills at once, the others after one interval. */
  start(): void {
    for (const [name, job] of this.jobs) job.start(name === 'warm-pool' ? 0 : undefined);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((job) => job.stop()));
  }
}
