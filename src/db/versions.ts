// Read-modify-write on both databases: a write computed from what it read (a kept credential,
// the provider map, a re-encrypted value) names the version it read in its filter and sets a
// new one, so it applies only if nothing changed in between; otherwise it reads again. The
// write gate makes that conditional update exclusive on FerretDB; on MongoDB it is anyway.
import crypto from 'node:crypto';
import { AppError } from '../errors.js';

/** A fresh version stamp. */
export const newVersion = (): string => crypto.randomBytes(12).toString('base64url');

/** Each miss means another write landed; this many in a row means a flood of writes to one document. */
const ATTEMPTS = 16;

/** Runs `attempt` (read, compute, conditional write; true when it applied) until it applies. */
export async function untilApplied(what: string, attempt: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < ATTEMPTS; i++) if (await attempt()) return;
  throw new AppError('SERVICE_UNAVAILABLE', `${what} kept changing under this request, retry shortly`, {
    reason: 'database_unavailable',
    retryAfterSeconds: 1,
  });
}
