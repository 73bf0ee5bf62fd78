// Git provider tokens (the reference's, docs/api.md; with our distinct 502 for an unreachable
// provider). Every token is checked against the provider's API before it is stored, and
// the whole provider map is replaced in one atomic update of the user's settings document.
import type { Models, SettingsRecord } from '../../models/index.js';
import type { ProviderType } from '../../contract/common.schema.js';
import type { AddGitProvidersInput } from '../../contract/git-providers.schema.js';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto.js';
import { newVersion, untilApplied } from '../db/versions.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import { userIdIn } from './providers/provider-client.js';
import { originOf, providerApiBase } from './providers/provider-api.js';
import { ProviderError, providerAppError, type ProviderFailure, type ProviderHttp } from './providers/provider-http.js';

export type ProbeResult = 'valid' | 'invalid' | 'unreachable' | 'refused';

type StoredToken = NonNullable<NonNullable<SettingsRecord['providerTokens']>[ProviderType]>;

type StoredTokens = Partial<Record<ProviderType, StoredToken>>;

/** The stored map without empty entries. */
function storedTokensOf(doc: Pick<SettingsRecord, 'providerTokens'> | null): StoredTokens {
  const tokens: Partial<Record<string, StoredToken | null>> = doc?.providerTokens ?? {};
  return Object.fromEntries(Object.entries(tokens).filter(([, t]) => t && t.token)) as StoredTokens;
}

/** {provider: host | null} for every stored token of a settings document (what settings report). */
export function providerTokensSetOf(doc: Pick<SettingsRecord, 'providerTokens'> | null): Partial<Record<ProviderType, string | null>> {
  return Object.fromEntries(Object.entries(storedTokensOf(doc)).map(([provider, t]) => [provider, t.host ?? null]));
}

export interface ProviderToken {
  token: string;
  host: string | null;
  user_id: string | null;
}

