import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A browser session (sign-in with an API key). The id is the SHA-256 of the random session id
// the cookie carries, so a database dump cannot be replayed as a cookie. apiKeyId ties the
// session to the key it was opened with: revoking the key deletes its sessions. A session ends
// at its expiry (absolute) or after SESSION_IDLE_SECONDS without use, whichever comes first.
export const SessionSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true, index: true }, // sign out everywhere
    /** Its last use, refreshed at most once a minute (SESSION_IDLE_SECONDS); none: its creation. */
    lastSeenAt: { type: Date },
    apiKeyId: { type: String, required: true, index: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
    expiresAt: { type: Date, required: true, index: true },
  },
  { versionKey: false, strict: true, collection: 'sessions' },
);

export const sessionModel = (conn: Connection) => conn.model('Session', SessionSchema);
export type SessionModel = ReturnType<typeof sessionModel>;
/** A stored session as read with lean(). */
export type SessionRecord = InferSchemaType<typeof SessionSchema>;
