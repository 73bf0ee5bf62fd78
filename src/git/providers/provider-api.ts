// Where each git provider's API lives and how a token authenticates to it: the configured
// public roots, or a self-hosted host from the stored token (GitHub Enterprise, self-hosted
// GitLab, Bitbucket-style hosts). Token checks, clones and browsing all resolve hosts here.
import type { ProviderType } from '../../../contract/common.schema.js';
import { providerHostOrigin } from '../../../contract/git-providers.schema.js';
import type { Config } from '../../config/config.js';

export type ProviderRoots = Pick<Config['providers'], 'githubApiUrl' | 'gitlabApiUrl' | 'bitbucketApiUrl'>;

/**
 * The origin of a host stored with a token: bare ("github.example.com", https) or with a
 * scheme. A host stored before hosts had to be bare origins (one with a path or query) gets a
 * reserved name that never resolves; the host rules refuse every call for it anyway.
 */
export const originOf = (host: string) => providerHostOrigin(host) ?? 'https://stored-host-is-not-an-origin.invalid';

export function authorizationFor(provider: ProviderType, token: string): string {
  // Bitbucket "user:app_password" credentials use Basic auth; everything else is a bearer token.
  return provider === 'bitbucket' && token.includes(':') ? `Basic ${Buffer.from(token).toString('base64')}` : `Bearer ${token}`;
}

/** The REST API root: the configured default, or the self-hosted host's. Null: no API (enterprise_sso). */
export function providerApiBase(provider: ProviderType, host: string | null, providers: ProviderRoots): string | null {
  switch (provider) {
    case 'github':
      return host && host !== 'github.com' ? `${originOf(host)}/api/v3` : providers.githubApiUrl;
    case 'gitlab':
      return host && host !== 'gitlab.com' ? `${originOf(host)}/api/v4` : providers.gitlabApiUrl;
    case 'bitbucket': {
      if (!host || host === 'bitbucket.org') return providers.bitbucketApiUrl;
      // Bitbucket Cloud-style hosts serve their API on the "api." subdomain (reference).
      const url = new URL(originOf(host));
      return `${url.protocol}//api.${url.host}/2.0`;
    }
    case 'enterprise_sso':
      return null; // cannot be validated or browsed, as in the reference
  }
}

/** The GraphQL endpoint (GitHub and GitLab): next to the REST root ("…/api/v3" → "…/api/graphql"). */
export function providerGraphqlUrl(provider: 'github' | 'gitlab', host: string | null, providers: ProviderRoots): string {
  const rest = providerApiBase(provider, host, providers)!;
  if (provider === 'github') return /\/api\/v3$/.test(rest) ? rest.replace(/\/api\/v3$/, '/api/graphql') : `${rest}/graphql`;
  return /\/api\/v4$/.test(rest) ? rest.replace(/\/api\/v4$/, '/api/graphql') : `${rest}/graphql`;
}
