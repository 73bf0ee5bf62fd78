// The 2026 git searches (docs/git-providers.md): the repository and branch pickers,
// installations and suggested tasks of today's clients, over the provider clients of
// /api/user/* with their failures (as {"detail": …}, rows in src/http/rest/legacy-errors.ts).
import { authedProcedure } from '../src/trpc/procedures.js';
import { router, type Meta } from '../src/trpc/init.js';
import {
  BranchesSearchInputSchema,
  BranchPageSchema,
  InstallationPageSchema,
  InstallationsSearchInputSchema,
  RepositoriesSearchInputSchema,
  RepositoryPageSchema,
  SuggestedTasksSearchInputSchema,
  SuggestedTaskPageSchema,
} from '../contract/git-v1.schema.js';

// Each search asks the user's providers through one client: any of their failures can come back.
const search = (path: `/api/v1/git/${string}/search`, summary: string): Meta => ({
  errors: [
    'git_token_required',
    'invalid_provider_token',
    'provider_unsupported',
    'provider_refused',
    'provider_not_found',
    'provider_rate_limited',
    'provider_busy',
    'provider_unreachable',
    'provider_host_not_allowed',
  ],
  openapi: { method: 'GET', path, tags: ['git-v1'], summary },
});

export const gitV1Router = router({
  installations: authedProcedure
    .meta(search('/api/v1/git/installations/search', 'GitHub App installations or Bitbucket workspaces, a page at a time'))
    .input(InstallationsSearchInputSchema)
    .output(InstallationPageSchema)
    .query(({ ctx, input }) => ctx.services.gitSearch.installations(ctx.user.id, input)),

  repositories: authedProcedure
    .meta(search('/api/v1/git/repositories/search', "The user's repositories (most recently pushed first), or a search with query"))
    .input(RepositoriesSearchInputSchema)
    .output(RepositoryPageSchema)
    .query(({ ctx, input }) => ctx.services.gitSearch.repositories(ctx.user.id, input)),

  branches: authedProcedure
    .meta(search('/api/v1/git/branches/search', "A repository's branches, or those whose name matches query"))
    .input(BranchesSearchInputSchema)
    .output(BranchPageSchema)
    .query(({ ctx, input }) => ctx.services.gitSearch.branches(ctx.user.id, input)),

  suggestedTasks: authedProcedure
    .meta(search('/api/v1/git/suggested-tasks/search', 'Open pull requests that need work and assigned issues, a page at a time'))
    .input(SuggestedTasksSearchInputSchema)
    .output(SuggestedTaskPageSchema)
    .query(({ ctx, input }) => ctx.services.gitSearch.suggestedTasks(ctx.user.id, input)),
});
