// The LLM profile procedures, served twice with one behaviour: under /api/v1/settings/profiles
// and under an organisation, /api/organizations/{org_id}/profiles, where the CloudClient and
// Agent Canvas go once they know the user's organisation (one the user is no member of answers
// 404).
import { z } from 'zod';
import { authedProcedure, orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import type { Meta } from '../src/trpc/init.js';
import {
  ActivateProfileSchema,
  ProfileDetailSchema,
  ProfileListSchema,
  ProfileMutationSchema,
  ProfileNameInputSchema,
  RenameProfileInputSchema,
  SaveProfileInputSchema,
} from '../contract/settings-v1.schema.js';
import { OrgIdInputSchema } from '../contract/organizations.schema.js';

type Base = '/api/v1/settings/profiles' | '/api/organizations/{org_id}/profiles';

export function llmProfileProcedures(base: Base) {
  const inOrg = base.includes('{org_id}');
  const tags = [inOrg ? 'organizations' : 'settings (2026)'];
  // Under the organisation each input also takes its org_id path parameter. Typed as the plain
  // input: the org routes serve REST clients, tRPC callers use the settings ones.
  const scoped = <T extends z.ZodObject>(schema: T): T => (inOrg ? (schema.extend(OrgIdInputSchema.shape) as unknown as T) : schema);
  const meta = (
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    summary: string,
    errors: Meta['errors'] = [],
    extra: Partial<Meta> = {},
  ) => ({
    ...extra,
    errors: [...(inOrg ? ORG_SCOPE_ERRORS : []), ...(errors ?? [])],
    openapi: { method, path: `${base}${path}` as `/${string}`, tags, summary },
  });
  // Under an organisation (any the user belongs to: orgProcedure checks it), the profiles are
  // still the user's own; the organisation's LLM defaults are its /settings.
  const user = inOrg ? orgProcedure : authedProcedure;

  return {
    profilesList: user
      .meta(meta('GET', '', 'List the LLM profiles (keys never returned)'))
      .input(scoped(z.object({})).prefault({}))
      .output(ProfileListSchema)
      .query(({ ctx }) => ctx.services.llmProfiles.list(ctx.user.id)),

    profilesGet: user
      .meta(meta('GET', '/{name}', 'One LLM profile (api_key null; see api_key_set)', ['llm_profile_not_found']))
      .input(scoped(ProfileNameInputSchema))
      .output(ProfileDetailSchema)
      .query(({ ctx, input }) => ctx.services.llmProfiles.get(ctx.user.id, input.name)),

    profilesSave: user
      .meta(
        meta(
          'POST',
          '/{name}',
          'Create or overwrite an LLM profile (without llm: the current settings LLM)',
          ['llm_profile_limit', 'settings_not_found'],
          { successStatus: 201 },
        ),
      )
      .input(scoped(SaveProfileInputSchema))
      .output(ProfileMutationSchema)
      .mutation(({ ctx, input }) => ctx.services.llmProfiles.save(ctx.user.id, input)),

    profilesDelete: user
      .meta(meta('DELETE', '/{name}', 'Delete an LLM profile (idempotent)', ['llm_profile_referenced']))
      .input(scoped(ProfileNameInputSchema))
      .output(ProfileMutationSchema)
      .mutation(({ ctx, input }) => ctx.services.llmProfiles.delete(ctx.user.id, input.name)),

    profilesActivate: user
      .meta(meta('POST', '/{name}/activate', "Make an LLM profile the settings' LLM", ['llm_profile_not_found']))
      .input(scoped(ProfileNameInputSchema))
      .output(ActivateProfileSchema)
      .mutation(({ ctx, input }) => ctx.services.llmProfiles.activate(ctx.user.id, input.name)),

    profilesRename: user
      .meta(meta('POST', '/{name}/rename', 'Rename an LLM profile', ['llm_profile_not_found', 'llm_profile_exists']))
      .input(scoped(RenameProfileInputSchema))
      .output(ProfileMutationSchema)
      .mutation(({ ctx, input }) => ctx.services.llmProfiles.rename(ctx.user.id, input.name, input.new_name)),
  };
}
