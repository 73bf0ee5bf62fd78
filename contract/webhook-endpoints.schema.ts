// Lifecycle webhooks (docs/webhooks.md): endpoints a user registers to be told, by signed
// POSTs (Standard Webhooks), when a start task, conversation or sandbox changes. Not the agent
// servers' inbound /api/v1/webhooks/… routes (webhooks.schema.ts).
import { z } from 'zod';
import { PagingInputSchema, queryInt } from './common.schema.js';

/** Every event type, in the order docs/webhooks.md lists them; the client package repeats the list. */
export const WEBHOOK_EVENT_TYPES = [
  'start_task.status_changed',
  'conversation.status_changed',
  'conversation.execution_status_changed',
  'conversation.budget_reached',
  'conversation.deleted',
  'sandbox.paused',
  'sandbox.resumed',
  'sandbox.deleted',
  'webhook.test',
] as const;
export const WebhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'WebhookEventType' });
export type WebhookEventType = z.infer<typeof WebhookEventTypeSchema>;

/** Standard Webhooks' secret form: "whsec_" and the base64 of 24 to 64 random bytes. */
export const WEBHOOK_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

const decodedLength = (secret: string) => {
  const base64 = secret.slice('whsec_'.length);
  return base64.length % 4 === 0 ? Math.floor((base64.length * 3) / 4) - (base64.match(/=+$/)?.[0].length ?? 0) : -1;
};

export const WebhookSecretSchema = z
  .string()
  .regex(WEBHOOK_SECRET_PATTERN, 'A secret is "whsec_" followed by base64')
  .refine((secret) => decodedLength(secret) >= 24 && decodedLength(secret) <= 64, 'A secret must decode to 24 to 64 bytes');

/** An http(s) URL with a host and without credentials or a fragment; where it may point is the service's call (WEBHOOK_HOSTS). */
export const WebhookUrlSchema = z
  .string()
  .trim()
  .max(2000)
  .refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && !url.username && !url.password && !url.hash;
    } catch {
      return false;
    }
  }, 'Input should be an http or https URL without credentials or fragment');

/** null or [] means every type. */
const EventTypesSchema = z.array(WebhookEventTypeSchema).max(WEBHOOK_EVENT_TYPES.length).nullable();
const DescriptionSchema = z.string().max(500).nullable();
const EndpointId = z.string().min(1).max(64);

export const CreateWebhookEndpointInputSchema = z
  .strictObject({
    url: WebhookUrlSchema,
    description: DescriptionSchema.optional(),
    event_types: EventTypesSchema.optional(),
    // Leave out to have one generated (shown once, in the answer).
    secret: WebhookSecretSchema.optional(),
  })
  .meta({ id: 'CreateWebhookEndpointInput' });

export const UpdateWebhookEndpointInputSchema = z.strictObject({
  endpoint_id: EndpointId,
  url: WebhookUrlSchema.optional(),
  description: DescriptionSchema.optional(),
  event_types: EventTypesSchema.optional(),
});

export const WebhookEndpointIdInputSchema = z.object({ endpoint_id: EndpointId });

export const RotateWebhookSecretInputSchema = z.strictObject({ endpoint_id: EndpointId, secret: WebhookSecretSchema.optional() });

export const SearchWebhookEndpointsInputSchema = PagingInputSchema.prefault({});

export const WebhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    /** null: every event type. */
    event_types: z.array(WebhookEventTypeSchema).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    /** Until when the previous secret still signs too (after a rotation), or null. */
    previous_secret_expires_at: z.string().nullable(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpointSchema>;

/** The answer of a creation or rotation: the only time the secret is shown. */
export const WebhookEndpointWithSecretSchema = WebhookEndpointSchema.extend({ secret: z.string() }).meta({
  id: 'WebhookEndpointWithSecret',
});

export const WebhookEndpointPageSchema = z
  .object({ items: z.array(WebhookEndpointSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'WebhookEndpointPage' });

export const WebhookDeliveryStatusSchema = z.enum(['pending', 'delivered', 'failed']).meta({ id: 'WebhookDeliveryStatus' });

export const WebhookAttemptSchema = z
  .object({
    attempt: z.number().int(),
    at: z.string(),
    /** The receiver's HTTP status, or null when no answer came (refused, timed out, unreachable). */
    status_code: z.number().int().nullable(),
    error: z.string().nullable(),
    duration_ms: z.number().int(),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDeliverySchema = z
  .object({
    id: z.string(),
    event_id: z.string(),
    event_type: WebhookEventTypeSchema,
    status: WebhookDeliveryStatusSchema,
    attempt_count: z.number().int(),
    next_attempt_at: z.string().nullable(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    /** The JSON body as sent: {id, type, timestamp, data}. */
    payload: z.record(z.string(), z.unknown()),
    attempts: z.array(WebhookAttemptSchema),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;

export const WebhookDeliveryPageSchema = z
  .object({ items: z.array(WebhookDeliverySchema), next_page_id: z.string().nullable() })
  .meta({ id: 'WebhookDeliveryPage' });

export const SearchWebhookDeliveriesInputSchema = z.object({
  endpoint_id: EndpointId,
  status: WebhookDeliveryStatusSchema.nullable().optional(),
  page_id: z.string().nullable().optional(),
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(100),
});
