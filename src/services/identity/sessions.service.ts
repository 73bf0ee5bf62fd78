// Browser sessions: a person signs in once with an API key; from then on a random session id
// in an HttpOnly cookie authenticates the browser. The database holds only the id's SHA-256,
// the user, the key the session was opened with (revoking the key ends its sessions) and the
// times. Sessions end at their expiry (SESSION_TTL_SECONDS, absolute), after SESSION_IDLE_SECONDS
// without use, at sign-out (of that browser, or of every browser of the user), or with their key.
import crypto from 'node:crypto';
import type { SessionModel } from '../../../models/index.js';
import { IDENTITY_KEY_PREFIX } from './api-keys.service.js';
import { sha256 } from '../../crypto.js';
import { AppError } from '../../errors.js';
import type { ApiKeysService } from './api-keys.service.js';
import { VerifiedCache, type VerifiedCacheOptions } from './verified-cache.js';

/** 32 random bytes, base64url (43 characters, no padding). */
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** The key id an identity provider's session stands on (api-keys.service.ts: always active). */
export const identityKeyId = (userId: string) => `${IDENTITY_KEY_PREFIX}${userId}`;

export interface OpenedSession {
  /** The secret the cookie carries; never stored. */
  sessionId: string;
  userId: string;
  expiresAt: Date;
}

export interface ActiveSession {
  userId: string;
  expiresAt: Date;
}

const unauthorized = () => new AppError('UNAUTHORIZED', 'Unauthorized');
const storedId = (sessionId: string) => sha256(sessionId).toString('hex');

interface VerifiedSession extends ActiveSession {
  apiKeyId: string;
}

/** A session's last use is written at most this often (the idle timeout's granularity). */
const SEEN_WRITE_MS = 60_000;

export class SessionsService {
  /** Sessions verified in the last AUTH_CACHE_TTL_MS (the bound for sign-out and revocation on other processes). */
  private readonly verified: VerifiedCache<VerifiedSession>;

  constructor(
    private readonly Session: SessionModel,
    private readonly apiKeys: ApiKeysService,
    private readonly ttlSeconds: number,
    cache: VerifiedCacheOptions = { ttlMs: 0 },
    /** SESSION_IDLE_SECONDS: a session not used for this long has ended (null: no idle timeout). */
    private readonly idleSeconds: number | null = null,
  ) {
    this.verified = new VerifiedCache(cache);
    this.now = cache.now ?? Date.now;
  }

  private readonly now: () => number;

  get ttl(): number {
    return this.ttlSeconds;
  }

  /**
   * Opens a session for the user of a valid API key; UNAUTHORIZED for anything else. A session
   * the browser still presented (`replacing`) ends once the new one exists: every sign-in gets a
   * fresh id, and no id known from before the sign-in stays valid (session fixation).
   */
  async open(presentedKey: string | undefined, replacing?: string): Promise<OpenedSession> {
    const identity = presentedKey ? await this.apiKeys.authenticateApiKey(presentedKey) : null;
    // An automation key opens only what runs use (src/automations/automation-key-scope.ts): no session.
    if (!identity || identity.purpose === 'automation') throw unauthorized();
    // A session ends with its key: at the key's expiry, if that comes first.
    const keyEnds = await this.apiKeys.activeUntil(identity.keyId);
    if (keyEnds === false) throw unauthorized();
    const sessionId = crypto.randomBytes(32).toString('base64url');
    const createdAt = new Date();
    const ttlEnds = createdAt.getTime() + this.ttlSeconds * 1000;
    const expiresAt = new Date(keyEnds ? Math.min(ttlEnds, keyEnds.getTime()) : ttlEnds);
    const _id = storedId(sessionId);
    await this.Session.create({ _id, userId: identity.userId, apiKeyId: identity.keyId, createdAt, expiresAt });
    // A key revoked while the session was being written must not leave the session behind.
    if (!(await this.apiKeys.isActive(identity.keyId))) {
      await this.Session.deleteOne({ _id });
      throw unauthorized();
    }
    if (replacing !== undefined) await this.close(replacing);
    await this.Session.deleteMany({ expiresAt: { $lte: createdAt } }); // housekeeping: expired sessions
    return { sessionId, userId: identity.userId, expiresAt };
  }

  /**
   * Opens a session for a user the identity provider vouched for (docs/oidc.md): no API key
   * behind it, so it lives its whole lifetime unless its user signs out.
   */
  async openForIdentity(userId: string, replacing?: string): Promise<OpenedSession> {
    const sessionId = crypto.randomBytes(32).toString('base64url');
    const createdAt = new Date();
    const expiresAt = new Date(createdAt.getTime() + this.ttlSeconds * 1000);
    await this.Session.create({ _id: storedId(sessionId), userId, apiKeyId: identityKeyId(userId), createdAt, expiresAt });
    if (replacing !== undefined) await this.close(replacing);
    return { sessionId, userId, expiresAt };
  }

  /** The session's user and expiry, or null for a malformed, unknown, expired or ended session. */
  async authenticateSession(sessionId: string): Promise<ActiveSession | null> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return null;
    const session = await this.verified.get(sessionId, () => this.verify(sessionId));
    // A remembered session still ends at its expiry.
    return session && session.expiresAt.getTime() > this.now() ? { userId: session.userId, expiresAt: session.expiresAt } : null;
  }

  private async verify(sessionId: string): Promise<VerifiedSession | null> {
    const now = this.now();
    const doc = await this.Session.findOne({ _id: storedId(sessionId), expiresAt: { $gt: new Date(now) } }).lean();
    if (!doc) return null;
    const seen = (doc.lastSeenAt ?? doc.createdAt).getTime();
    if (this.idleSeconds !== null && now - seen > this.idleSeconds * 1000) {
      await this.Session.deleteOne({ _id: doc._id });
      return null;
    }
    // Used now: its idle time starts again (written once a minute at most, not on every request).
    if (now - seen >= SEEN_WRITE_MS) await this.Session.updateOne({ _id: doc._id }, { $set: { lastSeenAt: new Date(now) } });
    // A session lives only as long as its key. Revoking deletes the key's sessions; this check
    // also covers a revocation whose deletion never ran (a CLI killed in between, an older
    // CLI) and SESSION_API_KEY, which has no record: its sessions end when the key changes.
    if (!(await this.apiKeys.isActive(doc.apiKeyId))) return null;
    return { userId: doc.userId, expiresAt: doc.expiresAt, apiKeyId: doc.apiKeyId };
  }

  /** Signs out: the session record is deleted. */
  async close(sessionId: string): Promise<void> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return;
    await this.Session.deleteOne({ _id: storedId(sessionId) });
    this.verified.forgetCredential(sessionId);
  }

  /** Signs the user out everywhere: every browser session of theirs ends (other replicas: within the cache's bound). */
  async closeAllOf(userId: string): Promise<number> {
    const { deletedCount } = await this.Session.deleteMany({ userId });
    this.verified.forget((session) => session.userId === userId);
    return deletedCount;
  }

  /** Ends every session opened with the key (called when the key is revoked). */
  async endForKey(keyId: string): Promise<void> {
    await this.Session.deleteMany({ apiKeyId: keyId });
    this.verified.forget((session) => session.apiKeyId === keyId);
  }
}
