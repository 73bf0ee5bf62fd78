// Which sandbox a session key belongs to, whoever owns it: the agent servers' key-only webhooks
// and the sandbox-scoped secrets present nothing else, and users/me asks whether the key beside
// a user's Bearer key is one of that user's sandboxes running now. Records keep the key's
// SHA-256 beside its ciphertext, so a lookup is one indexed query, not a decryption of every
// record; the decrypted key still decides (in constant time). Records of versions before the
// hash get it at start-up (indexSessionKeys).
import { WARM_POOL_OWNER, type Models } from '../../../models/index.js';
import { secretsEqual, type SecretBox } from '../../crypto.js';
import type { Logger } from '../../logger.js';
import { keyContext, sessionKeyHash } from './sandbox-records.js';
import type { SandboxFields } from './sandbox-records.js';
import type { SandboxesService } from './sandboxes.service.js';

export class SandboxKeys {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly sandboxes: SandboxesService,
    private readonly log: Logger,
  ) {}

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
