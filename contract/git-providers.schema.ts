// Git provider tokens (API.md B.3.1-3.3).
import { z } from 'zod';
import { McpConfigInputSchema } from './mcp.schema.js';

/** A bare host ("git.example.com", optionally with a port) or an http(s) URL; "" means none. */
const ProviderHostSchema = z
  .string()
  .trim()
  .refine((host) => {
    if (host === '') return true;
    try {
      const url = new URL(/^https?:\/\//i.test(host) ? host : `https://${host}`);
      return url.hostname !== '' && !url.username && !url.password;
    } catch {
      return false;
    }
  }, 'Host must be a host name or an http(s) URL');

const ProviderTokenInputSchema = z.object({
  token: z.string().nullable().optional(),
  host: ProviderHostSchema.nullable().optional(),
  user_id: z.string().nullable().optional(),
});

export const AddGitProvidersInputSchema = z
  .object({
    // Unknown provider keys are rejected, as the reference's enum-keyed dict does.
    provider_tokens: z
      .strictObject({
        github: ProviderTokenInputSchema.optional(),
        gitlab: ProviderTokenInputSchema.optional(),
        bitbucket: ProviderTokenInputSchema.optional(),
        enterprise_sso: ProviderTokenInputSchema.optional(),
      })
      .default({}),
    // Legacy: accepted and ignored by the reference.
    mcp_config: McpConfigInputSchema.nullable().optional(),
  })
  .meta({ id: 'AddGitProvidersInput' });
export type AddGitProvidersInput = z.output<typeof AddGitProvidersInputSchema>;
