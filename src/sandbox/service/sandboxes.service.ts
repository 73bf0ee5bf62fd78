// Sandboxes (docs/api.md): the service owns the records (owner, spec, desired state, sealed keys) and asks the runtime for
// live status; another user's sandbox is as if absent; a start may claim a warm one (lifecycle/warm-pool.ts).
import { WARM_POOL_OWNER, type SandboxRecord } from '../../../models/index.js';
import type { SandboxSource } from '../../../contract/app-conversations.schema.js';
import { pageFromExtra, pageOffset } from '../../../contract/common.schema.js';
import type { SandboxInfo } from '../../../contract/sandboxes.schema.js';
import type { Config } from '../../config/config.js';
import type { SecretBox } from '../../crypto.js';
import { polledChanges } from '../../db/polled-changes.js';
import { AppError } from '../../errors.js';
import { ConcurrencyGate } from '../../rate-limit.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxLaunch, SandboxRuntime, SandboxSpec, SandboxState } from '../runtime.js';
import {
  desiredChange,
  newSandboxId,
  openEnv,
  openSecretKey,
  openSessionKey,
  newSandboxRecord,
  rotateSessionKey,
  type SandboxFields,
  type LaunchChoices,
  type SandboxPurpose,
} from './sandbox-records.js';
import { PAUSE_REASONS, SandboxEvents } from './sandbox-events.js';
import { pauseLeastRecentlyUsed } from './sandbox-room.js';
import { SandboxSlots, type ReleaseSlot } from './sandbox-slots.js';
import { reachedThrough, withVscodeToken } from './sandbox-urls.js';
import type { SandboxSpecsService } from './sandbox-specs.service.js';
import type { ModelsAndTables, RecordTables } from '../../db/record-lists/record-tables.js';
import { sandboxPage } from './sandbox-search.js';
import { SandboxInit } from './sandbox-init.js';

/** Hands out an already started, unowned sandbox of a spec, or null (the warm pool). */
export interface WarmSandboxes {
  claim(userId: string, specId: string): Promise<SandboxFields | null>;
}

const BEING_DELETED = 'The sandbox is being deleted';
const startsBusy = () =>
  new AppError('SERVICE_UNAVAILABLE', 'Too many sandboxes starting at once, retry shortly', {
    reason: 'sandbox_starts_busy',
    retryAfterSeconds: 5,
  });
/** How often a watched sandbox is read again (a change on another replica shows within this). */
const WATCH_MS = 1_000;

export class SandboxesService {
  /** `db`: the opened database's models and record tables (database.ts). */
  constructor(
    private readonly db: ModelsAndTables,
    private readonly box: SecretBox,
    readonly specs: SandboxSpecsService,
    private readonly runtime: SandboxRuntime,
    settings: Config['sandbox'],
    /** Base URL the agent server calls back (…/api/v1/webhooks/<id>); known once listening. */
    private readonly webUrl: () => string,
    private readonly metrics: Metrics,
    /** Origins whose pages call agent servers from a browser (browserOrigins below). */
    private readonly corsOrigins: () => string[] = () => [],
    /** Where browsers reach agent servers through the service, or null (agentProxyBase, sandbox-urls.ts). */
    private readonly agentBase: () => string | null = () => null,
  ) {
    this.records = db.tables.sandboxes;
    this.starts = new ConcurrencyGate(settings.maxConcurrentStarts, startsBusy);
    const release: ReleaseSlot = (userId, sandboxId) => this.slots.release(userId, sandboxId);
    const room =
      settings.atLimit === 'pause-oldest' ? pauseLeastRecentlyUsed(db.models, runtime, metrics, release, undefined, this.events) : null;
    this.slots = new SandboxSlots(db, settings.maxRunningPerUser, (record) => this.stateOf(record), room);
    this.dormant = new SandboxInit({
      box,
      records: this.records,
      stateOf: (record) => this.stateOf(record),
      startupTimeoutMs: settings.startupTimeoutMs,
    });
  }

  /** The sandbox records, read and written by id (src/db/record-lists/record-table.ts); on the embedded FerretDB with their owners' lists. */
  private readonly records: RecordTables['sandboxes'];

  readonly slots: SandboxSlots; // the per-user running limit (sandbox-slots.ts)
  readonly events = new SandboxEvents(); // paused, resumed, deleted: to the lifecycle webhooks

