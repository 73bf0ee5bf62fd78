// The event feed (src/conversations/events/event-feed.ts) with a reader that does not keep up:
// what it holds for that reader stays bounded (MAX_QUEUED) however far behind it is, the store is
// read again on the ticks rather than in a loop, and once the reader takes its events it gets
// every one, in order, once.
import { describe, expect, it } from 'vitest';
import { EventFeed, MAX_QUEUED } from '../../src/conversations/events/event-feed.js';
import type { EventLog, StoredEvent } from '../../src/conversations/events/event-store.js';

const TOTAL = 3 * MAX_QUEUED + 17;

function store() {
  const events: StoredEvent[] = Array.from({ length: TOTAL }, (_, seq) => ({
    seq,
    kind: 'MessageEvent',
    timestamp: null,
    json: `{"n":${seq}}`,
  }));
  const log = { _id: 'c', userId: 'u', first: 0, next: TOTAL } as unknown as EventLog;
  let pages = 0;
  return {
    pages: () => pages,
    logs: async (ids: string[]) => new Map(ids.includes('c') ? [['c', log]] : []),
    page: async (_log: EventLog, from: number | null, _descending: boolean, _filter: object, limit: number) => {
      pages++;
      const start = from ?? 0;
      return { events: events.slice(start, start + limit), next: start + limit < TOTAL ? start + limit : null };
    },
  };
}

describe('the event feed and a slow reader', () => {
  it('holds at most MAX_QUEUED events for it, reads again on the ticks, and delivers every event once in order', async () => {
    const events = store();
    const feed = new EventFeed(events as never, 20);
    const abort = new AbortController();
    const reader = feed.watch('c', null, abort.signal);
    const seen: number[] = [];
    // Started, then left alone for a while: the reader takes one event and nothing more.
    seen.push((await reader.next()).value!.seq);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(feed.held()).toBeLessThanOrEqual(MAX_QUEUED);
    expect(feed.held()).toBeGreaterThan(MAX_QUEUED - 10);
    // Read on the ticks (every 20 ms), not in a loop while the reader is full.
    const pagesWhileFull = events.pages();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(events.pages() - pagesWhileFull).toBeLessThan(20);
    // Taking them now: all of them, in order, once.
    while (seen.length < TOTAL) seen.push((await reader.next()).value!.seq);
    expect(seen).toEqual(Array.from({ length: TOTAL }, (_, i) => i));
    abort.abort();
    await reader.return(undefined);
    expect(feed.held()).toBe(0);
  });
});
