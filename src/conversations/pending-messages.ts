// Messages queued for a conversation that is not ready yet (POST /api/v1/conversations/{id}/
// pending-messages; the id may be its start task's, also as "task-<id>"), delivered to its
// agent server in order once the start reaches READY (start-workflow.ts), each with run: true.
// A conversation that is ready already gets the message at once (its sandbox resumed if
// paused). At most MAX_QUEUED wait per conversation: the places are claimed by insert
// (models/pending-message.model.ts), so the limit holds across replicas. Delivery removes a
// message before sending it (at most once: a crash in between loses it rather than sending it
// twice); a message the agent server refuses is dropped, as the reference does.
import crypto from 'node:crypto';
import type { Models } from '../../models/index.js';
import type { PendingMessageInput } from '../../contract/conversation-actions.schema.js';
import { hexId, UUID_PATTERN } from '../../contract/common.schema.js';
import type { AgentServerClient } from '../agent-server/client.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import { KeyedQueue } from '../keyed-queue.js';
import type { Logger } from '../logger.js';
import type { SandboxAccess } from '../sandbox/index.js';
import type { ConversationStore } from './records/store.js';

export const MAX_QUEUED = 10;

export class PendingMessages {
  private readonly delivering = new KeyedQueue();

  constructor(
    private readonly models: Models,
    private readonly store: ConversationStore,
    private readonly access: SandboxAccess,
    private readonly log: Logger,
  ) {}

  async queue(userId: string, id: string, message: Omit<PendingMessageInput, 'conversation_id'>) {
    const conversationId = await this.conversationOf(userId, id);
    const messageId = crypto.randomUUID();
    if ((await this.store.conversation(userId, conversationId))?.startState !== 'starting') {
      // Ready (or failed: the access says why): no reason to wait.
      const { agent } = await this.access.running(userId, conversationId);
      await agent.sendMessage(conversationId, { role: message.role, content: message.content, run: true });
      return { id: messageId, queued: false, position: 0 };
    }
    const position = await this.claimPlace(userId, conversationId, messageId, message);
    // The start may have become READY (and delivered what it found) between the read and the insert.
    const now = await this.store.conversation(userId, conversationId);
    if (now && now.startState !== 'starting') {
      const { agent } = await this.access.running(userId, conversationId);
      await this.deliver(conversationId, agent);
    }
    return { id: messageId, queued: true, position };
  }

  /** Sends the conversation's queued messages, oldest first; returns how many were sent. */
  deliver(conversationId: string, agent: AgentServerClient): Promise<number> {
    return this.delivering.run(conversationId, async () => {
      const queued = await this.models.PendingMessage.find({ conversationId }).sort({ createdAt: 1, _id: 1 }).lean();
      let sent = 0;
      for (const message of queued) {
        // Removing it is the claim: another replica delivering at the same time skips it.
        if ((await this.models.PendingMessage.deleteOne({ _id: message._id, messageId: message.messageId })).deletedCount !== 1) continue;
        try {
          await agent.sendMessage(conversationId, { role: message.role, content: message.content as unknown[], run: true });
          sent++;
        } catch (error) {
          this.log.warn({ err: error, conversationId, messageId: message.messageId }, 'a queued message could not be delivered');
        }
      }
      return sent;
    });
  }

  /** Forgets a conversation's queue (its start failed, or it was deleted). */
  async drop(conversationId: string): Promise<void> {
    await this.models.PendingMessage.deleteMany({ conversationId });
  }

  /** The user's conversation named by its id or its start task's id ("task-<id>" too); 404 otherwise. */
  private async conversationOf(userId: string, id: string): Promise<string> {
    const bare = id.replace(/^task-/, '');
    if (UUID_PATTERN.test(bare)) {
      if (!id.startsWith('task-') && (await this.store.conversation(userId, hexId(bare)))) return hexId(bare);
      const task = await this.store.task(userId, hexId(bare));
      if (task) return task.conversationId;
    }
    throw new AppError('NOT_FOUND', `Conversation ${id} not found`, { reason: 'conversation_not_found', fields: { conversation_id: id } });
  }

  /** Inserts the message in a free place of the queue; its 1-based position, or 429 when the queue is full. */
  private async claimPlace(
    userId: string,
    conversationId: string,
    messageId: string,
    message: Omit<PendingMessageInput, 'conversation_id'>,
  ) {
    for (;;) {
      const queued = await this.models.PendingMessage.find({ conversationId }, { n: 1 }).sort({ createdAt: 1, _id: 1 }).lean();
      const taken = new Set(queued.map((m) => m.n));
      const n = [...Array(MAX_QUEUED).keys()].find((i) => !taken.has(i));
      if (n === undefined) {
        throw new AppError('TOO_MANY_REQUESTS', `Too many pending messages: at most ${MAX_QUEUED} wait per conversation`, {
          reason: 'pending_messages_full',
          retryAfterSeconds: 5,
        });
      }
      const record = { _id: `${conversationId}:${n}`, messageId, userId, conversationId, n, role: message.role, content: message.content };
      try {
        await this.models.PendingMessage.create({ ...record, createdAt: new Date() });
        return queued.length + 1;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error; // else another message took that place first: look again
      }
    }
  }
}
