// Agent profiles (/api/agent-profiles; docs/api.md "2026 /api/v1 surface"): presets of the
// agent a user picks at a conversation start, naming one of their LLM profiles.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { NoInputSchema } from '../contract/common.schema.js';
import {
  ActivateAgentProfileSchema,
  AgentProfileDetailSchema,
  AgentProfileIdInputSchema,
  AgentProfileListSchema,
  AgentProfileNameInputSchema,
  RenameAgentProfileInputSchema,
  SaveAgentProfileInputSchema,
} from '../contract/agent-profiles.schema.js';
import { ProfileMutationSchema } from '../contract/settings-v1.schema.js';

const tags = ['agent profiles'];

export const agentProfilesRouter = router({
  list: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/agent-profiles', tags, summary: 'The agent profiles and the active one' } })
    .input(NoInputSchema)
    .output(AgentProfileListSchema)
    .query(({ ctx }) => ctx.services.agentProfiles.list(ctx.user.id)),

  get: authedProcedure
    .meta({
      errors: ['agent_profile_not_found'],
      openapi: { method: 'GET', path: '/api/agent-profiles/{name}', tags, summary: 'One agent profile' },
    })
    .input(AgentProfileNameInputSchema)
    .output(AgentProfileDetailSchema)
    .query(({ ctx, input }) => ctx.services.agentProfiles.get(ctx.user.id, input.name)),

  save: authedProcedure
    .meta({
      successStatus: 201,
      errors: ['agent_profile_limit'],
      openapi: { method: 'POST', path: '/api/agent-profiles/{name}', tags, summary: 'Create or overwrite an agent profile' },
    })
    .input(SaveAgentProfileInputSchema)
    .output(ProfileMutationSchema)
    .mutation(({ ctx, input }) => ctx.services.agentProfiles.save(ctx.user.id, input)),

  delete: authedProcedure
    .meta({ openapi: { method: 'DELETE', path: '/api/agent-profiles/{name}', tags, summary: 'Delete an agent profile (idempotent)' } })
    .input(AgentProfileNameInputSchema)
    .output(ProfileMutationSchema)
    .mutation(({ ctx, input }) => ctx.services.agentProfiles.delete(ctx.user.id, input.name)),

  rename: authedProcedure
    .meta({
      errors: ['agent_profile_not_found', 'agent_profile_exists'],
      openapi: { method: 'POST', path: '/api/agent-profiles/{name}/rename', tags, summary: 'Rename an agent profile (its id stays)' },
    })
    .input(RenameAgentProfileInputSchema)
    .output(ProfileMutationSchema)
    .mutation(({ ctx, input }) => ctx.services.agentProfiles.rename(ctx.user.id, input.name, input.new_name)),

  activate: authedProcedure
    .meta({
      errors: ['agent_profile_not_found'],
      openapi: { method: 'POST', path: '/api/agent-profiles/{profile_id}/activate', tags, summary: 'Mark a profile (by id) active' },
    })
    .input(AgentProfileIdInputSchema)
    .output(ActivateAgentProfileSchema)
    .mutation(({ ctx, input }) => ctx.services.agentProfiles.activate(ctx.user.id, input.profile_id)),
});
