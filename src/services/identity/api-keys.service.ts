// API keys: each belongs to a user. Keys look like "ohk_<keyId>_<secret>"; only the
// SHA-256 of the secret is stored. Lookup goes by key id (never by the secret), then the
// hashes are compared in constant time.
import crypto from 'node:crypto';
import type { ApiKeyModel, ApiKeyRecord } from '../../../models/index.js';
import { randomBase62, secretsEqual, sha256 } from '../../crypto.js';
import { AppError } from '../../errors.js';
import { VerifiedCache, type VerifiedCacheOptions } from './verified-cache.js';

export const DEFAULT_USER_ID = 'default';
const KEY_PATTERN = /^ohk_([0-9A-Za-z]{12})_([0-9A-Za-z]{40})$/;
const ENV_KEY_PREFIX = 'env:';
/** Sessions an identity provider opened (OIDC) stand on no stored key: this prefix and the user id. */
export const IDENTITY_KEY_PREFIX = 'oidc:';
/** Whether a key id (from authenticateApiKey) is SESSION_API_KEY's derived one rather than a stored key's. */
export const isEnvironmentKeyId = (keyId: string) => keyId.startsWith(ENV_KEY_PREFIX);
export const USER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

export interface ApiKeyInfo {
  id: string;
  userId: string;
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  /** The organisation the key acts in, whatever a request names (POST /api/keys org_id); null: none bound. */
  orgId: string | null;
}

interface VerifiedKey {
  keyId: string;
  userId: string;
  expiresAt: Date | null;
  orgId: string | null;
  /** 'automation': a key the automation service and its runs act with (src/automations/automation-access.ts). */
  purpose: string | null;
}

/** A key's last use is written at most this often per process (one write per key and minute, not per request). */
const USE_STAMP_MS = 60_000;

export class ApiKeysService {
  /** Keys verified in the last AUTH_CACHE_TTL_MS: the revocation bound on other processes. */
  private readonly verified: VerifiedCache<VerifiedKey>;
  /** When this process last wrote each key's lastUsedAt. */
  private readonly stamped = new Map<string, number>();

  constructor(
    private readonly ApiKey: ApiKeyModel,
    /** SESSION_API_KEY: single-user mode, the key of user "default". */
    private readonly sessionApiKey: string | undefined,
    /** Called after a key is revoked (its browser sessions end with it). */
    private readonly onRevoke: (keyId: string) => Promise<void> = async () => {},
    cache: VerifiedCacheOptions = { ttlMs: 0 },
  ) {
    this.verified = new VerifiedCache(cache);
    this.now = cache.now ?? Date.now;
  }

  /** The clock of expiries (tests move it instead of waiting). */
  private readonly now: () => number;

  async create(
    userId: string,
    label: string | null = null,
    expiresAt: Date | null = null,
    orgId: string | null = null,
  ): Promise<{ key: string; info: ApiKeyInfo }> {
    if (!USER_ID_PATTERN.test(userId)) {
      throw new AppError('BAD_REQUEST', 'User ids are 1-128 characters: letters, digits, ".", "_", "@" or "-"');
    }
    const id = randomBase62(12);
    const secret = randomBase62(40);
    const doc = await this.ApiKey.create({ _id: id, userId, secretHash: sha256(secret).toString('hex'), label, expiresAt, orgId });
    return { key: `ohk_${id}_${secret}`, info: toInfo(doc.toObject()) };
  }

  async list(userId?: string): Promise<ApiKeyInfo[]> {
    const docs = await this.ApiKey.find(userId ? { userId } : {})
      .sort({ createdAt: 1 })
      .lean();
    return docs.map(toInfo);
  }

  /** Revokes one of the user's own keys; false when the user has no active key with that id. */
  async revokeOwn(userId: string, keyId: string): Promise<boolean> {
    const own = await this.ApiKey.exists({ _id: keyId, userId, revokedAt: null });
    return own !== null && this.revoke(keyId);
  }

  /** Revokes a key by id; false when no active key has that id. */
  async revoke(keyId: string): Promise<boolean> {
    const result = await this.ApiKey.updateOne({ _id: keyId, revokedAt: null }, { $set: { revokedAt: new Date() } });
    this.verified.forget((key) => key.keyId === keyId);
    if (result.modifiedCount === 1) await this.onRevoke(keyId);
    return result.modifiedCount === 1;
  }

