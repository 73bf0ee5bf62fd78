// Which sandbox a session key belongs to, whoever owns it: the agent servers' key-only webhooks
// and the sandbox-scoped secrets present nothing else, and users/me asks whether the key beside
// a user's Bearer key is one of that user's sandboxes running now. Records keep the key's
// SHA-256 beside its ciphertext, so a lookup is one indexed query, not a decryption of every
// record; the decrypted key still decides (in constant time). Records of versions before the
// hash get it at start-up (indexSessionKeys).
import { WARM_POOL_OWNER, type Models } from '../../../models/index.js';
import { secretsEqual, type SecretBox } from '../../crypto.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { SandboxUsage } from '../lifecycle/usage.js';
import { keyContext, sessionKeyHash } from './sandbox-records.js';
import type { SandboxFields } from './sandbox-records.js';
import type { SandboxesService } from './sandboxes.service.js';

export class SandboxKeys {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly sandboxes: SandboxesService,
    private readonly usage: SandboxUsage,
    private readonly log: Logger,
  ) {}

  /**
   * The sandbox a presented session key (X-Session-API-Key) opens, and its owner: the one check of
   * a sandbox's key, each use counted as a use of the sandbox. With `sandboxId` the key must be
   * that sandbox's; with `running` the sandbox must be wanted running and run now. The texts and
   * statuses are the reference's per route family:
   *   /webhooks/{sandbox_id}/… (sandboxId, any state)   401 "Unauthorized" for every refusal
   *   key-only webhooks, sandbox-scoped secrets         401 "X-Session-API-Key header is required",
   *                                                     401 "Invalid session API key",
   *                                                     403 "Session API key does not match sandbox"
   */
  async authenticateSandboxKey(
    presented: string | undefined,
    expect: { sandboxId?: string; running?: boolean } = {},
  ): Promise<{ sandboxId: string; userId: string }> {
    const { sandboxId, running = false } = expect;
    if (sandboxId !== undefined && !running) {
      // By the named sandbox's record (cached by id), not the key's hash: the agent servers' hot path.
      const credentials = presented ? await this.sandboxes.credentials(sandboxId) : null;
      if (!credentials || !secretsEqual(presented!, credentials.sessionKey)) throw new AppError('UNAUTHORIZED', 'Unauthorized');
      await this.usage.touch(sandboxId);
      return { sandboxId, userId: credentials.userId };
    }
    if (!presented) throw new AppError('UNAUTHORIZED', 'X-Session-API-Key header is required');
    const sandbox = running ? await this.running(presented) : await this.find(presented);
    if (!sandbox) throw new AppError('UNAUTHORIZED', 'Invalid session API key');
    if (sandboxId !== undefined && sandbox._id !== sandboxId) throw new AppError('FORBIDDEN', 'Session API key does not match sandbox');
    await this.usage.touch(sandbox._id);
    return { sandboxId: sandbox._id, userId: sandbox.userId };
  }

  /** The sandbox of this session key; null for none, and for a warm sandbox no user has claimed. */
  async find(sessionKey: string): Promise<SandboxFields | null> {
    const record = await this.models.Sandbox.findOne({ sessionKeyHash: sessionKeyHash(sessionKey) }).lean();
    if (!record || record.userId === WARM_POOL_OWNER) return null;
    return secretsEqual(sessionKey, this.box.decrypt(record.sessionApiKey, keyContext(record._id))) ? record : null;
  }

  /** The sandbox of this key if it is wanted running and runs now: a paused, stopped or deleted sandbox's key opens nothing. */
  async running(sessionKey: string | undefined): Promise<SandboxFields | null> {
    const sandbox = sessionKey ? await this.find(sessionKey) : null;
    if (!sandbox || sandbox.desired !== 'running') return null;
    return (await this.sandboxes.stateOf(sandbox)).status === 'RUNNING' ? sandbox : null;
  }

  /** Whether the key is that of a sandbox of this user that runs now (never another user's). */
  async isRunningSandboxOf(userId: string, sessionKey: string | undefined): Promise<boolean> {
    return (await this.running(sessionKey))?.userId === userId;
  }

  /** Fills in the hash of records written before it existed; idempotent, and safe beside other replicas. */
  async indexSessionKeys(): Promise<number> {
    let filled = 0;
    const comment = 'start-up: session key hashes';
    for (;;) {
      const batch = await this.models.Sandbox.find({ sessionKeyHash: null }, { sessionApiKey: 1 }, { comment }).limit(100).lean();
      if (batch.length === 0) return filled;
      for (const record of batch) {
        // A ciphertext no configured key opens can name no key: "" matches no presented one.
        let hash = '';
        try {
          hash = sessionKeyHash(this.box.decrypt(record.sessionApiKey, keyContext(record._id)));
        } catch {
          this.log.warn({ sandboxId: record._id }, 'sandbox session key cannot be decrypted; it is found by no key');
        }
        await this.models.Sandbox.updateOne({ _id: record._id, sessionKeyHash: null }, { $set: { sessionKeyHash: hash } }, { comment });
        filled++;
      }
    }
  }
}
