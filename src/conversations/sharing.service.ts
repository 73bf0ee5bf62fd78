// Conversations their owners made public (PATCH … {"public": true}), read-only, by anyone who
// has the conversation's id, with or without a credential (docs/decisions/0013-public-links.md):
// OpenHands Cloud's shared view (/api/shared-conversations, /api/shared-events/search) and the
// service's page for the link (src/http/web/shared-page.ts). Made
// private again, it answers as absent at once. Nothing here writes, starts or reaches a sandbox.
import type { SearchEventsInput } from '../../contract/events.schema.js';
import type { AppConversationRecord } from '../../models/index.js';
import { AppError } from '../errors.js';
import type { BudgetsService } from './budgets/budgets.service.js';
import type { EventsService } from './events/events.service.js';
import { conversationIdOf } from './app-conversation-actions.service.js';
import { storedConversationFields } from './records/queries.js';
import type { ConversationStore } from './records/store.js';

export class SharingService {
  constructor(
    private readonly store: ConversationStore,
    private readonly events: EventsService,
    private readonly budgets: BudgetsService,
  ) {}

  /** The shared conversations of these ids, in the order asked: null for one missing or not public. */
  async conversations(ids: string[]) {
    const keys = ids.map(conversationIdOf);
    const records = new Map((await this.store.publicConversations(keys)).map((r) => [r._id, r]));
    return Promise.all(keys.map(async (id) => (records.has(id) ? this.shared(records.get(id)!) : null)));
  }

  /** One shared conversation; one missing or not public answers as not found. */
  async conversation(conversationId: string) {
    const [shared] = await this.conversations([conversationId]);
    if (!shared) throw notShared(conversationId);
    return shared;
  }

  /** A page of a shared conversation's events; one missing or not public answers as not found. */
  async searchEvents(conversationId: string, input: Omit<SearchEventsInput, 'conversation_id__eq'>) {
    const id = conversationIdOf(conversationId);
    const [record] = await this.store.publicConversations([id]);
    if (!record) throw notShared(conversationId);
    return this.events.search(record.userId, { ...input, conversation_id__eq: id });
  }

  private async shared(r: AppConversationRecord) {
    const subs = await this.store.subConversationsOf(r.userId, [r._id]);
    const publicSubs = await this.store.publicConversations(subs.map((s) => s._id));
    return {
      ...storedConversationFields(r),
      pr_number: r.pr_number ?? [],
      llm_model: r.llm_model ?? null,
      metrics: this.budgets.view(r, await this.budgets.userLimits(r.userId)).metrics,
      parent_conversation_id: r.parent_conversation_id ?? null,
      // Only the sub-conversations shared too.
      sub_conversation_ids: publicSubs.map((s) => s._id),
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
    };
  }
}

const notShared = (conversationId: string) =>
  new AppError('NOT_FOUND', 'Conversation not found', { reason: 'conversation_not_found', fields: { conversationId } });
