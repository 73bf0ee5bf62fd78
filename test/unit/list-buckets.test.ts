// The sorted lists' bucket plans (src/db/record-lists/list-buckets.ts) without a database: random changes
// applied as planned keep the buckets in order, within capacity and counted right in the
// directory, and no step of a plan leaves an entry in no bucket (what a heal relies on).
import { describe, expect, it } from 'vitest';
import {
  compareEntries,
  compareStrings,
  emptyDir,
  locate,
  planChange,
  type Entry,
  type ListDir,
} from '../../src/db/record-lists/list-buckets.js';

const CAPACITY = 4;
const marked = (e: Entry) => e[2] === 0;

class Buckets {
  dir: ListDir = emptyDir();
  readonly docs = new Map<number, Entry[]>();

  apply(removals: Entry[], additions: Entry[]): { union: Set<string>; before: Set<string> } {
    const loaded = new Map<number, Entry[]>();
    for (const entry of [...removals, ...additions]) {
      const ref = this.dir.refs[locate(this.dir.refs, entry)];
      if (ref) loaded.set(ref.b, this.docs.get(ref.b)!);
    }
    const before = new Set(this.entries().map((e) => e[1]));
    const plan = planChange(this.dir, loaded, removals, additions, marked, CAPACITY);
    if (!plan) return { union: before, before };
    // The state a writer that died right after the gains and the directory would leave.
    for (const { b, entries } of plan.gains) this.docs.set(b, entries);
    const union = new Set([...this.docs.values()].flat().map((e) => e[1]));
    this.dir = plan.dir;
    for (const { b, entries } of plan.losses) this.docs.set(b, entries);
    for (const b of plan.deletes) this.docs.delete(b);
    return { union, before };
  }

  entries(): Entry[] {
    return this.dir.refs.flatMap((ref) => this.docs.get(ref.b)!);
  }
}

describe('list bucket plans', () => {
  it('keep random inserts, moves and removals sorted, within capacity, counted, and never unplaced', () => {
    let seed = 7;
    // mulberry32: a seeded generator, so a failure repeats.
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
    const list = new Buckets();
    const model = new Map<string, Entry>();
    const problems: string[] = [];
    for (let step = 0; step < 3000; step++) {
      const id = `id-${Math.floor(random() * 200)}`;
      const old = model.get(id);
      const now: Entry | null = random() < 0.2 ? null : [random() < 0.1 ? null : Math.floor(random() * 50), id, random() < 0.3 ? 1 : 0];
      const { union, before } = list.apply(old ? [old] : [], now ? [now] : []);
      if (now) model.set(id, now);
      else model.delete(id);
      // Mid-plan, every entry before the change is still in some bucket, and so is the new one.
      const unplaced = [...before].filter((kept) => !union.has(kept) && kept !== id);
      if (unplaced.length > 0 || (now && !union.has(id))) problems.push(`step ${step}: unplaced ${unplaced.join()}`);

      // Checked without expect() on every step (it is slow): problems are collected, then compared once.
      if (JSON.stringify(list.entries()) !== JSON.stringify([...model.values()].sort(compareEntries))) problems.push(`step ${step}: order`);
      for (const ref of list.dir.refs) {
        const entries = list.docs.get(ref.b)!;
        const counted = [entries.length, entries.filter(marked).length, entries[0]?.[0], entries[0]?.[1]];
        if (entries.length === 0 || entries.length > CAPACITY) problems.push(`step ${step}: bucket ${ref.b} holds ${entries.length}`);
        if (JSON.stringify([ref.n, ref.m, ref.k, ref.i]) !== JSON.stringify(counted)) problems.push(`step ${step}: ref ${ref.b}`);
      }
      if (list.docs.size !== list.dir.refs.length) problems.push(`step ${step}: ${list.docs.size} buckets, ${list.dir.refs.length} refs`);
    }
    expect(problems).toEqual([]);
    expect(list.dir.refs.length).toBeGreaterThan(10);
  });

  it('orders strings by code point, as MongoDB compares UTF-8', () => {
    const words = ['b', 'a', '\u{1F600}', '\uFFFD', 'ab', 'é', ''];
    const byCodePoint = [...words].sort((x, y) => {
      const [a, b] = [[...x].map((c) => c.codePointAt(0)!), [...y].map((c) => c.codePointAt(0)!)];
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
      return a.length - b.length;
    });
    expect([...words].sort(compareStrings)).toEqual(byCodePoint);
  });
});
