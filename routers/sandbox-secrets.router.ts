// Sandbox-scoped secrets (docs/api.md): read by the SDK's cloud workspace and by the agent
// server's LookupSecret with the sandbox's own session key, never with a user's key. The value
// is served as text/plain by src/http/rest/routes.ts (LookupSecret reads the body verbatim).
import { z } from 'zod';
import { sandboxNamesProcedure, sandboxScopedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { SandboxSecretsInputSchema, SandboxSecretValueInputSchema, SecretNamesSchema } from '../contract/sandbox-secrets.schema.js';

export const sandboxSecretsRouter = router({
  list: sandboxNamesProcedure
    .meta({
      auth: 'sandbox-key',
      openapi: {
        method: 'GET',
        path: '/api/v1/sandboxes/{sandbox_id}/settings/secrets',
        tags: ['sandboxes'],
        summary: "Names and descriptions of the secrets the sandbox may read (its owner's custom secrets and git tokens)",
      },
    })
    .input(SandboxSecretsInputSchema)
    .output(SecretNamesSchema)
    .query(({ ctx }) => ctx.services.sandboxSecrets.list(ctx.sandboxOwner)),

  value: sandboxScopedProcedure
    .meta({
      auth: 'sandbox-key',
      errors: ['secret_not_found'],
      openapi: {
        method: 'GET',
        path: '/api/v1/sandboxes/{sandbox_id}/settings/secrets/{secret_name}',
        tags: ['sandboxes'],
        summary: "One secret's value as text/plain, resolved when asked (the agent server's LookupSecret)",
      },
    })
    .input(SandboxSecretValueInputSchema)
    .output(z.string())
    .query(({ ctx, input }) => ctx.services.sandboxSecrets.value(ctx.sandboxOwner, input.secret_name)),
});
