// The 2026 reads of one V1 conversation's workspace and history (docs/conversations.md): a
// file (REST: text/plain), the files under a directory, skills, hooks, git changes and diffs,
// and the trajectory export (REST: application/zip; both served by src/http/rest/routes.ts).
import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { REACHES_SANDBOX } from './conversation-runtime.router.js';
import {
  ConversationExportSchema,
  HooksResponseSchema,
  ListWorkspaceFilesInputSchema,
  ReadFileInputSchema,
  SkillsResponseSchema,
  V1ConversationPathSchema,
  V1GitChangeSchema,
  V1GitChangesInputSchema,
  V1GitDiffInputSchema,
  V1GitDiffSchema,
} from '../contract/conversation-actions.schema.js';

const tags = ['app-conversations'];
const path = (suffix: string) => `/api/v1/app-conversations/{conversation_id}/${suffix}` as const;
// Skills and hooks read a running agent server only (no resume): these are all they can end in.
const READS_RUNNING = ['conversation_not_found', 'sandbox_gone', 'agent_server_unavailable', 'agent_server_failed'] as const;

export const appConversationFilesRouter = router({
  readFile: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'workspace_path_not_found', 'too_large_to_serve'],
      openapi: { method: 'GET', path: path('file'), tags, summary: "A workspace file's text (REST: text/plain)" },
    })
    .input(ReadFileInputSchema)
    .output(z.string())
    .query(({ ctx, input }) => ctx.services.appConversationFiles.readFile(ctx.user.id, input.conversation_id, input.file_path)),

  listFiles: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: { method: 'GET', path: path('files'), tags, summary: 'Files under a directory, relative to it (a bounded find)' },
    })
    .input(ListWorkspaceFilesInputSchema)
    .output(z.array(z.string()))
    .query(({ ctx, input }) => ctx.services.appConversationFiles.listFiles(ctx.user.id, input.conversation_id, input.path)),

  download: authedProcedure
    .meta({
      errors: ['conversation_not_found', 'too_large_to_serve', 'sandbox_runtime_unavailable'],
      openapi: {
        method: 'GET',
        path: path('download'),
        tags,
        summary: 'The trajectory export: meta.json and the events (REST: application/zip)',
      },
    })
    .input(V1ConversationPathSchema)
    .output(ConversationExportSchema)
    .query(({ ctx, input }) => ctx.services.appConversationFiles.download(ctx.user.id, input.conversation_id)),

  skills: authedProcedure
    .meta({
      errors: [...READS_RUNNING],
      openapi: { method: 'GET', path: path('skills'), tags, summary: "The project's skills ([] while the sandbox is stopped)" },
    })
    .input(V1ConversationPathSchema)
    .output(SkillsResponseSchema)
    .query(({ ctx, input }) => ctx.services.appConversationFiles.skills(ctx.user.id, input.conversation_id)),

  hooks: authedProcedure
    .meta({
      errors: [...READS_RUNNING],
      openapi: { method: 'GET', path: path('hooks'), tags, summary: "The project's hooks ([] while the sandbox is stopped)" },
    })
    .input(V1ConversationPathSchema)
    .output(HooksResponseSchema)
    .query(({ ctx, input }) => ctx.services.appConversationFiles.hooks(ctx.user.id, input.conversation_id)),

  gitChanges: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX],
      openapi: { method: 'GET', path: path('git/changes'), tags, summary: 'Changes of a repository in the workspace (against ref)' },
    })
    .input(V1GitChangesInputSchema)
    .output(z.array(V1GitChangeSchema))
    .query(({ ctx, input }) => ctx.services.appConversationFiles.gitChanges(ctx.user.id, input.conversation_id, input.path, input.ref)),

  gitDiff: authedProcedure
    .meta({
      errors: [...REACHES_SANDBOX, 'workspace_path_not_found'],
      openapi: { method: 'GET', path: path('git/diff'), tags, summary: 'Both sides of a changed file (against ref)' },
    })
    .input(V1GitDiffInputSchema)
    .output(V1GitDiffSchema)
    .query(({ ctx, input }) => ctx.services.appConversationFiles.gitDiff(ctx.user.id, input.conversation_id, input.path, input.ref)),
});
