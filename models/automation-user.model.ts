import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A user's id as the automation service knows them: it accepts only UUIDs for users and
// organisations (docs/automation-service-notes.md). The alias is derived from the user id
// (UUID v5), so writing it twice writes the same record; kept to map it back.
export const AutomationUserSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
  },
  { versionKey: false, strict: true, collection: 'automation_users' },
);

AutomationUserSchema.index({ userId: 1 }, { unique: true });

export const automationUserModel = (conn: Connection) => conn.model('AutomationUser', AutomationUserSchema);
export type AutomationUserRecord = InferSchemaType<typeof AutomationUserSchema>;
