// The device authorization flow (RFC 8628), as the OpenHands CLI, the CloudClient and Agent
// Canvas use it to log in: a device asks for a code pair, a person signed in in the browser
// approves the short user code, and the device, polling with the long device code, receives an
// API key of that person — an ordinary key, listed and revocable like any other.
//
// Both codes are stored only as SHA-256 (the record's _id and userCodeHash); every step is one
// conditional update on the record, so replicas agree and a code is spent once: the key is
// minted only by the poll that moved the request from approved to consumed. Polls sooner than
// the interval answer slow_down and raise the interval by 5 s (RFC 8628 §3.5).
import crypto from 'node:crypto';
import type { DeviceCodeRecord, Models } from '../../../models/index.js';
import type { Config } from '../../config/config.js';
import { sha256 } from '../../crypto.js';
import { AppError, isDuplicateKeyError, type ErrorReason } from '../../errors.js';
import type { ApiKeysService } from './api-keys.service.js';

export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** RFC 8628 §6.1: no vowels (no words), no look-alikes; 8 letters, ~34 bits, for a 10-minute life. */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;
/** A poll this much sooner than the interval still counts as on time (timers and networks jitter). */
const POLL_SLACK_MS = 500;

export interface Requested {
  deviceCode: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

export interface PendingRequest {
  userCode: string;
  clientName: string | null;
  userAgent: string | null;
  requestedFrom: string | null;
  requestedAt: Date;
  expiresAt: Date;
}

const hashOf = (code: string) => sha256(code).toString('hex');

/** The user code as typed: any case, with or without its dash or spaces; null when it cannot be one. */
export function normaliseUserCode(text: string): string | null {
  const letters = text.toUpperCase().replace(/[\s-]/g, '');
  return letters.length === USER_CODE_LENGTH && [...letters].every((c) => USER_CODE_ALPHABET.includes(c)) ? letters : null;
}

const displayed = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** Text a client sent about itself, as it may be stored and shown: printable, bounded. */
const shown = (text: string | null | undefined, max: number) =>
  text
    ? text
        .replace(/[\u0000-\u001f\u007f]/g, ' ')
        .trim()
        .slice(0, max) || null
    : null;

const oauth = (reason: ErrorReason, message: string, fields: Record<string, string> = {}) =>
  new AppError('BAD_REQUEST', message, { reason, fields });

export class DeviceFlowService {
  constructor(
    private readonly models: Models,
    private readonly apiKeys: ApiKeysService,
    private readonly settings: Config['deviceFlow'],
    private readonly now: () => number = Date.now,
  ) {}

  /** A new request: the codes (returned once, stored hashed) and how long and how often to poll. */
  async authorize(client: { clientName?: string | null; userAgent?: string | null; address?: string | null }): Promise<Requested> {
    const createdAt = new Date(this.now());
    const expiresAt = new Date(createdAt.getTime() + this.settings.ttlSeconds * 1000);
    // Housekeeping first: requests expired for a whole lifetime answer invalid_grant from now on.
    await this.models.DeviceCode.deleteMany({ expiresAt: { $lte: new Date(createdAt.getTime() - this.settings.ttlSeconds * 1000) } });
    const deviceCode = crypto.randomBytes(32).toString('base64url');
    for (let attempt = 0; ; attempt++) {
      const userCode = randomUserCode();
      try {
        await this.models.DeviceCode.create({
          _id: hashOf(deviceCode),
          userCodeHash: hashOf(userCode),
          status: 'pending',
          clientName: shown(client.clientName, 100),
          userAgent: shown(client.userAgent, 200),
          requestedFrom: shown(client.address, 100),
          interval: this.settings.intervalSeconds,
          createdAt,
          expiresAt,
        });
        return { deviceCode, userCode: displayed(userCode), expiresIn: this.settings.ttlSeconds, interval: this.settings.intervalSeconds };
      } catch (error) {
        // A user code still held by another request (its index is unique): draw again.
        if (!isDuplicateKeyError(error) || attempt >= 4) throw error;
      }
    }
  }

