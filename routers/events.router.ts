// V1 events (docs/api.md): the events agent servers sent by webhook, per conversation and owner.
import { tracked } from '@trpc/server';
import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  ConversationEventsBatchInputSchema,
  ConversationEventsCountInputSchema,
  ConversationEventsSearchInputSchema,
  CountEventsInputSchema,
  EventPageSchema,
  EventSchema,
  SearchEventsInputSchema,
  WatchEventsInputSchema,
} from '../contract/events.schema.js';
import type { AgentEvent } from '../contract/agent-events.js';

const tags = ['events'];
// The 2026 routes name the conversation in the path (the d6 routes above stay).
const v1 = (suffix: string) => `/api/v1/conversation/{conversation_id}/events${suffix}` as const;

export const eventsRouter = router({
  /** tRPC only (server-sent events): the conversation's events, then each as it is stored, on any replica; resumable. */
  watch: authedProcedure.input(WatchEventsInputSchema).subscription(async function* ({ ctx, input, signal }) {
    const after = input.lastEventId ? Number(input.lastEventId) : null;
    for await (const { seq, event } of ctx.services.events.watch(ctx.user.id, input.conversation_id, after, signal)) {
      yield tracked(String(seq), event as AgentEvent);
    }
  }),

  search: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/events/search', tags, summary: "A page of a conversation's events" } })
    .input(SearchEventsInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => ctx.services.events.search(ctx.user.id, input)),

  count: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/events/count', tags, summary: "How many of a conversation's events match" } })
    .input(CountEventsInputSchema)
    .output(z.number().int())
    .query(({ ctx, input }) => ctx.services.events.count(ctx.user.id, input)),

  searchInConversation: authedProcedure
    .meta({ openapi: { method: 'GET', path: v1('/search'), tags, summary: "A page of a conversation's events" } })
    .input(ConversationEventsSearchInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => {
      const { conversation_id, ...filters } = input;
      return ctx.services.events.search(ctx.user.id, { ...filters, conversation_id__eq: conversation_id });
    }),

  countInConversation: authedProcedure
    .meta({ openapi: { method: 'GET', path: v1('/count'), tags, summary: "How many of a conversation's events match" } })
    .input(ConversationEventsCountInputSchema)
    .output(z.number().int())
    .query(({ ctx, input }) => {
      const { conversation_id, ...filters } = input;
      return ctx.services.events.count(ctx.user.id, { ...filters, conversation_id__eq: conversation_id });
    }),

  batchGetInConversation: authedProcedure
    .meta({ openapi: { method: 'GET', path: v1(''), tags, summary: "A conversation's events by id (repeated id; null for unknown ones)" } })
    .input(ConversationEventsBatchInputSchema)
    .output(z.array(EventSchema.nullable()))
    .query(({ ctx, input }) => ctx.services.events.batchGet(ctx.user.id, input.conversation_id, input.id)),
});