  async hasActiveKey(): Promise<boolean> {
    return (await this.ApiKey.exists({ revokedAt: null })) !== null;
  }

  /** The key's user and key id (SESSION_API_KEY has a derived id), or null for a missing, malformed, unknown or revoked key. */
  async authenticateApiKey(
    presented: string,
  ): Promise<{ userId: string; keyId: string; orgId: string | null; purpose: string | null } | null> {
    if (this.sessionApiKey && secretsEqual(presented, this.sessionApiKey))
      return { userId: DEFAULT_USER_ID, keyId: this.environmentKeyId()!, orgId: null, purpose: null };
    const match = KEY_PATTERN.exec(presented);
    if (!match) return null;
    const key = await this.verified.get(presented, () => this.verify(match[1]!, match[2]!));
    // Checked on every use: a remembered verification must not outlive the key's end.
    if (!key || (key.expiresAt && key.expiresAt.getTime() <= this.now())) return null;
    this.stampUse(key.keyId);
    return { userId: key.userId, keyId: key.keyId, orgId: key.orgId, purpose: key.purpose };
  }

  /** Records the key's use, at most once a minute per process, after the answer's way (a failed write only loses a stamp). */
  private stampUse(keyId: string): void {
    const now = this.now();
    if (now - (this.stamped.get(keyId) ?? 0) < USE_STAMP_MS) return;
    if (this.stamped.size >= 10_000) this.stamped.clear();
    this.stamped.set(keyId, now);
    void this.ApiKey.updateOne({ _id: keyId }, { $set: { lastUsedAt: new Date(now) } }).catch(() => this.stamped.delete(keyId));
  }

  private async verify(keyId: string, secret: string): Promise<VerifiedKey | null> {
    const doc = (await this.ApiKey.collection.findOne(
      { _id: keyId as never },
      { projection: { userId: 1, secretHash: 1, revokedAt: 1, expiresAt: 1, orgId: 1, purpose: 1 } },
    )) as Pick<ApiKeyRecord, 'userId' | 'secretHash' | 'revokedAt' | 'expiresAt' | 'orgId' | 'purpose'> | null;
    if (!doc || doc.revokedAt) return null;
    const expected = Buffer.from(doc.secretHash, 'hex');
    const actual = sha256(secret);
    return expected.length === actual.length && crypto.timingSafeEqual(expected, actual)
      ? { keyId, userId: doc.userId, expiresAt: doc.expiresAt ?? null, orgId: doc.orgId ?? null, purpose: doc.purpose ?? null }
      : null;
  }

  /** True while the key with this id (from authenticateApiKey) can still authenticate. */
  async isActive(keyId: string): Promise<boolean> {
    return (await this.activeUntil(keyId)) !== false;
  }

  /** Until when the key can authenticate: its expiry, null for no end, false when it cannot now. */
  async activeUntil(keyId: string): Promise<Date | null | false> {
    if (isEnvironmentKeyId(keyId)) return keyId === this.environmentKeyId() ? null : false;
    if (keyId.startsWith(IDENTITY_KEY_PREFIX)) return null;
    const key = await this.ApiKey.findOne({ _id: keyId, revokedAt: null }, { expiresAt: 1 }).lean();
    if (!key) return false;
    if (!key.expiresAt) return null;
    return key.expiresAt.getTime() > this.now() ? key.expiresAt : false;
  }

  /** SESSION_API_KEY has no record; its id is derived from the key, so changing the key ends its sessions. */
  private environmentKeyId(): string | undefined {
    return this.sessionApiKey ? ENV_KEY_PREFIX + sha256(this.sessionApiKey).toString('hex').slice(0, 16) : undefined;
  }
}

function toInfo(doc: {
  _id: string;
  userId: string;
  label?: string | null;
  createdAt: Date;
  revokedAt?: Date | null;
  expiresAt?: Date | null;
  lastUsedAt?: Date | null;
  orgId?: string | null;
}): ApiKeyInfo {
  return {
    id: doc._id,
    userId: doc.userId,
    label: doc.label ?? null,
    createdAt: doc.createdAt,
    revokedAt: doc.revokedAt ?? null,
    expiresAt: doc.expiresAt ?? null,
    lastUsedAt: doc.lastUsedAt ?? null,
    orgId: doc.orgId ?? null,
  };
}
