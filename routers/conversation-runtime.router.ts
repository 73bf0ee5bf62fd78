// A conversation's runtime for the conversation page: config (its sandbox id), start, stop,
// and the sandbox's web hosts and VS Code URL (FRONTEND facts §2.13–2.17).
import { authedProcedure } from '../src/procedures.js';
import { router } from '../src/trpc.js';
import {
  ConversationActionResponseSchema,
  ConversationConfigSchema,
  ConversationPathSchema,
  StartConversationInputSchema,
  VscodeUrlSchema,
  WebHostsSchema,
} from '../contract/conversation-page.schema.js';

const tags = ['conversations'];
const path = (suffix: string) => `/api/conversations/{conversation_id}/${suffix}` as const;

export const conversationRuntimeRouter = router({
  config: authedProcedure
    .meta({ openapi: { method: 'GET', path: path('config'), tags, summary: "The conversation's sandbox id (runtime_id)" } })
    .input(ConversationPathSchema)
    .output(ConversationConfigSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.config(ctx.user.id, input.conversation_id)),

  start: authedProcedure
    .meta({ openapi: { method: 'POST', path: path('start'), tags, summary: 'Start a stopped conversation (resumes its sandbox)' } })
    .input(StartConversationInputSchema)
    .output(ConversationActionResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.conversationRuntime.start(ctx.user.id, input.conversation_id)),

  stop: authedProcedure
    .meta({ openapi: { method: 'POST', path: path('stop'), tags, summary: 'Stop a conversation (pauses its sandbox)' } })
    .input(ConversationPathSchema)
    .output(ConversationActionResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.conversationRuntime.stop(ctx.user.id, input.conversation_id)),

  webHosts: authedProcedure
    .meta({ openapi: { method: 'GET', path: path('web-hosts'), tags, summary: "The sandbox's worker URLs and their ports" } })
    .input(ConversationPathSchema)
    .output(WebHostsSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.webHosts(ctx.user.id, input.conversation_id)),

  vscodeUrl: authedProcedure
    .meta({ openapi: { method: 'GET', path: path('vscode-url'), tags, summary: "The sandbox's VS Code URL, with its token" } })
    .input(ConversationPathSchema)
    .output(VscodeUrlSchema)
    .query(({ ctx, input }) => ctx.services.conversationRuntime.vscodeUrl(ctx.user.id, input.conversation_id)),
});
