// V1 events (docs/api.md): the agent-server events of a conversation, as its webhooks sent them.
import { z } from 'zod';
import { idListSchema, isoDateTime, queryInt, uuidString } from './common.schema.js';

const EventFilters = {
  // Ours: required (the reference also searches every visible conversation at once, at a cost
  // that grows with all of a user's events; the web UI always names one).
  conversation_id__eq: uuidString(),
  // An SDK event class name (MessageEvent, ActionEvent, ConversationStateUpdateEvent, …).
  kind__eq: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'Input should be an event kind')
    .optional(),
  timestamp__gte: isoDateTime().optional(),
  timestamp__lt: isoDateTime().optional(),
};

export const EventSortOrderSchema = z.enum(['TIMESTAMP', 'TIMESTAMP_DESC']).meta({ id: 'EventSortOrder' });

export const CountEventsInputSchema = z.object({
  ...EventFilters,
  // Accepted and ignored for counting, as the reference does.
  sort_order: EventSortOrderSchema.optional(),
});
export type EventFilters = z.output<typeof CountEventsInputSchema>;

/**
 * tRPC events.watch: a conversation's events, then each as it is stored. `lastEventId` (what
 * tRPC's subscription link sends on a reconnect: the last event's position) resumes after it.
 */
export const WatchEventsInputSchema = z.object({
  conversation_id: z.string().min(1).max(64),
  lastEventId: z
    .string()
    .regex(/^\d{1,15}$/)
    .nullish(),
});

export const SearchEventsInputSchema = z.object({
  ...EventFilters,
  sort_order: EventSortOrderSchema.default('TIMESTAMP'),
  page_id: z.string().nullable().optional(),
  // Reference: limit > 100 fails an assert (500); we answer 422.
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(100),
});
export type SearchEventsInput = z.output<typeof SearchEventsInputSchema>;

/** An SDK event as the agent server serialised it (discriminated by `kind`; `id`, `timestamp`, `source`). */
export const EventSchema = z.looseObject({ kind: z.string() }).meta({ id: 'Event' });

export const EventPageSchema = z.object({ items: z.array(EventSchema), next_page_id: z.string().nullable() }).meta({ id: 'EventPage' });

// The 2026 events routes (/api/v1/conversation/{conversation_id}/events…): the same filters,
// with the conversation named in the path.
const { conversation_id__eq: _eq, ...PathlessFilters } = EventFilters;
export const ConversationEventsCountInputSchema = z.object({
  conversation_id: uuidString(),
  ...PathlessFilters,
  sort_order: EventSortOrderSchema.optional(),
});
export const ConversationEventsSearchInputSchema = z.object({
  conversation_id: uuidString(),
  ...PathlessFilters,
  sort_order: EventSortOrderSchema.default('TIMESTAMP'),
  page_id: z.string().nullable().optional(),
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(100),
});
/** Events by id (repeated `id`), as the reference's batch get: null for an id it does not keep. */
export const ConversationEventsBatchInputSchema = z.object({ conversation_id: uuidString(), id: idListSchema() });
