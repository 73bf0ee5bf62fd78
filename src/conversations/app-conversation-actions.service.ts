// The 2026 actions on one V1 conversation (docs/conversations.md): delete, update, send a
// message, pause and resume its agent, answer a confirmation, switch its LLM profile or ACP
// model, queue a message for it. They run over the same
// store, start machinery and sandbox access as the V0 and d6 routes; those that need the agent
// server resume a paused sandbox first (sandbox-access.ts decides what to answer when there is
// none), and an agent server that misbehaves is a 502 naming it.
import crypto from 'node:crypto';
import type { AppConversation } from '../../contract/app-conversations.schema.js';
import type { PendingMessageInput, UpdateAppConversationInput } from '../../contract/conversation-actions.schema.js';
import { hexId, UUID_PATTERN } from '../../contract/common.schema.js';
import { AgentServerError } from '../agent-server/client.js';
import type { AgentLlms } from '../llm-gateway/agent-llm.js';
import { AppError } from '../errors.js';
import type { AppConversationsService } from './app-conversations.service.js';
import type { BudgetsService } from './budgets/budgets.service.js';
import type { PendingMessages } from './pending-messages.js';
import type { LlmProfiles } from './profiles.js';
import type { SandboxAccess } from '../sandbox/index.js';
import type { ConversationStore } from './records/store.js';

/** Our conversation ids are 32 lowercase hex digits; clients may send them dashed. */
export const conversationIdOf = (id: string) => (UUID_PATTERN.test(id) ? hexId(id) : id);

export class AppConversationActionsService {
  constructor(
    private readonly store: ConversationStore,
    private readonly conversations: AppConversationsService,
    private readonly access: SandboxAccess,
    private readonly pending: PendingMessages,
    private readonly llmProfiles: LlmProfiles,
    private readonly budgets: BudgetsService,
    private readonly agentLlms: AgentLlms,
  ) {}

  /** Deletes the conversation, its sub-conversations (as the reference does), its data and, when unshared, its sandbox. */
  async delete(userId: string, rawId: string): Promise<{ success: true }> {
    const id = conversationIdOf(rawId);
    // Readers see the delete under way (execution_status "deleting") until the record is gone.
    await this.store.updateConversation(userId, id, { execution_status: 'deleting' });
    for (const sub of await this.store.subConversationsOf(userId, [id])) await this.conversations.delete(userId, sub._id);
    if (!(await this.conversations.delete(userId, id))) throw notFound(rawId, 'Conversation not found');
    await this.pending.drop(id);
    return { success: true };
  }

  /**
   * Sets the fields the request names (null clears one); the conversation as it is then. A budget
   * goes through the budgets, which let a conversation it had stopped go on (docs/budgets.md).
   */
  async update(userId: string, input: UpdateAppConversationInput): Promise<AppConversation> {
    const { conversation_id: rawId, max_budget_per_task: budget, ...fields } = input;
    const id = conversationIdOf(rawId);
    const set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
    if (set.title === '') set.title = null;
    if ('title' in set) set.titleByUser = set.title !== null;
    if (!(await this.store.updateConversation(userId, id, set))) throw notFound(rawId, `Conversation ${rawId} not found`);
    if (budget !== undefined) await this.budgets.setConversationBudget(userId, id, budget);
    // A new title also goes to the agent server (best effort, as the V0 rename).
    if (typeof set.title === 'string') await this.conversations.setTitle(userId, id, set.title);
    const conversation = await this.conversations.get(userId, id);
    if (!conversation) throw notFound(rawId, `Conversation ${rawId} not found`);
    return conversation;
  }

  /** Relays a user message to the agent server (resuming a paused sandbox first); one that runs the agent must be within budget. */
  async sendMessage(userId: string, rawId: string, message: { role: 'user'; content: unknown[]; run: boolean }) {
    const id = conversationIdOf(rawId);
    if (message.run) await this.budgets.assertMayRun(userId, id);
    const before = (await this.access.sandboxOf(userId, id)).connection?.state.status;
    const { agent } = await this.access.running(userId, id);
    await agent.sendMessage(id, message);
    const resumed = before === 'PAUSED' || before === 'ERROR' || before === 'MISSING';
    return {
      success: true,
      sandbox_status: 'RUNNING' as const,
      message: resumed ? `The sandbox was ${before} and has been resumed` : null,
    };
  }

