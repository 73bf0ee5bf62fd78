// Conversations their owners made public, read-only (src/conversations/sharing.service.ts):
// any user of this service who has the link reads them; not shared, they answer as absent.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { ConversationEventsSearchInputSchema, EventPageSchema } from '../contract/events.schema.js';
import { SharedConversationListSchema, SharedConversationsInputSchema } from '../contract/sharing.schema.js';

const tags = ['sharing'];

export const sharingRouter = router({
  conversations: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/api/shared-conversations', tags, summary: 'Shared conversations by id (null: not shared)' },
    })
    .input(SharedConversationsInputSchema)
    .output(SharedConversationListSchema)
    .query(({ ctx, input }) => ctx.services.sharing.conversations(input.ids)),

  searchEvents: authedProcedure
    .meta({
      errors: ['conversation_not_found'],
      openapi: { method: 'GET', path: '/api/shared-events/search', tags, summary: "A page of a shared conversation's events" },
    })
    .input(ConversationEventsSearchInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => {
      const { conversation_id, ...filters } = input;
      return ctx.services.sharing.searchEvents(conversation_id, filters);
    }),
});
