// See docs/decisions/0010-record-lists-on-the-embedded-ferretdb.md (why, the invariants, when to delete).
// The record table of the embedded FerretDB (record-table.ts): records read and written by
// _id alone, and the owner's lists (record-lists.ts, record-layouts.ts) kept with every write.
// A write that can change a list runs as one exclusive section of the records' lane
// (write-gate.ts): read the record, check the condition, record the intent, write the record,
// change the lists and groups, clear the intent. So lists and records change together for
// every reader of the lists, on every replica; a section cut off midway is finished by the
// next one (the intent), and a list entry its record no longer derives (found when a page's
// records are read) is repaired there and then.
import { MongoServerError } from 'mongodb';
import { sameEntry, type Entry } from './list-buckets.js';
import { collect, count, walk, type ListRange, type WalkOptions } from './list-reader.js';
import { groupId, listId, type Listed, type RecordLayout } from './record-layouts.js';
import type { Intent, RecordLists } from './record-lists.js';
import { meets, updatedFields, upserted, type AnyModel, type RecordTable, type Update, type Where } from './record-table.js';
import type { WriteGate } from '../write-gate/write-gate.js';

/** Ids per read: the embedded build narrows an $in of at most 1000 ids through the _id index (scripts/build-ferretdb.sh). */
const IDS_PER_READ = 1000;

export class ListedTable<R extends Listed> implements RecordTable<R> {
  /** The lock epoch whose intent this table has looked at (write-gate.ts); -1 after a failed section. */
  private checkedEpoch = -1;
  /** The running section recorded an intent (sections of one lane run one at a time). */
  private opened = false;

  constructor(
    private readonly model: AnyModel,
    readonly layout: RecordLayout,
    private readonly gate: WriteGate,
    readonly lists: RecordLists,
  ) {}

  async get(id: string, where: Where = {}): Promise<R | null> {
    const record = (await this.model.collection.findOne({ _id: id as never })) as R | null;
    return record && meets(record, where) ? record : null;
  }

  async getMany(ids: string[], where: Where = {}): Promise<R[]> {
    const unique = [...new Set(ids)];
    const found: R[] = [];
    for (let from = 0; from < unique.length; from += IDS_PER_READ) {
      const chunk = unique.slice(from, from + IDS_PER_READ);
      const records = (await this.model.collection.find({ _id: { $in: chunk as never[] } }).toArray()) as unknown as R[];
      found.push(...records.filter((r) => meets(r, where)));
    }
    return found;
  }

  insert(record: Partial<R>): Promise<R> {
    return this.section(async () => {
      const doc = new this.model(record);
      await this.open({ id: String(doc._id), before: null });
      await doc.save();
      const stored = doc.toObject() as R;
      await this.applyDiff(null, stored);
      return stored;
    });
  }

  async update(id: string, where: Where, update: Update, options: { upsert?: boolean } = {}): Promise<R | null> {
    const facts = updatedFields(update).some((field) => this.layout.facts.includes(field));
    // Nothing a list holds, no condition: one write by _id, which the gate makes atomic by itself.
    if (!facts && !options.upsert && Object.keys(where).length === 0) return this.write(id, update);
    return this.section(async () => {
      const before = (await this.model.collection.findOne({ _id: id as never })) as R | null;
      if (!before) {
        if (!options.upsert) return null;
        const doc = new this.model(upserted(id, where, update));
        await this.open({ id, before: null });
        await doc.save();
        const stored = doc.toObject() as R;
        await this.applyDiff(null, stored);
        return stored;
      }
      if (!meets(before, where)) {
        if (options.upsert) throw new MongoServerError({ message: `E11000 duplicate key error: _id ${id} exists`, code: 11000 });
        return null;
      }
      if (!facts) return this.write(id, update);
      await this.open({ id, before: this.factsOf(before) });
      const after = await this.write(id, update);
      await this.applyDiff(before, after);
      return after;
    });
  }

  remove(id: string, where: Where = {}): Promise<R | null> {
    return this.section(async () => {
      const before = (await this.model.collection.findOne({ _id: id as never })) as R | null;
      if (!before || !meets(before, where)) return null;
      await this.open({ id, before: this.factsOf(before) });
      await this.model.collection.deleteOne({ _id: id as never });
      await this.applyDiff(before, null);
      return before;
    });
  }

  // ---- the lists, for searches ----

  /** A walk of the owner's list of `order` (list-reader.ts), read again while a write is under way. */
  walk(owner: string, order: string, options: WalkOptions): Promise<Entry[]> {
    const id = listId(this.layout, owner, order);
    return this.lists.consistent(
      () => walk(this.lists.reader, id, this.layout.marked, options),
      () => this.heal(id),
    );
  }

  count(owner: string, order: string, options: ListRange & { marked: boolean; match?: (e: Entry) => boolean }): Promise<number> {
    const id = listId(this.layout, owner, order);
    return this.lists.consistent(
      () => count(this.lists.reader, id, this.layout.marked, options),
      () => this.heal(id),
    );
  }

  collect(owner: string, order: string, options: ListRange & { match?: (e: Entry) => boolean }): Promise<Entry[]> {
    const id = listId(this.layout, owner, order);
    return this.lists.consistent(
      () => collect(this.lists.reader, id, options),
      () => this.heal(id),
    );
  }

