// Webhooks of agent servers (docs/api.md). They authenticate with the sandbox's session key
// (not a user key), so they use publicProcedure and check it in the service.
import { z } from 'zod';
import { publicProcedure, sandboxProcedure } from '../src/procedures.js';
import { router } from '../src/trpc.js';
import { NoInputSchema, SuccessSchema } from '../contract/common.schema.js';
import { ConversationWebhookInputSchema, EventsWebhookInputSchema } from '../contract/webhooks.schema.js';

export const webhooksRouter = router({
  // Static path first: it would otherwise match {sandbox_id} routes of the same method.
  gitToken: publicProcedure
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
    .query(({ ctx }) => ctx.services.webhooks.lookupGitToken(ctx.accessToken)),

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
      await ctx.services.webhooks.conversation(sandbox_id, ctx.sandboxOwner, info);
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
      await ctx.services.webhooks.events(input.sandbox_id, ctx.sandboxOwner, input.conversation_id, input.events);
      return { success: true };
    }),
});
