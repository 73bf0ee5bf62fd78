import { z } from 'zod';
import { authedProcedure, orgProcedure, teamOrgId } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  AppConversationPageSchema,
  AppConversationSchema,
  AppConversationStartRequestSchema,
  AppConversationStartTaskSchema,
  BatchGetAppConversationsInputSchema,
  BatchGetStartTasksInputSchema,
  CountAppConversationsInputSchema,
  CountStartTasksInputSchema,
  isLaterSnapshot,
  SearchAppConversationsInputSchema,
  SearchStartTasksInputSchema,
  StartTaskPageSchema,
  WatchAppConversationInputSchema,
  WatchStartTaskInputSchema,
} from '../contract/app-conversations.schema.js';
import type { ClientGeneration } from '../contract/sandbox-specs.schema.js';
import type { Context } from '../src/trpc/context.js';

const tags = ['app-conversations'];
/** What a start request can be refused with (its work's own failures end the task in ERROR). */
// An X-Org-Id naming an organisation the user is no member of: 403 (org_permission_denied).
const START_FAILURES = [
  'parent_conversation_not_found',
  'conversation_exists',
  'start_request_refused',
  'sandbox_limit_reached',
  'org_permission_denied',
  'daily_conversation_limit_reached',
] as const;

/**
 * The d6 web UI served here (WEB_UI_DIR), with its V1 switch on, starts over REST signed in by
 * cookie; its conversations get the agent server it reads. Every other start is today's clients'.
 */
function startingGeneration(ctx: Context): ClientGeneration {
  return ctx.authVia === 'cookie' && ctx.transport === 'rest' && ctx.deps.config.webUi.dir ? '2025' : '2026';
}

export const appConversationsRouter = router({
  search: authedProcedure
    .meta({
      errors: ['sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/v1/app-conversations/search', tags, summary: 'Search conversations, newest first' },
    })
    .input(SearchAppConversationsInputSchema.prefault({}))
    .output(AppConversationPageSchema)
    .query(({ ctx, input }) => ctx.services.appConversations.search(ctx.user.id, input)),

  count: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/app-conversations/count', tags, summary: 'Count conversations' } })
    .input(CountAppConversationsInputSchema.prefault({}))
    .output(z.number())
    .query(({ ctx, input }) => ctx.services.appConversations.count(ctx.user.id, input)),

  searchStartTasks: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/app-conversations/start-tasks/search', tags, summary: 'Search start tasks' } })
    .input(SearchStartTasksInputSchema.prefault({}))
    .output(StartTaskPageSchema)
    .query(({ ctx, input }) => ctx.services.appConversations.searchTasks(ctx.user.id, input)),

  countStartTasks: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/app-conversations/start-tasks/count', tags, summary: 'Count start tasks' } })
    .input(CountStartTasksInputSchema.prefault({}))
    .output(z.number())
    .query(({ ctx, input }) => ctx.services.appConversations.countTasks(ctx.user.id, input)),

  batchGetStartTasks: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/app-conversations/start-tasks', tags, summary: 'Get start tasks by id' } })
    .input(BatchGetStartTasksInputSchema)
    .output(z.array(AppConversationStartTaskSchema.nullable()))
    .query(({ ctx, input }) => ctx.services.appConversations.batchGetTasks(ctx.user.id, input.ids)),

  batchGet: authedProcedure
    .meta({
      errors: ['sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/v1/app-conversations', tags, summary: 'Get conversations by id' },
    })
    .input(BatchGetAppConversationsInputSchema)
    .output(z.array(AppConversationSchema.nullable()))
    .query(({ ctx, input }) => ctx.services.appConversations.batchGet(ctx.user.id, input.ids)),

  start: orgProcedure
    .meta({
      errors: [...START_FAILURES],
      openapi: { method: 'POST', path: '/api/v1/app-conversations', tags, summary: 'Start a conversation; returns its start task' },
    })
    .input(AppConversationStartRequestSchema.prefault({}))
    .output(AppConversationStartTaskSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.appConversations.start(ctx.user.id, input, null, startingGeneration(ctx), teamOrgId(ctx.org)),
    ),

  // REST streams the snapshots as they happen (src/http/rest/routes.ts); tRPC returns them all.
  streamStart: orgProcedure
    .meta({
      errors: [...START_FAILURES],
      openapi: {
        method: 'POST',
        path: '/api/v1/app-conversations/stream-start',
        tags,
        summary: 'Start a conversation and stream its task snapshots',
      },
    })
    .input(AppConversationStartRequestSchema.prefault({}))
    .output(z.array(AppConversationStartTaskSchema))
    .mutation(async ({ ctx, input, signal }) => {
      const task = await ctx.services.appConversations.start(ctx.user.id, input, null, '2026', teamOrgId(ctx.org));
      // The task as started comes first: the runner may have moved it on before the watch began.
      const snapshots = [task];
      for await (const snapshot of ctx.services.appConversations.watchTask(ctx.user.id, task.id, signal)) {
        if (isLaterSnapshot(snapshot, snapshots.at(-1)!)) snapshots.push(snapshot);
      }
      return snapshots;
    }),

  /** tRPC only: the conversation (status, title, metrics, sandbox state) each time it changes, on any replica. */
  watch: authedProcedure.input(WatchAppConversationInputSchema).subscription(async function* ({ ctx, input, signal }) {
    yield* ctx.services.appConversations.watch(ctx.user.id, input.conversation_id, signal);
  }),

  /** tRPC only: a start task's progress, pushed to the client until READY or ERROR. */
  watchStartTask: authedProcedure.input(WatchStartTaskInputSchema).subscription(async function* ({ ctx, input, signal }) {
    yield* ctx.services.appConversations.watchTask(ctx.user.id, input.task_id, signal);
  }),
});
