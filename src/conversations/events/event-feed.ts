// A conversation's events as they are stored, pushed to subscribers (the tRPC subscription
// events.watch; issue 40's live view). One loop per replica reads the logs of every watched
// conversation in one query (by _id) and pushes what is new to each subscriber in order: events
// stored on this replica wake it at once, events stored on another replica (the agent server's
// webhook went there) within POLL_MS. A position claimed but not yet written (event-store.ts: a
// batch claims its positions first) holds the subscriber there until it is written, so no
// subscriber ever misses or repeats an event; one resuming from a position (a reconnect's last
// event id) gets exactly what came after it, on any replica. Events past the kept cap are gone:
// a subscriber that far behind goes on from the oldest kept.
import type { EventLog, EventStore, StoredEvent } from './event-store.js';

// 20 ms: across replicas p50 39 ms with 1,000 subscribers, at 6-7 % of a core idle (was 100 ms: p50 141 ms; docs/performance.md).
const POLL_MS = 20;
/** Events read per conversation and round (a subscriber far behind catches up over several rounds). */
const READ_LIMIT = 200;
/**
 * Events held for one subscriber that reads slowly (its socket full): past this, the rest is read
 * again from the store once it has taken some, so a slow reader costs bounded memory, not a copy
 * of the conversation.
 */
export const MAX_QUEUED = 500;

interface Watcher {
  /** The next position to deliver; null until the first round places it at the oldest kept. */
  next: number | null;
  queue: StoredEvent[];
  wake: (() => void) | null;
}

export class EventFeed {
  private readonly watched = new Map<string, Set<Watcher>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly store: Pick<EventStore, 'logs' | 'page'>,
    private readonly pollMs = POLL_MS,
  ) {}

  /** Events held for subscribers that have not taken them yet, over all watched conversations (at most MAX_QUEUED each). */
  held(): number {
    let held = 0;
    for (const watchers of this.watched.values()) for (const w of watchers) held += w.queue.length;
    return held;
  }

  /** This replica stored events of the conversation: a round now rather than at the next tick. */
  stored(conversationId: string): void {
    if (this.watched.has(conversationId)) this.round();
  }

  /** The conversation's events after position `after` (null: all it keeps), then each as it is stored, until `signal` aborts. */
  async *watch(conversationId: string, after: number | null, signal?: AbortSignal): AsyncGenerator<StoredEvent> {
    const watcher: Watcher = { next: after === null ? null : after + 1, queue: [], wake: null };
    const watchers = this.watched.get(conversationId) ?? new Set<Watcher>();
    watchers.add(watcher);
    this.watched.set(conversationId, watchers);
    const stop = () => watcher.wake?.();
    signal?.addEventListener('abort', stop, { once: true });
    this.round();
    try {
      for (;;) {
        while (watcher.queue.length > 0) yield watcher.queue.shift()!;
        if (signal?.aborted) return;
        await new Promise<void>((resolve) => (watcher.wake = resolve));
        watcher.wake = null;
      }
    } finally {
      signal?.removeEventListener('abort', stop);
      watchers.delete(watcher);
      if (watchers.size === 0) this.watched.delete(conversationId);
    }
  }

  /** Runs a round now (or right after the one under way), then keeps ticking while anyone watches. */
  private round(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.deliver()
      .catch(() => {}) // a failed read (an outage) is retried at the next tick
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.round();
        } else if (this.watched.size > 0) this.timer = setTimeout(() => this.round(), this.pollMs).unref();
      });
  }

  private async deliver(): Promise<void> {
    const ids = [...this.watched.keys()];
    if (ids.length === 0) return;
    const logs = await this.store.logs(ids);
    await Promise.all(
      ids.map(async (id) => {
        const log = logs.get(id);
        const watchers = this.watched.get(id);
        if (log && watchers) await this.deliverTo(log, [...watchers]);
      }),
    );
  }

  private async deliverTo(log: EventLog, watchers: Watcher[]): Promise<void> {
    for (const w of watchers) if (w.next === null || w.next < log.first) w.next = log.first;
    const from = Math.min(...watchers.map((w) => w.next!));
    if (from >= log.next) return;
    const { events } = await this.store.page(log, from, false, {}, READ_LIMIT);
    let tookAll = false;
    for (const w of watchers) {
      let expected = w.next!;
      for (const event of events) {
        if (event.seq < expected) continue;
        if (event.seq !== expected) break; // claimed, not yet written: wait for it
        if (w.queue.length >= MAX_QUEUED) break; // a slow reader: read again once it has taken some
        w.queue.push(event);
        expected++;
      }
      if (expected === (events.at(-1)?.seq ?? -1) + 1) tookAll = true;
      if (expected !== w.next) {
        w.next = expected;
        w.wake?.();
      }
    }
    // More than one read's worth waiting for a reader that took it all: go on at once (the slow
    // ones are read for again at the next tick, not in a loop).
    if (events.length === READ_LIMIT && tookAll) this.again = true;
  }
}
