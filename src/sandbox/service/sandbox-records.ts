// Small facts of a sandbox record shared by the sandboxes service and the lifecycle passes:
// new ids, its keys (sealed, with the session key's lookup hash), and what goes with a change
// of `desired`.
import crypto from 'node:crypto';
import type { SandboxRecord } from '../../../models/index.js';
import { randomBase62, sha256, type SecretBox } from '../../crypto.js';
import type { RecordTable } from '../../db/record-lists/record-table.js';
import { AppError } from '../../errors.js';

/** What the service reads of a sandbox record (updatedAt is the database's own). */
export type SandboxFields = Omit<SandboxRecord, 'updatedAt'>;
/** Why a sandbox was started, where it changes how it runs (models/sandbox.model.ts). */
export type SandboxPurpose = 'automation';
/** What a new sandbox is started with: its agent server's environment (a conversation's secrets), and why. */
export interface LaunchChoices {
  env?: Record<string, string>;
  purpose?: SandboxPurpose | null;
}

export const newSandboxId = () => crypto.randomBytes(16).toString('hex');

export const keyContext = (sandboxId: string) => `sandbox:${sandboxId}:session_api_key`;
export const secretKeyContext = (sandboxId: string) => `sandbox:${sandboxId}:secret_key`;
export const envContext = (sandboxId: string) => `sandbox:${sandboxId}:env`;

/** The agent server's environment sealed for the record; null when there is none. */
export const sealEnv = (box: SecretBox, sandboxId: string, env: Record<string, string>): string | null =>
  Object.keys(env).length > 0 ? box.encrypt(JSON.stringify(env), envContext(sandboxId)) : null;

export const openEnv = (box: SecretBox, record: Pick<SandboxRecord, '_id' | 'sealedEnv'>): Record<string, string> =>
  record.sealedEnv ? (JSON.parse(box.decrypt(record.sealedEnv, envContext(record._id))) as Record<string, string>) : {};

/** What the record keeps to find a sandbox by its session key: 43 random characters need no salt. */
export const sessionKeyHash = (sessionKey: string) => sha256(sessionKey).toString('hex');

/** The fields that go with a change of `desired`: retention counts paused time from desiredSince. */
export function desiredChange(
  desired: 'running' | 'paused' | 'deleting',
  extra: Partial<Omit<SandboxRecord, 'updatedAt'>> = {},
  now = new Date(),
) {
  // A restarted agent server runs nothing until told: old "running" reports no longer hold.
  return { desired, desiredSince: now, runningConversations: [], updatedAt: now, ...extra };
}

/** A new record, running as asked (its keys new, its environment sealed); not stored yet. */
export function newSandboxRecord(
  box: SecretBox,
  identity: Pick<SandboxFields, '_id' | 'userId' | 'specId' | 'runtime'>,
  opts: LaunchChoices & { dormant?: boolean },
): SandboxFields {
  const now = new Date();
  return {
    ...identity,
    ...sealedKeys(box, identity._id).fields,
    sealedEnv: sealEnv(box, identity._id, opts.env ?? {}),
    dormant: opts.dormant ?? false,
    purpose: opts.purpose ?? null,
    desired: 'running',
    desiredSince: now,
    pausedBy: null,
    lastUsedAt: now,
    runningConversations: [],
    removalReason: null,
    createdAt: now,
  };
}

/**
 * The record's key fields, sealed: a new session key (at a start, and at every resume: a key
 * that leaked from an earlier run opens nothing after a pause and resume) and the agent server's
 * sealing key, which stays (its stored secrets are sealed with it).
 */
export function sealedKeys(box: SecretBox, sandboxId: string, secretKey = randomBase62(43)) {
  const sessionKey = randomBase62(43);
  return {
    sessionKey,
    secretKey,
    fields: {
      sessionApiKey: box.encrypt(sessionKey, keyContext(sandboxId)),
      sessionKeyHash: sessionKeyHash(sessionKey),
      secretKey: box.encrypt(secretKey, secretKeyContext(sandboxId)),
    },
  };
}

/** The sealing key; records of earlier versions have none: their agent servers sealed with the session key. */
export function openSecretKey(box: SecretBox, record: Pick<SandboxRecord, '_id' | 'sessionApiKey' | 'secretKey'>): string {
  return record.secretKey
    ? box.decrypt(record.secretKey, secretKeyContext(record._id))
    : box.decrypt(record.sessionApiKey, keyContext(record._id));
}

export const openSessionKey = (box: SecretBox, record: Pick<SandboxRecord, '_id' | 'sessionApiKey'>) =>
  box.decrypt(record.sessionApiKey, keyContext(record._id));

/**
 * A new session key for a resume, stored before the sandbox starts with it. Two resumes at once
 * (two replicas, a route and the owner) must start it with one key: the first to replace the
 * key it read wins, and the other starts with the key that one stored.
 */
export async function rotateSessionKey(
  records: Pick<RecordTable<SandboxRecord>, 'update' | 'get'>,
  box: SecretBox,
  record: Pick<SandboxRecord, '_id' | 'userId' | 'sessionApiKey' | 'sessionKeyHash' | 'secretKey'>,
): Promise<{ sessionKey: string; secretKey: string }> {
  const keys = sealedKeys(box, record._id, openSecretKey(box, record));
  const where = { userId: record.userId, sessionKeyHash: record.sessionKeyHash };
  if (await records.update(record._id, where, { $set: keys.fields })) return keys;
  const current = await records.get(record._id, { userId: record.userId });
  if (!current) throw new AppError('NOT_FOUND', 'Sandbox not found', { reason: 'sandbox_not_found' });
  return { sessionKey: openSessionKey(box, current), secretKey: openSecretKey(box, current) };
}
