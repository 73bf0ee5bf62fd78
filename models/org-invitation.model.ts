import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// An invitation to join an organisation with a role, by email. Only the token's SHA-256 is kept:
// the link is shown once, to the inviter. Pending until accepted, revoked or past expiresAt.
export const OrgInvitationSchema = new Schema(
  {
    _id: { type: String, required: true }, // a UUID
    orgId: { type: String, required: true },
    email: { type: String, required: true }, // lowercased
    role: { type: String, required: true, enum: ['owner', 'admin', 'member'] },
    tokenHash: { type: String, required: true, unique: true },
    inviterId: { type: String, required: true },
    status: { type: String, required: true, enum: ['pending', 'accepted', 'revoked'] },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
    acceptedBy: { type: String, default: null },
    acceptedAt: { type: Date, default: null },
  },
  { versionKey: false, strict: true, collection: 'org_invitations' },
);

OrgInvitationSchema.index({ orgId: 1, status: 1, createdAt: -1 }); // an organisation's pending invitations, newest first
OrgInvitationSchema.index({ email: 1, status: 1 }); // what waits for a user signing in

export const orgInvitationModel = (conn: Connection) => conn.model('OrgInvitation', OrgInvitationSchema);
export type OrgInvitationModel = ReturnType<typeof orgInvitationModel>;
export type OrgInvitationRecord = InferSchemaType<typeof OrgInvitationSchema>;
