import { Schema, type Connection, type InferSchemaType } from 'mongoose';

const ProviderTokenSchema = new Schema(
  {
    token: { type: String, required: true }, // ciphertext
    host: { type: String, default: null },
    user_id: { type: String, default: null },
  },
  { _id: false },
);

// One document per user holding the whole provider map, so replacing it (add-git-providers
// replaces the map) is a single atomic update.
export const GitProviderTokensSchema = new Schema(
  {
    userId: { type: String, required: true, unique: true },
    tokens: {
      github: { type: ProviderTokenSchema, default: undefined },
      gitlab: { type: ProviderTokenSchema, default: undefined },
      bitbucket: { type: ProviderTokenSchema, default: undefined },
      enterprise_sso: { type: ProviderTokenSchema, default: undefined },
    },
    updatedAt: Date,
  },
  { versionKey: false, strict: true, collection: 'git_provider_tokens' },
);

export const gitProviderTokensModel = (conn: Connection) => conn.model('GitProviderTokens', GitProviderTokensSchema);
export type GitProviderTokensModel = ReturnType<typeof gitProviderTokensModel>;
/** A stored provider-token map as read with lean(). */
export type GitProviderTokensRecord = InferSchemaType<typeof GitProviderTokensSchema>;
