// The warm pool: SANDBOX_WARM_POOL_SIZE sandboxes of the default spec kept started and
// unowned (owner WARM_POOL_OWNER), so a start can take one instead of waiting for a cold one.
// - Nothing user-specific is in a warm sandbox: its session key is generated at warm-up and
//   becomes the claimant's sandbox key (a spec that can starts it dormant: the claim initialises
//   it with that key and the claimant's environment, src/sandbox/service/sandbox-init.ts); its webhook URL names only the sandbox, and webhooks
//   map to whoever owns the record (nobody until the claim). Settings and secrets reach the
//   agent only with the conversation request, after the claim.
// - A claim takes the decision `warm:<id>` (src/db/claims.ts), then sets the owner: exactly one user
//   gets each warm sandbox, across replicas; discarding a warm sandbox takes the same key. The refill keeps the pool at its size; after inserting a record it
//   checks its rank among the warm records (oldest first), so replicas refilling at once do
//   not overfill it, and a pass trims any excess.
// - A pass also warms up each running warm sandbox once: an agent server's first command costs
//   0.4–1 s of its own set-up, which would otherwise fall on the start that claims it.
import { WARM_POOL_OWNER, type Models } from '../../../models/index.js';
import { AgentServerClient } from '../../agent-server/client.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxRuntime } from '../runtime.js';
import { sandboxesOf } from '../service/sandbox-search.js';
import type { SandboxSpecsService } from '../service/sandbox-specs.service.js';
import type { SandboxFields } from '../service/sandbox-records.js';
import type { SandboxesService, WarmSandboxes } from '../service/sandboxes.service.js';
import type { DecisionClaims } from '../../db/claims.js';
import type { RecordTables } from '../../db/record-lists/record-tables.js';

export interface WarmPoolDeps {
  models: Models;
  /** The database's record tables (database.ts): warm sandboxes are read and moved through its sandbox table. */
  tables: RecordTables;
  runtime: SandboxRuntime;
  sandboxes: SandboxesService;
  specs: SandboxSpecsService;
  claims: DecisionClaims;
  metrics: Metrics;
  log: Logger;
  size: number;
  now?: () => number;
}

interface WarmEntry {
  _id: string;
  specId: string;
  createdAt: Date;
}

const oldestFirst = (a: WarmEntry, b: WarmEntry) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id);
const USABLE = new Set(['RUNNING', 'STARTING']);
const START_GRACE_MS = 30_000;
const WARM_UP_TIMEOUT_MS = 30_000;

export class WarmPool implements WarmSandboxes {
  /** Called after a claim so the pool refills soon (the lifecycle wires it to the refill job). */
  onClaimed: () => void = () => {};
  /** Warm sandboxes this replica has warmed up (or tried to). */
  private readonly warmedUp = new Set<string>();
  /** Warm sandboxes whose claim is known to be taken (still listed in the pool until moved). */
  private readonly taken = new Set<string>();

  constructor(private readonly deps: WarmPoolDeps) {}

  /** Takes a warm sandbox of the spec for the user (running ones first), or null. */
  async claim(userId: string, specId: string): Promise<SandboxFields | null> {
    const { runtime, size } = this.deps;
    if (size === 0 || specId !== this.deps.specs.default.id) return null;
    const warm = (await sandboxesOf(this.deps, WARM_POOL_OWNER)).filter((w) => w.specId === specId);
    const states = await Promise.all(warm.map(async (w) => ({ id: w._id, status: (await runtime.state(w._id, 'running')).status })));
    // A claim is given back only by a claimant that failed (which then forgets it): ids seen taken
    // are not tried again, and racing starts try the pool in different orders, not all its first.
    const inPool = new Set(warm.map((w) => w._id));
    for (const id of this.taken) if (!inPool.has(id)) this.taken.delete(id);
    const untaken = (status: string) => shuffled(states.filter((s) => s.status === status && !this.taken.has(s.id)));
    for (const { id } of [...untaken('RUNNING'), ...untaken('STARTING')]) {
      const ours = await this.deps.claims.claim(`warm:${id}`);
      this.taken.add(id);
      if (!ours) continue; // another start took it
      const now = new Date((this.deps.now ?? Date.now)());
      // Through the record table: the sandbox moves from the pool's list to the user's.
      const claimed = await this.unclaimedOnFailure(id, () =>
        this.deps.tables.sandboxes.update(
          id,
          { userId: WARM_POOL_OWNER },
          { $set: { userId, lastUsedAt: now, desiredSince: now, updatedAt: now } },
        ),
      );
      if (!claimed) continue; // discarded meanwhile
      this.deps.metrics.lifecycleActions.inc({ action: 'warm_claimed' });
      this.onClaimed();
      return claimed;
    }
    return null;
  }

