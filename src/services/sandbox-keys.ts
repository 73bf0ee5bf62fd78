// Whether an X-Session-API-Key beside a user's Bearer key is the session key of one of that
// user's sandboxes that runs now (users/me?expose_secrets). Only the user's own sandboxes
// whose owner wants them running are looked at, and only a live RUNNING state counts: a
// paused, stopped or deleted sandbox's key opens nothing, nor does another user's.
import type { Models } from '../../models/index.js';
import { secretsEqual } from '../crypto.js';
import type { SandboxesService } from './sandboxes.service.js';

export class SandboxKeys {
  constructor(
    private readonly models: Models,
    private readonly sandboxes: SandboxesService,
  ) {}

  async isRunningSandboxOf(userId: string, sessionKey: string | undefined): Promise<boolean> {
    if (!sessionKey) return false;
    const candidates = await this.models.Sandbox.find({ userId, desired: 'running' }, { _id: 1 }).sort({ createdAt: -1, _id: -1 }).lean();
    if (candidates.length === 0) return false;
    const states = await this.sandboxes.statuses(
      userId,
      candidates.map((c) => c._id),
    );
    return [...states.values()].some((s) => s.status === 'RUNNING' && s.sessionKey !== null && secretsEqual(sessionKey, s.sessionKey));
  }
}
