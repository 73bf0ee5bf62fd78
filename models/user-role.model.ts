import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A user's role as their identity provider last stated it (docs/oidc.md, OIDC_ADMIN_GROUPS):
// written at each OIDC sign-in, so a person taken out of the group loses it at their next one.
export const UserRoleSchema = new Schema(
  {
    _id: { type: String, required: true }, // the user id
    admin: { type: Boolean, required: true },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'user_roles' },
);

export const userRoleModel = (conn: Connection) => conn.model('UserRole', UserRoleSchema);
export type UserRoleModel = ReturnType<typeof userRoleModel>;
export type UserRoleRecord = InferSchemaType<typeof UserRoleSchema>;
