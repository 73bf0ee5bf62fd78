// Request limits, in process: token buckets per user, per sandbox and per client IP (shared by
// REST and tRPC, so switching transports does not reset them), and counting gates for expensive
// operations. A request is charged to what its credentials prove (a user, or a sandbox for the
// agent servers' callbacks), and to its client address only when it carries none or they prove
// nothing (src/http/pipeline.ts): every local sandbox calls back from 127.0.0.1, so one address
// bucket for them all would let one chatty sandbox silence the others. Each check is O(1) and
// never touches the database. With several replicas each holds its own buckets, so a client
// spread over N replicas gets up to N times the limit.
import { AppError } from './errors.js';

/** Buckets kept at most; idle (full) buckets are dropped first when there are more. */
const MAX_BUCKETS = 100_000;

export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

/** A token bucket per key: `capacity` requests, refilled at capacity per window. */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    readonly capacity: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = capacity / windowMs;
  }

  /** Takes `cost` tokens (clamped to the capacity) from the key's bucket, or says when to retry. */
  take(key: string, cost = 1): Take {
    const now = this.now();
    const need = Math.min(cost, this.capacity);
    const bucket = this.buckets.get(key) ?? this.add(key, now);
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    if (bucket.tokens >= need) {
      bucket.tokens -= need;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((need - bucket.tokens) / this.perMs / 1000)) };
  }

  get size(): number {
    return this.buckets.size;
  }

  private add(key: string, now: number) {
    if (this.buckets.size >= MAX_BUCKETS) this.evict(now);
    const bucket = { tokens: this.capacity, at: now };
    this.buckets.set(key, bucket);
    return bucket;
  }

  /** Drops buckets that have refilled (their keys are idle), then the oldest if still full. */
  private evict(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.capacity) this.buckets.delete(key);
    }
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < MAX_BUCKETS) break;
      this.buckets.delete(key);
    }
  }
}

/** At most `limit` operations at once; a caller over it is refused at once rather than queued. */
export class ConcurrencyGate {
  private running = 0;

  constructor(
    readonly limit: number,
    private readonly busy: () => AppError,
  ) {}

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) throw this.busy();
    this.running++;
    try {
      return await operation();
    } finally {
      this.running--;
    }
  }

  get inFlight(): number {
    return this.running;
  }
}

export interface RateLimitSettings {
  /** Requests per window per user; null = off. */
  perUser: number | null;
  /** Requests per window per client IP, of requests no credential vouches for; null = off. */
  perIp: number | null;
  /** Callbacks per window per sandbox (its session key proven); null = off. */
  perSandbox: number | null;
  windowMs: number;
}

export function rateLimited(retryAfterSeconds: number): AppError {
  return new AppError('TOO_MANY_REQUESTS', 'Too many requests', { reason: 'rate_limited', retryAfterSeconds });
}

export function createRateLimits(settings: RateLimitSettings) {
  const user = settings.perUser === null ? null : new TokenBuckets(settings.perUser, settings.windowMs);
  const ip = settings.perIp === null ? null : new TokenBuckets(settings.perIp, settings.windowMs);
  const sandbox = settings.perSandbox === null ? null : new TokenBuckets(settings.perSandbox, settings.windowMs);
  const check = (buckets: TokenBuckets | null, key: string, cost: number) => {
    const taken = buckets?.take(key, cost) ?? { ok: true };
    if (!taken.ok) throw rateLimited(taken.retryAfterSeconds);
  };
  return {
    /** Throws AppError TOO_MANY_REQUESTS (reason rate_limited) when the user is over the limit. */
    user: (userId: string, cost = 1) => check(user, userId, cost),
    /** The same for a sandbox whose session key the request proved (never a sandbox id merely named). */
    sandbox: (sandboxId: string, cost = 1) => check(sandbox, sandboxId, cost),
    /** The same for a client address: requests without credentials, or whose credentials proved nothing. */
    ip: (address: string, cost = 1) => check(ip, address, cost),
  };
}

export type RateLimits = ReturnType<typeof createRateLimits>;
