// Start-task and conversation events for the lifecycle webhooks (src/lifecycle-webhooks/lifecycle-events.ts),
// emitted by the code that made the change, right after its write: a start task's every status
// (its creation included), a conversation's start ending (READY → status_changed, ERROR →
// status_changed), each execution status its agent server reports, and its deletion. Each
// carries the resource as the API returns it (the V1 shapes), with the execution status as
// reported (no call to the agent server) and without the sandbox's session key. Shaping a
// resource can fail (the database away): that is logged, never the caller's failure.
import type { AppConversation } from '../../contract/app-conversations.schema.js';
import type { Logger } from '../logger.js';
import { NO_LIFECYCLE_EVENTS, redactedForEvent, type LifecycleEvents } from '../lifecycle-webhooks/lifecycle-events.js';
import type { SandboxesService } from '../sandbox/index.js';
import type { AppConversationRecord } from '../../models/index.js';
import { toTask } from './records/queries.js';
import { LiveStatus } from './live-status.js';
import type { BudgetsService } from './budgets/budgets.service.js';
import type { ConversationStore, StartTask } from './records/store.js';

const BUILD_ATTEMPTS = 3;

export type ConversationEventType = 'conversation.status_changed' | 'conversation.execution_status_changed' | 'conversation.budget_reached';

export class ConversationLifecycleEvents {
  private sink: LifecycleEvents = NO_LIFECYCLE_EVENTS;
  private readonly live: LiveStatus;

  constructor(
    private readonly store: ConversationStore,
    sandboxes: SandboxesService,
    budgets: BudgetsService,
    private readonly log: Logger,
  ) {
    this.live = new LiveStatus(store, sandboxes, budgets);
  }

  /** Where events go (the lifecycle webhooks' outbox; none until wired). */
  use(sink: LifecycleEvents): void {
    this.sink = sink;
  }

  /** Whether a start task's events about `userId` go anywhere now. */
  listensToTasks(userId: string): Promise<boolean> {
    return this.sink.listens(userId, 'start_task.status_changed');
  }

  /** A start task entered a status (or was created, WORKING). */
  async taskChanged(task: StartTask): Promise<void> {
    await this.sink.emit({
      type: 'start_task.status_changed',
      userId: task.userId,
      resource: { kind: 'start_task', id: task._id },
      data: toTask(task) as unknown as Record<string, unknown>,
    });
  }

  /**
   * A conversation changed; it is read now. `executionStatus`: the status this event is about,
   * when one report carried several in a row (each gets its event, in order).
   */
  async conversationChanged(type: ConversationEventType, userId: string, conversationId: string, executionStatus?: string): Promise<void> {
    // Read again after a failure (a busy database, a replica's write gate): the state change
    // stands either way, and only a third failure in a row loses its event (logged).
    for (let attempt = 1; ; attempt++) {
      try {
        const record = await this.store.conversation(userId, conversationId);
        if (!record) return;
        const conversation = await this.shape(userId, record);
        if (executionStatus !== undefined) conversation.execution_status = executionStatus;
        return await this.emitConversation(type, userId, conversation);
      } catch (error) {
        if (attempt >= BUILD_ATTEMPTS)
          return this.log.warn({ err: error, type, conversationId }, 'a conversation event could not be built');
        await new Promise((resolve) => setTimeout(resolve, 250 * attempt).unref());
      }
    }
  }

  /** The conversation as it was just before its deletion. */
  async deleted(userId: string, conversation: AppConversation): Promise<void> {
    await this.emitConversation('conversation.deleted', userId, conversation);
  }

  private async shape(userId: string, record: AppConversationRecord): Promise<AppConversation> {
    return (await this.live.of(userId, [record], false, true))[0]!;
  }

  private emitConversation(
    type: ConversationEventType | 'conversation.deleted',
    userId: string,
    conversation: AppConversation,
  ): Promise<void> {
    return this.sink.emit({
      type,
      userId,
      resource: { kind: 'app_conversation', id: conversation.id },
      data: redactedForEvent(conversation as unknown as Record<string, unknown>),
    });
  }
}