  /**
   * The records of entries of the owner's `order` list, in the entries' order. An entry its
   * record no longer derives (a write cut off midway; the record deleted) is repaired and left
   * out, and `stale` says so: the caller reads its page again.
   */
  async recordsOf(owner: string, order: string, entries: Entry[]): Promise<{ records: R[]; stale: boolean }> {
    const found = new Map((await this.getMany(entries.map((e) => e[1]))).map((r) => [r._id, r]));
    const fits = (e: Entry) => {
      const record = found.get(e[1]);
      return record !== undefined && this.layout.owner(record) === owner && sameEntry(this.layout.entry(record, order), e);
    };
    const stale = entries.filter((e) => !fits(e));
    if (stale.length > 0) await this.repair(owner, order, stale);
    return { records: entries.filter(fits).map((e) => found.get(e[1])!), stale: stale.length > 0 };
  }

  /** The records of a group (a sandbox's conversations, …); members whose record left the group are dropped from it. */
  async groupRecords(group: string, key: string, where: Where = {}): Promise<R[]> {
    const id = groupId(this.layout, group, key);
    const inGroup = (records: R[]) => records.filter((r) => this.layout.groupKey(r, group) === key);
    const ids = await this.lists.members(id);
    const members = inGroup(await this.getMany(ids));
    if (members.length < ids.length) {
      await this.section(async () => {
        const current = await this.lists.members(id);
        const kept = new Set(inGroup(await this.getMany(current)).map((r) => r._id));
        await this.lists.regroup(
          id,
          current.filter((i) => !kept.has(i)),
          [],
        );
      });
    }
    return members.filter((r) => meets(r, where));
  }

  // ---- keeping lists with records ----

  private write(id: string, update: Update): Promise<R | null> {
    return this.model.findOneAndUpdate({ _id: id }, update, { new: true }).lean() as Promise<R | null>;
  }

  /** One exclusive section of the lane; an intent left open by a section before it is finished first. */
  private section<T>(work: () => Promise<T>): Promise<T> {
    return this.gate.exclusive(this.layout.lane, async (epoch) => {
      try {
        if (epoch !== this.checkedEpoch) {
          const open = await this.lists.openedIntent(this.layout.lane);
          if (open) await this.finish(open);
          this.checkedEpoch = epoch;
        }
        this.opened = false;
        const result = await work();
        if (this.opened) await this.lists.closeIntent(this.layout.lane);
        return result;
      } catch (error) {
        this.checkedEpoch = -1; // the intent (if any) stays open: the next section finishes it
        throw error;
      }
    });
  }

  private async open(intent: Intent): Promise<void> {
    await this.lists.openIntent(this.layout.lane, intent);
    this.opened = true;
  }

  /** Finishes a cut-off section: heals the lists it may have left half-written, then derives the record's entries anew. */
  private async finish(intent: Intent): Promise<void> {
    const current = (await this.model.collection.findOne({ _id: intent.id as never })) as R | null;
    const before = intent.before ? ({ ...intent.before, _id: intent.id } as Listed) : null;
    for (const record of [before, current]) {
      if (!record) continue;
      for (const order of this.layout.orders)
        await this.lists.heal(listId(this.layout, this.layout.owner(record), order), this.layout.marked);
    }
    // Neither: the writer died between opening its intent and inserting the record (nothing to list).
    if (before || current) await this.applyDiff(before, current);
    await this.lists.closeIntent(this.layout.lane);
  }

  private heal(id: string): Promise<void> {
    return this.section(async () => {
      await this.lists.heal(id, this.layout.marked);
    });
  }

  /** Removes stale entries of one list and adds what their records derive now. */
  private repair(owner: string, order: string, stale: Entry[]): Promise<void> {
    const id = listId(this.layout, owner, order);
    return this.section(async () => {
      for (const entry of stale) {
        const record = (await this.model.collection.findOne({ _id: entry[1] as never })) as R | null;
        const fits = record && this.layout.owner(record) === owner ? [this.layout.entry(record, order)] : [];
        await this.lists.change(id, [entry], fits, this.layout.marked);
      }
    });
  }

  /** The list and group changes from one state of a record to the next (lists that gain entries first). */
  private async applyDiff(before: Listed | null, after: Listed | null): Promise<void> {
    const L = this.layout;
    const changes = new Map<string, { removals: Entry[]; additions: Entry[] }>();
    const of = (id: string) => changes.get(id) ?? changes.set(id, { removals: [], additions: [] }).get(id)!;
    for (const order of L.orders) {
      const old = before && L.entry(before, order);
      const now = after && L.entry(after, order);
      const oldList = before && listId(L, L.owner(before), order);
      const nowList = after && listId(L, L.owner(after), order);
      if (old && now && oldList === nowList && sameEntry(old, now)) continue;
      if (now) of(nowList!).additions.push(now);
      if (old) of(oldList!).removals.push(old);
    }
    const lists = [...changes].sort(([, a], [, b]) => b.additions.length - a.additions.length);
    for (const [id, { removals, additions }] of lists) await this.lists.change(id, removals, additions, L.marked);
    const recordId = (after ?? before)!._id;
    for (const group of L.groups) {
      const old = before && L.groupKey(before, group);
      const now = after && L.groupKey(after, group);
      if (before && after && old === now) continue;
      if (now) await this.lists.regroup(groupId(L, group, now), [], [recordId]);
      if (old && old !== now) await this.lists.regroup(groupId(L, group, old), [recordId], []);
    }
  }

  private factsOf(record: Listed): Record<string, unknown> {
    return Object.fromEntries(this.layout.facts.map((field) => [field, record[field] ?? null]));
  }
}
