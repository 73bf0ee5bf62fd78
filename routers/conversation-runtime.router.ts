// A conversation's runtime for the conversation page: config (its sandbox id), start, stop,
// and the sandbox's web hosts and VS Code URL (FRONTEND facts §2.13–2.17).
import { authedProcedure } from '../src/trpc/procedures.js';
import type { ErrorReason } from '../src/errors.js';
import { router } from '../src/trpc/init.js';
import {
  ConversationActionResponseSchema,
  ConversationConfigSchema,
  ConversationPathSchema,
  StartConversationInputSchema,
  VscodeUrlSchema,
  WebHostsSchema,
} from '../contract/conversation-page.schema.js';

const tags = ['conversations'];
// What a route that reaches into the sandbox can end in (the conversation-page rows of the REST failure table).
export const REACHES_SANDBOX = [
  'conversation_not_found',
  'conversation_not_running',
  'sandbox_gone',
  'sandbox_resume_failed',
  'sandbox_limit_reached',
  'agent_server_unavailable',
  'agent_server_failed',
] as const satisfies ErrorReason[];
const path = (suffix: string) => `/api/conversations/{conversation_id}/${suffix}` as const;

export const conversationRuntimeRouter = router({
  config: authedProcedure
    .meta({
      errors: ['conversation_not_found'],
      openapi: { method: 'GET', path: path('config'), tags, summary: "The conversation's sandbox id (runtime_id)" },
    })
    .input(ConversationPathSchema)
    .output(ConversationConfigSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.config(ctx.user.id, input.conversation_id)),

  start: authedProcedure
    .meta({
      errors: ['conversation_not_found', 'sandbox_gone', 'conversation_not_running', 'sandbox_resume_failed', 'sandbox_limit_reached'],
      openapi: { method: 'POST', path: path('start'), tags, summary: 'Start a stopped conversation (resumes its sandbox)' },
    })
    .input(StartConversationInputSchema)
    .output(ConversationActionResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.conversationRuntime.start(ctx.user.id, input.conversation_id)),

  stop: authedProcedure
    .meta({
      errors: ['conversation_not_found', 'sandbox_gone', 'conversation_not_running'],
      openapi: { method: 'POST', path: path('stop'), tags, summary: 'Stop a conversation (pauses its sandbox)' },
    })
    .input(ConversationPathSchema)
    .output(ConversationActionResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.conversationRuntime.stop(ctx.user.id, input.conversation_id)),

  webHosts: authedProcedure
    .meta({
      // The sandbox's state as the runtime reports it: no agent-server call, no resume.
      errors: ['conversation_not_found'],
      openapi: { method: 'GET', path: path('web-hosts'), tags, summary: "The sandbox's worker URLs and their ports" },
    })
    .input(ConversationPathSchema)
    .output(WebHostsSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.webHosts(ctx.user.id, input.conversation_id)),

  vscodeUrl: authedProcedure
    .meta({
      // The sandbox's state as the runtime reports it: no agent-server call, no resume.
      errors: ['conversation_not_found'],
      openapi: { method: 'GET', path: path('vscode-url'), tags, summary: "The sandbox's VS Code URL, with its token" },
    })
    .input(ConversationPathSchema)
    .output(VscodeUrlSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.vscodeUrl(ctx.user.id, input.conversation_id)),
});
