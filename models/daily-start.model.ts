import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// How many conversations a user started on one UTC day, for the daily limit and
// /api/quota/status (docs/budgets.md). _id "<userId>:<YYYY-MM-DD>": a start is one $inc on it, so
// deleting conversations gives nothing back. A user's earlier days are removed on their first
// start of a new day.
export const DailyStartSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    day: { type: String, required: true },
    count: { type: Number, default: 0 },
  },
  { versionKey: false, strict: true, collection: 'daily_starts' },
);
DailyStartSchema.index({ userId: 1, day: 1 });

export const dailyStartModel = (conn: Connection) => conn.model('DailyStart', DailyStartSchema);
export type DailyStartRecord = InferSchemaType<typeof DailyStartSchema>;
