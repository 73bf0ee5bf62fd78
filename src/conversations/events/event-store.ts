// The only code that reads and writes stored conversation events (models/conversation-event.model.ts).
// Every read and write addresses documents by _id: a page of `limit` events reads at most
// ceil(limit / BUCKET_SIZE) + 1 buckets, an unfiltered count reads only the log document.
// Filtered reads (kind, timestamps) walk the buckets from the page position until the page is
// full, so they cost at most the conversation's kept events (EVENTS_MAX_PER_CONVERSATION).
import type { EventLogRecord, Models } from '../../../models/index.js';
import { newVersion, untilApplied } from '../../db/versions.js';
import { isDuplicateKeyError } from '../../errors.js';
import { KeyedQueue } from '../../keyed-queue.js';

/** Events per bucket document; with MAX_EVENT_CHARS a bucket stays far below the 16 MiB document limit. */
export const BUCKET_SIZE = 32;
/** An event whose JSON is longer is kept as a stub (id, kind, timestamp, source, truncated: true). */
export const MAX_EVENT_CHARS = 256 * 1024;
/** Ids of the latest events kept on the log, to recognise a retried webhook batch. */
const RECENT_IDS = 256;
const CLAIM_ATTEMPTS = 8;
/** Ids per read: the embedded build narrows an $in of at most 1000 ids through the _id index. */
const IDS_PER_READ = 1000;

export interface StoredEvent {
  seq: number;
  kind: string;
  timestamp: Date | null;
  json: string;
}

export interface EventFilter {
  kind?: string | undefined;
  gte?: Date | undefined;
  lt?: Date | undefined;
}

interface Slot {
  k: string;
  t: Date | null;
  j: string;
}

export type EventLog = Pick<EventLogRecord, 'userId' | 'next' | 'first'> & { _id: string };

interface RecentId {
  id: string;
  seq: number;
}
type RecentIds = { ids: { id?: string | null; seq?: number | null }[]; version?: string | null };

const bucketId = (conversationId: string, bucket: number) => `${conversationId}:${bucket}`;
const bucketOf = (seq: number) => Math.floor(seq / BUCKET_SIZE);

export class EventStore {
  private readonly appending = new KeyedQueue();

  constructor(
    private readonly models: Models,
    private readonly maxPerConversation: number,
  ) {}

  async log(conversationId: string): Promise<EventLog | null> {
    return this.models.EventLog.findOne({ _id: conversationId }).lean();
  }

  /** Several logs at once, by id (event-feed.ts reads every watched conversation's in one query). */
  async logs(conversationIds: string[]): Promise<Map<string, EventLog>> {
    const found = new Map<string, EventLog>();
    for (let i = 0; i < conversationIds.length; i += IDS_PER_READ) {
      const ids = conversationIds.slice(i, i + IDS_PER_READ);
      for (const log of await this.models.EventLog.find({ _id: { $in: ids } }, { userId: 1, next: 1, first: 1 }).lean()) {
        found.set(log._id, log as EventLog);
      }
    }
    return found;
  }

  /**
   * Appends a webhook batch in order. An event whose id was stored recently is written again
   * to its place (a retried batch, or one whose first write was lost) rather than added twice.
   * Returns how many events were new. The oldest events beyond the cap are dropped.
   */
  async append(userId: string, conversationId: string, events: Record<string, unknown>[]): Promise<number> {
    // One batch of a conversation at a time in this process (keyed-queue.ts), so they do not
    // retry each other's claims; across replicas the conditional claim below keeps numbers unique
    // (atomic on MongoDB, and on FerretDB through the write gate).
    return this.appending.run(conversationId, () => this.appendNow(userId, conversationId, events));
  }

