import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The models a user may run, set by the service's administrators (docs/llm-gateway.md, Models
// allowed per user): globs over the model as named, checked at a start and on every gateway call
// beside LLM_ALLOWED_MODELS. No record: no restriction beyond the service's own.
export const UserLlmPolicySchema = new Schema(
  {
    _id: { type: String, required: true }, // the user id
    allowedModels: { type: [String], required: true },
    updatedBy: { type: String, required: true },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'user_llm_policies' },
);

export const userLlmPolicyModel = (conn: Connection) => conn.model('UserLlmPolicy', UserLlmPolicySchema);
export type UserLlmPolicyModel = ReturnType<typeof userLlmPolicyModel>;
export type UserLlmPolicyRecord = InferSchemaType<typeof UserLlmPolicySchema>;