  /** Starts and resumes users ask for, in flight at once (SANDBOX_MAX_CONCURRENT_STARTS); more answer 503. */
  private readonly starts: ConcurrencyGate;
  private warm: WarmSandboxes | null = null;
  /** Initialises a claimed dormant warm sandbox (sandbox-init.ts). */
  private readonly dormant: SandboxInit;

  /** Lets starts of the default spec claim warm sandboxes. */
  useWarmPool(warm: WarmSandboxes): void {
    this.warm = warm;
  }

  /** purpose 'automation': an automation run's, started cold (a warm sandbox was launched without what a run needs). */
  async start(userId: string, specId?: string | null, purpose: SandboxPurpose | null = null): Promise<SandboxInfo> {
    return (await this.acquire(userId, specId, null, { purpose })).info;
  }

  /**
   * A new sandbox for the user: a claimed warm one when there is one, else a cold start. A running
   * slot is taken first (or was, by the start's request: `reserved`), under the id a cold start
   * gives its sandbox. `launch.env`: the conversation's secrets, for its agent server's environment.
   */
  async acquire(userId: string, specId?: string | null, reserved?: string | null, launch: LaunchChoices = {}) {
    const spec = specId ? this.specs.find(specId) : this.specs.default;
    if (!spec) throw new AppError('NOT_FOUND', `Sandbox spec not found: ${specId}`, { reason: 'sandbox_spec_not_found' });
    await this.runtime.admit?.(userId);
    const sandboxId = reserved ?? newSandboxId();
    await this.slots.claim(userId, sandboxId);
    const { record, source } = await this.warmOrCold(userId, spec, sandboxId, launch).catch(async (error: unknown) => {
      await this.slots.release(userId, sandboxId);
      throw error;
    });
    this.metrics.sandboxStarts.inc({ source });
    return { info: this.toInfo(record, await this.stateOf(record)), source };
  }

  private async warmOrCold(
    userId: string,
    spec: SandboxSpec,
    sandboxId: string,
    launch: LaunchChoices,
  ): Promise<{ record: SandboxFields; source: SandboxSource }> {
    const claimed = launch.purpose ? null : await this.warm?.claim(userId, spec.id);
    const cold = async () => ({
      record: await this.starts.run(() => this.launchNew(userId, spec, sandboxId, launch)),
      source: 'cold_start' as const,
    });
    if (!claimed) return cold();
    await this.slots.move(userId, sandboxId, claimed._id);
    if (!claimed.dormant) return { record: claimed, source: 'warm_pool' };
    const initialised = await this.dormant.initialise(claimed, launch.env ?? {}).catch(async () => {
      // A warm sandbox that cannot be initialised is no use to anyone: gone, and a cold one instead.
      this.metrics.lifecycleActions.inc({ action: 'warm_init_failed' });
      await this.slots.move(userId, claimed._id, sandboxId);
      await this.delete(userId, claimed._id).catch(() => {});
      return null;
    });
    return initialised ? { record: initialised, source: 'warm_pool' } : cold();
  }

  /** Creates the record and starts the sandbox. */
  async launchNew(ownerId: string, spec: SandboxSpec, sandboxId?: string, launch: LaunchChoices = {}): Promise<SandboxFields> {
    const record = await this.insertRecord(ownerId, spec, sandboxId, launch);
    await this.startRecorded(record);
    return record;
  }

  /**
   * The record of a new sandbox, not started yet (for a user, or unowned for the warm pool).
   * Record first: a crash mid-start leaves a record that reads MISSING, not an untracked pod.
   */
  async insertRecord(
    ownerId: string,
    spec: SandboxSpec,
    sandboxId = newSandboxId(),
    /** env: its agent server's environment; dormant: started to wait for POST /api/init (the warm pool's, where the spec can). */
    opts: LaunchChoices & { dormant?: boolean } = {},
  ): Promise<SandboxFields> {
    const record = newSandboxRecord(this.box, { _id: sandboxId, userId: ownerId, specId: spec.id, runtime: this.runtime.kind }, opts);
    await this.records.insert(record);
    return record;
  }

  /** Starts a recorded sandbox; a failed start removes the record too. */
  async startRecorded(record: SandboxFields): Promise<void> {
    try {
      await this.runtime.start(this.launch(record, openSessionKey(this.box, record), openSecretKey(this.box, record)));
    } catch (error) {
      await this.records.remove(record._id);
      throw error;
    }
  }

