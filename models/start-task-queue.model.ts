import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The claimable start tasks: one small document per unfinished task, so claiming work reads
// this collection only, never the finished tasks (which grow with history; on the embedded
// FerretDB every query scans its whole collection). dueAt is when the task may be claimed:
// its creation, or the end of the lease a worker holds. The lease itself lives on the task.
// userId: whose task it is, so claims can share the workers fairly between users.
export const StartTaskQueueSchema = new Schema(
  {
    _id: { type: String, required: true }, // the task's id
    userId: { type: String, default: null },
    dueAt: { type: Date, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'start_task_queue' },
);
StartTaskQueueSchema.index({ dueAt: 1 });

export const startTaskQueueModel = (conn: Connection) => conn.model('StartTaskQueue', StartTaskQueueSchema);
export type StartTaskQueueModel = ReturnType<typeof startTaskQueueModel>;
export type StartTaskQueueRecord = InferSchemaType<typeof StartTaskQueueSchema>;
