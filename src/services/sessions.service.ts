// Browser sessions: a person signs in once with an API key; from then on a random session id
// in an HttpOnly cookie authenticates the browser. The database holds only the id's SHA-256,
// the user, the key the session was opened with (revoking the key ends its sessions) and the
// times. Sessions end at their expiry (SESSION_TTL_SECONDS), at sign-out, or with their key.
import crypto from 'node:crypto';
import type { SessionModel } from '../../models/index.js';
import { sha256 } from '../crypto.js';
import { AppError } from '../errors.js';
import { isEnvironmentKeyId, type ApiKeysService } from './api-keys.service.js';

/** 32 random bytes, base64url (43 characters, no padding). */
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

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

export class SessionsService {
  constructor(
    private readonly Session: SessionModel,
    private readonly apiKeys: ApiKeysService,
    private readonly ttlSeconds: number,
  ) {}

  get ttl(): number {
    return this.ttlSeconds;
  }

  /** Opens a session for the user of a valid API key; UNAUTHORIZED for anything else. */
  async open(presentedKey: string | undefined): Promise<OpenedSession> {
    const identity = presentedKey ? await this.apiKeys.identify(presentedKey) : null;
    if (!identity) throw unauthorized();
    const sessionId = crypto.randomBytes(32).toString('base64url');
    const createdAt = new Date();
    const expiresAt = new Date(createdAt.getTime() + this.ttlSeconds * 1000);
    const _id = storedId(sessionId);
    await this.Session.create({ _id, userId: identity.userId, apiKeyId: identity.keyId, createdAt, expiresAt });
    // A key revoked while the session was being written must not leave the session behind.
    if (!(await this.apiKeys.isActive(identity.keyId))) {
      await this.Session.deleteOne({ _id });
      throw unauthorized();
    }
    await this.Session.deleteMany({ expiresAt: { $lte: createdAt } }); // housekeeping: expired sessions
    return { sessionId, userId: identity.userId, expiresAt };
  }

  /** The session's user and expiry, or null for a malformed, unknown, expired or ended session. */
  async authenticate(sessionId: string): Promise<ActiveSession | null> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return null;
    const doc = await this.Session.findOne({ _id: storedId(sessionId), expiresAt: { $gt: new Date() } }).lean();
    if (!doc) return null;
    // Stored keys delete their sessions when revoked; SESSION_API_KEY has no record to revoke,
    // so its sessions end when the configured key changes.
    if (isEnvironmentKeyId(doc.apiKeyId) && !(await this.apiKeys.isActive(doc.apiKeyId))) return null;
    return { userId: doc.userId, expiresAt: doc.expiresAt };
  }

  /** Signs out: the session record is deleted. */
  async close(sessionId: string): Promise<void> {
    if (SESSION_ID_PATTERN.test(sessionId)) await this.Session.deleteOne({ _id: storedId(sessionId) });
  }

  /** Ends every session opened with the key (called when the key is revoked). */
  async endForKey(keyId: string): Promise<void> {
    await this.Session.deleteMany({ apiKeyId: keyId });
  }
}
