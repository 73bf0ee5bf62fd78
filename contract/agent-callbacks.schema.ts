// Agent callbacks: the webhooks agent servers send us (docs/api.md; the ones we send are
// lifecycle webhooks, webhook-endpoints.schema.ts). Bodies are the agent server's own models,
// so unknown keys are kept for the service to pick from.
import { z } from 'zod';
import { unsafeInputIssue } from './common.schema.js';

export const ConversationWebhookInputSchema = z.looseObject({ sandbox_id: z.string().min(1), id: z.string().min(1) });

export const AgentEventSchema = z.looseObject({ kind: z.string() });

/** The body is a JSON array of events; REST puts it under `events` (src/http/rest/routes.ts). */
export const EventsWebhookInputSchema = z.object({
  sandbox_id: z.string().min(1),
  conversation_id: z.string().min(1),
  events: z.array(AgentEventSchema),
});

/** A conversation id as the database can look it up (no NUL characters). */
const conversationId = () =>
  z
    .string()
    .min(1)
    .refine((id) => !id.includes('\u0000'), 'String should not contain NUL characters');

/**
 * The key-only routes (/api/v1/webhooks/conversations): the sandbox is the key's, not named.
 * Fields of the info are stored as sent (title, status, model), so none may hold a NUL.
 */
export const ConversationByKeyWebhookInputSchema = z.looseObject({ id: conversationId() }).superRefine((info, ctx) => {
  const issue = unsafeInputIssue(info);
  if (issue) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
});

/** An event is stored as its JSON text; its kind and id are also kept as they are. */
const StoredAgentEventSchema = z.looseObject({
  kind: z.string().refine((kind) => !kind.includes('\u0000'), 'String should not contain NUL characters'),
  id: z
    .unknown()
    .refine((id) => typeof id !== 'string' || !id.includes('\u0000'), 'String should not contain NUL characters')
    .optional(),
});

export const EventsByKeyWebhookInputSchema = z.object({ conversation_id: conversationId(), events: z.array(StoredAgentEventSchema) });
