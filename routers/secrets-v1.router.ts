// The 2026 secrets routes (/api/v1/secrets, docs/api.md): the same store as /api/secrets and
// the same git-provider token service as /api/add-git-providers, in the V1 shapes (a search
// page; failures as {"detail": …}, their rows in src/http/rest/legacy-errors.ts). Static paths
// come before {secret_id}: a secret named "git-providers" is reached through /api/secrets.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { AddGitProvidersInputSchema } from '../contract/git-providers.schema.js';
import {
  CreateSecretInputSchema,
  CustomSecretPageSchema,
  SearchSecretsInputSchema,
  SecretIdInputSchema,
  UpdateSecretInputSchema,
} from '../contract/secrets.schema.js';

const route = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: `/api/v1/secrets${string}`, summary: string) => ({
  method,
  path,
  tags: ['secrets-v1'],
  summary,
});

export const secretsV1Router = router({
  search: authedProcedure
    .meta({ openapi: route('GET', '/api/v1/secrets/search', 'A page of custom secret names and descriptions (never values)') })
    .input(SearchSecretsInputSchema)
    .output(CustomSecretPageSchema)
    .query(({ ctx, input }) => ctx.services.secrets.search(ctx.user.id, input)),

  storeGitProviders: authedProcedure
    .meta({
      errors: ['invalid_provider_token', 'provider_unreachable', 'provider_host_not_allowed'],
      openapi: route('POST', '/api/v1/secrets/git-providers', 'Validate and store git provider tokens'),
    })
    .input(AddGitProvidersInputSchema.prefault({}))
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.gitProviders.add(ctx.user.id, input);
      return { message: 'Git providers stored' };
    }),

  unsetGitProviders: authedProcedure
    .meta({ openapi: route('DELETE', '/api/v1/secrets/git-providers', 'Remove all git provider tokens') })
    .input(NoInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx }) => {
      await ctx.services.gitProviders.unsetAll(ctx.user.id);
      return { message: 'Unset Git provider tokens' };
    }),

  create: authedProcedure
    .meta({ successStatus: 201, errors: ['secret_exists'], openapi: route('POST', '/api/v1/secrets', 'Create a custom secret') })
    .input(CreateSecretInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.create(ctx.user.id, input);
      return { message: 'Secret created successfully' };
    }),

  update: authedProcedure
    .meta({
      errors: ['secret_not_found', 'secret_exists'],
      openapi: route('PUT', '/api/v1/secrets/{secret_id}', 'Rename or re-describe a secret (the id is its current name)'),
    })
    .input(UpdateSecretInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.update(ctx.user.id, input.secret_id, input);
      return { message: 'Secret updated successfully' };
    }),

  delete: authedProcedure
    .meta({ errors: ['secret_not_found'], openapi: route('DELETE', '/api/v1/secrets/{secret_id}', 'Delete a secret') })
    .input(SecretIdInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.delete(ctx.user.id, input.secret_id);
      return { message: 'Secret deleted successfully' };
    }),
});
