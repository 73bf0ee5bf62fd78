import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { AddGitProvidersInputSchema } from '../contract/git-providers.schema.js';

export const gitProvidersRouter = router({
  add: authedProcedure
    .meta({
      errors: ['invalid_provider_token', 'provider_unreachable', 'provider_host_not_allowed'],
      openapi: {
        method: 'POST',
        path: '/api/add-git-providers',
        tags: ['git-providers'],
        summary: 'Validate and store git provider tokens',
      },
    })
    .input(AddGitProvidersInputSchema.prefault({}))
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.gitProviders.add(ctx.user.id, input);
      return { message: 'Git providers stored' };
    }),

  unset: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/unset-provider-tokens',
        tags: ['git-providers'],
        summary: 'Remove all git provider tokens; signed in by cookie, also sign out',
      },
    })
    .input(NoInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx }) => {
      await ctx.services.gitProviders.unsetAll(ctx.user.id);
      // The d6 web UI's Logout (OSS mode) is this call, followed by a reload: a browser signed
      // in by cookie is signed out too, so the reload lands on the sign-in page. Key callers keep
      // their key; the UI's "Disconnect tokens" makes the same call and so signs out as well.
      if (ctx.session) {
        await ctx.services.sessions.close(ctx.session.id);
        ctx.browser?.clearSessionCookie();
      }
      return { message: 'Unset Git provider tokens' };
    }),
});
