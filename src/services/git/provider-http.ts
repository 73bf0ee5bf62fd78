// The one HTTP path to git providers. Every call has a deadline (PROVIDER_TIMEOUT_MS, covering
// the wait for a slot, the request and the body), the process holds at most
// PROVIDER_MAX_CONCURRENCY calls open (and at most half of them on one host, so one slow
// provider cannot starve the others), bodies are capped, redirects are not followed (the
// token stays with the host it was meant for), and failures become a ProviderError with our
// own words: no upstream text and no token ever reaches a message or a log line.
import type { ProviderType } from '../../../contract/common.schema.js';
import type { Logger } from '../../logger.js';
import { authorizationFor } from './provider-api.js';
import { Limiter } from './limiter.js';

export type ProviderFailure = 'unauthorized' | 'forbidden' | 'not_found' | 'rate_limited' | 'unavailable' | 'busy';

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
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const MAX_QUEUED = 1000;

export class ProviderHttp {
  private readonly all: Limiter;
  private readonly perHost = new Map<string, Limiter>();
  private readonly perHostMax: number;

  constructor(private readonly options: ProviderHttpOptions) {
    this.all = new Limiter(options.maxConcurrent);
    this.perHostMax = Math.max(1, Math.ceil(options.maxConcurrent / 2));
  }

  async request<T = unknown>(url: string, call: ProviderCall): Promise<ProviderAnswer<T>> {
    const { provider } = call;
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const deadline = Date.now() + this.options.timeoutMs;
    const host = new URL(url).host;
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
      const response = await fetch(url, {
        method: call.method ?? 'GET',
        headers: {
          authorization: authorizationFor(provider, call.token),
          accept: call.accept ?? 'application/json',
          'user-agent': 'agent-control-plane',
          ...(call.json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: call.json === undefined ? undefined : JSON.stringify(call.json),
        redirect: 'manual',
        signal,
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw this.statusError(provider, response);
      }
      const text = await readCapped(response, provider);
      const body = (call.expect ?? 'json') === 'json' ? parseJson(text, provider) : text;
      return { body: body as T, link: response.headers.get('link'), total: response.headers.get('x-total') };
    } catch (error) {
      const failure = error instanceof ProviderError ? error : this.transportError(provider, error, signal);
      // Not-found and refusals are answers (a repository without microagents); the rest is trouble.
      const level = failure.kind === 'not_found' || failure.kind === 'unauthorized' || failure.kind === 'forbidden' ? 'debug' : 'warn';
      this.options.log[level]({ provider, host, kind: failure.kind, reason: failure.message }, 'git provider call failed');
      throw failure;
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

  private statusError(provider: ProviderType, response: Response): ProviderError {
    const status = response.status;
    const failure = (kind: ProviderFailure, message: string, retryAfter?: number) =>
      new ProviderError(provider, kind, message, retryAfter, status);
    if (status === 401) return failure('unauthorized', `Invalid ${provider} token`);
    // GitHub signals an exhausted rate limit with 403 and remaining 0 (or a Retry-After).
    const limited = response.headers.get('x-ratelimit-remaining') === '0' || response.headers.has('retry-after');
    if (status === 429 || (status === 403 && limited)) {
      return failure('rate_limited', `${provider} rate limit reached; try again later`, retryAfterSeconds(response.headers) ?? 60);
    }
    if (status === 403) return failure('forbidden', `${provider} refused access (HTTP 403): the token may lack a permission`);
    if (status === 404 || (status >= 300 && status < 400)) return failure('not_found', `Not found on ${provider}`);
    if (status >= 500) return failure('unavailable', `${provider} is failing (HTTP ${status})`);
    return failure('unavailable', `${provider} refused the request (HTTP ${status})`);
  }

  private transportError(provider: ProviderType, error: unknown, signal: AbortSignal): ProviderError {
    if (signal.aborted) {
      return new ProviderError(provider, 'unavailable', `${provider} did not answer within ${this.options.timeoutMs} ms`);
    }
    const code = (error as { cause?: { code?: string } }).cause?.code;
    return new ProviderError(provider, 'unavailable', `Could not reach ${provider}${code ? ` (${code})` : ''}`);
  }
}

async function readCapped(response: Response, provider: ProviderType): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new ProviderError(provider, 'unavailable', `${provider} sent a response over ${MAX_BODY_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, provider: ProviderType): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(provider, 'unavailable', `${provider} sent a response that is not JSON`);
  }
}

function retryAfterSeconds(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value && /^\d+$/.test(value)) return Math.min(Number(value), 3600);
  const reset = headers.get('x-ratelimit-reset');
  if (reset && /^\d+$/.test(reset)) return Math.max(1, Math.min(Number(reset) - Math.floor(Date.now() / 1000), 3600));
  return undefined;
}
