// The current user (/api/v1/users/*; docs/api.md "2026 /api/v1 surface"): what the CLI, the
// SDK workspace and the automation service read, and the user's git provider account.
import { authedProcedure } from '../src/trpc/procedures.js';
import { AppError } from '../src/errors.js';
import { router, type Meta } from '../src/trpc/init.js';
import { NoInputSchema } from '../contract/common.schema.js';
import { UserInfoSchema, UserMeInputSchema } from '../contract/account.schema.js';
import { GitUserSchema } from '../contract/user-git.schema.js';

const tags = ['users'];
// The failures of the user's git providers (as /api/user/info), git_token_required answered 403.
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

export const usersRouter = router({
  me: authedProcedure
    .meta({
      errors: ['secrets_not_exposed'],
      openapi: {
        method: 'GET',
        path: '/api/v1/users/me',
        tags,
        summary: 'The user and their settings; ?expose_secrets=true only beside the key of their running sandbox',
      },
    })
    .input(UserMeInputSchema)
    .output(UserInfoSchema)
    .query(async ({ ctx, input }) => {
      const automation = await ctx.services.automations.meFor(ctx.user);
      if (!automation) return ctx.services.account.me(ctx.user.id, input.expose_secrets === true, ctx.sessionKey);
      // An automation key sits in its runs' sandboxes: it opens no secret of the user's. Code in
      // the run's own sandbox gets the LLM (and MCP servers with credentials) through the
      // gateway instead (src/automations/run-settings.ts).
      const run = await ctx.services.automationRuns.forSandbox(ctx.user.id, ctx.sessionKey);
      if (input.expose_secrets === true && !run) {
        throw new AppError('FORBIDDEN', 'expose_secrets needs the X-Session-API-Key of a running sandbox of yours', {
          reason: 'secrets_not_exposed',
        });
      }
      const me = await ctx.services.account.me(ctx.user.id, false, undefined);
      if (!run) return { ...me, ...automation };
      const { mcp_config, ...llm } = run;
      return { ...me, ...automation, mcp_config, ...(input.expose_secrets === true ? llm : {}) };
    }),

  gitInfo: authedProcedure
    .meta({
      errors: PROVIDER_FAILURES,
      openapi: { method: 'GET', path: '/api/v1/users/git-info', tags, summary: "The user's account at their git provider" },
    })
    .input(NoInputSchema)
    .output(GitUserSchema)
    .query(({ ctx }) => ctx.services.userGit.info(ctx.user.id)),
});
