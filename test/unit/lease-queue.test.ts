// The lease queue's wake-up (src/db/lease-queue.ts): work added while a poll is under
// way is claimed at once, not at the next poll (a start waited a whole START_TASK_POLL_MS for
// its claim when its kick came during a poll whose claim had already read the queue).
import { describe, expect, it } from 'vitest';
import { LeaseQueue, type LeaseStore } from '../../src/db/lease-queue.js';
import { createLogger } from '../../src/logger.js';
import { eventually } from '../helpers/eventually.js';

describe('the lease queue', () => {
  it('claims work added during a poll at once, not a poll interval later', async () => {
    const due: { _id: string }[] = [];
    const claimed: { id: string }[] = [];
    let releaseSlowClaim: (() => void) | undefined;
    let claims = 0;
    const store: LeaseStore<{ _id: string }> = {
      claim: async () => {
        claims++;
        // The first claim reads the queue (empty), then takes its time answering.
        if (claims === 1) {
          const seen = due.shift() ?? null;
          await new Promise<void>((resolve) => (releaseSlowClaim = resolve));
          return seen;
        }
        return due.shift() ?? null;
      },
      renew: async () => {},
      release: async () => {},
    };
    const queue = new LeaseQueue({
      store,
      worker: async (item) => void claimed.push({ id: item._id }),
      leaseMs: 60_000,
      pollMs: 60_000,
      maxConcurrent: 4,
      log: createLogger('silent', process.stderr),
    });
    queue.start();
    for (let i = 0; i < 100 && claims === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(claims).toBe(1);
    // Work arrives while that claim is under way; its kick finds the queue polling.
    due.push({ _id: 'task-1' });
    queue.kick();
    releaseSlowClaim!();
    // Long before the next poll (a minute): a dropped kick leaves it unclaimed here.
    await eventually('the task claimed', async () => claimed.length > 0, 5_000).catch(() => {});
    await queue.stop();
    expect(claimed.map((c) => c.id)).toEqual(['task-1']);
  });
});

describe('the lease queue stopping', () => {
  it('hands back, without running it, work whose claim was under way when it stopped', async () => {
    let answerClaim: ((item: { _id: string } | null) => void) | undefined;
    const released: string[] = [];
    const ran: string[] = [];
    const store: LeaseStore<{ _id: string }> = {
      claim: () => new Promise((resolve) => (answerClaim = resolve)),
      renew: async () => {},
      release: async (ids) => void released.push(...ids),
    };
    const queue = new LeaseQueue({
      store,
      worker: async (item) => void ran.push(item._id),
      leaseMs: 60_000,
      pollMs: 60_000,
      maxConcurrent: 4,
      log: createLogger('silent', process.stderr),
    });
    queue.start();
    await eventually('a claim under way', async () => answerClaim !== undefined);
    const stopped = queue.stop();
    // The claim lands (the lease is written) after stop() began.
    answerClaim!({ _id: 'lane-1' });
    await stopped;
    expect(released).toEqual(['lane-1']);
    expect(ran).toEqual([]);
  });
});
