// The seam between the stores and how their records are kept: a RecordTable reads records by
// id and writes one record at a time under a condition, the same calls on both databases.
// On MongoDB it is the model's own queries (IndexedTable); on the embedded FerretDB, which
// narrows nothing but an _id equality, every call names the record by _id alone, conditions
// are checked on the record read, and the table keeps the per-owner lists searches read
// (ListedTable, listed-table.ts). A field added to a record needs nothing here.
import type { Model } from 'mongoose';

/** Conditions on a record's own fields: a value (null also matches a missing field), or {$ne}, {$in}, {$lt}, {$lte}, {$gt}, {$gte}. */
export type Where = Record<string, unknown>;
/** A MongoDB update document ($set, $setOnInsert, $min, $inc, …). */
export type Update = Record<string, unknown>;

export interface RecordTable<R> {
  get(id: string, where?: Where): Promise<R | null>;
  /** The records of these ids that exist (and meet `where`), in no particular order. */
  getMany(ids: string[], where?: Where): Promise<R[]>;
  /** Inserts the record (schema defaults applied); a taken id throws the duplicate key error. Returns it as stored. */
  insert(record: Partial<R>): Promise<R>;
  /**
   * Updates the record when it meets `where`; returns it as updated, or null. With upsert, a
   * missing record is inserted from `where`'s values, $setOnInsert and $set, and one that
   * exists but fails `where` throws the duplicate key error (as MongoDB does).
   */
  update(id: string, where: Where, update: Update, options?: { upsert?: boolean }): Promise<R | null>;
  /** Deletes the record when it meets `where`; returns what was deleted, or null. */
  remove(id: string, where?: Where): Promise<R | null>;
}

// Mongoose's types for a model of any schema, as the tables use them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyModel = Model<any>;

export class IndexedTable<R> implements RecordTable<R> {
  constructor(private readonly model: AnyModel) {}

  async get(id: string, where: Where = {}): Promise<R | null> {
    return (await this.model.findOne({ _id: id, ...where }).lean()) as R | null;
  }

  async getMany(ids: string[], where: Where = {}): Promise<R[]> {
    return (await this.model.find({ _id: { $in: ids }, ...where }).lean()) as R[];
  }

  async insert(record: Partial<R>): Promise<R> {
    return (await this.model.create(record)).toObject() as R;
  }

  async update(id: string, where: Where, update: Update, options: { upsert?: boolean } = {}): Promise<R | null> {
    const upsert = options.upsert === true;
    return (await this.model.findOneAndUpdate({ _id: id, ...where }, update, { new: true, upsert }).lean()) as R | null;
  }

  async remove(id: string, where: Where = {}): Promise<R | null> {
    return (await this.model.findOneAndDelete({ _id: id, ...where }).lean()) as R | null;
  }
}

const same = (a: unknown, b: unknown): boolean => {
  if (a == null || b == null) return a == null && b == null;
  if (a instanceof Date || b instanceof Date) return new Date(a as Date).getTime() === new Date(b as Date).getTime();
  return a === b;
};

const ordered = (a: unknown, b: unknown): number | null => {
  if (a == null || b == null) return null;
  const x = a instanceof Date ? a.getTime() : a;
  const y = b instanceof Date ? b.getTime() : b;
  return typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : null;
};

/** Whether a record meets `where` (the conditions a store's writes and reads name; see Where). */
export function meets(record: Record<string, unknown>, where: Where): boolean {
  for (const [field, condition] of Object.entries(where)) {
    const value = record[field];
    const operators = condition !== null && typeof condition === 'object' && !(condition instanceof Date) && !Array.isArray(condition);
    if (!operators) {
      if (!same(value, condition)) return false;
      continue;
    }
    for (const [op, operand] of Object.entries(condition as Record<string, unknown>)) {
      const order = ordered(value, operand);
      const holds =
        op === '$ne'
          ? !same(value, operand)
          : op === '$in'
            ? (operand as unknown[]).some((o) => same(value, o))
            : op === '$lt'
              ? order !== null && order < 0
              : op === '$lte'
                ? order !== null && order <= 0
                : op === '$gt'
                  ? order !== null && order > 0
                  : op === '$gte'
                    ? order !== null && order >= 0
                    : unsupported(op);
      if (!holds) return false;
    }
  }
  return true;
}

function unsupported(op: string): never {
  throw new Error(`record tables do not check ${op} conditions`);
}

/** The fields an update document writes (their top-level names). */
export function updatedFields(update: Update): string[] {
  const fields = Object.entries(update).flatMap(([op, value]) =>
    op.startsWith('$') && value && typeof value === 'object' ? Object.keys(value) : [op],
  );
  return fields.map((path) => path.split('.')[0]!);
}

/** The record MongoDB's upsert inserts: the filter's values, then $setOnInsert and $set. */
export function upserted(id: string, where: Where, update: Update): Record<string, unknown> {
  const values = Object.fromEntries(
    Object.entries(where).filter(([, v]) => v === null || typeof v !== 'object' || v instanceof Date || Array.isArray(v)),
  );
  return { ...values, ...(update.$setOnInsert as object | undefined), ...(update.$set as object | undefined), _id: id };
}
