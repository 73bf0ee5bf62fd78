// Git provider tokens (docs/api.md).
import { z } from 'zod';
import { McpConfigInputSchema } from './mcp.schema.js';

/**
 * The origin ("scheme://host[:port]") a provider host names, or null when it names more or
 * less than that. A host is a bare host ("git.example.com", https) or an http(s) origin, with
 * an optional port and trailing "/": no path, query, fragment, credentials or escapes, so the
 * service can only ever be sent to the root of a host (the service checks stored hosts again
 * with this before every call).
 */
export function providerHostOrigin(host: string): string | null {
  const text = host.trim();
  const scheme = /^(https?):\/\//i.exec(text);
  const rest = scheme ? text.slice(scheme[0].length) : text;
  if (!/^(?:[\p{L}\p{N}_.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?\/?$/u.test(rest)) return null;
  try {
    const url = new URL(`${scheme ? scheme[1]!.toLowerCase() : 'https'}://${rest}`);
    return url.hostname ? url.origin : null;
  } catch {
    return null;
  }
}

/** A provider host (see providerHostOrigin); "" means none. */
const ProviderHostSchema = z
  .string()
  .trim()
  .refine(
    (host) => host === '' || providerHostOrigin(host) !== null,
    'Host must be a host name with an optional port, or an http(s) origin: no path, query or credentials',
  );

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
