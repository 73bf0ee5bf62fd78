// Conversations their owners made public, read-only (src/conversations/sharing.service.ts):
// anyone who has the link reads them, signed in or not (docs/decisions/0013-public-links.md: the
// only reads open without a credential); not shared, they answer as absent.
import { publicProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { ConversationEventsSearchInputSchema, EventPageSchema } from '../contract/events.schema.js';
import {
  SharedConversationInputSchema,
  SharedConversationListSchema,
  SharedConversationSchema,
  SharedConversationsInputSchema,
} from '../contract/sharing.schema.js';

const tags = ['sharing'];

export const sharingRouter = router({
  conversations: publicProcedure
    .meta({
      auth: 'none',
      openapi: {
        method: 'GET',
        path: '/api/shared-conversations',
        tags,
        summary: 'Shared conversations by id (null: not shared); no credential needed',
        protect: false,
      },
    })
    .input(SharedConversationsInputSchema)
    .output(SharedConversationListSchema)
    .query(({ ctx, input }) => ctx.services.sharing.conversations(input.ids)),

  conversation: publicProcedure
    .meta({
      auth: 'none',
      errors: ['conversation_not_found'],
      openapi: {
        method: 'GET',
        path: '/api/shared-conversations/{conversation_id}',
        tags,
        summary: 'One shared conversation (404: not shared); no credential needed',
        protect: false,
      },
    })
    .input(SharedConversationInputSchema)
    .output(SharedConversationSchema)
    .query(({ ctx, input }) => ctx.services.sharing.conversation(input.conversation_id)),

  searchEvents: publicProcedure
    .meta({
      auth: 'none',
      errors: ['conversation_not_found'],
      openapi: {
        method: 'GET',
        path: '/api/shared-events/search',
        tags,
        summary: "A page of a shared conversation's events; no credential needed",
        protect: false,
      },
    })
    .input(ConversationEventsSearchInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => {
      const { conversation_id, ...filters } = input;
      return ctx.services.sharing.searchEvents(conversation_id, filters);
    }),
});
