// Custom secrets (docs/api.md). Values are write-only: no output schema carries them.
import { z } from 'zod';
import { PagingInputSchema } from './common.schema.js';

const SecretNameSchema = z.string().trim().min(1, 'Secret name must not be empty').max(256);

export const CreateSecretInputSchema = z
  .object({ name: SecretNameSchema, value: z.string(), description: z.string().nullable().optional() })
  .meta({ id: 'CreateSecretInput' });

export const UpdateSecretInputSchema = z.object({
  secret_id: z.string().min(1),
  name: SecretNameSchema,
  description: z.string().nullable().optional(),
});

export const SecretIdInputSchema = z.object({ secret_id: z.string().min(1) });

export const CustomSecretSchema = z
  .object({ name: z.string(), description: z.string().nullable() })
  .meta({ id: 'CustomSecretWithoutValue' });

export const SecretsListSchema = z.object({ custom_secrets: z.array(CustomSecretSchema) }).meta({ id: 'GETCustomSecrets' });

/** GET /api/v1/secrets/search: names containing a text (any case), a page at a time; values never. */
export const SearchSecretsInputSchema = PagingInputSchema.extend({
  name__contains: z.string().max(256).nullable().optional(),
}).prefault({});

export const CustomSecretPageSchema = z
  .object({ items: z.array(CustomSecretSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'CustomSecretPage' });
