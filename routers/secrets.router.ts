import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { CreateSecretInputSchema, SecretIdInputSchema, SecretsListSchema, UpdateSecretInputSchema } from '../contract/secrets.schema.js';

export const secretsRouter = router({
  list: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/secrets', tags: ['secrets'], summary: 'List custom secret names' } })
    .input(NoInputSchema)
    .output(SecretsListSchema)
    .query(async ({ ctx }) => ({ custom_secrets: await ctx.services.secrets.list(ctx.user.id) })),

  create: authedProcedure
    .meta({
      successStatus: 201,
      errors: ['secret_exists'],
      openapi: { method: 'POST', path: '/api/secrets', tags: ['secrets'], summary: 'Create a custom secret' },
    })
    .input(CreateSecretInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.create(ctx.user.id, input);
      return { message: 'Secret created successfully' };
    }),

  update: authedProcedure
    .meta({
      errors: ['secret_not_found', 'secret_exists'],
      openapi: { method: 'PUT', path: '/api/secrets/{secret_id}', tags: ['secrets'], summary: 'Rename or re-describe a secret' },
    })
    .input(UpdateSecretInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.update(ctx.user.id, input.secret_id, input);
      return { message: 'Secret updated successfully' };
    }),

  delete: authedProcedure
    .meta({
      errors: ['secret_not_found'],
      openapi: { method: 'DELETE', path: '/api/secrets/{secret_id}', tags: ['secrets'], summary: 'Delete a secret' },
    })
    .input(SecretIdInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.secrets.delete(ctx.user.id, input.secret_id);
      return { message: 'Secret deleted successfully' };
    }),
});
