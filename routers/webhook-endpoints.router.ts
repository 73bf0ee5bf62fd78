// Lifecycle webhooks (docs/webhooks.md): the endpoints a user registers to hear of their start
// tasks, conversations and sandboxes, each delivery's history, and a test event. Under
// /api/v1/webhook-endpoints, apart from the agent servers' inbound /api/v1/webhooks/… routes.
// Static paths before {endpoint_id} ones: the REST matcher takes the first match.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { SuccessSchema } from '../contract/common.schema.js';
import {
  CreateWebhookEndpointInputSchema,
  RotateWebhookSecretInputSchema,
  SearchWebhookDeliveriesInputSchema,
  SearchWebhookEndpointsInputSchema,
  UpdateWebhookEndpointInputSchema,
  WebhookDeliveryPageSchema,
  WebhookDeliverySchema,
  WebhookEndpointIdInputSchema,
  WebhookEndpointPageSchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
} from '../contract/webhook-endpoints.schema.js';

const route = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: `/api/v1/webhook-endpoints${string}`, summary: string) => ({
  method,
  path,
  tags: ['webhook-endpoints'],
  summary,
});

export const webhookEndpointsRouter = router({
  search: authedProcedure
    .meta({ openapi: route('GET', '/api/v1/webhook-endpoints/search', 'Your webhook endpoints, oldest first (never their secrets)') })
    .input(SearchWebhookEndpointsInputSchema)
    .output(WebhookEndpointPageSchema)
    .query(({ ctx, input }) => ctx.services.webhookEndpoints.search(ctx.user.id, input.page_id, input.limit)),

  create: authedProcedure
    .meta({
      successStatus: 201,
      errors: ['webhook_url_not_allowed', 'webhook_endpoint_limit'],
      openapi: route('POST', '/api/v1/webhook-endpoints', 'Register an endpoint; the answer shows its signing secret, once'),
    })
    .input(CreateWebhookEndpointInputSchema)
    .output(WebhookEndpointWithSecretSchema)
    .mutation(({ ctx, input }) => ctx.services.webhookEndpoints.create(ctx.user.id, input)),

  get: authedProcedure
    .meta({
      errors: ['webhook_endpoint_not_found'],
      openapi: route('GET', '/api/v1/webhook-endpoints/{endpoint_id}', 'One webhook endpoint'),
    })
    .input(WebhookEndpointIdInputSchema)
    .output(WebhookEndpointSchema)
    .query(({ ctx, input }) => ctx.services.webhookEndpoints.get(ctx.user.id, input.endpoint_id)),

  update: authedProcedure
    .meta({
      errors: ['webhook_endpoint_not_found', 'webhook_url_not_allowed'],
      openapi: route('PATCH', '/api/v1/webhook-endpoints/{endpoint_id}', 'Change the URL, description or event types'),
    })
    .input(UpdateWebhookEndpointInputSchema)
    .output(WebhookEndpointSchema)
    .mutation(({ ctx, input }) => {
      const { endpoint_id, ...fields } = input;
      return ctx.services.webhookEndpoints.update(ctx.user.id, endpoint_id, fields);
    }),

  delete: authedProcedure
    .meta({
      errors: ['webhook_endpoint_not_found'],
      openapi: route('DELETE', '/api/v1/webhook-endpoints/{endpoint_id}', 'Delete an endpoint; its pending deliveries are dropped'),
    })
    .input(WebhookEndpointIdInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.webhookEndpoints.delete(ctx.user.id, input.endpoint_id);
      return { success: true };
    }),

  rotateSecret: authedProcedure
    .meta({
      errors: ['webhook_endpoint_not_found'],
      openapi: route(
        'POST',
        '/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret',
        'A new signing secret (shown once); the previous one also signs for 24 hours',
      ),
    })
    .input(RotateWebhookSecretInputSchema)
    .output(WebhookEndpointWithSecretSchema)
    .mutation(({ ctx, input }) => ctx.services.webhookEndpoints.rotateSecret(ctx.user.id, input.endpoint_id, input.secret)),

  sendTest: authedProcedure
    .meta({
      successStatus: 202,
      errors: ['webhook_endpoint_not_found'],
      openapi: route('POST', '/api/v1/webhook-endpoints/{endpoint_id}/test', 'Send a webhook.test event; the answer is its delivery'),
    })
    .input(WebhookEndpointIdInputSchema)
    .output(WebhookDeliverySchema)
    .mutation(({ ctx, input }) => ctx.services.webhookEndpoints.sendTest(ctx.user.id, input.endpoint_id)),

  deliveries: authedProcedure
    .meta({
      errors: ['webhook_endpoint_not_found'],
      openapi: route('GET', '/api/v1/webhook-endpoints/{endpoint_id}/deliveries', "An endpoint's deliveries, newest first"),
    })
    .input(SearchWebhookDeliveriesInputSchema)
    .output(WebhookDeliveryPageSchema)
    .query(({ ctx, input }) => {
      const { endpoint_id, ...filter } = input;
      return ctx.services.webhookEndpoints.deliveries(ctx.user.id, endpoint_id, filter);
    }),
});
