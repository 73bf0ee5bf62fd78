import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// Who did what and when (docs/audit.md): one record per state-changing call of a user, its
// outcome, the ids it named and the names of the fields it set — never a value.
export const AuditEventSchema = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
    userId: { type: String, required: true },
    /** The procedure: "secrets.create", "auth.signIn", "appConversations.start"… */
    action: { type: String, required: true },
    /** "ok", or the failure's code (NOT_FOUND, FORBIDDEN…). */
    outcome: { type: String, required: true },
    /** The ids and names the call named (conversation_id, sandbox_id, name…). */
    target: { type: Schema.Types.Mixed, default: () => ({}) },
    /** The names of the fields it sent. */
    fields: { type: [String], default: [] },
    via: { type: String, required: true },
  },
  { versionKey: false, strict: true, collection: 'audit_events', minimize: false },
);
AuditEventSchema.index({ at: -1, _id: -1 }); // newest first; the retention sweep
AuditEventSchema.index({ userId: 1, at: -1, _id: -1 }); // one user's, newest first
AuditEventSchema.index({ action: 1, at: -1, _id: -1 }); // one action's
AuditEventSchema.index({ userId: 1, action: 1, at: -1, _id: -1 }); // one user's of one action

export const auditEventModel = (conn: Connection) => conn.model('AuditEvent', AuditEventSchema);
export type AuditEventModel = ReturnType<typeof auditEventModel>;
export type AuditEventRecord = InferSchemaType<typeof AuditEventSchema>;