  async search(userId: string, pageId: string | null | undefined, limit: number) {
    const offset = pageOffset(pageId);
    // One search: limit + 1 records tell whether another page exists (no count).
    const { page, next_page_id } = pageFromExtra(await sandboxPage(this.db, userId, offset, limit + 1), offset, limit);
    return { items: await Promise.all(page.map((r) => this.withState(r))), next_page_id };
  }

  async batchGet(userId: string, ids: string[]): Promise<(SandboxInfo | null)[]> {
    const records = await this.records.getMany(ids, { userId });
    const byId = new Map(records.map((r) => [r._id, r]));
    return Promise.all(ids.map((id) => (byId.has(id) ? this.withState(byId.get(id)!) : null)));
  }

  async get(userId: string, sandboxId: string): Promise<SandboxInfo> {
    return this.withState(await this.record(userId, sandboxId));
  }

  /**
   * The sandbox (its status, URLs, reason) each time it changes, read again every WATCH_MS on
   * whichever replica changed it; ends when it is deleted; NOT_FOUND for one the user does not have.
   */
  watch(userId: string, sandboxId: string, signal?: AbortSignal): AsyncGenerator<SandboxInfo> {
    return polledChanges(async () => (await this.batchGet(userId, [sandboxId]))[0] ?? null, {
      everyMs: WATCH_MS,
      signal,
      missing: () => new AppError('NOT_FOUND', 'Sandbox not found', { reason: 'sandbox_not_found' }),
    });
  }

  /** Pausing a paused sandbox succeeds (reference). */
  async pause(userId: string, sandboxId: string): Promise<void> {
    const record = notBeingDeleted(await this.record(userId, sandboxId));
    // The intent first: a resume polling meanwhile sees the stop, never a stopped process to start again.
    await this.records.update(sandboxId, { userId, desired: { $ne: 'deleting' } }, { $set: desiredChange('paused', { pausedBy: 'user' }) });
    await this.runtime.pause(sandboxId);
    await this.slots.release(userId, sandboxId);
    await this.events.paused({ ...record, pausedBy: 'user' });
  }

  /**
   * Resuming a running sandbox succeeds (reference); a resume counts against the limit. A
   * sandbox in ERROR (crashed agent server, failed pod) is restarted on its workspace.
   */
  async resume(userId: string, sandboxId: string): Promise<void> {
    const record = notBeingDeleted(await this.record(userId, sandboxId));
    const state = await this.stateOf(record);
    const now = new Date();
    if (record.desired === 'running' && (state.status === 'RUNNING' || state.status === 'STARTING')) return;
    await this.slots.claim(userId, sandboxId);
    try {
      if (state.status === 'ERROR') await this.runtime.pause(sandboxId);
      const keys = await rotateSessionKey(this.records, this.box, record);
      await this.starts.run(() => this.runtime.resume(this.launch(record, keys.sessionKey, keys.secretKey)));
    } catch (error) {
      await this.slots.release(userId, sandboxId);
      throw error;
    }
    await this.records.update(
      sandboxId,
      { userId, desired: { $ne: 'deleting' } },
      { $set: desiredChange('running', { pausedBy: null, lastUsedAt: now }, now) },
    );
    await this.events.resumed(record, await this.stateOf({ ...record, desired: 'running' }));
  }

  async delete(userId: string, sandboxId: string): Promise<void> {
    const record = await this.record(userId, sandboxId);
    await this.runtime.remove(sandboxId);
    await this.records.remove(sandboxId, { userId });
    await this.slots.release(userId, sandboxId);
    await this.events.deleted(record, null);
  }

  /** Owner and session key of a sandbox, whoever owns it (webhook authentication); none for an unclaimed warm one. */
  async credentials(sandboxId: string): Promise<{ userId: string; sessionKey: string } | null> {
    const record = await this.records.get(sandboxId);
    if (!record || record.userId === WARM_POOL_OWNER) return null;
    return { userId: record.userId, sessionKey: openSessionKey(this.box, record) };
  }

  /** A running sandbox's agent server and key, for the pause's handoff (src/sandbox/pause-handoff.ts); null otherwise. */
  async agentOf(sandboxId: string): Promise<{ url: string; sessionKey: string } | null> {
    const record = await this.records.get(sandboxId);
    if (!record || record.userId === WARM_POOL_OWNER) return null;
    const state = await this.runtime.state(sandboxId, 'running');
    const url = state.internalUrl ?? state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url;
    return state.status === 'RUNNING' && url ? { url, sessionKey: openSessionKey(this.box, record) } : null;
  }

