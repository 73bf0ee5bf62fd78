// Sandbox lifecycle events for the lifecycle webhooks (src/lifecycle-webhooks/lifecycle-events.ts):
// paused (by its owner, the idle policy or to make room at the limit), resumed, deleted (by its
// owner or a policy). The sandbox goes out as the API shows it, without its session key; a
// warm-pool sandbox nobody owns yet tells no one.
import { WARM_POOL_OWNER } from '../../../models/index.js';
import type { SandboxInfo } from '../../../contract/sandboxes.schema.js';
import type { SandboxState } from '../runtime.js';
import { NO_LIFECYCLE_EVENTS, redactedForEvent, type LifecycleEvents } from '../../lifecycle-webhooks/lifecycle-events.js';
import { LIMIT_PAUSED } from './sandbox-room.js';
import type { SandboxFields } from './sandbox-records.js';

/** Why a sandbox reads PAUSED, by who paused it (a user's own pause needs no reason). */
export const PAUSE_REASONS: Record<string, string> = {
  idle: 'Paused automatically after a period without use; it resumes when used',
  limit: LIMIT_PAUSED,
};

type Announced = Pick<SandboxFields, '_id' | 'userId' | 'specId' | 'createdAt'> & { pausedBy?: string | null };

export class SandboxEvents {
  private sink: LifecycleEvents = NO_LIFECYCLE_EVENTS;
  private readonly deletedListeners: ((sandboxId: string) => void)[] = [];

  /** Where events go (the lifecycle webhooks' outbox; none until wired). */
  use(sink: LifecycleEvents): void {
    this.sink = sink;
  }

  paused(record: Announced): Promise<void> {
    const reason = record.pausedBy ? (PAUSE_REASONS[record.pausedBy] ?? null) : null;
    return this.announce('sandbox.paused', record, { status: 'PAUSED', exposedUrls: null, reason });
  }

  resumed(record: Announced, state: SandboxState): Promise<void> {
    return this.announce('sandbox.resumed', record, state);
  }

  /** Told at once (before the webhook) of every sandbox deleted here, warm ones included (the LLM gateway forgets it). */
  whenDeleted(listener: (sandboxId: string) => void): void {
    this.deletedListeners.push(listener);
  }

  deleted(record: Announced, reason: string | null): Promise<void> {
    for (const listener of this.deletedListeners) listener(record._id);
    return this.announce('sandbox.deleted', record, { status: 'MISSING', exposedUrls: null, reason });
  }

  private async announce(type: 'sandbox.paused' | 'sandbox.resumed' | 'sandbox.deleted', record: Announced, state: SandboxState) {
    if (record.userId === WARM_POOL_OWNER) return;
    const info: SandboxInfo = {
      id: record._id,
      created_by_user_id: record.userId,
      sandbox_spec_id: record.specId,
      status: state.status,
      session_api_key: null,
      exposed_urls: state.status === 'RUNNING' ? (state.exposedUrls?.map(({ name, url }) => ({ name, url })) ?? null) : null,
      created_at: record.createdAt.toISOString(),
      status_reason: state.reason,
    };
    await this.sink.emit({ type, userId: record.userId, resource: { kind: 'sandbox', id: record._id }, data: redactedForEvent(info) });
  }
}
