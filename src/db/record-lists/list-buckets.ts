// The shape of one sorted list of the embedded layout (record-lists.ts), without the database:
// entries are [sort key, record id, ...facts], kept in (key, id) order across bucket documents
// of at most BUCKET_CAPACITY entries; a directory names the buckets in order with each one's
// first entry, its counts and its stamp. planChange computes what a change writes, in an
// order that never leaves an entry in no bucket: buckets that gain entries first, then the
// directory, then buckets that only lose entries, then the emptied ones are deleted.

export type ListKey = number | string | null;
export type Entry = [ListKey, string, ...unknown[]];

/** Entries per bucket document before it splits (a bucket of conversation entries is about 30 KB of JSON). */
export const BUCKET_CAPACITY = 256;

export interface BucketRef {
  /** The bucket's number (its document is `<list id>#<b>`). */
  b: number;
  /** Its entries, and those of them `marked` counts (e.g. top-level conversations). */
  n: number;
  m: number;
  /** Its first entry's key and id. */
  k: ListKey;
  i: string;
  /** The directory version that last wrote it: a reader holding this directory accepts only that bucket. */
  s: number;
}

export interface ListDir {
  v: number;
  next: number;
  refs: BucketRef[];
}

export const emptyDir = (): ListDir => ({ v: 0, next: 0, refs: [] });

/** Orders strings by code point, as MongoDB's binary comparison of UTF-8 does (JS's < compares UTF-16 units). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (U+D800–DFFF) stands for a code point above U+FFFF: it sorts after U+E000–FFFF.
    const surrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
    if (surrogate(x) !== surrogate(y)) return surrogate(x) ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** null first, then numbers, then strings (MongoDB's order of these types). */
export function compareKeys(a: ListKey, b: ListKey): number {
  if (a === b) return 0;
  if (a === null || b === null) return a === null ? -1 : 1;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : 1;
  if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;
  return compareStrings(a as string, b as string);
}

export function compareEntries(a: Entry, b: Entry): number {
  return compareKeys(a[0], b[0]) || compareStrings(a[1], b[1]);
}

export const sameEntry = (a: Entry, b: Entry) => JSON.stringify(a) === JSON.stringify(b);

/** Where (key, id) is or would be in a sorted array: its index, and whether it is there. */
export function search(entries: Entry[], probe: Entry): { at: number; found: boolean } {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareEntries(entries[mid]!, probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return { at: lo, found: lo < entries.length && compareEntries(entries[lo]!, probe) === 0 };
}

/** The index of the ref whose bucket holds (or would hold) `probe`; -1 when there is no bucket. */
export function locate(refs: BucketRef[], probe: Entry): number {
  let lo = 0;
  let hi = refs.length - 1;
  let found = 0;
  if (hi < 0) return -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const ref = refs[mid]!;
    if (compareKeys(ref.k, probe[0]) < 0 || (compareKeys(ref.k, probe[0]) === 0 && compareStrings(ref.i, probe[1]) <= 0)) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

export const encodeDir = (dir: ListDir) => JSON.stringify([dir.v, dir.next, dir.refs.map((r) => [r.b, r.n, r.m, r.k, r.i, r.s])]);

export function decodeDir(json: string): ListDir {
  const [v, next, refs] = JSON.parse(json) as [number, number, [number, number, number, ListKey, string, number][]];
  return { v, next, refs: refs.map(([b, n, m, k, i, s]) => ({ b, n, m, k, i, s })) };
}

export interface ChangePlan {
  dir: ListDir;
  /** Buckets to write before the directory (they gain entries, or are new). */
  gains: { b: number; entries: Entry[] }[];
  /** Buckets to write after it (they only lose entries). */
  losses: { b: number; entries: Entry[] }[];
  /** Buckets to delete last (emptied). */
  deletes: number[];
}

/**
 * The change that removes `removals` (matched by key and id) and adds `additions` (replacing
 * an entry of the same key and id). `loaded` holds the current entries of every bucket these
 * entries locate to. Null when nothing would change.
 */
export function planChange(
  dir: ListDir,
  loaded: Map<number, Entry[]>,
  removals: Entry[],
  additions: Entry[],
  marked: (entry: Entry) => boolean,
  capacity = BUCKET_CAPACITY,
): ChangePlan | null {
  const v = dir.v + 1;
  let next = dir.next;
  const refs = dir.refs.map((r) => ({ ...r }));
  const work = new Map<number, Entry[]>();
  const changed = new Set<number>();
  const gained = new Set<number>();
  const load = (b: number) => {
    let entries = work.get(b);
    if (!entries) {
      const current = loaded.get(b);
      if (!current) throw new Error(`bucket ${b} was not loaded`);
      work.set(b, (entries = [...current]));
    }
    return entries;
  };
  for (const entry of removals) {
    const at = locate(refs, entry);
    if (at < 0) continue;
    const entries = load(refs[at]!.b);
    const place = search(entries, entry);
    if (place.found) {
      entries.splice(place.at, 1);
      changed.add(refs[at]!.b);
    }
  }
  for (const entry of additions) {
    let at = locate(refs, entry);
    if (at < 0) {
      refs.push({ b: next, n: 0, m: 0, k: entry[0], i: entry[1], s: v });
      work.set(next++, []);
      at = 0;
    }
    const entries = load(refs[at]!.b);
    const place = search(entries, entry);
    if (place.found && sameEntry(entries[place.at]!, entry)) continue;
    entries.splice(place.at, place.found ? 1 : 0, entry);
    changed.add(refs[at]!.b);
    gained.add(refs[at]!.b);
  }
  if (changed.size === 0) return null;
  for (const b of [...changed]) {
    let entries = work.get(b)!;
    let owner = b;
    while (entries.length > capacity) {
      const rest = entries.splice(Math.ceil(entries.length / 2));
      const added = next++;
      refs.splice(refs.findIndex((r) => r.b === owner) + 1, 0, { b: added, n: 0, m: 0, k: null, i: '', s: v });
      work.set(added, rest);
      changed.add(added);
      gained.add(added);
      owner = added;
      entries = rest;
    }
  }
  const plan: ChangePlan = { dir: { v, next, refs: [] }, gains: [], losses: [], deletes: [] };
  for (const b of changed) {
    const entries = work.get(b)!;
    if (entries.length === 0) {
      if (loaded.has(b)) plan.deletes.push(b);
      continue;
    }
    (gained.has(b) ? plan.gains : plan.losses).push({ b, entries });
  }
  plan.dir.refs = refs.flatMap((ref) => {
    if (!changed.has(ref.b)) return [ref];
    const entries = work.get(ref.b)!;
    if (entries.length === 0) return [];
    const first = entries[0]!;
    return [{ b: ref.b, n: entries.length, m: entries.filter(marked).length, k: first[0], i: first[1], s: v }];
  });
  return plan;
}
