// Deferred initialisation (agent server ≥ 1.58, a spec's deferred_init): a warm sandbox starts
// dormant (OH_DEFERRED_INIT) with its keys in hand but serving no conversation, bash or event
// route (503) until POST /api/init. The claim sends it there, authenticated by the sandbox's
// sealing key (X-Init-API-Key: what the dormant server checks it against), with the session
// key and the claimant's environment (the conversation's secrets, which its hooks then see), so
// nothing of a user's reaches a sandbox before it is theirs.
import type { SecretBox } from '../../crypto.js';
import type { RecordTables } from '../../db/record-lists/record-tables.js';
import { secretsEnv, type SandboxState } from '../runtime.js';
import { openSecretKey, openSessionKey, sealEnv, type SandboxFields } from './sandbox-records.js';

const INIT_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

export interface SandboxInitDeps {
  box: SecretBox;
  records: RecordTables['sandboxes'];
  stateOf: (record: SandboxFields) => Promise<SandboxState>;
  /** How long a claimed warm sandbox that is still starting is waited for (SANDBOX_STARTUP_TIMEOUT_MS). */
  startupTimeoutMs: number;
}

export class SandboxInit {
  constructor(private readonly deps: SandboxInitDeps) {}

  /** Initialises a claimed dormant sandbox for its new owner; the record as it is then. Throws when it cannot be. */
  async initialise(record: SandboxFields, env: Record<string, string>): Promise<SandboxFields> {
    const { box, records } = this.deps;
    const url = await this.agentServerOf(record);
    const exported = secretsEnv(env);
    const response = await fetch(`${url.replace(/\/+$/, '')}/api/init`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-init-api-key': openSecretKey(box, record) },
      body: JSON.stringify({ session_api_keys: [openSessionKey(box, record)], ...(Object.keys(exported).length ? { env: exported } : {}) }),
      signal: AbortSignal.timeout(INIT_TIMEOUT_MS),
    });
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new Error(`POST /api/init answered HTTP ${response.status}`);
    const fields = { dormant: false, sealedEnv: sealEnv(box, record._id, env), updatedAt: new Date() };
    return (await records.update(record._id, { userId: record.userId }, { $set: fields })) ?? { ...record, ...fields };
  }

  /** Where this service reaches the sandbox's agent server, once it answers (a warm sandbox may still be starting). */
  private async agentServerOf(record: SandboxFields): Promise<string> {
    const deadline = Date.now() + this.deps.startupTimeoutMs;
    for (;;) {
      const state = await this.deps.stateOf(record);
      const url = state.internalUrl ?? state.exposedUrls?.find((u) => u.name === 'AGENT_SERVER')?.url;
      if (state.status === 'RUNNING' && url) return url;
      if (state.status === 'ERROR' || Date.now() > deadline) throw new Error(`the warm sandbox is ${state.status}, not running`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}
