// A durable work queue over leased records. A record is claimed with a lease (an atomic
// update in the store), the lease is renewed while the worker runs, and on stop the leases
// of unfinished work are handed back so another replica takes it over at once. If this
// process dies, the lease expires and any replica claims the record again. The queue knows
// nothing of what the records are: the store claims them and the worker does the work.
// With a share, the workers are shared fairly between keys (users): a key holds at most
// `share.max` of this replica's workers at once, and keys with work waiting are served in turn
// (round-robin), so one key's backlog neither fills the workers nor goes first.
import crypto from 'node:crypto';
import os from 'node:os';
import type { Logger } from '../logger.js';

export interface LeaseStore<T extends { _id: string }> {
  /** Claims one record that is due, oldest first, whose key is not in `passOver`; or null. */
  claim(owner: string, leaseMs: number, passOver: readonly string[]): Promise<T | null>;
  renew(id: string, owner: string, leaseMs: number): Promise<void>;
  release(ids: string[], owner: string): Promise<void>;
}

export interface LeaseQueueOptions<T extends { _id: string }> {
  store: LeaseStore<T>;
  /** Does the work. Writes that need the lease must check it and throw LeaseLost when it is gone. */
  worker: (item: T, owner: string) => Promise<void>;
  leaseMs: number;
  pollMs: number;
  maxConcurrent: number;
  log: Logger;
  /** Whose work an item is (a user), and how many of this queue's workers one key may hold at once. */
  share?: { keyOf: (item: T) => string; max: number };
}

const MAX_BACKOFF_MS = 10_000;
/** Keys one round remembers at most (more: the round starts over; fairness degrades to age order, nothing is lost). */
const MAX_ROUND = 256;
/** How long stop() waits for a claim under way. */
const STOP_WAIT_MS = 2_000;

/**
 * Thrown by a worker whose lease another worker has taken over (that worker finishes the
 * job), or that cannot record its work right now (the lease lapses and the job is redone).
 */
export class LeaseLost extends Error {}

export class LeaseQueue<T extends { _id: string }> {
  /** This process's name on the leases it holds. */
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
  private readonly active = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private polling = false;
  /** The poll under way, if any: stop() waits for it, so a claim it lands is handed back too. */
  private pollRun: Promise<void> | undefined;
  /** Work was added while a poll was under way (whose claim may have read before it): poll again at once. */
  private kickedWhilePolling = false;
  private failedPolls = 0;
  /** Items each key holds here now (with a share). */
  private readonly held = new Map<string, number>();
  /** Keys served since the round began: passed over while other keys have work due. */
  private readonly round = new Set<string>();

  constructor(private readonly options: LeaseQueueOptions<T>) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Look for work now (called when work is added). */
  kick(): void {
    if (this.stopped) return;
    if (this.polling) this.kickedWhilePolling = true;
    else this.schedule(0);
  }

  /** Stops claiming and hands the leases of unfinished work back for another replica. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // A claim that lands after this point would hold its lease until it lapses (a whole lease:
    // 20 s for a webhook lane by default) while no replica may take the work. Bounded: a
    // stalled database must not hold the shutdown.
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.pollRun, new Promise((resolve) => (bound = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(bound);
    if (this.active.size === 0) return;
    // Without a database the leases simply lapse; shutting down must not wait for it.
    await this.options.store
      .release([...this.active], this.owner)
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'handing leases back failed; they lapse instead'));
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void (this.pollRun = this.poll()), delayMs);
  }

  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    let delayMs = this.options.pollMs;
    try {
      while (!this.stopped && this.active.size < this.options.maxConcurrent) {
        const item = await this.claimNext();
        if (!item) break;
        if (this.stopped) {
          // Claimed while stopping: handed back now, not run.
          await this.options.store
            .release([item._id], this.owner)
            .catch((error: unknown) => this.options.log.warn({ err: error }, 'handing a lease back failed; it lapses instead'));
          break;
        }
        this.active.add(item._id);
        const key = this.options.share?.keyOf(item);
        if (key !== undefined) this.hold(key, +1);
        void this.run(item).finally(() => {
          this.active.delete(item._id);
          if (key !== undefined) this.hold(key, -1);
        });
      }
      if (this.failedPolls > 0) this.options.log.info({ failedPolls: this.failedPolls }, 'claiming work again');
      this.failedPolls = 0;
    } catch (error) {
      // The store is unreachable (e.g. a database outage): back off, log the first failure
      // only, and keep polling so the queue resumes by itself.
      if (this.failedPolls === 0) this.options.log.warn({ err: error }, 'claiming work failed; retrying with backoff');
      this.failedPolls++;
      delayMs = Math.min(this.options.pollMs * 2 ** this.failedPolls, MAX_BACKOFF_MS);
    } finally {
      this.polling = false;
      if (this.kickedWhilePolling && this.failedPolls === 0) delayMs = 0;
      this.kickedWhilePolling = false;
      if (!this.stopped) this.schedule(delayMs);
    }
  }

  /**
   * The next item in turn. Keys holding their share are passed over, and so are keys already
   * served this round; when only those have work due, the round starts over. Without a share,
   * simply the oldest due item.
   */
  private async claimNext(): Promise<T | null> {
    const { store, share, leaseMs } = this.options;
    if (!share) return store.claim(this.owner, leaseMs, []);
    const full = [...this.held].filter(([, count]) => count >= share.max).map(([key]) => key);
    if (this.round.size > 0) {
      const item = await store.claim(this.owner, leaseMs, [...new Set([...full, ...this.round])]);
      if (item) return this.served(share.keyOf(item), item);
      this.round.clear();
    }
    const item = await store.claim(this.owner, leaseMs, full);
    return item && this.served(share.keyOf(item), item);
  }

  private served(key: string, item: T): T {
    if (this.round.size >= MAX_ROUND) this.round.clear();
    this.round.add(key);
    return item;
  }

  private hold(key: string, change: 1 | -1): void {
    const count = (this.held.get(key) ?? 0) + change;
    if (count > 0) this.held.set(key, count);
    else this.held.delete(key);
  }

  private async run(item: T): Promise<void> {
    const { store, leaseMs, log } = this.options;
    const renew = () =>
      store
        .renew(item._id, this.owner, leaseMs)
        .catch((error: unknown) => log.warn({ err: error, id: item._id }, 'renewing a lease failed'));
    const heartbeat = setInterval(() => void renew(), Math.max(250, leaseMs / 3));
    try {
      await this.options.worker(item, this.owner);
    } catch (error) {
      if (error instanceof LeaseLost) log.warn({ id: item._id, why: error.message || 'another worker owns it now' }, 'gave up a lease');
      else log.error({ err: error, id: item._id }, 'worker failed');
    } finally {
      clearInterval(heartbeat);
    }
  }
}
