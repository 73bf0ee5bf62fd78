import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A user's membership of a team organisation and their role in it (src/organizations/roles.ts).
export const OrgMemberSchema = new Schema(
  {
    _id: { type: String, required: true }, // `${orgId}:${userId}`: one membership per user and organisation
    orgId: { type: String, required: true },
    userId: { type: String, required: true },
    email: { type: String, default: null },
    role: { type: String, required: true, enum: ['owner', 'admin', 'member'] },
    joinedAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'org_members' },
);

OrgMemberSchema.index({ orgId: 1, userId: 1 }); // an organisation's members, by user id
OrgMemberSchema.index({ orgId: 1, role: 1 }); // its owners (the last owner stays)
OrgMemberSchema.index({ userId: 1, orgId: 1 }); // a user's organisations

export const orgMemberModel = (conn: Connection) => conn.model('OrgMember', OrgMemberSchema);
export type OrgMemberModel = ReturnType<typeof orgMemberModel>;
export type OrgMemberRecord = InferSchemaType<typeof OrgMemberSchema>;

// The organisation a user acts in when a request names none (X-Org-Id); absent: their personal one.
export const CurrentOrgSchema = new Schema(
  {
    _id: { type: String, required: true }, // the user id
    orgId: { type: String, required: true },
  },
  { versionKey: false, strict: true, collection: 'current_orgs' },
);

CurrentOrgSchema.index({ orgId: 1 }); // who acts in an organisation that is deleted or that they leave

export const currentOrgModel = (conn: Connection) => conn.model('CurrentOrg', CurrentOrgSchema);
export type CurrentOrgModel = ReturnType<typeof currentOrgModel>;
