// The 2026 actions on one V1 conversation (docs/conversations.md): delete, update, send a
// message, pause and resume its agent, answer a confirmation, switch its LLM profile or ACP
// model, and queue a message for it while it starts.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { REACHES_SANDBOX } from './conversation-runtime.router.js';
import { AppConversationSchema } from '../contract/app-conversations.schema.js';
import { SuccessSchema } from '../contract/common.schema.js';
import {
  AppSendMessageInputSchema,
  AppSendMessageResponseSchema,
  ConfirmationAnswerInputSchema,
  PendingMessageInputSchema,
  PendingMessageResponseSchema,
  SwitchAcpModelInputSchema,
  SwitchProfileInputSchema,
  UpdateAppConversationInputSchema,
  V1ConversationPathSchema,
} from '../contract/conversation-actions.schema.js';

const tags = ['app-conversations'];
const path = (suffix = '') => `/api/v1/app-conversations/{conversation_id}${suffix}` as const;
const SWITCH_FAILURES = ['agent_switch_refused', 'agent_switch_timed_out'] as const;
/** A message that would run an agent a budget stopped (docs/budgets.md). */
const BUDGET_FAILURES = ['budget_reached', 'monthly_budget_reached'] as const;

export const appConversationActionsRouter = router({
  delete: authedProcedure
    .meta({
      errors: ['conversation_not_found'],
      openapi: { method: 'DELETE', path: path(), tags, summary: 'Delete a conversation, its sub-conversations and (unshared) its sandbox' },
    })
    .input(V1ConversationPathSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.delete(ctx.user.id, input.conversation_id)),

  update: authedProcedure
    .meta({
      errors: ['conversation_not_found', 'sandbox_runtime_unavailable'],
      openapi: {
        method: 'PATCH',
        path: path(),
        tags,
        summary: 'Update title, sharing, repository, branch, provider or budget (null clears); a raised budget lets a stopped agent go on',
      },
    })
    .input(UpdateAppConversationInputSchema)
    .output(AppConversationSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.update(ctx.user.id, input)),

  sendMessage: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, ...BUDGET_FAILURES],
      openapi: { method: 'POST', path: path('/send-message'), tags, summary: 'Send a message to the agent (resumes a paused sandbox)' },
    })
    .input(AppSendMessageInputSchema)
    .output(AppSendMessageResponseSchema)
    .mutation(({ ctx, input }) => {
      const { conversation_id, ...message } = input;
      return ctx.services.appConversationActions.sendMessage(ctx.user.id, conversation_id, message);
    }),

  pause: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: {
        method: 'POST',
        path: path('/pause'),
        tags,
        summary: 'Pause the agent after its current step (ours; the sandbox stays up)',
      },
    })
    .input(V1ConversationPathSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.pause(ctx.user.id, input.conversation_id)),

  resume: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, ...BUDGET_FAILURES],
      openapi: { method: 'POST', path: path('/resume'), tags, summary: 'Run a paused agent again (ours; resumes a paused sandbox)' },
    })
    .input(V1ConversationPathSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.resume(ctx.user.id, input.conversation_id)),

  respondToConfirmation: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, ...BUDGET_FAILURES],
      openapi: {
        method: 'POST',
        path: path('/respond-to-confirmation'),
        tags,
        summary: 'Accept or reject the action the agent waits on in confirmation mode (ours)',
      },
    })
    .input(ConfirmationAnswerInputSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) => {
      const { conversation_id, ...answer } = input;
      return ctx.services.appConversationActions.respondToConfirmation(ctx.user.id, conversation_id, answer);
    }),

  switchProfile: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'profile_not_found', 'llm_provider_not_fronted', 'model_not_allowed', ...SWITCH_FAILURES],
      openapi: {
        method: 'POST',
        path: path('/switch_profile'),
        tags,
        summary: "Switch the conversation's LLM to one of your LLM profiles",
      },
    })
    .input(SwitchProfileInputSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.appConversationActions.switchProfile(ctx.user.id, input.conversation_id, input.profile_name),
    ),

  switchAcpModel: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, ...SWITCH_FAILURES],
      openapi: { method: 'POST', path: path('/switch_acp_model'), tags, summary: "Switch an ACP agent's model (other agents: 400)" },
    })
    .input(SwitchAcpModelInputSchema)
    .output(SuccessSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.switchAcpModel(ctx.user.id, input.conversation_id, input.model)),

  queueMessage: authedProcedure
    .meta({
      successStatus: 201,
      errors: [...REACHES_SANDBOX, 'pending_messages_full', ...BUDGET_FAILURES],
      openapi: {
        method: 'POST',
        path: '/api/v1/conversations/{conversation_id}/pending-messages',
        tags,
        summary: 'Queue a message until the conversation is ready (the id may be its start task id)',
      },
    })
    .input(PendingMessageInputSchema)
    .output(PendingMessageResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.appConversationActions.queueMessage(ctx.user.id, input)),
});
