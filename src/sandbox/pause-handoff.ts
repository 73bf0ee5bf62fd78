// Before a sandbox stops — a user's pause, the idle policy, room for another sandbox, a restart
// after ERROR — its agent server is asked to save its conversations, pause their runs and release
// their leases (agent server 1.58: POST /api/conversations/prepare-for-sandbox-pause). Without it
// a conversation's lease (45 s) outlives the stopped process, and the agent server resumed on the
// same workspace — or a pod recreated with the same name — may find it still held. Best effort
// within HANDOFF_TIMEOUT_MS: an agent server that is down, hung or older (404) never holds up the
// pause. Every pause goes through the runtime, so the runtime is wrapped once (domain.ts).
import { AgentServerClient } from '../agent-server/client.js';
import type { Logger } from '../logger.js';
import type { SandboxLaunch, SandboxRuntime, SandboxSpec, SandboxState } from './runtime.js';

const HANDOFF_TIMEOUT_MS = 10_000;

/** Where a running sandbox's agent server answers, with its key; null when it is not running or has no owner yet (warm). */
export type AgentOf = (sandboxId: string) => Promise<{ url: string; sessionKey: string } | null>;

export class PauseHandoffRuntime implements SandboxRuntime {
  readonly kind: SandboxRuntime['kind'];
  readonly callbackOrigin?: () => string | null;
  readonly admit?: (userId: string) => Promise<void>;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly agentOf: AgentOf,
    private readonly log: Logger,
    private readonly timeoutMs = HANDOFF_TIMEOUT_MS,
  ) {
    this.kind = runtime.kind;
    if (runtime.callbackOrigin) this.callbackOrigin = () => runtime.callbackOrigin!();
    if (runtime.admit) this.admit = (userId) => runtime.admit!(userId);
  }

  async pause(sandboxId: string): Promise<void> {
    try {
      const agent = await this.agentOf(sandboxId);
      if (agent) await new AgentServerClient(agent.url, agent.sessionKey, this.timeoutMs).prepareForSandboxPause();
    } catch (error) {
      this.log.warn({ err: error, sandboxId }, 'the agent server did not prepare for the pause; pausing anyway');
    }
    await this.runtime.pause(sandboxId);
  }

  start(launch: SandboxLaunch): Promise<void> {
    return this.runtime.start(launch);
  }
  state(sandboxId: string, desired: 'running' | 'paused'): Promise<SandboxState> {
    return this.runtime.state(sandboxId, desired);
  }
  resume(launch: SandboxLaunch): Promise<void> {
    return this.runtime.resume(launch);
  }
  remove(sandboxId: string): Promise<void> {
    return this.runtime.remove(sandboxId);
  }
  list(): Promise<string[]> {
    return this.runtime.list();
  }
  workingDir(sandboxId: string, spec: SandboxSpec): string {
    return this.runtime.workingDir(sandboxId, spec);
  }
  close(): Promise<void> {
    return this.runtime.close();
  }
}
