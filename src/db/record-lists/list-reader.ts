// Reading the embedded layout's lists (list-buckets.ts) without a lock: the directory is read
// fresh, each bucket is accepted only when its stamp is the one the directory names (else a
// write is under way: StaleRead, and the caller reads again), and a bucket already seen with
// that stamp comes from a process-wide cache. Walks and counts skip whole buckets by the
// directory's counts where no filter needs their entries.
import type { Collection } from 'mongodb';
import { compareKeys, decodeDir, emptyDir, locate, type BucketRef, type Entry, type ListDir, type ListKey } from './list-buckets.js';

export interface ListDoc {
  _id: string;
  j: string;
  s?: number | null;
}

/** A bucket changed between the directory's read and its own: read again. */
export class StaleRead extends Error {
  constructor(listId: string) {
    super(`the list ${listId} changed while it was read`);
  }
}

export const bucketDocId = (listId: string, b: number) => `${listId}#${b}`;

/** Buckets by document id and stamp, least recently used dropped first beyond `maxEntries` entries in all. */
export class BucketCache {
  private readonly buckets = new Map<string, { s: number; entries: Entry[] }>();
  private entries = 0;

  constructor(private readonly maxEntries: number) {}

  get(id: string, stamp: number): Entry[] | null {
    const hit = this.buckets.get(id);
    if (!hit || hit.s !== stamp) return null;
    this.buckets.delete(id);
    this.buckets.set(id, hit);
    return hit.entries;
  }

  set(id: string, stamp: number, entries: Entry[]): void {
    this.drop(id);
    if (entries.length > this.maxEntries) return;
    this.buckets.set(id, { s: stamp, entries });
    this.entries += entries.length;
    for (const [oldest, bucket] of this.buckets) {
      if (this.entries <= this.maxEntries) break;
      this.buckets.delete(oldest);
      this.entries -= bucket.entries.length;
    }
  }

  drop(id: string): void {
    const old = this.buckets.get(id);
    if (!old) return;
    this.buckets.delete(id);
    this.entries -= old.entries.length;
  }
}

export class ListReader {
  constructor(
    readonly docs: Collection<ListDoc>,
    readonly cache: BucketCache,
  ) {}

  async dir(listId: string): Promise<ListDir> {
    const doc = await this.docs.findOne({ _id: listId });
    return doc ? decodeDir(doc.j) : emptyDir();
  }

  async bucket(listId: string, ref: BucketRef): Promise<Entry[]> {
    const id = bucketDocId(listId, ref.b);
    const cached = this.cache.get(id, ref.s);
    if (cached) return cached;
    const doc = await this.docs.findOne({ _id: id });
    if (!doc || doc.s !== ref.s) throw new StaleRead(listId);
    const entries = JSON.parse(doc.j) as Entry[];
    this.cache.set(id, ref.s, entries);
    return entries;
  }
}

export interface ListRange {
  /** Keys from (inclusive) and below (exclusive). */
  gte?: ListKey | undefined;
  lt?: ListKey | undefined;
}

export interface WalkOptions extends ListRange {
  descending: boolean;
  /** Matching entries to pass over first, then how many to return. */
  offset: number;
  limit: number;
  /** Only entries `isMarked` holds for (the directory counts them, so skipping them needs no read). */
  marked: boolean;
  match?: ((entry: Entry) => boolean) | undefined;
}

interface Visit {
  ref: BucketRef;
  /** Every entry of the bucket is within the range. */
  inside: boolean;
}

/** The buckets that may hold entries of the range, in walking order. */
function* buckets(dir: ListDir, range: ListRange, descending: boolean): Generator<Visit> {
  const refs = dir.refs;
  if (refs.length === 0) return;
  const at = (key: ListKey | undefined) => (key === undefined ? -1 : Math.max(0, locate(refs, [key, ''])));
  const first = range.gte === undefined ? 0 : at(range.gte);
  const last = range.lt === undefined ? refs.length - 1 : at(range.lt);
  for (let n = 0; n <= last - first; n++) {
    const j = descending ? last - n : first + n;
    const ref = refs[j]!;
    const after = refs[j + 1];
    const lowInside = range.gte === undefined || compareKeys(ref.k, range.gte) >= 0;
    const highInside = range.lt === undefined || (after !== undefined && compareKeys(after.k, range.lt) < 0);
    yield { ref, inside: lowInside && highInside };
  }
}

const inRange = (key: ListKey, range: ListRange) =>
  (range.gte === undefined || compareKeys(key, range.gte) >= 0) && (range.lt === undefined || compareKeys(key, range.lt) < 0);

/** Up to `limit` entries after `offset` matching ones, in the list's order or its reverse. */
export async function walk(reader: ListReader, listId: string, isMarked: (e: Entry) => boolean, o: WalkOptions): Promise<Entry[]> {
  const dir = await reader.dir(listId);
  let skip = o.offset;
  const found: Entry[] = [];
  for (const { ref, inside } of buckets(dir, o, o.descending)) {
    if (inside && !o.match) {
      const count = o.marked ? ref.m : ref.n;
      if (skip >= count) {
        skip -= count;
        continue;
      }
    }
    const entries = await reader.bucket(listId, ref);
    for (let n = 0; n < entries.length; n++) {
      const entry = entries[o.descending ? entries.length - 1 - n : n]!;
      if (!inRange(entry[0], o) || (o.marked && !isMarked(entry)) || (o.match && !o.match(entry))) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      found.push(entry);
      if (found.length >= o.limit) return found;
    }
  }
  return found;
}

/** How many entries match; whole buckets are counted from the directory where nothing else needs their entries. */
export async function count(
  reader: ListReader,
  listId: string,
  isMarked: (e: Entry) => boolean,
  o: ListRange & { marked: boolean; match?: ((entry: Entry) => boolean) | undefined },
): Promise<number> {
  const dir = await reader.dir(listId);
  let total = 0;
  for (const { ref, inside } of buckets(dir, o, false)) {
    if (inside && !o.match) {
      total += o.marked ? ref.m : ref.n;
      continue;
    }
    for (const entry of await reader.bucket(listId, ref)) {
      if (inRange(entry[0], o) && (!o.marked || isMarked(entry)) && (!o.match || o.match(entry))) total++;
    }
  }
  return total;
}

/** Every entry of the range that matches, in the list's order. */
export async function collect(
  reader: ListReader,
  listId: string,
  o: ListRange & { match?: ((entry: Entry) => boolean) | undefined },
): Promise<Entry[]> {
  return walk(reader, listId, () => true, { ...o, descending: false, offset: 0, limit: Infinity, marked: false });
}
