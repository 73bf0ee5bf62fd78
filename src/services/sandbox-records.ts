// Small facts of a sandbox record shared by the sandboxes service and the lifecycle passes:
// new ids, the encryption context and lookup hash of its session key, and what goes with a
// change of `desired`.
import crypto from 'node:crypto';
import type { SandboxRecord } from '../../models/index.js';
import { sha256 } from '../crypto.js';

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
