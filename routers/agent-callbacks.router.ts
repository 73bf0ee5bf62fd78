// Agent callbacks: the webhooks agent servers send us (docs/api.md), at the reference's paths
// (/api/v1/webhooks/…). They authenticate with the sandbox's session key (not a user key): the
// d6 routes name the sandbox in the path, the 2026 ones only carry the key.
// Each call counts against that sandbox's rate limit once the key is proven (the git-token
// lookup: against the access token's user), never the shared address of all local sandboxes.
import { z } from 'zod';
import { accessTokenProcedure, sandboxKeyProcedure, sandboxProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { NoInputSchema, SuccessSchema } from '../contract/common.schema.js';
import {
  ConversationByKeyWebhookInputSchema,
  ConversationWebhookInputSchema,
  EventsByKeyWebhookInputSchema,
  EventsWebhookInputSchema,
} from '../contract/agent-callbacks.schema.js';

export const agentCallbacksRouter = router({
  // Static path first: it would otherwise match {sandbox_id} routes of the same method.
  gitToken: accessTokenProcedure
    .meta({
      auth: 'access-token',
      errors: ['provider_token_not_found'],
      openapi: {
        method: 'GET',
        path: '/api/v1/webhooks/secrets',
        tags: ['webhooks'],
        summary: "The user's current git token (X-Access-Token)",
      },
    })
    .input(NoInputSchema)
    .output(z.string())
    .query(({ ctx }) => ctx.services.agentCallbacks.gitToken(ctx.accessClaims)),

  // Agent servers >= 1.0 post to <OH_WEBHOOKS_0_BASE_URL>/conversations and /events/{id}; with a
  // base URL without the sandbox id, the key alone says which sandbox reports.
  conversationByKey: sandboxKeyProcedure
    .meta({
      auth: 'sandbox-key',
      errors: ['webhook_conversation_id_missing'],
      openapi: {
        method: 'POST',
        path: '/api/v1/webhooks/conversations',
        tags: ['webhooks'],
        summary: 'Conversation info from an agent server, identified by its session key',
      },
    })
    .input(ConversationByKeyWebhookInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.agentCallbacks.conversation(ctx.sandboxId, ctx.sandboxOwner, input);
      return { success: true };
    }),

  eventsByKey: sandboxKeyProcedure
    .meta({
      auth: 'sandbox-key',
      openapi: {
        method: 'POST',
        path: '/api/v1/webhooks/events/{conversation_id}',
        tags: ['webhooks'],
        summary: 'A batch of agent events from an agent server identified by its session key (the body is a JSON array)',
      },
    })
    .input(EventsByKeyWebhookInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.agentCallbacks.events(ctx.sandboxId, ctx.sandboxOwner, input.conversation_id, input.events);
      return { success: true };
    }),

  conversation: sandboxProcedure
    .meta({
      auth: 'sandbox',
      errors: ['webhook_conversation_id_missing'],
      openapi: {
        method: 'POST',
        path: '/api/v1/webhooks/{sandbox_id}/conversations',
        tags: ['webhooks'],
        summary: 'Conversation info from an agent server',
      },
    })
    .input(ConversationWebhookInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      const { sandbox_id, ...info } = input;
      await ctx.services.agentCallbacks.conversation(sandbox_id, ctx.sandboxOwner, info);
      return { success: true };
    }),

  events: sandboxProcedure
    .meta({
      auth: 'sandbox',
      openapi: {
        method: 'POST',
        path: '/api/v1/webhooks/{sandbox_id}/events/{conversation_id}',
        tags: ['webhooks'],
        summary: 'A batch of agent events (the body is a JSON array)',
      },
    })
    .input(EventsWebhookInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.agentCallbacks.events(input.sandbox_id, ctx.sandboxOwner, input.conversation_id, input.events);
      return { success: true };
    }),
});
