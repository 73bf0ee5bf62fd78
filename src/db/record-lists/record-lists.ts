// See docs/decisions/0010-record-lists-on-the-embedded-ferretdb.md (why, the invariants, when to delete).
// The embedded layout's documents (record_lists): sorted lists in bucket documents
// (list-buckets.ts, read by list-reader.ts), groups of record ids, and one intent per lane.
// Every read and write names one document by _id, the one lookup FerretDB narrows.
//
// Writes happen only inside an exclusive section of the records' lane (listed-table.ts), so
// no two writers touch a list at once, in any process. A section first records its intent
// (the record id and the record's facts before the write) and clears it at the end; a
// section that finds an intent left open (its writer died or failed midway) re-derives that
// record's entries from the record as it is, and rebuilds a list whose buckets and directory
// disagree from the union of its buckets (heal): a change never removes an entry from one
// bucket before the bucket that receives it is written, so the union holds every entry.
import type { Collection } from 'mongodb';
import { BUCKET_CAPACITY, compareEntries, encodeDir, locate, planChange, type Entry, type ListDir } from './list-buckets.js';
import { bucketDocId, ListReader, StaleRead, type BucketCache, type ListDoc } from './list-reader.js';

/** How often a reader reads again while writes are under way, before it asks for a heal. */
const READ_ATTEMPTS = 12;
/** Bucket numbers past the directory's `next` a heal looks at (a split writes at most two before the directory). */
const ORPHAN_PROBES = 3;

export interface Intent {
  id: string;
  /** The record's facts before the write (null: an insert). */
  before: Record<string, unknown> | null;
}

const intentId = (lane: string) => `~intent|${lane}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class RecordLists {
  readonly reader: ListReader;

  constructor(
    private readonly docs: Collection<ListDoc>,
    cache: BucketCache,
  ) {
    this.reader = new ListReader(docs, cache);
  }

  /** Runs a read of the list again while a write is under way; past READ_ATTEMPTS, `heal` runs first (a writer may have died). */
  async consistent<T>(read: () => Promise<T>, heal: () => Promise<void>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        if (!(error instanceof StaleRead)) throw error;
        if (attempt === READ_ATTEMPTS) await heal();
        if (attempt > READ_ATTEMPTS) throw error;
        await sleep(Math.min(2 ** attempt, 16) * (0.5 + Math.random()));
      }
    }
  }

  /** Removes and adds entries of one list (the caller holds the lane). */
  async change(listId: string, removals: Entry[], additions: Entry[], marked: (e: Entry) => boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.changeNow(listId, removals, additions, marked);
      } catch (error) {
        if (!(error instanceof StaleRead) || attempt > 0) throw error;
        await this.heal(listId, marked, true);
      }
    }
  }

  private async changeNow(listId: string, removals: Entry[], additions: Entry[], marked: (e: Entry) => boolean): Promise<void> {
    const dir = await this.reader.dir(listId);
    const loaded = new Map<number, Entry[]>();
    for (const entry of [...removals, ...additions]) {
      const ref = dir.refs[locate(dir.refs, entry)];
      if (ref && !loaded.has(ref.b)) loaded.set(ref.b, await this.reader.bucket(listId, ref));
    }
    const plan = planChange(dir, loaded, removals, additions, marked);
    if (!plan) return;
    for (const { b, entries } of plan.gains) await this.writeBucket(listId, b, plan.dir.v, entries);
    await this.writeDir(listId, plan.dir);
    for (const { b, entries } of plan.losses) await this.writeBucket(listId, b, plan.dir.v, entries);
    for (const b of plan.deletes) await this.dropBucket(listId, b);
  }

  /**
   * Rebuilds the list from the union of its buckets when they and the directory disagree (a
   * writer stopped midway), or always with `force`. True when it rebuilt.
   */
  async heal(listId: string, marked: (e: Entry) => boolean, force = false): Promise<boolean> {
    const dir = await this.reader.dir(listId);
    const numbers = [...dir.refs.map((r) => r.b), ...Array.from({ length: ORPHAN_PROBES }, (_, i) => dir.next + i)];
    const docs = await Promise.all(numbers.map((b) => this.docs.findOne({ _id: bucketDocId(listId, b) })));
    const intact = dir.refs.every((ref, i) => docs[i]?.s === ref.s) && docs.slice(dir.refs.length).every((d) => !d);
    if (intact && !force) return false;
    const unique = new Map<string, Entry>();
    for (const doc of docs)
      for (const entry of doc ? (JSON.parse(doc.j) as Entry[]) : []) unique.set(JSON.stringify([entry[0], entry[1]]), entry);
    await this.write(listId, [...unique.values()].sort(compareEntries), marked, dir.v + 1, dir.next + ORPHAN_PROBES);
    for (const b of numbers) await this.dropBucket(listId, b);
    return true;
  }

  /**
   * Writes a whole list from sorted entries, in half-full buckets numbered from `first` (the
   * rebuild of a migration, a heal, the bench's seeding), then its directory.
   */
  async write(listId: string, entries: Entry[], marked: (e: Entry) => boolean, version = 1, first = 0): Promise<void> {
    const size = BUCKET_CAPACITY / 2;
    const dir: ListDir = { v: version, next: first, refs: [] };
    for (let from = 0; from < entries.length; from += size) {
      const chunk = entries.slice(from, from + size);
      const b = dir.next++;
      await this.writeBucket(listId, b, version, chunk);
      dir.refs.push({ b, n: chunk.length, m: chunk.filter(marked).length, k: chunk[0]![0], i: chunk[0]![1], s: version });
    }
    await this.writeDir(listId, dir);
  }

  async members(group: string): Promise<string[]> {
    const doc = await this.docs.findOne({ _id: group });
    return doc ? (JSON.parse(doc.j) as string[]) : [];
  }

  /** Adds and removes ids of a group (the caller holds the lane). */
  async regroup(group: string, remove: string[], add: string[]): Promise<void> {
    const current = await this.members(group);
    const next = [...new Set([...current.filter((id) => !remove.includes(id)), ...add])].sort();
    if (next.length === current.length && next.every((id, i) => id === current[i])) return;
    if (next.length === 0) await this.docs.deleteOne({ _id: group });
    else await this.docs.replaceOne({ _id: group }, { j: JSON.stringify(next) }, { upsert: true });
  }

  async openIntent(lane: string, intent: Intent): Promise<void> {
    await this.docs.replaceOne({ _id: intentId(lane) }, { j: JSON.stringify(intent) }, { upsert: true });
  }

  async closeIntent(lane: string): Promise<void> {
    await this.docs.deleteOne({ _id: intentId(lane) });
  }

  async openedIntent(lane: string): Promise<Intent | null> {
    const doc = await this.docs.findOne({ _id: intentId(lane) });
    return doc ? (JSON.parse(doc.j) as Intent) : null;
  }

  private async writeBucket(listId: string, b: number, stamp: number, entries: Entry[]): Promise<void> {
    const id = bucketDocId(listId, b);
    this.reader.cache.drop(id);
    await this.docs.replaceOne({ _id: id }, { j: JSON.stringify(entries), s: stamp }, { upsert: true });
    this.reader.cache.set(id, stamp, entries);
  }

  private async writeDir(listId: string, dir: ListDir): Promise<void> {
    await this.docs.replaceOne({ _id: listId }, { j: encodeDir(dir) }, { upsert: true });
  }

  private async dropBucket(listId: string, b: number): Promise<void> {
    const id = bucketDocId(listId, b);
    this.reader.cache.drop(id);
    await this.docs.deleteOne({ _id: id });
  }
}