  private async appendNow(userId: string, conversationId: string, events: Record<string, unknown>[]): Promise<number> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const log = await this.openLog(userId, conversationId);
      const recent = await this.models.EventRecent.findOne({ _id: conversationId }).lean();
      const known = new Map((recent?.ids ?? []).flatMap((r) => (r.id && typeof r.seq === 'number' ? [[r.id, r.seq] as const] : [])));
      const writes: { seq: number; slot: Slot }[] = [];
      const added: RecentId[] = [];
      let next = log.next;
      for (const event of events) {
        const id = typeof event.id === 'string' && event.id ? event.id : null;
        let seq = id === null ? undefined : known.get(id);
        if (seq === undefined) {
          seq = next++;
          if (id !== null) {
            known.set(id, seq);
            added.push({ id, seq });
          }
        }
        writes.push({ seq, slot: toSlot(event) });
      }
      const first = Math.max(log.first, next - this.maxPerConversation);
      const claimed = await this.models.EventLog.findOneAndUpdate(
        { _id: conversationId, next: log.next },
        { $set: { next, first, updatedAt: new Date() } },
      );
      if (!claimed) continue; // another batch claimed numbers first: redo with the new log
      await this.rememberIds(conversationId, recent, added);
      await this.writeSlots(
        conversationId,
        writes.filter((w) => w.seq >= first),
      );
      await this.dropBuckets(conversationId, bucketOf(log.first), bucketOf(first));
      return next - log.next;
    }
    throw new Error(`could not append events to conversation ${conversationId}: too many concurrent writers`);
  }

  /** Adds a batch's new ids to the recent list over the version it read; another replica's batch may have added its own meanwhile. */
  private async rememberIds(conversationId: string, read: RecentIds | null, added: RecentId[]): Promise<void> {
    let current = read;
    await untilApplied('The recent event ids', async () => {
      if (added.length === 0) return true;
      const ids = [...(current?.ids ?? []), ...added].slice(-RECENT_IDS);
      try {
        const written = await this.models.EventRecent.updateOne(
          { _id: conversationId, version: current?.version ?? null },
          { $set: { ids, version: newVersion() } },
          { upsert: true },
        );
        if (written.matchedCount > 0 || written.upsertedCount > 0) return true;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error; // else the list exists with another version
      }
      current = await this.models.EventRecent.findOne({ _id: conversationId }).lean();
      return false;
    });
  }

  /**
   * Up to `limit` events from position `from` (a sequence number; null = the oldest, or the
   * newest when descending), and the position of the next page's first event.
   */
  async page(
    log: EventLog,
    from: number | null,
    descending: boolean,
    filter: EventFilter,
    limit: number,
  ): Promise<{ events: StoredEvent[]; next: number | null }> {
    const first = log.first;
    const last = log.next - 1;
    const step = descending ? -1 : 1;
    // A position outside what is kept (or none) starts at the beginning, as the reference does.
    let seq = from !== null && from >= first && from <= last ? from : descending ? last : first;
    const found: StoredEvent[] = [];
    // The first read fetches every bucket an unfiltered page needs at once; a filtered page goes on 4 at a time.
    let batch = Math.ceil((limit + 1) / BUCKET_SIZE) + 1;
    while (seq >= first && seq <= last && found.length <= limit) {
      const buckets: number[] = [];
      for (let b = bucketOf(seq); buckets.length < batch && b >= bucketOf(first) && b <= bucketOf(last); b += step) buckets.push(b);
      const slots = await this.readBuckets(log._id, buckets);
      const edge = buckets.at(-1)!;
      const end = descending ? Math.max(first, edge * BUCKET_SIZE) : Math.min(last, (edge + 1) * BUCKET_SIZE - 1);
      for (; descending ? seq >= end : seq <= end; seq += step) {
        const event = slots.get(seq);
        if (event && matches(event, filter) && found.push(event) > limit) break;
      }
      batch = 4;
    }
    return { events: found.slice(0, limit), next: found.length > limit ? found[limit]!.seq : null };
  }

  /** Unfiltered: from the log alone. Filtered: reads the kept buckets. */
  async count(log: EventLog, filter: EventFilter): Promise<number> {
    if (!filter.kind && !filter.gte && !filter.lt) return log.next - log.first;
    let total = 0;
    for (let b = bucketOf(log.first); b <= bucketOf(log.next - 1); b += 8) {
      const buckets = Array.from({ length: Math.min(8, bucketOf(log.next - 1) - b + 1) }, (_, i) => b + i);
      for (const [seq, stored] of await this.readBuckets(log._id, buckets)) {
        if (seq >= log.first && seq < log.next && matches(stored, filter)) total++;
      }
    }
    return total;
  }

  /** The kept events with these ids (the events' own ids): reads the kept buckets until all are found. */
  async byIds(log: EventLog, ids: string[]): Promise<Map<string, StoredEvent>> {
    const found = new Map<string, StoredEvent>();
    const wanted = new Set(ids);
    for (let b = bucketOf(log.first); b <= bucketOf(log.next - 1) && wanted.size > 0; b += 8) {
      const buckets = Array.from({ length: Math.min(8, bucketOf(log.next - 1) - b + 1) }, (_, i) => b + i);
      for (const [seq, stored] of await this.readBuckets(log._id, buckets)) {
        if (seq < log.first || seq >= log.next) continue;
        // Cheap test on the text first; only candidates are parsed.
        const id = [...wanted].find((w) => stored.json.includes(JSON.stringify(w)));
        if (id === undefined || (JSON.parse(stored.json) as { id?: unknown }).id !== id) continue;
        found.set(id, stored);
        wanted.delete(id);
      }
    }
    return found;
  }

  /** Removes a conversation's events (its deletion, or retention). */
  async remove(conversationId: string): Promise<void> {
    const log = await this.log(conversationId);
    if (!log) return;
    await this.dropBuckets(conversationId, bucketOf(log.first), bucketOf(log.next - 1) + 1);
    await this.models.EventRecent.deleteOne({ _id: conversationId });
    await this.models.EventLog.deleteOne({ _id: conversationId });
  }

  /** Ids of up to `max` conversations whose events were last written before `cutoff`. */
  async staleLogs(cutoff: Date, max: number): Promise<string[]> {
    const logs = await this.models.EventLog.find({ updatedAt: { $lt: cutoff } }, { _id: 1 })
      .limit(max)
      .lean();
    return logs.map((l) => l._id);
  }

  private async openLog(userId: string, conversationId: string): Promise<EventLog> {
    const existing = await this.models.EventLog.findOne({ _id: conversationId }).lean();
    if (existing) {
      if (existing.userId !== userId) throw new Error(`event log ${conversationId} belongs to another user`);
      return existing;
    }
    const now = new Date();
    try {
      await this.models.EventLog.create({ _id: conversationId, userId, next: 0, first: 0, createdAt: now, updatedAt: now });
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error; // a concurrent batch opened it first
    }
    return this.openLog(userId, conversationId);
  }

  private async writeSlots(conversationId: string, writes: { seq: number; slot: Slot }[]): Promise<void> {
    const byBucket = new Map<number, Record<string, Slot>>();
    for (const { seq, slot } of writes) {
      const set = byBucket.get(bucketOf(seq)) ?? {};
      set[`e.s${seq % BUCKET_SIZE}`] = slot;
      byBucket.set(bucketOf(seq), set);
    }
    const write = (bucket: number, set: Record<string, Slot>) =>
      this.models.EventBucket.updateOne({ _id: bucketId(conversationId, bucket) }, { $set: set }, { upsert: true });
    await Promise.all(
      // Two batches creating the same bucket at once: the loser's insert collides, and its retry updates.
      [...byBucket].map(([bucket, set]) =>
        write(bucket, set).catch((error: unknown) => (isDuplicateKeyError(error) ? write(bucket, set) : Promise.reject(error))),
      ),
    );
  }

  private async readBuckets(conversationId: string, buckets: number[]): Promise<Map<number, StoredEvent>> {
    // One read by _id for all of them (the embedded build narrows an $in of ids through the index).
    const ids = buckets.map((b) => bucketId(conversationId, b));
    const docs = buckets.length === 0 ? [] : await this.models.EventBucket.find({ _id: { $in: ids } }).lean();
    const byId = new Map(docs.map((doc) => [String(doc._id), doc]));
    const result = new Map<number, StoredEvent>();
    buckets.forEach((bucket, i) => {
      for (const [key, slot] of Object.entries((byId.get(ids[i]!)?.e ?? {}) as Record<string, Slot>)) {
        const seq = bucket * BUCKET_SIZE + Number(key.slice(1));
        result.set(seq, { seq, kind: slot.k, timestamp: slot.t ? new Date(slot.t) : null, json: slot.j });
      }
    });
    return result;
  }

  /** Deletes the buckets numbered from..to-1. */
  private async dropBuckets(conversationId: string, from: number, to: number): Promise<void> {
    for (let b = from; b < to; b += 100) {
      const ids = Array.from({ length: Math.min(100, to - b) }, (_, i) => bucketId(conversationId, b + i));
      await this.models.EventBucket.deleteMany({ _id: { $in: ids } });
    }
  }
}

function toSlot(event: Record<string, unknown>): Slot {
  const kind = typeof event.kind === 'string' ? event.kind : 'Event';
  let json = JSON.stringify(event);
  if (json.length > MAX_EVENT_CHARS) {
    json = JSON.stringify({
      id: event.id ?? null,
      timestamp: event.timestamp ?? null,
      source: event.source ?? null,
      kind,
      truncated: true,
    });
  }
  return { k: kind, t: eventTime(event.timestamp), j: json };
}

/** Agent-server event timestamps carry no zone (its local time, UTC in our sandboxes): read them as UTC. */
export function eventTime(value: unknown): Date | null {
  if (typeof value !== 'string' || !value) return null;
  const zoned = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`;
  const time = new Date(zoned);
  return Number.isNaN(time.getTime()) ? null : time;
}

function matches(event: StoredEvent, filter: EventFilter): boolean {
  if (filter.kind && event.kind !== filter.kind) return false;
  if (filter.gte && !(event.timestamp && event.timestamp >= filter.gte)) return false;
  if (filter.lt && !(event.timestamp && event.timestamp < filter.lt)) return false;
  return true;
}
