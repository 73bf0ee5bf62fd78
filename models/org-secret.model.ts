import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A secret of a team organisation (docs/organizations.md): its members' conversations get it,
// nobody reads its value back. _id "<orgId>:<name>": names are unique per organisation.
export const OrgSecretSchema = new Schema(
  {
    _id: { type: String, required: true },
    orgId: { type: String, required: true },
    name: { type: String, required: true },
    value: { type: String, required: true }, // ciphertext
    description: { type: String, default: '' },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'org_secrets' },
);

OrgSecretSchema.index({ orgId: 1, createdAt: 1, _id: 1 }); // an organisation's secrets in creation order

export const orgSecretModel = (conn: Connection) => conn.model('OrgSecret', OrgSecretSchema);
export type OrgSecretModel = ReturnType<typeof orgSecretModel>;
export type OrgSecretRecord = InferSchemaType<typeof OrgSecretSchema>;
