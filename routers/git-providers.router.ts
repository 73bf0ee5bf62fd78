import { authedProcedure } from '../src/procedures.js';
import { router } from '../src/trpc.js';
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
      openapi: { method: 'POST', path: '/api/unset-provider-tokens', tags: ['git-providers'], summary: 'Remove all git provider tokens' },
    })
    .input(NoInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx }) => {
      await ctx.services.gitProviders.unsetAll(ctx.user.id);
      return { message: 'Unset Git provider tokens' };
    }),
});
