import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// What a user's conversations cost in one calendar month (UTC), for the monthly cap
// (docs/budgets.md). _id "<userId>:<YYYY-MM>". Per conversation: the lowest and the highest
// cumulative cost seen this month ({from, to}); the month cost is the sum of to - from. Both are
// written with $min/$max, so a report applied twice, late or by two replicas changes nothing.
export const MonthlySpendSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    month: { type: String, required: true },
    conversations: { type: Schema.Types.Mixed, default: () => ({}) },
    updatedAt: { type: Date, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'monthly_spend', minimize: false },
);

export const monthlySpendModel = (conn: Connection) => conn.model('MonthlySpend', MonthlySpendSchema);
export type MonthlySpendRecord = InferSchemaType<typeof MonthlySpendSchema>;
