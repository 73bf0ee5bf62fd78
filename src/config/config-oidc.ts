// OpenID Connect sign-in (docs/oidc.md): the identity provider users sign in with, as the
// authorization code flow with PKCE, beside (not instead of) API keys.
import { z } from 'zod';
import { optionalString, splitList } from './config-values.js';

export const oidcEnv = {
  // The provider's issuer URL (its /.well-known/openid-configuration is read from there); unset: no OIDC sign-in.
  OIDC_ISSUER: optionalString.refine((v) => v === undefined || /^https?:\/\//i.test(v), 'must be an http(s) URL'),
  OIDC_CLIENT_ID: optionalString,
  // A confidential client's secret; unset: a public client (PKCE alone).
  OIDC_CLIENT_SECRET: optionalString,
  OIDC_SCOPES: z.string().default('openid email profile'),
  // Who may sign in: email domains ("example.com,example.org") and/or groups (OIDC_GROUPS_CLAIM); unset: anyone the provider vouches for.
  OIDC_ALLOWED_DOMAINS: optionalString,
  OIDC_ALLOWED_GROUPS: optionalString,
  OIDC_GROUPS_CLAIM: z.string().min(1).default('groups'),
  // Members of these groups are administrators (as ADMIN_USERS), as of their latest sign-in.
  OIDC_ADMIN_GROUPS: optionalString,
  OIDC_BUTTON_LABEL: z.string().max(80).default('Sign in with your company account'),
};

type OidcEnv = z.output<z.ZodObject<typeof oidcEnv>>;

export function oidcConfig(e: OidcEnv) {
  return {
    oidc: e.OIDC_ISSUER
      ? {
          issuer: e.OIDC_ISSUER,
          clientId: e.OIDC_CLIENT_ID!,
          clientSecret: e.OIDC_CLIENT_SECRET ?? null,
          scopes: e.OIDC_SCOPES,
          allowedDomains: splitList(e.OIDC_ALLOWED_DOMAINS).map((d) => d.toLowerCase()),
          allowedGroups: splitList(e.OIDC_ALLOWED_GROUPS),
          groupsClaim: e.OIDC_GROUPS_CLAIM,
          adminGroups: splitList(e.OIDC_ADMIN_GROUPS),
          buttonLabel: e.OIDC_BUTTON_LABEL,
        }
      : null,
  };
}