  /** Everything the conversation service needs to talk to a user's sandbox. */
  async connection(userId: string, sandboxId: string) {
    const record = await this.record(userId, sandboxId);
    const state = await this.stateOf(record);
    const sessionKey = openSessionKey(this.box, record);
    const spec = this.specs.find(record.specId);
    const workingDir = this.workingDirOf(record, spec);
    return {
      state: { ...state, exposedUrls: withVscodeToken(state.exposedUrls, sessionKey, workingDir) },
      desired: record.desired,
      sessionKey,
      publicUrl: state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url ?? null,
      internalUrl: state.internalUrl ?? null,
      workingDir,
      agentServerVersion: spec?.agent_server_version ?? null,
    };
  }

  /** Live status of several sandboxes of a user (absent for unknown ids); VSCODE carries its token. */
  async statuses(userId: string, sandboxIds: string[]): Promise<Map<string, SandboxState & { sessionKey: string | null }>> {
    const records = await this.records.getMany([...new Set(sandboxIds)], { userId });
    const result = new Map<string, SandboxState & { sessionKey: string | null }>();
    await Promise.all(
      records.map(async (r) => {
        const state = await this.stateOf(r);
        const sessionKey = openSessionKey(this.box, r);
        result.set(r._id, { ...state, exposedUrls: withVscodeToken(state.exposedUrls, sessionKey, this.workingDirOf(r)), sessionKey });
      }),
    );
    return result;
  }

  private workingDirOf(record: SandboxFields, spec = this.specs.find(record.specId)): string {
    return spec ? this.runtime.workingDir(record._id, spec) : '/workspace/project';
  }

  private async record(userId: string, sandboxId: string): Promise<SandboxRecord> {
    const record = await this.records.get(sandboxId, { userId });
    if (!record) throw new AppError('NOT_FOUND', 'Sandbox not found', { reason: 'sandbox_not_found' });
    return record;
  }

  private launch(record: SandboxFields, sessionApiKey: string, secretKey: string): SandboxLaunch {
    const spec = this.specs.find(record.specId);
    if (!spec) {
      throw new AppError('CONFLICT', `The sandbox's spec ${record.specId} is no longer configured`, {
        reason: 'sandbox_spec_unconfigured',
      });
    }
    return {
      sandboxId: record._id,
      userId: record.userId,
      spec,
      sessionApiKey,
      secretKey,
      webhookBaseUrl: `${this.webUrl()}/api/v1/webhooks/${record._id}`,
      corsOrigins: this.corsOrigins(),
      env: openEnv(this.box, record),
      deferredInit: record.dormant === true,
      automationRun: record.purpose === 'automation',
    };
  }

  async withState(record: SandboxRecord): Promise<SandboxInfo> {
    return this.toInfo(record, await this.stateOf(record));
  }

  /** Live state, with the lifecycle's reasons: paused by the idle policy, being deleted. */
  async stateOf(record: SandboxFields): Promise<SandboxState> {
    if (record.desired === 'deleting') return { status: 'MISSING', exposedUrls: null, reason: BEING_DELETED };
    const state = await this.runtime.state(record._id, record.desired);
    if (state.status === 'PAUSED' && record.pausedBy) return { ...state, reason: PAUSE_REASONS[record.pausedBy] ?? state.reason };
    return reachedThrough(this.agentBase(), record._id, state);
  }

  private toInfo(record: SandboxFields, state: SandboxState): SandboxInfo {
    const sessionKey = openSessionKey(this.box, record);
    return {
      id: record._id,
      created_by_user_id: record.userId,
      sandbox_spec_id: record.specId,
      status: state.status,
      session_api_key: sessionKey,
      exposed_urls: state.status === 'RUNNING' ? withVscodeToken(state.exposedUrls, sessionKey, this.workingDirOf(record)) : null,
      created_at: record.createdAt.toISOString(),
      status_reason: state.reason,
    };
  }
}

function notBeingDeleted<T extends { desired: string }>(record: T): T {
  if (record.desired === 'deleting') throw new AppError('CONFLICT', BEING_DELETED, { reason: 'sandbox_being_deleted' });
  return record;
}
