// Sandboxes (API.md B.8 with A.2): the service owns the records (owner, spec, desired
// state, encrypted session key) and asks the runtime for live status. Another user's
// sandbox behaves exactly as if absent.
import crypto from 'node:crypto';
import type { Models, SandboxRecord } from '../../models/index.js';
import { pageOf, pageOffset } from '../../contract/common.schema.js';
import type { SandboxInfo } from '../../contract/sandboxes.schema.js';
import type { Config } from '../config.js';
import { randomBase62, type SecretBox } from '../crypto.js';
import { AppError } from '../errors.js';
import { ConcurrencyGate } from '../rate-limit.js';
import type { SandboxLaunch, SandboxRuntime, SandboxState } from '../sandbox/runtime.js';
import type { SandboxSpecsService } from './sandbox-specs.service.js';

/** What the service reads of a sandbox record (updatedAt is the database's own). */
type SandboxFields = Omit<SandboxRecord, 'updatedAt'>;

const RETRY_AFTER_SECONDS = 30;

export class SandboxesService {
  /** Runtime starts and resumes in flight at once (SANDBOX_MAX_CONCURRENT_STARTS); more answer 503. */
  private readonly starts: ConcurrencyGate;

  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly specs: SandboxSpecsService,
    private readonly runtime: SandboxRuntime,
    private readonly settings: Config['sandbox'],
    /** Base URL the agent server calls back (…/api/v1/webhooks/<id>); known once listening. */
    private readonly webUrl: () => string,
  ) {
    this.starts = new ConcurrencyGate(
      settings.maxConcurrentStarts,
      () =>
        new AppError('SERVICE_UNAVAILABLE', 'Too many sandboxes starting at once, retry shortly', {
          reason: 'sandbox_starts_busy',
          retryAfterSeconds: 5,
        }),
    );
  }

  async start(userId: string, specId?: string | null): Promise<SandboxInfo> {
    const spec = specId ? this.specs.find(specId) : this.specs.default;
    if (!spec) throw new AppError('NOT_FOUND', `Sandbox spec not found: ${specId}`, { reason: 'sandbox_spec_not_found' });
    await this.enforceLimit(userId);
    const sandboxId = crypto.randomBytes(16).toString('hex');
    const sessionApiKey = randomBase62(43);
    const record: SandboxFields = {
      _id: sandboxId,
      userId,
      specId: spec.id,
      runtime: this.runtime.kind,
      sessionApiKey: this.box.encrypt(sessionApiKey, keyContext(sandboxId)),
      desired: 'running',
      createdAt: new Date(),
    };
    // Record first, so a crash mid-start leaves a record that reads MISSING rather than an
    // untracked pod; a failed start removes both.
    await this.models.Sandbox.create(record);
    try {
      await this.starts.run(() => this.runtime.start(this.launch(record, sessionApiKey)));
    } catch (error) {
      await this.models.Sandbox.deleteOne({ _id: sandboxId });
      throw error;
    }
    return this.toInfo(record, await this.runtime.state(sandboxId, 'running'));
  }

  async search(userId: string, pageId: string | null | undefined, limit: number) {
    const offset = pageOffset(pageId);
    const [records, total] = await Promise.all([
      this.models.Sandbox.find({ userId }).sort({ createdAt: -1, _id: 1 }).skip(offset).limit(limit).lean(),
      this.models.Sandbox.countDocuments({ userId }),
    ]);
    return pageOf(await Promise.all(records.map((r) => this.withState(r))), offset, limit, total);
  }

  async batchGet(userId: string, ids: string[]): Promise<(SandboxInfo | null)[]> {
    const records = await this.models.Sandbox.find({ userId, _id: { $in: ids } }).lean();
    const byId = new Map(records.map((r) => [r._id, r]));
    return Promise.all(ids.map((id) => (byId.has(id) ? this.withState(byId.get(id)!) : null)));
  }

  async get(userId: string, sandboxId: string): Promise<SandboxInfo> {
    return this.withState(await this.record(userId, sandboxId));
  }

  /** Pausing a paused sandbox succeeds (reference). */
  async pause(userId: string, sandboxId: string): Promise<void> {
    await this.record(userId, sandboxId);
    await this.runtime.pause(sandboxId);
    await this.models.Sandbox.updateOne({ _id: sandboxId, userId }, { $set: { desired: 'paused', updatedAt: new Date() } });
  }

  /** Resuming a running sandbox succeeds (reference); a resume counts against the limit. */
  async resume(userId: string, sandboxId: string): Promise<void> {
    const record = await this.record(userId, sandboxId);
    const state = await this.runtime.state(sandboxId, record.desired);
    if (state.status === 'RUNNING' || state.status === 'STARTING') return;
    await this.enforceLimit(userId);
    await this.starts.run(() => this.runtime.resume(this.launch(record, this.box.decrypt(record.sessionApiKey, keyContext(sandboxId)))));
    await this.models.Sandbox.updateOne({ _id: sandboxId, userId }, { $set: { desired: 'running', updatedAt: new Date() } });
  }

  async delete(userId: string, sandboxId: string): Promise<void> {
    await this.record(userId, sandboxId);
    await this.runtime.remove(sandboxId);
    await this.models.Sandbox.deleteOne({ _id: sandboxId, userId });
  }

  /** Owner and session key of a sandbox, whoever owns it (webhook authentication). */
  async credentials(sandboxId: string): Promise<{ userId: string; sessionKey: string } | null> {
    const record = await this.models.Sandbox.findOne({ _id: sandboxId }).lean();
    return record ? { userId: record.userId, sessionKey: this.box.decrypt(record.sessionApiKey, keyContext(sandboxId)) } : null;
  }

  /** Everything the conversation service needs to talk to a user's sandbox. */
  async connection(userId: string, sandboxId: string) {
    const record = await this.record(userId, sandboxId);
    const state = await this.runtime.state(sandboxId, record.desired);
    const spec = this.specs.find(record.specId);
    return {
      state,
      desired: record.desired,
      sessionKey: this.box.decrypt(record.sessionApiKey, keyContext(sandboxId)),
      publicUrl: state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url ?? null,
      internalUrl: state.internalUrl ?? null,
      workingDir: spec ? this.runtime.workingDir(sandboxId, spec) : '/workspace/project',
    };
  }

  /** Live status of several sandboxes of a user (MISSING for unknown ids). */
  async statuses(userId: string, sandboxIds: string[]): Promise<Map<string, SandboxState & { sessionKey: string | null }>> {
    const records = await this.models.Sandbox.find({ userId, _id: { $in: [...new Set(sandboxIds)] } }).lean();
    const result = new Map<string, SandboxState & { sessionKey: string | null }>();
    await Promise.all(
      records.map(async (r) => {
        const state = await this.runtime.state(r._id, r.desired);
        result.set(r._id, { ...state, sessionKey: this.box.decrypt(r.sessionApiKey, keyContext(r._id)) });
      }),
    );
    return result;
  }

  private async enforceLimit(userId: string): Promise<void> {
    const candidates = await this.models.Sandbox.find({ userId, desired: 'running' }).lean();
    const states = await Promise.all(candidates.map((r) => this.runtime.state(r._id, r.desired)));
    const running = states.filter((s) => s.status === 'RUNNING' || s.status === 'STARTING').length;
    if (running >= this.settings.maxRunningPerUser) {
      const detail = `Sandbox limit reached (${running} running)`;
      throw new AppError('TOO_MANY_REQUESTS', detail, { reason: 'sandbox_limit_reached', retryAfterSeconds: RETRY_AFTER_SECONDS });
    }
  }

  private async record(userId: string, sandboxId: string): Promise<SandboxRecord> {
    const record = await this.models.Sandbox.findOne({ _id: sandboxId, userId }).lean();
    if (!record) throw new AppError('NOT_FOUND', 'Sandbox not found', { reason: 'sandbox_not_found' });
    return record;
  }

  private launch(record: SandboxFields, sessionApiKey: string): SandboxLaunch {
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
      webhookBaseUrl: `${this.webUrl()}/api/v1/webhooks/${record._id}`,
    };
  }

  private async withState(record: SandboxRecord): Promise<SandboxInfo> {
    return this.toInfo(record, await this.runtime.state(record._id, record.desired));
  }

  private toInfo(record: SandboxFields, state: SandboxState): SandboxInfo {
    return {
      id: record._id,
      created_by_user_id: record.userId,
      sandbox_spec_id: record.specId,
      status: state.status,
      session_api_key: this.box.decrypt(record.sessionApiKey, keyContext(record._id)),
      exposed_urls: state.status === 'RUNNING' ? state.exposedUrls : null,
      created_at: record.createdAt.toISOString(),
      status_reason: state.reason,
    };
  }
}

export const keyContext = (sandboxId: string) => `sandbox:${sandboxId}:session_api_key`;
