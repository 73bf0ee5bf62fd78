// The one way from a conversation to its sandbox for the conversation page's routes:
// conversation (the owner's, else 404) → its sandbox → a client of the running agent server,
// whose every call gives up after SANDBOX_CALL_TIMEOUT_MS. The outcomes are decided here, once:
//
//   conversation unknown or another user's        404 conversation_not_found
//   still starting, or sandbox paused / starting  409 conversation_not_running
//   sandbox gone, failed or its start failed      409 sandbox_gone (with the reason)
//   agent server unreachable or too slow          503 agent_server_unavailable (client.ts)
//   agent server answers an error                 502 agent_server_failed (client.ts)
//
// A sandbox that is not running goes through `ensureRunning` first: today it resumes nothing
// (routes answer 409 and the client resumes, as the web UI does for STOPPED conversations); the
// sandbox lifecycle can replace it with a transparent resume.
import { AgentServerClient } from '../agent-server/client.js';
import { AppError } from '../errors.js';
import type { AppConversationRecord } from '../../models/index.js';
import type { SandboxesService } from '../services/sandboxes.service.js';
import type { SandboxStatus } from '../sandbox/runtime.js';
import type { ConversationStore } from './store.js';

export type SandboxConnection = Awaited<ReturnType<SandboxesService['connection']>>;

/** Called when a conversation's sandbox is not RUNNING; answers the connection to use, or null to refuse. */
export type EnsureRunning = (userId: string, sandboxId: string, current: SandboxConnection) => Promise<SandboxConnection | null>;

export const resumeNothing: EnsureRunning = async () => null;

export interface RunningConversation {
  conversation: AppConversationRecord;
  connection: SandboxConnection;
  agent: AgentServerClient;
}

export class SandboxAccess {
  constructor(
    private readonly store: ConversationStore,
    private readonly sandboxes: SandboxesService,
    private readonly callTimeoutMs: number,
    private readonly ensureRunning: EnsureRunning = resumeNothing,
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
  async running(userId: string, conversationId: string): Promise<RunningConversation> {
    const { conversation, connection } = await this.sandboxOf(userId, conversationId);
    const refuse = (reason: 'conversation_not_running' | 'sandbox_gone', message: string) =>
      new AppError('CONFLICT', message, { reason, fields: { conversation_id: conversationId } });
    if (conversation.startState === 'failed') throw refuse('sandbox_gone', `Conversation ${conversationId} failed to start`);
    if (conversation.startState === 'starting' || !conversation.sandboxId) {
      throw refuse('conversation_not_running', `Conversation ${conversationId} is still starting`);
    }
    if (!connection) throw refuse('sandbox_gone', `The sandbox of conversation ${conversationId} no longer exists`);
    let current: SandboxConnection | null = connection;
    if (current.state.status !== 'RUNNING') current = await this.ensureRunning(userId, conversation.sandboxId, current);
    if (!current || current.state.status !== 'RUNNING') {
      const state = (current ?? connection).state;
      if (state.status === 'MISSING' || state.status === 'ERROR') {
        const why = state.reason ? `: ${state.reason}` : '';
        throw refuse('sandbox_gone', `The sandbox of conversation ${conversationId} is ${state.status}${why}`);
      }
      throw refuse('conversation_not_running', notRunningMessage(conversationId, state.status));
    }
    const url = current.internalUrl ?? current.publicUrl;
    if (!url) throw refuse('conversation_not_running', notRunningMessage(conversationId, 'STARTING'));
    return { conversation, connection: current, agent: new AgentServerClient(url, current.sessionKey, this.callTimeoutMs) };
  }
}

function notRunningMessage(conversationId: string, status: SandboxStatus): string {
  return status === 'PAUSED'
    ? `Conversation ${conversationId} is stopped (its sandbox is paused): start it first`
    : `Conversation ${conversationId} is not running yet (its sandbox is ${status})`;
}
