// The one HTTP path to git providers. Every call is checked against the host rules first
// (provider-hosts.ts: the configured roots, or the user's host if allowed, at allowed
// addresses only), has a deadline (PROVIDER_TIMEOUT_MS, covering the wait for a slot, the
// request and the body), the process holds at most PROVIDER_MAX_CONCURRENCY calls open (and
// at most half of them on one host, so one slow provider cannot starve the others), bodies
// are capped, redirects are not followed (the token stays with the host it was meant for), and
// failures become a ProviderError with our own words: no upstream text and no token ever
// reaches a message or a log line. On a host a user named, every failure of the exchange
// reads the same (closed port, timeout, garbage, wrong status), so the service is no probe.
import type { ProviderType } from '../../../contract/common.schema.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { agentsFor, readCapped, send, type Answer } from './http-send.js';
import { authorizationFor } from './provider-api.js';
import { AddressRefusedError, type ProviderHostPolicy, type Reach } from './provider-hosts.js';
import { Limiter } from './limiter.js';

export type ProviderFailure = 'unauthorized' | 'forbidden' | 'not_found' | 'rate_limited' | 'unavailable' | 'busy' | 'host_not_allowed';

export class ProviderError extends Error {
  constructor(
    readonly provider: ProviderType,
    readonly kind: ProviderFailure,
    message: string,
    readonly retryAfterSeconds?: number,
    /** The provider's HTTP status, when it answered one. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface ProviderAnswer<T> {
  body: T;
  /** The Link header (paging), or null. */
  link: string | null;
  /** GitLab's X-Total, or null. */
  total: string | null;
}

export interface ProviderCall {
  provider: ProviderType;
  /** The host the user stored with the token, or null for the configured API root. */
  host: string | null;
  token: string;
  method?: 'GET' | 'POST';
  /** JSON request body (GraphQL). */
  json?: unknown;
  /** 'json' parses the answer; 'text' returns it as is. */
  expect?: 'json' | 'text';
  /** Accept header (GitHub wants its media type). */
  accept?: string;
}

export interface ProviderHttpOptions {
  timeoutMs: number;
  maxConcurrent: number;
  log: Logger;
  hosts: ProviderHostPolicy;
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const MAX_QUEUED = 1000;

export class ProviderHttp {
  private readonly all: Limiter;
  private readonly perHost = new Map<string, Limiter>();
  private readonly perHostMax: number;
  /** Connections of each reach apart, so a socket opened for a trusted host never serves a checked one. */
  private readonly agents: Record<Reach, ReturnType<typeof agentsFor>>;

  constructor(private readonly options: ProviderHttpOptions) {
    this.all = new Limiter(options.maxConcurrent);
    this.perHostMax = Math.max(1, Math.ceil(options.maxConcurrent / 2));
    this.agents = { any: agentsFor(), checked: agentsFor(options.hosts.lookup) };
  }

  /** The host rules every call obeys (callers ask them before storing a user's host). */
  get hosts(): ProviderHostPolicy {
    return this.options.hosts;
  }