  /** One refill pass: drops broken, stale-spec and excess warm sandboxes, then starts the missing ones. */
  async pass(): Promise<{ started: string[]; discarded: string[] }> {
    const { runtime, size } = this.deps;
    const specId = this.deps.specs.default.id;
    const warm = (await sandboxesOf(this.deps, WARM_POOL_OWNER)).sort(oldestFirst);
    const discarded: string[] = [];
    const kept: WarmEntry[] = [];
    const running: string[] = [];
    const now = (this.deps.now ?? Date.now)();
    for (const id of this.warmedUp) if (!warm.some((w) => w._id === id)) this.warmedUp.delete(id);
    for (const entry of warm) {
      const { status } = await runtime.state(entry._id, 'running');
      if (status === 'RUNNING') running.push(entry._id);
      // MISSING right after the record is written is a start under way (maybe another replica's).
      const starting = status === 'MISSING' && now - entry.createdAt.getTime() < START_GRACE_MS;
      const usable = entry.specId === specId && (USABLE.has(status) || starting);
      if (usable && kept.length < size) kept.push(entry);
      else if (await this.discard(entry._id)) discarded.push(entry._id);
    }
    for (const entry of kept) if (running.includes(entry._id) && !this.warmedUp.has(entry._id)) await this.warmUp(entry._id);
    const started: string[] = [];
    for (let missing = size - kept.length; missing > 0; missing--) {
      const id = await this.startOne();
      if (!id) break;
      started.push(id);
    }
    return { started, discarded };
  }

  private async startOne(): Promise<string | null> {
    const { sandboxes, specs, size, log } = this.deps;
    // Dormant where the spec can (deferred_init): it takes its keys and the claimant's environment at the claim (sandbox-init.ts).
    const record = await sandboxes.insertRecord(WARM_POOL_OWNER, specs.default, undefined, {
      dormant: specs.default.deferred_init === true,
    });
    // Another replica may be refilling too: the oldest records win, the rest step back before starting.
    const warm = (await sandboxesOf(this.deps, WARM_POOL_OWNER)).sort(oldestFirst);
    const rank = warm.findIndex((w) => w._id === record._id);
    if (rank < 0 || rank >= size) {
      await this.discard(record._id);
      return null;
    }
    await sandboxes.startRecorded(record);
    this.deps.metrics.lifecycleActions.inc({ action: 'warm_started' });
    log.info({ sandboxId: record._id }, 'started a warm sandbox');
    return record._id;
  }

  /** Runs a first command in a warm sandbox (once; a failure is only logged: the claimant pays the set-up then). */
  private async warmUp(sandboxId: string): Promise<void> {
    this.warmedUp.add(sandboxId);
    const record = await this.deps.models.Sandbox.findOne({ _id: sandboxId, userId: WARM_POOL_OWNER }).lean();
    if (!record || record.dormant) return; // claimed meanwhile; a dormant one runs nothing until its claim (its tools load at boot)
    const [info, state] = await Promise.all([this.deps.sandboxes.withState(record), this.deps.sandboxes.stateOf(record)]);
    const url = state.internalUrl ?? info.exposed_urls?.find((u) => u.name === 'AGENT_SERVER')?.url;
    if (!url || !info.session_api_key) return;
    try {
      await new AgentServerClient(url, info.session_api_key, WARM_UP_TIMEOUT_MS).bash('true', { timeoutSeconds: 30 });
      this.deps.log.info({ sandboxId }, 'warmed up a warm sandbox');
    } catch (error) {
      this.deps.log.warn({ sandboxId, err: error }, 'warming up a warm sandbox failed');
    }
  }

  /**
   * The claimed sandbox's move out of the pool; when it fails the claim is given back, or the
   * sandbox would stay in the pool, counted as warm, that no start or pass could take.
   */
  private unclaimedOnFailure<T>(sandboxId: string, move: () => Promise<T>): Promise<T> {
    return this.deps.claims.carryOut(`warm:${sandboxId}`, move).catch((error: unknown) => {
      this.taken.delete(sandboxId);
      throw error;
    });
  }

  /** Removes an unclaimed warm sandbox; false when a start claimed it first. */
  private async discard(sandboxId: string): Promise<boolean> {
    if (!(await this.deps.claims.claim(`warm:${sandboxId}`))) return false;
    const removed = await this.unclaimedOnFailure(sandboxId, () =>
      this.deps.tables.sandboxes.remove(sandboxId, { userId: WARM_POOL_OWNER }),
    );
    if (!removed) return false;
    await this.deps.runtime.remove(sandboxId);
    this.deps.metrics.lifecycleActions.inc({ action: 'warm_discarded' });
    return true;
  }
}

/** A copy in random order (Fisher–Yates). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
