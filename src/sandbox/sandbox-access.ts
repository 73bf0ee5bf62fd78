// The one way from a conversation to its sandbox for the conversation page's routes:
// conversation (the owner's, else 404) → its sandbox, running (resumed first through the sandbox
// lifecycle's ensureRunning, unless the route does without) → a client of its agent server,
// whose every call gives up after SANDBOX_CALL_TIMEOUT_MS. The outcomes are decided here, once:
//
//   conversation unknown or another user's            404 conversation_not_found
//   still starting; not running and not resumed here   409 conversation_not_running
//   stopped by its owner while it resumed              409 conversation_not_running
//   sandbox deleted or its workspace gone, or its
//     start failed (nothing to resume)                 409 sandbox_gone (with the reason)
//   resume past the per-user sandbox limit             429 sandbox_limit_reached (Retry-After)
//   resume failed after its retries                    503 sandbox_resume_failed (with the reason)
//   agent server unreachable or too slow               503 agent_server_unavailable (client.ts)
//   agent server answers an error                      502 agent_server_failed (client.ts)
import { AgentServerClient } from '../agent-server/client.js';
import { AppError } from '../errors.js';
import type { AppConversationRecord } from '../../models/index.js';
import type { SandboxesService } from './service/sandboxes.service.js';
import type { SandboxState } from './runtime.js';

/** How access finds a user's conversation record (the conversation store; an interface so the wing stays below conversations). */
export interface ConversationLookup {
  conversation(userId: string, conversationId: string): Promise<AppConversationRecord | null>;
}

export type SandboxConnection = Awaited<ReturnType<SandboxesService['connection']>>;

/**
 * The user's sandbox RUNNING and reachable, resumed first if it is not (the sandbox lifecycle's
 * transparent resume); `current` is the caller's fresh read of it. Each call is a use of it.
 */
export type EnsureRunning = (userId: string, sandboxId: string, current: SandboxConnection) => Promise<SandboxConnection>;

export interface RunningConversation {
  conversation: AppConversationRecord;
  connection: SandboxConnection;
  agent: AgentServerClient;
}

export interface RunningOptions {
  /** Resume a paused or failed sandbox (the default); false refuses with 409 instead. */
  resume?: boolean;
}

export class SandboxAccess {
  constructor(
    private readonly store: ConversationLookup,
    private readonly sandboxes: SandboxesService,
    private readonly callTimeoutMs: number,
    private readonly ensureRunning: EnsureRunning,
  ) {}

  /** The user's conversation, or 404 "Conversation <id> not found" (the reference's words). */
  async conversation(userId: string, conversationId: string): Promise<AppConversationRecord> {
    const record = await this.store.conversation(userId, conversationId);
    if (!record) {
      throw new AppError('NOT_FOUND', `Conversation ${conversationId} not found`, {
        reason: 'conversation_not_found',
        fields: { conversation_id: conversationId },
      });
    }
    return record;
  }

  /** The conversation and, when it has one that still exists, its sandbox as it is now (no agent-server call). */
  async sandboxOf(
    userId: string,
    conversationId: string,
  ): Promise<{ conversation: AppConversationRecord; connection: SandboxConnection | null }> {
    const conversation = await this.conversation(userId, conversationId);
    if (!conversation.sandboxId) return { conversation, connection: null };
    try {
      return { conversation, connection: await this.sandboxes.connection(userId, conversation.sandboxId) };
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') return { conversation, connection: null };
      throw error;
    }
  }

  /** A client of the conversation's running agent server, or the refusal that says why there is none. */
  async running(userId: string, conversationId: string, options: RunningOptions = {}): Promise<RunningConversation> {
    const { conversation, connection } = await this.sandboxOf(userId, conversationId);
    const running = await this.runningSandbox(userId, conversationId, conversation, connection, options);
    const url = running.internalUrl ?? running.publicUrl;
    if (!url) throw refusal(conversationId, 'conversation_not_running', notRunningMessage(conversationId, 'STARTING'));
    return { conversation, connection: running, agent: new AgentServerClient(url, running.sessionKey, this.callTimeoutMs) };
  }

  /** The sandbox of a conversation (as sandboxOf read it), running: resumed first unless `resume` is false. */
  async runningSandbox(
    userId: string,
    conversationId: string,
    conversation: AppConversationRecord,
    connection: SandboxConnection | null,
    { resume = true }: RunningOptions = {},
  ): Promise<SandboxConnection> {
    if (conversation.startState === 'failed')
      throw refusal(conversationId, 'sandbox_gone', `Conversation ${conversationId} failed to start`);
    if (conversation.startState === 'starting' || !conversation.sandboxId) {
      throw refusal(conversationId, 'conversation_not_running', `Conversation ${conversationId} is still starting`);
    }
    if (!connection) {
      const why = conversation.sandbox_gone_reason ? `: ${conversation.sandbox_gone_reason}` : '';
      throw refusal(conversationId, 'sandbox_gone', `The sandbox of conversation ${conversationId} no longer exists${why}`);
    }
    if (!resume) {
      if (connection.state.status === 'RUNNING') return connection;
      throw refusal(conversationId, 'conversation_not_running', notRunningMessage(conversationId, connection.state.status));
    }
    try {
      return await this.ensureRunning(userId, conversation.sandboxId, connection);
    } catch (error) {
      throw inConversationTerms(error, conversationId, connection.state);
    }
  }
}

function refusal(conversationId: string, reason: 'conversation_not_running' | 'sandbox_gone', message: string): AppError {
  return new AppError('CONFLICT', message, { reason, fields: { conversation_id: conversationId } });
}

/**
 * A failed resume as the conversation's answer: what a retry cannot fix (a sandbox or workspace
 * that is gone, one being deleted, a spec no longer configured) is 409 with the reason, a stop
 * that came in between is 409 too; the limit (429) and a resume that failed (503) keep their
 * status and words.
 */
function inConversationTerms(error: unknown, conversationId: string, before: SandboxState): unknown {
  if (!(error instanceof AppError)) return error;
  if (error.reason === 'sandbox_paused') {
    return refusal(conversationId, 'conversation_not_running', `Conversation ${conversationId} was stopped while its sandbox was resuming`);
  }
  if (error.code === 'NOT_FOUND' || error.code === 'CONFLICT') {
    // The runtime's own words for a MISSING sandbox say more than the resume's refusal.
    const why = before.status === 'MISSING' && before.reason ? before.reason : error.message;
    return refusal(conversationId, 'sandbox_gone', `The sandbox of conversation ${conversationId} cannot be resumed: ${why}`);
  }
  return withConversation(error, conversationId);
}

/** The same failure naming the conversation (the V0 start/stop error bodies carry its id), in other words if given. */
export function withConversation(error: AppError, conversationId: string, message = error.message): AppError {
  return new AppError(error.code, message, {
    ...(error.reason ? { reason: error.reason } : {}),
    ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    fields: { ...error.fields, conversation_id: conversationId },
    cause: error,
  });
}

function notRunningMessage(conversationId: string, status: SandboxState['status']): string {
  return status === 'PAUSED'
    ? `Conversation ${conversationId} is stopped (its sandbox is paused)`
    : `Conversation ${conversationId} is not running (its sandbox is ${status})`;
}
