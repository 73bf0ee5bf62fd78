// A user's own API keys (docs/api.md, "API keys"): OpenHands Cloud's /api/keys shapes — create
// (the key shown once), list (never the key), delete — so the CLI, scripts and the automation
// service get keys without an operator. Ids are strings here (the Cloud's are integers), as
// /api/keys/current already answers.
import { z } from 'zod';
import { isoDateTime } from './common.schema.js';

export const CreateApiKeyInputSchema = z
  .object({
    name: z.string().max(200).nullable().optional(),
    // Refused when already past (the Cloud's "Expiration date cannot be in the past").
    expires_at: isoDateTime()
      .refine((v) => Date.parse(v) > Date.now(), 'Value error, Expiration date cannot be in the past')
      .nullable()
      .optional(),
    // Binds the key to one of the user's organisations: it then acts there only.
    org_id: z.string().min(1).max(200).nullable().optional(),
  })
  .prefault({})
  .meta({ id: 'ApiKeyCreate' });
export type CreateApiKeyInput = z.output<typeof CreateApiKeyInputSchema>;

export const ApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    org_id: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });

export const CreatedApiKeySchema = ApiKeySchema.extend({ key: z.string() }).meta({ id: 'ApiKeyCreated' });

export const ApiKeyListSchema = z.array(ApiKeySchema).meta({ id: 'ApiKeyList' });

export const ApiKeyIdInputSchema = z.object({ key_id: z.string().min(1).max(64) });
