// Custom secrets (docs/api.md). Values are write-only: no output schema carries them.
import { z } from 'zod';

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
