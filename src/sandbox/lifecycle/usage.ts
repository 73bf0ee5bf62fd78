// What the idle policy decides on: when a sandbox was last used through this service, and
// whether its agent reports running. Use is written at most once per sandbox per interval
// (a minute, or a quarter of the idle time when that is shorter), so hot paths that touch a
// sandbox cost a map lookup, not a database write.
import type { Models } from '../../../models/index.js';

/** Bound on the remembered sandboxes; older entries are forgotten first (they only save writes). */
const MAX_REMEMBERED = 10_000;

export class SandboxUsage {
  private readonly lastWritten = new Map<string, number>();
  /** Sandboxes in use by work under way (a conversation start), with how many holders each. */
  private readonly held = new Map<string, number>();
  private holdTimer: NodeJS.Timeout | undefined;
  readonly touchIntervalMs: number;

  constructor(
    private readonly models: Models,
    idlePauseMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.touchIntervalMs = idlePauseMs > 0 ? Math.min(60_000, Math.max(1, Math.floor(idlePauseMs / 4))) : 60_000;
  }

  /** Records a use of the sandbox (throttled per process). */
  async touch(sandboxId: string): Promise<void> {
    const now = this.now();
    const last = this.lastWritten.get(sandboxId);
    if (last !== undefined && now - last < this.touchIntervalMs) return;
    this.remember(sandboxId, now);
    await this.models.Sandbox.updateOne({ _id: sandboxId }, { $max: { lastUsedAt: new Date(now) } });
  }

  /**
   * Keeps a sandbox in use while long work runs in it (a setup script, a clone), touching it
   * every interval until the returned release is called.
   */
  hold(sandboxId: string): () => void {
    this.held.set(sandboxId, (this.held.get(sandboxId) ?? 0) + 1);
    void this.touch(sandboxId).catch(() => {});
    this.holdTimer ??= setInterval(() => {
      for (const id of this.held.keys()) void this.touch(id).catch(() => {});
    }, this.touchIntervalMs).unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const holders = (this.held.get(sandboxId) ?? 1) - 1;
      if (holders > 0) this.held.set(sandboxId, holders);
      else this.held.delete(sandboxId);
      if (this.held.size === 0) {
        clearInterval(this.holdTimer);
        this.holdTimer = undefined;
      }
    };
  }

  /**
   * The agent server's execution status of a conversation in the sandbox (webhooks): while
   * any conversation reports "running", the idle policy leaves the sandbox alone.
   */
  async noteExecutionStatus(sandboxId: string, conversationId: string, status: string): Promise<void> {
    const now = new Date(this.now());
    if (status === 'running') {
      await this.models.Sandbox.updateOne(
        { _id: sandboxId },
        { $addToSet: { runningConversations: conversationId }, $max: { lastUsedAt: now } },
      );
      this.remember(sandboxId, now.getTime());
    } else {
      await this.models.Sandbox.updateOne({ _id: sandboxId }, { $pull: { runningConversations: conversationId } });
    }
  }

  private remember(sandboxId: string, at: number): void {
    this.lastWritten.delete(sandboxId); // re-insert: Map order is least recently written first
    this.lastWritten.set(sandboxId, at);
    if (this.lastWritten.size > MAX_REMEMBERED) this.lastWritten.delete(this.lastWritten.keys().next().value!);
  }
}