  /** Pauses the agent after its current step; the sandbox stays up (a sandbox not running has no agent running to pause). */
  async pause(userId: string, rawId: string): Promise<{ success: true }> {
    const id = conversationIdOf(rawId);
    const { connection } = await this.access.sandboxOf(userId, id);
    if (connection && connection.state.status !== 'RUNNING') return { success: true };
    const { agent } = await this.access.running(userId, id, { resume: false });
    await agent.pauseConversation(id);
    return { success: true };
  }

  /** Runs a paused or idle agent again (resuming a paused sandbox first), within budget; one already running is left as it is. */
  async resume(userId: string, rawId: string): Promise<{ success: true }> {
    const id = conversationIdOf(rawId);
    await this.budgets.assertMayRun(userId, id);
    const { agent } = await this.access.running(userId, id);
    await agent.runConversation(id);
    return { success: true };
  }

  /** Accepts (within budget: the agent then runs) or rejects the action the agent waits on in confirmation mode. */
  async respondToConfirmation(userId: string, rawId: string, answer: { accept: boolean; reason?: string | undefined }) {
    const id = conversationIdOf(rawId);
    if (answer.accept) await this.budgets.assertMayRun(userId, id);
    const { agent } = await this.access.running(userId, id);
    await agent.respondToConfirmation(id, { accept: answer.accept, ...(answer.reason ? { reason: answer.reason } : {}) });
    return { success: true as const };
  }

  /** Switches the conversation's LLM to the user's LLM profile of that name (handed to the agent server in full). */
  async switchProfile(userId: string, rawId: string, profileName: string): Promise<{ success: true }> {
    const id = conversationIdOf(rawId);
    const conversation = await this.access.conversation(userId, id);
    const llm = await this.llmProfiles.llm(userId, profileName);
    if (!llm) throw new AppError('NOT_FOUND', `Profile '${profileName}' not found`, { reason: 'profile_not_found' });
    // The digest below names the profile's content, key included, without the key reaching the agent.
    const named = { model: llm.model, base_url: llm.base_url ?? null, api_key: llm.api_key ?? null };
    const agentLlm = conversation.sandboxId
      ? await this.agentLlms.forConversation(
          id,
          { userId, sandboxId: conversation.sandboxId },
          {
            model: llm.model,
            baseUrl: llm.base_url ?? null,
            apiKey: llm.api_key ?? null,
          },
        )
      : null;
    const payload: Record<string, unknown> = agentLlm
      ? { model: agentLlm.model, base_url: agentLlm.base_url ?? null, api_key: agentLlm.api_key ?? null }
      : named;
    // The agent server keeps the first LLM registered under a usage id: one per profile content, so an edited profile applies.
    const digest = crypto.createHash('sha256').update(JSON.stringify(named)).digest('hex').slice(0, 12);
    const { agent } = await this.access.running(userId, id);
    await switched(() => agent.switchLlm(id, { ...payload, usage_id: `profile:${profileName}:${digest}` }), 'the profile switch');
    await this.store.updateConversation(userId, id, { llm_model: llm.model });
    return { success: true };
  }

  /** Switches an ACP agent's model; the agent server refuses it for other agents (400, with its reason). */
  async switchAcpModel(userId: string, rawId: string, model: string): Promise<{ success: true }> {
    const id = conversationIdOf(rawId);
    const { agent } = await this.access.running(userId, id);
    await switched(() => agent.switchAcpModel(id, model), 'the model switch');
    await this.store.updateConversation(userId, id, { llm_model: model });
    return { success: true };
  }

  async queueMessage(userId: string, input: PendingMessageInput) {
    const { conversation_id, ...message } = input;
    // Delivered at once (and run) when the conversation is ready: the same budget rule as a sent message.
    await this.budgets.assertMayRun(userId, conversationIdOf(conversation_id));
    return this.pending.queue(userId, conversation_id, message);
  }
}

function notFound(id: string, message: string): AppError {
  return new AppError('NOT_FOUND', message, { reason: 'conversation_not_found', fields: { conversation_id: id } });
}

/** A switch the agent server refused (400) or did not finish in time (504) says so; anything else stays a 502/503. */
async function switched(call: () => Promise<void>, what: string): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (!(error instanceof AgentServerError)) throw error;
    const why = error.upstreamDetail ? `: ${error.upstreamDetail}` : '';
    if (error.upstreamStatus === 400) {
      throw new AppError('BAD_REQUEST', `The agent server refused ${what}${why}`, { reason: 'agent_switch_refused', cause: error });
    }
    if (error.upstreamStatus === 504) {
      throw new AppError('GATEWAY_TIMEOUT', `The agent server did not finish ${what} in time${why}`, {
        reason: 'agent_switch_timed_out',
        cause: error,
      });
    }
    throw error;
  }
}