  /** What the verification page shows about a pending request; null for a code that cannot be approved now. */
  async pending(userCodeText: string): Promise<PendingRequest | null> {
    const userCode = normaliseUserCode(userCodeText);
    if (!userCode) return null;
    const record = await this.models.DeviceCode.findOne({ userCodeHash: hashOf(userCode) }).lean();
    if (!record || record.status !== 'pending' || record.expiresAt.getTime() <= this.now()) return null;
    return {
      userCode: displayed(userCode),
      clientName: record.clientName ?? null,
      userAgent: record.userAgent ?? null,
      requestedFrom: record.requestedFrom ?? null,
      requestedAt: record.createdAt,
      expiresAt: record.expiresAt,
    };
  }

  /** The signed-in user approves (or denies) a pending, unexpired request; once. */
  async decide(userId: string, userCodeText: string, approve: boolean): Promise<'approved' | 'denied'> {
    const userCode = normaliseUserCode(userCodeText);
    const status = approve ? 'approved' : 'denied';
    const result = userCode
      ? await this.models.DeviceCode.updateOne(
          { userCodeHash: hashOf(userCode), status: 'pending', expiresAt: { $gt: new Date(this.now()) } },
          { $set: { status, userId, decidedAt: new Date(this.now()) } },
        )
      : null;
    if (!result || result.matchedCount === 0) {
      throw new AppError('NOT_FOUND', 'This code is unknown, has expired or was already used', { reason: 'device_user_code_unknown' });
    }
    return status;
  }

  /** A device's poll: the key once approved, else the RFC's error for where the request stands. */
  async token(deviceCode: string, grantType: string | null | undefined): Promise<{ accessToken: string }> {
    if (grantType && grantType !== DEVICE_GRANT_TYPE) {
      throw oauth('device_grant_type_unsupported', `Only ${DEVICE_GRANT_TYPE} is supported here`);
    }
    const id = hashOf(deviceCode);
    const record = await this.models.DeviceCode.findOne({ _id: id }).lean();
    if (!record || record.status === 'consumed') throw oauth('device_code_invalid', 'Unknown or already used device code');
    const now = this.now();
    if (record.expiresAt.getTime() <= now) throw oauth('device_code_expired', 'The device code has expired; start a new login');
    await this.countPoll(record, now);
    if (record.status === 'pending') throw oauth('device_authorization_pending', 'Waiting for the user to approve the code');
    if (record.status === 'denied') throw oauth('device_access_denied', 'The user denied the request');
    // Approved: the one poll that spends the request mints the key.
    const spent = await this.models.DeviceCode.updateOne({ _id: id, status: 'approved' }, { $set: { status: 'consumed' } });
    if (spent.modifiedCount !== 1 || !record.userId) throw oauth('device_code_invalid', 'Unknown or already used device code');
    const label = `device: ${record.clientName ?? record.userAgent ?? 'unnamed client'}`.slice(0, 120);
    return { accessToken: (await this.apiKeys.create(record.userId, label)).key };
  }

  /** Records this poll; one sooner than the interval (or racing another) is slow_down, with a longer interval. */
  private async countPoll(record: DeviceCodeRecord, now: number): Promise<void> {
    const last = record.lastPolledAt?.getTime();
    const early = last !== undefined && now - last < record.interval * 1000 - POLL_SLACK_MS;
    const interval = early ? record.interval + 5 : record.interval;
    const counted = await this.models.DeviceCode.updateOne(
      { _id: record._id, lastPolledAt: record.lastPolledAt ?? null },
      { $set: { lastPolledAt: new Date(now), interval } },
    );
    if (early || counted.matchedCount === 0) {
      throw oauth('device_slow_down', `Poll at most every ${interval} seconds`, { interval: String(interval) });
    }
  }
}

function randomUserCode(): string {
  let code = '';
  for (const byte of crypto.randomBytes(USER_CODE_LENGTH * 2)) {
    // 240 is a multiple of 20: no bias.
    if (byte < 240 && code.length < USER_CODE_LENGTH) code += USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length];
  }
  return code.length === USER_CODE_LENGTH ? code : randomUserCode();
}