  async request<T = unknown>(url: string, call: ProviderCall): Promise<ProviderAnswer<T>> {
    const { provider } = call;
    const decision = this.options.hosts.decide(url, call.host);
    if (!decision) {
      this.options.log.warn({ provider, kind: 'host_not_allowed' }, 'git provider call refused');
      throw hostNotAllowed(provider, call.host);
    }
    const target = new URL(url);
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const deadline = Date.now() + this.options.timeoutMs;
    const host = target.host;
    if (this.all.queued >= MAX_QUEUED) throw this.busy(provider);
    let release: (() => void) | undefined;
    try {
      const releaseHost = await this.hostLimiter(host).acquire(signal);
      try {
        const releaseAll = await this.all.acquire(signal);
        release = () => (releaseAll(), releaseHost());
      } catch (error) {
        releaseHost();
        throw error;
      }
    } catch {
      throw this.busy(provider);
    }
    // The deadline went (almost) all on waiting for a slot: opening a call now could not finish.
    if (signal.aborted || deadline - Date.now() < Math.min(100, this.options.timeoutMs / 10)) {
      release();
      throw this.busy(provider);
    }
    try {
      const response = await send(target, {
        method: call.method ?? 'GET',
        headers: {
          authorization: authorizationFor(provider, call.token),
          accept: call.accept ?? 'application/json',
          'user-agent': 'agent-control-plane',
          ...(call.json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(call.json === undefined ? {} : { body: JSON.stringify(call.json) }),
        agent: this.agents[decision.reach][target.protocol as 'http:' | 'https:'],
        signal,
      });
      if (response.status < 200 || response.status > 299) {
        response.body.destroy();
        throw this.statusError(provider, response);
      }
      const text = await readCapped(
        response.body,
        MAX_BODY_BYTES,
        () => new ProviderError(provider, 'unavailable', `${provider} sent a response over ${MAX_BODY_BYTES / 1024 / 1024} MiB`),
      );
      const body = (call.expect ?? 'json') === 'json' ? parseJson(text, provider) : text;
      return { body: body as T, link: response.header('link'), total: response.header('x-total') };
    } catch (error) {
      const failure = error instanceof ProviderError ? error : this.transportError(provider, error, signal, call.host);
      // Not-found and refusals are answers (a repository without microagents); the rest is trouble.
      const level = failure.kind === 'not_found' || failure.kind === 'unauthorized' || failure.kind === 'forbidden' ? 'debug' : 'warn';
      const code = error instanceof ProviderError ? undefined : (error as { code?: unknown } | null)?.code;
      this.options.log[level]({ provider, host, kind: failure.kind, reason: failure.message, code }, 'git provider call failed');
      // The log keeps the cause; the caller learns only that the user's host did not answer.
      throw decision.userNamed && failure.kind === 'unavailable' ? unreachable(provider) : failure;
    } finally {
      release?.();
    }
  }

  private hostLimiter(host: string): Limiter {
    let limiter = this.perHost.get(host);
    if (!limiter) this.perHost.set(host, (limiter = new Limiter(this.perHostMax)));
    return limiter;
  }

  private busy(provider: ProviderType): ProviderError {
    return new ProviderError(provider, 'busy', 'Too many git provider requests in progress; try again shortly', 1);
  }

  private statusError(provider: ProviderType, response: Answer): ProviderError {
    const status = response.status;
    const failure = (kind: ProviderFailure, message: string, retryAfter?: number) =>
      new ProviderError(provider, kind, message, retryAfter, status);
    if (status === 401) return failure('unauthorized', `Invalid ${provider} token`);
    // GitHub signals an exhausted rate limit with 403 and remaining 0 (or a Retry-After).
    const limited = response.header('x-ratelimit-remaining') === '0' || response.header('retry-after') !== null;
    if (status === 429 || (status === 403 && limited)) {
      return failure('rate_limited', `${provider} rate limit reached; try again later`, retryAfterSeconds(response.header) ?? 60);
    }
    if (status === 403) return failure('forbidden', `${provider} refused access (HTTP 403): the token may lack a permission`);
    if (status === 404) return failure('not_found', `Not found on ${provider}`);
    if (status >= 300 && status < 400) return failure('unavailable', `${provider} answered with a redirect (not followed)`);
    if (status >= 500) return failure('unavailable', `${provider} is failing (HTTP ${status})`);
    return failure('unavailable', `${provider} refused the request (HTTP ${status})`);
  }

  private transportError(provider: ProviderType, error: unknown, signal: AbortSignal, host: string | null): ProviderError {
    if (error instanceof AddressRefusedError) return hostNotAllowed(provider, host);
    if (signal.aborted) {
      return new ProviderError(provider, 'unavailable', `${provider} did not answer within ${this.options.timeoutMs} ms`);
    }
    // The error code (ECONNREFUSED, ECONNRESET…) goes to the log only: it tells ports apart.
    return new ProviderError(provider, 'unavailable', `Could not reach ${provider}`);
  }
}

const hostNotAllowed = (provider: ProviderType, host: string | null) =>
  new ProviderError(provider, 'host_not_allowed', `Git provider host ${host ?? ''} is not allowed here (GIT_PROVIDER_HOSTS)`);

const unreachable = (provider: ProviderType) => new ProviderError(provider, 'unavailable', `Could not reach ${provider}`);

function parseJson(text: string, provider: ProviderType): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(provider, 'unavailable', `${provider} sent a response that is not JSON`);
  }
}

function retryAfterSeconds(header: Answer['header']): number | undefined {
  const value = header('retry-after');
  if (value && /^\d+$/.test(value)) return Math.min(Number(value), 3600);
  const reset = header('x-ratelimit-reset');
  if (reset && /^\d+$/.test(reset)) return Math.max(1, Math.min(Number(reset) - Math.floor(Date.now() / 1000), 3600));
  return undefined;
}

/** A provider's failure as the service answers it (the contract's 401/403/404/429/502/503). */
export function providerAppError(error: ProviderError, unauthorizedMessage?: string): AppError {
  switch (error.kind) {
    case 'unauthorized':
      return new AppError('UNAUTHORIZED', unauthorizedMessage ?? error.message, { reason: 'invalid_provider_token' });
    case 'forbidden':
      return new AppError('FORBIDDEN', error.message, { reason: 'provider_refused' });
    case 'not_found':
      return new AppError('NOT_FOUND', error.message, { reason: 'provider_not_found' });
    case 'rate_limited':
      return new AppError('TOO_MANY_REQUESTS', error.message, {
        reason: 'provider_rate_limited',
        retryAfterSeconds: error.retryAfterSeconds ?? 60,
      });
    case 'busy':
      return new AppError('SERVICE_UNAVAILABLE', error.message, {
        reason: 'provider_busy',
        retryAfterSeconds: error.retryAfterSeconds ?? 1,
      });
    case 'unavailable':
      return new AppError('BAD_GATEWAY', error.message, { reason: 'provider_unreachable' });
    case 'host_not_allowed':
      // A token stored with a host the rules no longer allow: nothing was sent.
      return new AppError('FORBIDDEN', error.message, { reason: 'provider_host_not_allowed' });
  }
}
