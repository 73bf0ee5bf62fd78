// A short-lived in-process memory of credentials that were verified against the database, so
// that a client sending the same key many times a second costs one lookup per TTL instead of
// one per request. Entries are keyed by the SHA-256 of the whole presented credential (the
// secret part included): a different or altered credential never matches another's entry, and
// the map holds no credential in clear. Only successful verifications are remembered.
//
// The price is staleness: a credential revoked elsewhere (another replica, the CLI) keeps
// working here until its entry expires, so the TTL is the revocation bound; the process that
// revokes calls forget() and stops accepting it at once. API keys and browser sessions use it.
import { sha256 } from '../../crypto.js';

interface Entry<T> {
  value: T;
  expiresAt: number;
}

export interface VerifiedCacheOptions {
  /** How long a verification is trusted; 0 turns the cache off. */
  ttlMs: number;
  /** Oldest entries go first beyond this many. */
  maxEntries?: number;
  /** The clock (tests move it instead of waiting). */
  now?: () => number;
}

export class VerifiedCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  /** Verifications under way, so a burst with one new credential makes one lookup. */
  private readonly pending = new Map<string, Promise<T | null>>();
  /** Bumped by forget(): a verification that started before it is not remembered. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: VerifiedCacheOptions) {
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The remembered value for this credential, else verify(); a null result is not remembered. */
  async get(credential: string, verify: () => Promise<T | null>): Promise<T | null> {
    if (this.ttlMs <= 0) return verify();
    const id = sha256(credential).toString('base64');
    const entry = this.entries.get(id);
    if (entry) {
      if (entry.expiresAt > this.now()) return entry.value;
      this.entries.delete(id);
    }
    const running = this.pending.get(id);
    if (running) return running;
    const startedAt = this.now();
    const generation = this.generation;
    const verifying = verify()
      .then((value) => {
        // Trusted from when the lookup started, so the bound holds even for a slow lookup.
        if (value !== null && generation === this.generation) this.remember(id, value, startedAt + this.ttlMs);
        return value;
      })
      .finally(() => {
        if (this.pending.get(id) === verifying) this.pending.delete(id);
      });
    this.pending.set(id, verifying);
    return verifying;
  }

  /** Drops the entry of one credential (e.g. a session signed out). */
  forgetCredential(credential: string): void {
    this.generation++;
    this.pending.clear();
    this.entries.delete(sha256(credential).toString('base64'));
  }

  /** Drops every entry whose value matches (e.g. all entries of a revoked key). */
  forget(matches: (value: T) => boolean): void {
    this.generation++;
    this.pending.clear(); // requests from now on verify afresh
    for (const [id, entry] of this.entries) if (matches(entry.value)) this.entries.delete(id);
  }

  get size(): number {
    return this.entries.size;
  }

  private remember(id: string, value: T, expiresAt: number): void {
    this.entries.delete(id);
    this.entries.set(id, { value, expiresAt });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
