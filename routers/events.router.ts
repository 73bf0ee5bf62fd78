// V1 events (docs/api.md): the events agent servers sent by webhook, per conversation and owner.
import { z } from 'zod';
import { authedProcedure } from '../src/procedures.js';
import { router } from '../src/trpc.js';
import { CountEventsInputSchema, EventPageSchema, SearchEventsInputSchema } from '../contract/events.schema.js';

const tags = ['events'];

export const eventsRouter = router({
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
});
