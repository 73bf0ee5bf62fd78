import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  ConversationIdInputSchema,
  ConversationInfoPageSchema,
  ConversationInfoSchema,
  ListConversationsInputSchema,
  NewConversationInputSchema,
  NewConversationResponseSchema,
  UpdateConversationInputSchema,
} from '../contract/conversations.schema.js';
import { MicroagentManagementInputSchema } from '../contract/conversation-page.schema.js';

const tags = ['conversations'];

export const conversationsRouter = router({
  list: authedProcedure
    .meta({
      errors: ['sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/conversations', tags, summary: 'List conversations, newest first' },
    })
    .input(ListConversationsInputSchema.prefault({}))
    .output(ConversationInfoPageSchema)
    .query(({ ctx, input }) => ctx.services.conversations.list(ctx.user.id, input)),

  microagentManagement: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/microagent-management/conversations',
        tags,
        summary: 'Microagent-creation conversations of a repository whose pull request is open',
      },
    })
    .input(MicroagentManagementInputSchema)
    .output(ConversationInfoPageSchema)
    .query(({ ctx, input }) => ctx.services.conversations.microagentManagement(ctx.user.id, input)),

  create: authedProcedure
    .meta({
      errors: ['settings_not_found', 'llm_key_missing', 'repository_access_denied', 'sandbox_limit_reached'],
      openapi: { method: 'POST', path: '/api/conversations', tags, summary: 'Start a new conversation' },
    })
    .input(NewConversationInputSchema.prefault({}))
    .output(NewConversationResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.conversations.create(ctx.user.id, input)),

  get: authedProcedure
    .meta({
      errors: ['invalid_conversation_id', 'sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/conversations/{conversation_id}', tags, summary: 'Get a conversation (null when unknown)' },
    })
    .input(ConversationIdInputSchema)
    .output(ConversationInfoSchema.nullable())
    .query(({ ctx, input }) => ctx.services.conversations.get(ctx.user.id, input.conversation_id)),

  update: authedProcedure
    .meta({
      errors: ['invalid_conversation_id', 'conversation_not_found', 'sandbox_runtime_unavailable'],
      openapi: { method: 'PATCH', path: '/api/conversations/{conversation_id}', tags, summary: 'Rename a conversation' },
    })
    .input(UpdateConversationInputSchema)
    .output(z.boolean())
    .mutation(({ ctx, input }) => ctx.services.conversations.setTitle(ctx.user.id, input.conversation_id, input.title)),

  delete: authedProcedure
    .meta({
      errors: ['invalid_conversation_id', 'sandbox_runtime_unavailable'],
      openapi: { method: 'DELETE', path: '/api/conversations/{conversation_id}', tags, summary: 'Delete a conversation and its sandbox' },
    })
    .input(ConversationIdInputSchema)
    .output(z.boolean())
    .mutation(({ ctx, input }) => ctx.services.conversations.delete(ctx.user.id, input.conversation_id)),
});
