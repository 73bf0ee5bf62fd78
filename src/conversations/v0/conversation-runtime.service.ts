// A conversation's runtime as the conversation page sees it (FRONTEND facts §2.13–2.17):
// its sandbox id (config), starting and stopping it, and the URLs its sandbox exposes.
// Start resumes the sandbox (the agent server reloads its conversations from the workspace);
// stop pauses it, which stops every conversation in that sandbox. Only start resumes: config,
// web-hosts and vscode-url report the sandbox as it is (the web UI polls some of them).
import type { ConversationStatus } from '../../../contract/conversation-page.schema.js';
import { AppError } from '../../errors.js';
import { type SandboxAccess, type SandboxConnection, type SandboxesService, withConversation } from '../../sandbox/index.js';

export class ConversationRuntimeService {
  constructor(
    private readonly access: SandboxAccess,
    private readonly sandboxes: SandboxesService,
  ) {}

  /** The reference's V1 answer: the sandbox id as runtime_id, the id as given as session_id. */
  async config(userId: string, conversationId: string) {
    const conversation = await this.access.conversation(userId, conversationId);
    return { runtime_id: conversation.sandboxId ?? null, session_id: conversationId };
  }

  /**
   * Brings the conversation's sandbox back: resumed through the same transparent resume as
   * every route (retries, the per-user limit), answered once it runs. A start under way
   * answers STARTING (its task brings the sandbox up).
   */
  async start(userId: string, conversationId: string) {
    const { conversation, connection } = await this.access.sandboxOf(userId, conversationId);
    const ok = (conversation_status: 'STARTING' | 'RUNNING') => ({
      status: 'ok' as const,
      conversation_id: conversationId,
      message: null,
      conversation_status,
    });
    const fail = (why: string) =>
      new AppError('CONFLICT', `Failed to start conversation: ${why}`, {
        reason: 'sandbox_gone',
        fields: { conversation_id: conversationId },
      });
    if (conversation.startState === 'failed') throw fail('its start failed; start a new conversation');
    if (conversation.startState === 'starting' || !conversation.sandboxId) return ok('STARTING');
    if (!connection) {
      throw fail(`its sandbox no longer exists${conversation.sandbox_gone_reason ? `: ${conversation.sandbox_gone_reason}` : ''}`);
    }
    try {
      await this.access.runningSandbox(userId, conversationId, conversation, connection);
    } catch (error) {
      if (error instanceof AppError) throw withConversation(error, conversationId, `Failed to start conversation: ${error.message}`);
      throw error;
    }
    return ok('RUNNING');
  }

  async stop(userId: string, conversationId: string) {
    const { conversation, connection } = await this.access.sandboxOf(userId, conversationId);
    const before = statusOf(conversation.startState, connection);
    const answer = (message: string) => ({ status: 'ok' as const, conversation_id: conversationId, message, conversation_status: before });
    // A start under way is not interrupted (its task would fail half-way).
    if (!connection || conversation.startState !== 'ready' || (before !== 'RUNNING' && before !== 'STARTING')) {
      return answer('Conversation was not running');
    }
    await this.sandboxes.pause(userId, conversation.sandboxId!);
    return answer('Conversation stopped successfully');
  }

  /** {url: port} of the sandbox's WORKER_* URLs while it runs (the reference's web_hosts). */
  async webHosts(userId: string, conversationId: string) {
    const { connection } = await this.access.sandboxOf(userId, conversationId);
    const urls = connection?.state.status === 'RUNNING' ? (connection.state.exposedUrls ?? []) : [];
    const hosts: Record<string, number> = {};
    for (const u of urls) if (u.name.startsWith('WORKER_')) hosts[u.url] = u.port ?? portOf(u.url);
    return { hosts };
  }

  /** The VSCODE URL (with its token and folder) while the sandbox runs and has VS Code, else null. */
  async vscodeUrl(userId: string, conversationId: string) {
    const { connection } = await this.access.sandboxOf(userId, conversationId);
    const running = connection?.state.status === 'RUNNING';
    return { vscode_url: (running && connection.state.exposedUrls?.find((u) => u.name === 'VSCODE')?.url) || null };
  }
}

/** The V0 status of a conversation, as the conversation list shows it (reference mapping). */
export function statusOf(startState: string | null | undefined, connection: SandboxConnection | null): ConversationStatus {
  if (startState === 'starting') return 'STARTING';
  if (startState === 'failed') return 'ERROR';
  const status = connection?.state.status ?? 'MISSING';
  return ({ RUNNING: 'RUNNING', STARTING: 'STARTING', PAUSED: 'STOPPED', ERROR: 'ERROR', MISSING: 'ARCHIVED' } as const)[status];
}

function portOf(url: string): number {
  const parsed = new URL(url);
  return Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80);
}
