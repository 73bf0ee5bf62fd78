// Sandbox-scoped secrets (docs/api.md): what an agent server reads with its sandbox's session
// key. Names and descriptions as JSON; a value only through its own route, as text/plain.
import { z } from 'zod';

const noNul = (text: string) => !text.includes('\u0000');
const NUL_MESSAGE = 'String should not contain NUL characters';

export const SandboxSecretsInputSchema = z.object({
  sandbox_id: z.string().min(1).refine(noNul, NUL_MESSAGE),
  // The SDK workspace may name an agent profile; secrets are not per profile here, so it changes nothing.
  agent_profile_id: z.string().nullable().optional(),
});

export const SandboxSecretValueInputSchema = z.object({
  sandbox_id: z.string().min(1).refine(noNul, NUL_MESSAGE),
  secret_name: z.string().min(1).refine(noNul, NUL_MESSAGE),
});

export const SecretNamesSchema = z
  .object({ secrets: z.array(z.object({ name: z.string(), description: z.string().nullable() })) })
  .meta({ id: 'SecretNamesResponse' });
export type SecretNames = z.infer<typeof SecretNamesSchema>;