export class GitProvidersService {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly providers: Config['providers'],
    /** The bounded, timed HTTP path to providers (src/git/providers/provider-http.ts). */
    private readonly http: ProviderHttp,
  ) {}

  /**
   * The request's map replaces the stored one; an entry without a token keeps the stored token,
   * so the write applies only over the provider map it read (versions.ts), else it starts over.
   */
  async add(userId: string, input: AddGitProvidersInput): Promise<void> {
    const checked = new Set<string>();
    await untilApplied('The git provider tokens', async () => {
      const doc = await this.models.Settings.findOne({ userId }, { providerTokens: 1, providerTokensVersion: 1 }).lean();
      const next = await this.nextTokens(userId, input, storedTokensOf(doc), checked);
      const set = { providerTokens: next, providerTokensUpdatedAt: new Date(), providerTokensVersion: newVersion() };
      try {
        // A first write upserts; one that collides with a document created meanwhile starts over.
        await this.models.Settings.updateOne(
          { userId, providerTokensVersion: doc?.providerTokensVersion ?? null },
          { $set: set },
          { upsert: true },
        );
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    });
  }

  /** The map to store; validates every token first, so a rejected one leaves the stored map untouched. `checked` spares a second look at the provider on a retry. */
  private async nextTokens(userId: string, input: AddGitProvidersInput, stored: StoredTokens, checked: Set<string>): Promise<StoredTokens> {
    const next: StoredTokens = {};
    const validate = async (provider: ProviderType, token: string, host: string | null) => {
      const key = JSON.stringify([provider, token, host]);
      if (checked.has(key)) return;
      await this.validate(provider, token, host);
      checked.add(key);
    };
    for (const [provider, entry] of Object.entries(input.provider_tokens) as [
      ProviderType,
      NonNullable<AddGitProvidersInput['provider_tokens']['github']>,
    ][]) {
      if (!entry) continue;
      const host = entry.host || null;
      const previous = stored[provider];
      if (entry.token && entry.token.trim() !== '') {
        await validate(provider, entry.token, host);
        next[provider] = { token: this.box.encrypt(entry.token, tokenContext(userId, provider)), host, user_id: entry.user_id ?? null };
      } else if (previous) {
        // No new token: keep the stored one, re-validated when it moves to another host.
        if ((previous.host ?? null) !== host) {
          await validate(provider, this.box.decrypt(previous.token, tokenContext(userId, provider)), host);
        }
        next[provider] = { token: previous.token, host, user_id: entry.user_id ?? previous.user_id ?? null };
      }
    }
    return next;
  }

  async unsetAll(userId: string): Promise<void> {
    await this.models.Settings.updateOne(
      { userId },
      { $set: { providerTokens: {}, providerTokensUpdatedAt: new Date(), providerTokensVersion: newVersion() } },
    );
  }

  /** Decrypted tokens for cloning and for the agent (never for responses). */
  async resolve(userId: string): Promise<Partial<Record<ProviderType, ProviderToken>>> {
    const stored = await this.loadStored(userId);
    return Object.fromEntries(
      Object.entries(stored).map(([provider, t]) => [
        provider,
        { token: this.box.decrypt(t.token, tokenContext(userId, provider)), host: t.host ?? null, user_id: t.user_id ?? null },
      ]),
    );
  }

  /**
   * Finds a stored token that can read the repository (declared provider first, then the
   * others, as the reference does) and how to clone it. Null when none can.
   */
  async repositoryAccess(userId: string, repository: string, preferred?: ProviderType | null): Promise<RepositoryAccess | null> {
    const tokens = await this.resolve(userId);
    const order = [...new Set([...(preferred ? [preferred] : []), ...(Object.keys(tokens) as ProviderType[])])];
    let outage: ProviderError | undefined;
    for (const provider of order) {
      const stored = tokens[provider];
      if (!stored || (stored.host && !this.http.hosts.hostAllowed(stored.host))) continue;
      const failure = await this.readRepository(provider, stored.token, stored.host, repository);
      if (failure === null) return { provider, ...cloneCredentials(provider, stored.token, stored.host, repository) };
      if (TRANSIENT_FAILURES.has(failure.kind)) outage ??= failure;
    }
    // A provider that could not answer proves no lack of access: say what happened instead.
    if (outage) throw providerAppError(outage);
    return null;
  }

  /**
   * Whether a pull (merge) request is still open, per the conversation's provider. Anything
   * that cannot be determined (no token, an error, unreachable) counts as open (reference).
   */
  async pullRequestOpen(userId: string, provider: ProviderType | null, repository: string, number: number): Promise<boolean> {
    const tokens = await this.resolve(userId);
    const chosen = provider ?? (Object.keys(tokens)[0] as ProviderType | undefined);
    const stored = chosen ? tokens[chosen] : undefined;
    const base = chosen && stored ? providerApiBase(chosen, stored.host, this.providers) : null;
    if (!chosen || !stored || !base) return true;
    const path = {
      github: `/repos/${repository}/pulls/${number}`,
      enterprise_sso: `/repos/${repository}/pulls/${number}`,
      gitlab: `/projects/${encodeURIComponent(repository)}/merge_requests/${number}`,
      bitbucket: `/repositories/${repository}/pullrequests/${number}`,
    }[chosen];
    try {
      // The guarded client like every provider call: the host rules at call time, no redirects.
      const { body } = await this.http.request<unknown>(base + path, { provider: chosen, host: stored.host, token: stored.token });
      const state = typeof body === 'object' && body !== null ? (body as { state?: unknown }).state : undefined;
      return !['closed', 'merged', 'declined', 'superseded'].includes(String(state ?? '').toLowerCase());
    } catch {
      return true;
    }
  }

  private async loadStored(userId: string): Promise<StoredTokens> {
    return storedTokensOf(await this.models.Settings.findOne({ userId }, { providerTokens: 1 }).lean());
  }

  private async validate(provider: ProviderType, token: string, host: string | null): Promise<void> {
    // Users name the host the service sends their token to: only allowed hosts, when configured (SSRF).
    if (host && !this.http.hosts.hostAllowed(host)) throw hostNotAllowed(host);
    const result = await this.probeToken(provider, token, host);
    // The host's name was allowed but it resolved to an address that is not.
    if (result === 'refused') throw hostNotAllowed(host ?? '');
    if (result === 'invalid') {
      throw new AppError('UNAUTHORIZED', `Invalid token. Please make sure it is a valid ${provider} token.`, {
        reason: 'invalid_provider_token',
      });
    }
    if (result === 'unreachable') {
      throw new AppError('BAD_GATEWAY', `Could not reach ${provider} to validate the token`, { reason: 'provider_unreachable' });
    }
  }

  /**
   * A token check: GET <api>/user must answer a user (an object with its id). The provider refusing the token
   * (401, 403) means invalid; anything else (down, a redirect, 404, not a user) means the host
   * is no working provider API: unreachable.
   */
  private async probeToken(provider: ProviderType, token: string, host: string | null): Promise<ProbeResult> {
    const base = providerApiBase(provider, host, this.providers);
    // A token that cannot even be sent in a header is not a token.
    if (!base || !/^[\x21-\x7e]+$/.test(token)) return 'invalid';
    try {
      const { body } = await this.http.request<unknown>(`${base}/user`, { provider, host, token });
      return userIdIn(body) !== null ? 'valid' : 'unreachable';
    } catch (error) {
      const kind = error instanceof ProviderError ? error.kind : undefined;
      if (kind === 'host_not_allowed') return 'refused';
      return kind === 'unauthorized' || kind === 'forbidden' ? 'invalid' : 'unreachable';
    }
  }

  /** Null when the token reads the repository, else the provider's failure. */
  private async readRepository(
    provider: ProviderType,
    token: string,
    host: string | null,
    repository: string,
  ): Promise<ProviderError | null> {
    const base = providerApiBase(provider, host, this.providers);
    if (!base) return new ProviderError(provider, 'not_found', `No ${provider} API for this token`);
    const path =
      provider === 'gitlab'
        ? `/projects/${encodeURIComponent(repository)}`
        : provider === 'bitbucket'
          ? `/repositories/${repository}`
          : `/repos/${repository}`;
    try {
      await this.http.request(base + path, { provider, host, token, expect: 'text' });
      return null;
    } catch (error) {
      return error instanceof ProviderError ? error : new ProviderError(provider, 'unavailable', `Could not reach ${provider}`);
    }
  }
}

