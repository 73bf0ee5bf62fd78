// A conversation's workspace for the conversation page, read from the agent server in its
// sandbox: microagents, files, git changes and diffs, uploads, the trajectory, a prompt to
// remember; and feedback on the conversation (FRONTEND facts §2.18–2.26).
import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { REACHES_SANDBOX } from './conversation-runtime.router.js';
import {
  ConversationPathSchema,
  FeedbackInputSchema,
  FeedbackResponseSchema,
  GitChangeSchema,
  GitDiffInputSchema,
  GitDiffSchema,
  ListFilesInputSchema,
  MicroagentsSchema,
  RememberPromptInputSchema,
  RememberPromptSchema,
  TrajectorySchema,
  UploadFilesInputSchema,
  UploadFilesResultSchema,
} from '../contract/conversation-page.schema.js';

const tags = ['conversations'];
const path = (suffix: string) => `/api/conversations/{conversation_id}/${suffix}` as const;

export const conversationWorkspaceRouter = router({
  microagents: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: { method: 'GET', path: path('microagents'), tags, summary: "The repository's microagents" },
    })
    .input(ConversationPathSchema)
    .output(MicroagentsSchema)
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.microagents(ctx.user.id, input.conversation_id)),

  listFiles: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'workspace_path_not_found'],
      openapi: { method: 'GET', path: path('list-files'), tags, summary: 'Entries of a workspace directory' },
    })
    .input(ListFilesInputSchema)
    .output(z.array(z.string()))
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.listFiles(ctx.user.id, input.conversation_id, input.path)),

  gitChanges: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: { method: 'GET', path: path('git/changes'), tags, summary: 'Changed files of the workspace repositories' },
    })
    .input(ConversationPathSchema)
    .output(z.array(GitChangeSchema))
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.gitChanges(ctx.user.id, input.conversation_id)),

  gitDiff: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'workspace_path_not_found'],
      openapi: { method: 'GET', path: path('git/diff'), tags, summary: 'Both sides of a changed file' },
    })
    .input(GitDiffInputSchema)
    .output(GitDiffSchema)
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.gitDiff(ctx.user.id, input.conversation_id, input.path)),

  // REST: multipart/form-data with repeated `files` parts, served by src/http/rest/upload.ts.
  uploadFiles: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: {
        method: 'POST',
        path: path('upload-files'),
        tags,
        summary: 'Upload files into the workspace (REST: multipart/form-data, repeated "files")',
        contentTypes: ['multipart/form-data'],
      },
    })
    .input(UploadFilesInputSchema)
    .output(UploadFilesResultSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.conversationWorkspace.uploadFiles(
        ctx.user.id,
        input.conversation_id,
        input.files.map((f) => ({ name: f.name, content: Buffer.from(f.content_base64, 'base64') })),
      ),
    ),

  trajectory: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: { method: 'GET', path: path('trajectory'), tags, summary: 'Every event of the conversation' },
    })
    .input(ConversationPathSchema)
    .output(TrajectorySchema)
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.trajectory(ctx.user.id, input.conversation_id)),

  rememberPrompt: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'event_not_found'],
      openapi: { method: 'GET', path: path('remember-prompt'), tags, summary: 'A prompt to remember, from the events around one' },
    })
    .input(RememberPromptInputSchema)
    .output(RememberPromptSchema)
    .query(({ ctx, input }) => ctx.services.conversationWorkspace.rememberPrompt(ctx.user.id, input.conversation_id, input.event_id)),

  submitFeedback: authedProcedure
    .meta({
      errors: ['conversation_not_found'],
      openapi: { method: 'POST', path: path('submit-feedback'), tags, summary: 'Feedback on the conversation (kept here)' },
    })
    .input(FeedbackInputSchema)
    .output(FeedbackResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.feedback.submit(ctx.user.id, input.conversation_id, input)),

  // tRPC only: the feedback a user gave on a conversation.
  feedback: authedProcedure
    .input(ConversationPathSchema)
    .output(z.array(z.object({ feedback_id: z.string(), polarity: z.string(), permissions: z.string(), created_at: z.string() })))
    .query(({ ctx, input }) => ctx.services.feedback.list(ctx.user.id, input.conversation_id)),
});
