// A user's own API keys, at OpenHands Cloud's paths (contract/api-keys.schema.ts): minted and
// revoked by the user, REST and tRPC alike; `npm run cli -- keys` stays for operators.
import { authedProcedure, orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { ApiKeyIdInputSchema, ApiKeyListSchema, CreateApiKeyInputSchema, CreatedApiKeySchema } from '../contract/api-keys.schema.js';

export const apiKeysRouter = router({
  list: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/keys', tags: ['account'], summary: "The user's API keys (never the keys themselves)" } })
    .input(NoInputSchema)
    .output(ApiKeyListSchema)
    .query(({ ctx }) => ctx.services.account.listKeys(ctx.user.id)),

  // orgProcedure: an org_id to bind the key to must be one of the user's organisations.
  create: orgProcedure
    .meta({
      errors: [...ORG_SCOPE_ERRORS],
      orgPermission: 'manage_api_keys',
      openapi: { method: 'POST', path: '/api/keys', tags: ['account'], summary: 'Mints an API key for the user (shown once)' },
    })
    .input(CreateApiKeyInputSchema)
    .output(CreatedApiKeySchema)
    // A key bound to an organisation mints keys bound to it only (never one that acts anywhere).
    .mutation(({ ctx, input }) =>
      ctx.services.account.createKey(ctx.user.id, { ...input, org_id: input.org_id ?? ctx.user.boundOrgId ?? null }),
    ),

  delete: authedProcedure
    .meta({
      errors: ['api_key_not_found'],
      openapi: { method: 'DELETE', path: '/api/keys/{key_id}', tags: ['account'], summary: "Revokes one of the user's API keys" },
    })
    .input(ApiKeyIdInputSchema)
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.account.revokeKey(ctx.user.id, input.key_id);
      return { message: 'API key deleted successfully' };
    }),
});
