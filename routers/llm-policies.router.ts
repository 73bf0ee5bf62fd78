// The models each user may run, for the service's administrators (docs/llm-gateway.md, Models
// allowed; src/llm-gateway/model-policy.ts). Setting one is in the audit log like every mutation.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { LlmPolicyInputSchema, LlmPolicySchema, SetLlmPolicyInputSchema } from '../contract/llm-policies.schema.js';

const tags = ['llm-policies'];
const path = '/api/admin/users/{user_id}/llm-policy';

export const llmPoliciesRouter = router({
  get: authedProcedure
    .meta({ errors: ['not_an_admin'], openapi: { method: 'GET', path, tags, summary: 'The models a user may run' } })
    .input(LlmPolicyInputSchema)
    .output(LlmPolicySchema)
    .query(({ ctx, input }) => ctx.services.modelPolicy.view(ctx.user.id, input.user_id)),

  set: authedProcedure
    .meta({
      errors: ['not_an_admin'],
      openapi: { method: 'PUT', path, tags, summary: 'Sets (null: removes) the models a user may run' },
    })
    .input(SetLlmPolicyInputSchema)
    .output(LlmPolicySchema)
    .mutation(({ ctx, input }) => ctx.services.modelPolicy.set(ctx.user.id, input.user_id, input.allowed_models)),
});
