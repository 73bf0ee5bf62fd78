import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The events of one conversation, as the agent server sent them by webhook, kept so that
// every read is a lookup by _id (FerretDB sorts and limits in memory after loading every
// matching document, so no read here sorts or filters on another field):
//
// - one small log document per conversation (_id = conversation id): the owner, the sequence
//   number the next event gets and the first one still kept (a count reads only this);
// - one document per conversation with the ids and positions of its latest events (a retried
//   webhook batch is recognised and written to the same place again), read only by writes;
// - bucket documents (_id = "<conversation id>:<bucket number>") holding the events with
//   sequence numbers bucket*SIZE … bucket*SIZE+SIZE-1 under keys "s<offset>", each as
//   {k: kind, t: timestamp, j: the event's JSON text}. The text form keeps any key an event
//   carries (MongoDB-wire servers refuse some, such as "$ref" in tool schemas).
export const EventLogSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    next: { type: Number, required: true, default: 0 },
    first: { type: Number, required: true, default: 0 },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'event_logs', minimize: false },
);
// The retention sweep looks for logs not written to for a while.
EventLogSchema.index({ updatedAt: 1 });

export const EventRecentSchema = new Schema(
  {
    _id: { type: String, required: true },
    ids: { type: [{ _id: false, id: String, seq: Number }], default: [] },
    // A new random value with every write: a batch adds its ids over the list it read (versions.ts).
    version: { type: String, default: null },
  },
  { versionKey: false, strict: true, collection: 'event_recent_ids', minimize: false },
);

export const EventBucketSchema = new Schema(
  {
    _id: { type: String, required: true },
    e: { type: Schema.Types.Mixed, default: {} },
  },
  { versionKey: false, strict: true, collection: 'event_buckets', minimize: false },
);

export const eventLogModel = (conn: Connection) => conn.model('EventLog', EventLogSchema);
export const eventBucketModel = (conn: Connection) => conn.model('EventBucket', EventBucketSchema);
export const eventRecentModel = (conn: Connection) => conn.model('EventRecent', EventRecentSchema);
export type EventLogRecord = InferSchemaType<typeof EventLogSchema>;
