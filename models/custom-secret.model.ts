import { Schema, type Connection, type InferSchemaType } from 'mongoose';

export const CustomSecretSchema = new Schema(
  {
    userId: { type: String, required: true },
    name: { type: String, required: true },
    value: { type: String, required: true }, // ciphertext
    description: { type: String, default: '' },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'custom_secrets' },
);
// Names are unique per user; an insert that collides fails with E11000 (also on FerretDB).
CustomSecretSchema.index({ userId: 1, name: 1 }, { unique: true });
// A user's secrets in creation order (the list order, served without a sort).
CustomSecretSchema.index({ userId: 1, createdAt: 1, _id: 1 });

export const customSecretModel = (conn: Connection) => conn.model('CustomSecret', CustomSecretSchema);
export type CustomSecretModel = ReturnType<typeof customSecretModel>;
/** A stored custom secret as read with lean(). */
export type CustomSecretRecord = InferSchemaType<typeof CustomSecretSchema>;
