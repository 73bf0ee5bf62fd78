// The events of conversations (docs/api.md), stored from the agent servers' event webhooks
// (event-store.ts) and served owner-scoped: another user's conversation has no events.
//
// Not stored: ConversationStateUpdateEvents with key "full_state". The agent server sends them
// by webhook but keeps none (it sends one afresh to every socket subscriber), and the web UI
// waits, after each socket connect, until it has received as many events as /events/count
// says: counting them would keep its history spinner turning.
import type { EventFilters, SearchEventsInput } from '../../../contract/events.schema.js';
import type { Logger } from '../../logger.js';
import { AppError } from '../../errors.js';
import { EventFeed } from './event-feed.js';
import { eventTime, type EventFilter, type EventStore, type StoredEvent } from './event-store.js';

const SWEEP_INTERVAL_MS = 60 * 60_000;
const SWEEP_BATCH = 100;

export const normaliseConversationId = (id: string) => id.replace(/-/g, '').toLowerCase();

export class EventsService {
  private lastSweep = 0;
  private readonly feed: EventFeed;

  constructor(
    private readonly store: EventStore,
    /** Events of a conversation not written to for this long are removed; null keeps them. */
    private readonly retentionMs: number | null,
    private readonly log: Logger,
    /** Whether the user has the conversation (it may have no events yet). */
    private readonly owns: (userId: string, conversationId: string) => Promise<boolean> = async () => false,
  ) {
    this.feed = new EventFeed(store);
  }

  /**
   * The conversation's events after the one at position `after` (null: all it keeps), then each
   * as it is stored, on whichever replica (event-feed.ts), until `signal` aborts. Each comes
   * with its position: a subscriber that reconnects with the last one gets what followed it.
   */
  async *watch(userId: string, conversationId: string, after: number | null, signal?: AbortSignal) {
    const id = normaliseConversationId(conversationId);
    if (!(await this.owns(userId, id))) {
      throw new AppError('NOT_FOUND', 'Conversation not found', { reason: 'conversation_not_found' });
    }
    for await (const event of this.feed.watch(id, after, signal)) yield { seq: event.seq, event: parse(event) };
  }

  async search(userId: string, input: SearchEventsInput) {
    const log = await this.ownLog(userId, input.conversation_id__eq);
    if (!log) return { items: [], next_page_id: null };
    const from = /^\d+$/.test(input.page_id ?? '') ? Number(input.page_id) : null;
    const page = await this.store.page(log, from, input.sort_order === 'TIMESTAMP_DESC', filterOf(input), input.limit);
    return { items: page.events.map(parse), next_page_id: page.next === null ? null : String(page.next) };
  }

  async count(userId: string, input: EventFilters): Promise<number> {
    const log = await this.ownLog(userId, input.conversation_id__eq);
    return log ? this.store.count(log, filterOf(input)) : 0;
  }

  /** Events by their ids, in the order asked: null for one this conversation does not keep (or another user's). */
  async batchGet(userId: string, conversationId: string, ids: string[]) {
    const log = await this.ownLog(userId, conversationId);
    const found = log ? await this.store.byIds(log, ids) : new Map<string, StoredEvent>();
    return ids.map((id) => (found.has(id) ? parse(found.get(id)!) : null));
  }

  /** Up to `max` of the newest kept events, oldest first (a trajectory when the sandbox cannot answer). */
  async latest(userId: string, conversationId: string, max: number): Promise<Record<string, unknown>[]> {
    const log = await this.ownLog(userId, conversationId);
    if (!log) return [];
    const events: StoredEvent[] = [];
    let from: number | null = Math.max(log.first, log.next - max);
    while (from !== null && events.length < max) {
      const page = await this.store.page(log, from, false, {}, Math.min(100, max - events.length));
      events.push(...page.events);
      from = page.next;
    }
    return events.map(parse);
  }

  /** The kept events around position `seq` (its `before` predecessors and `after` successors), with their positions. */
  async around(userId: string, conversationId: string, seq: number, before: number, after: number) {
    const log = await this.ownLog(userId, conversationId);
    if (!log || seq < log.first || seq >= log.next) return null;
    const start = Math.max(log.first, seq - before);
    const page = await this.store.page(log, start, false, {}, seq - start + 1 + after);
    // A batch claims its positions before it writes its events: one claimed but not yet written is not found yet.
    if (!page.events.some((e) => e.seq === seq)) return null;
    return page.events.map((e) => ({ seq: e.seq, event: parse(e) }));
  }

  /** Stores a webhook batch; the caller has checked that the conversation is the sandbox owner's. */
  async record(userId: string, conversationId: string, events: Record<string, unknown>[]): Promise<void> {
    const kept = events.filter((e) => !(e.kind === 'ConversationStateUpdateEvent' && e.key === 'full_state'));
    if (kept.length > 0) {
      await this.store.append(userId, normaliseConversationId(conversationId), kept);
      this.feed.stored(normaliseConversationId(conversationId));
    }
    this.sweepWhenDue();
  }

  async removeConversation(conversationId: string): Promise<void> {
    await this.store.remove(normaliseConversationId(conversationId));
  }

  private async ownLog(userId: string, conversationId: string) {
    const log = await this.store.log(normaliseConversationId(conversationId));
    return log && log.userId === userId ? log : null;
  }

  /** Retention runs in the background of writes, at most hourly: a service that receives no events stores no more. */
  private sweepWhenDue(): void {
    if (this.retentionMs === null || Date.now() - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = Date.now();
    void this.sweep().catch((error: unknown) => this.log.warn({ err: error }, 'event retention sweep failed'));
  }

  /** Removes the events of conversations idle past the retention; returns how many conversations. */
  async sweep(): Promise<number> {
    if (this.retentionMs === null) return 0;
    const cutoff = new Date(Date.now() - this.retentionMs);
    let removed = 0;
    for (;;) {
      const stale = await this.store.staleLogs(cutoff, SWEEP_BATCH);
      for (const id of stale) await this.store.remove(id);
      removed += stale.length;
      if (stale.length < SWEEP_BATCH) return removed;
    }
  }
}

function filterOf(input: EventFilters): EventFilter {
  return {
    kind: input.kind__eq,
    gte: input.timestamp__gte ? (eventTime(input.timestamp__gte) ?? undefined) : undefined,
    lt: input.timestamp__lt ? (eventTime(input.timestamp__lt) ?? undefined) : undefined,
  };
}

const parse = (event: StoredEvent) => JSON.parse(event.json) as Record<string, unknown> & { kind: string };
