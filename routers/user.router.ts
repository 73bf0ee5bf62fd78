// The user's repositories through their stored git provider tokens (/api/user/*): what the web
// UI's repository and branch pickers, suggested tasks and microagent pages call. Static paths
// come before {repository_name} ones; names containing "/" reach the microagent procedures
// through the REST edge's raw routes.
import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router, type Meta } from '../src/trpc/init.js';
import { NoInputSchema } from '../contract/common.schema.js';
import {
  BranchesInputSchema,
  BranchSchema,
  GitUserSchema,
  InstallationsInputSchema,
  MicroagentContentInputSchema,
  MicroagentContentSchema,
  MicroagentSchema,
  MicroagentsInputSchema,
  PaginatedBranchesSchema,
  RepositoriesInputSchema,
  RepositorySchema,
  SearchBranchesInputSchema,
  SearchRepositoriesInputSchema,
  SuggestedTaskSchema,
} from '../contract/user-git.schema.js';

// Every route asks the user's providers through one client: any of their failures can come back.
const PROVIDER_FAILURES: Meta['errors'] = [
  'git_token_required',
  'invalid_provider_token',
  'provider_unsupported',
  'provider_refused',
  'provider_not_found',
  'provider_rate_limited',
  'provider_busy',
  'provider_unreachable',
  'provider_host_not_allowed',
];

const get = (path: `/api/${string}`, summary: string): Meta => ({
  errors: PROVIDER_FAILURES,
  openapi: { method: 'GET' as const, path, tags: ['user'], summary },
});

export const userRouter = router({
  info: authedProcedure
    .meta(get('/api/user/info', 'The git user of the first stored provider token that answers'))
    .input(NoInputSchema)
    .output(GitUserSchema)
    .query(({ ctx }) => ctx.services.userGit.info(ctx.user.id)),

  installations: authedProcedure
    .meta(get('/api/user/installations', 'GitHub App installations or Bitbucket workspaces'))
    .input(InstallationsInputSchema)
    .output(z.array(z.string()))
    .query(({ ctx, input }) => ctx.services.userGit.installations(ctx.user.id, input.provider)),

  repositories: authedProcedure
    .meta(get('/api/user/repositories', "A page of the user's repositories (every item carries the page's link_header)"))
    .input(RepositoriesInputSchema.prefault({}))
    .output(z.array(RepositorySchema))
    .query(({ ctx, input }) => ctx.services.userGit.repositories(ctx.user.id, input)),

  searchRepositories: authedProcedure
    .meta(get('/api/user/search/repositories', 'Search repositories (free text, owner/repo or a public URL)'))
    .input(SearchRepositoriesInputSchema)
    .output(z.array(RepositorySchema))
    .query(({ ctx, input }) => ctx.services.userGit.searchRepositories(ctx.user.id, input)),

  branches: authedProcedure
    .meta(get('/api/user/repository/branches', "A page of a repository's branches"))
    .input(BranchesInputSchema)
    .output(PaginatedBranchesSchema)
    .query(({ ctx, input }) => ctx.services.userGit.branches(ctx.user.id, input.repository, input.page, input.per_page)),

  searchBranches: authedProcedure
    .meta(get('/api/user/search/branches', "Search a repository's branches by name"))
    .input(SearchBranchesInputSchema)
    .output(z.array(BranchSchema))
    .query(({ ctx, input }) =>
      ctx.services.userGit.searchBranches(ctx.user.id, input.repository, input.query, input.per_page, input.selected_provider),
    ),

  suggestedTasks: authedProcedure
    .meta(get('/api/user/suggested-tasks', 'Open pull requests that need work and assigned issues'))
    .input(NoInputSchema)
    .output(z.array(SuggestedTaskSchema))
    .query(({ ctx }) => ctx.services.userGit.suggestedTasks(ctx.user.id)),

  microagents: authedProcedure
    .meta(
      get(
        '/api/user/repository/{repository_name}/microagents',
        "A repository's microagents (repository_name: owner/repo, may contain '/')",
      ),
    )
    .input(MicroagentsInputSchema)
    .output(z.array(MicroagentSchema))
    .query(({ ctx, input }) => ctx.services.userGit.microagents(ctx.user.id, input.repository_name)),

  microagentContent: authedProcedure
    .meta(get('/api/user/repository/{repository_name}/microagents/content', 'One microagent file: body, triggers and provider'))
    .input(MicroagentContentInputSchema)
    .output(MicroagentContentSchema)
    .query(({ ctx, input }) => ctx.services.userGit.microagentContent(ctx.user.id, input.repository_name, input.file_path)),
});
