// The audit log (docs/audit.md): every state-changing call of a user — sign-ins, keys,
// settings, secrets, conversations, sandboxes — with its outcome, the ids and names it named
// and the names of the fields it sent, never a value. Recorded by the procedures' one
// middleware (src/trpc/procedures.ts), so REST and tRPC alike; read by the ADMIN_USERS.
//
// Written in batches after the answer (a settings save stays one write on its way): the
// entries of the calls answered meanwhile go in one insert; drain() writes what is left
// before the database closes. A process killed outright loses at most the last ~100 ms.
import crypto from 'node:crypto';
import type { AuditEventModel, UserRoleModel } from '../../models/index.js';
import type { AuditSearchInput } from '../../contract/audit.schema.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';

/** Input fields that name what a call acts on (kept as sent); every other field is kept by name only. */
const TARGET_FIELDS = new Set([
  'conversation_id',
  'sandbox_id',
  'sandbox_spec_id',
  'secret_id',
  'key_id',
  'task_id',
  'name',
  'profile_name',
  'new_name',
  'org_id',
  'user_id',
  'role',
  'invitation_id',
  'provider',
  'selected_repository',
  'id',
]);
const BATCH_DELAY_MS = 100;
const SWEEP_INTERVAL_MS = 60 * 60_000;

export interface AuditEntry {
  userId: string;
  action: string;
  outcome: string;
  input: unknown;
  via: string;
}

export interface AuditServiceOptions {
  admins: readonly string[];
  retentionMs: number;
  log: Logger;
  now?: () => number;
  /** Deletes what is past retention now and then (off for the operator CLI: the service's job). */
  sweep?: boolean;
}

export class AuditService {
  private pending: Record<string, unknown>[] = [];
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private lastSweep = 0;
  private readonly now: () => number;

  constructor(
    private readonly AuditEvent: AuditEventModel,
    /** Administrators by their identity provider's groups (OIDC_ADMIN_GROUPS), beside ADMIN_USERS. */
    private readonly roles: UserRoleModel,
    private readonly options: AuditServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Queues the call's entry; written with the others of the next ~100 ms. */
  record(entry: AuditEntry): void {
    const { target, fields } = describe(entry.input);
    this.pending.push({
      _id: crypto.randomBytes(12).toString('hex'),
      at: new Date(this.now()),
      userId: entry.userId,
      action: entry.action,
      outcome: entry.outcome,
      target,
      fields,
      via: entry.via,
    });
    this.timer ??= setTimeout(() => void this.flush(), BATCH_DELAY_MS);
  }

  /** Writes what is queued now (shutdown, a read of the log); entries queued meanwhile wait for their batch. */
  async drain(): Promise<void> {
    if (this.flushing) await this.flushing;
    await this.flush();
  }

  async isAdmin(userId: string): Promise<boolean> {
    if (this.options.admins.includes(userId)) return true;
    return (await this.roles.findOne({ _id: userId }, { admin: 1 }).lean())?.admin === true;
  }

  /** A page of the log, newest first; for admins only. */
  async search(userId: string, input: AuditSearchInput) {
    await this.assertAdmin(userId);
    await this.drain(); // what this replica answered is in what it reads
    const filter: Record<string, unknown> = {};
    if (input.user_id) filter.userId = input.user_id;
    if (input.action) filter.action = input.action;
    // Always bounded in time (until now, at the latest): the scan walks the time index from there.
    const at: Record<string, Date> = { $lt: input.until ? new Date(input.until) : new Date(this.now() + 1) };
    if (input.since) at.$gte = new Date(input.since);
    if (input.page_id) {
      const [time, id] = input.page_id.split('_');
      const after = new Date(Number(time));
      filter.$or = [{ at: { ...at, $lt: after < at.$lt! ? after : at.$lt } }, { at: after, _id: { $lt: id } }];
    } else filter.at = at;
    const records = await this.AuditEvent.find(filter)
      .sort({ at: -1, _id: -1 })
      .limit(input.limit + 1)
      .lean();
    const items = records.slice(0, input.limit).map((r) => ({
      id: r._id,
      at: r.at.toISOString(),
      user_id: r.userId,
      action: r.action,
      outcome: r.outcome,
      target: (r.target ?? {}) as Record<string, string>,
      fields: r.fields ?? [],
      via: r.via,
    }));
    const last = records.length > input.limit ? records[input.limit - 1] : undefined;
    return { items, next_page_id: last ? `${last.at.getTime()}_${last._id}` : null };
  }

  private async assertAdmin(userId: string): Promise<void> {
    if (!(await this.isAdmin(userId)))
      throw new AppError('FORBIDDEN', 'Only administrators read the audit log', { reason: 'not_an_admin' });
  }

  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return Promise.resolve();
    this.flushing = this.AuditEvent.insertMany(batch, { ordered: false })
      .then(() => this.sweepWhenDue())
      .catch((error: unknown) => {
        // Kept for the next batch: a database outage delays entries, it does not drop them.
        this.pending.unshift(...batch);
        this.options.log.warn({ err: error, entries: batch.length }, 'writing audit entries failed; retrying');
        this.timer ??= setTimeout(() => void this.flush(), 1_000);
      })
      .finally(() => (this.flushing = null));
    return this.flushing;
  }

  /** Entries older than AUDIT_RETENTION_DAYS go, at most once an hour per process. */
  private async sweepWhenDue(): Promise<void> {
    const now = this.now();
    if (this.options.sweep === false || now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    await this.AuditEvent.deleteMany({ at: { $lt: new Date(now - this.options.retentionMs) } });
  }
}

/** What an input names (its target ids, as sent) and the names of all its fields; no other value. */
function describe(input: unknown): { target: Record<string, string>; fields: string[] } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { target: {}, fields: [] };
  const target: Record<string, string> = {};
  const fields: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    fields.push(key);
    if (TARGET_FIELDS.has(key) && typeof value === 'string') target[key] = value.slice(0, 200);
  }
  return { target, fields: fields.sort() };
}