/** Failures that say nothing about access: the provider was down, busy or rate-limited. */
const TRANSIENT_FAILURES = new Set<ProviderFailure>(['unavailable', 'busy', 'rate_limited']);

export const tokenContext = (userId: string, provider: string) => `git:${userId}:${provider}`;

export interface RepositoryAccess {
  provider: ProviderType;
  cloneUrl: string;
  username: string;
  password: string;
  token: string;
}

const hostNotAllowed = (host: string) =>
  new AppError('UNPROCESSABLE_CONTENT', `Git provider host ${host} is not allowed here (GIT_PROVIDER_HOSTS)`, {
    reason: 'provider_host_not_allowed',
  });

/** Clone URL (never carrying the token) and the credentials git should be given. */
function cloneCredentials(provider: ProviderType, token: string, host: string | null, repository: string) {
  const defaults: Record<ProviderType, string> = {
    github: 'https://github.com',
    gitlab: 'https://gitlab.com',
    bitbucket: 'https://bitbucket.org',
    enterprise_sso: 'https://github.com',
  };
  const origin = host ? originOf(host) : defaults[provider];
  const [user, appPassword] = provider === 'bitbucket' && token.includes(':') ? token.split(/:(.*)/s) : [];
  const username =
    user ?? { github: 'x-access-token', gitlab: 'oauth2', bitbucket: 'x-token-auth', enterprise_sso: 'x-access-token' }[provider];
  return { cloneUrl: `${origin}/${repository}.git`, username, password: appPassword ?? token, token };
}
