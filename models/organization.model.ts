import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A team organisation (docs/organizations.md). Every user's personal organisation is not stored:
// its id is the user's id and its only member is that user, the owner.
export const OrganizationSchema = new Schema(
  {
    _id: { type: String, required: true }, // a UUID
    name: { type: String, required: true },
    // The name lowercased: names are unique whatever their case (the Cloud's 409 on a taken name).
    nameKey: { type: String, required: true, unique: true },
    contactName: { type: String, default: '' },
    contactEmail: { type: String, default: '' },
    createdBy: { type: String, required: true },
    createdAt: { type: Date, required: true },
    // The monthly cap of what its conversations may cost (dollars; null: none), docs/organizations.md.
    monthlyBudget: { type: Number, default: null },
    // The organisation's LLM defaults: members' conversations use them; the key is sealed and never shown.
    llm: {
      model: { type: String, default: null },
      baseUrl: { type: String, default: null },
      apiKey: { type: String, default: null }, // SecretBox ciphertext
    },
  },
  { versionKey: false, strict: true, collection: 'organizations' },
);

export const organizationModel = (conn: Connection) => conn.model('Organization', OrganizationSchema);
export type OrganizationModel = ReturnType<typeof organizationModel>;
export type OrganizationRecord = InferSchemaType<typeof OrganizationSchema>;
