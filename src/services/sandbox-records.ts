// Small facts of a sandbox record shared by the sandboxes service and the lifecycle passes:
// new ids, its keys (sealed, with the session key's lookup hash), and what goes with a change
// of `desired`.
import crypto from 'node:crypto';
import type { SandboxRecord } from '../../models/index.js';
import { randomBase62, sha256, type SecretBox } from '../crypto.js';

export const newSandboxId = () => crypto.randomBytes(16).toString('hex');

export const keyContext = (sandboxId: string) => `sandbox:${sandboxId}:session_api_key`;
export const secretKeyContext = (sandboxId: string) => `sandbox:${sandboxId}:secret_key`;

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
