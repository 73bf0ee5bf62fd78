// The 2026 settings (/api/v1/settings; docs/api.md "2026 /api/v1 surface"): the V0 settings
// document in the nested shape, its two form schemas, and the LLM profiles.
import { authedProcedure, orgProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { SettingsSchemaDocSchema } from '../contract/settings-fields.js';
import { SaveSettingsV1InputSchema, SettingsV1Schema } from '../contract/settings-v1.schema.js';
import { llmProfileProcedures } from './llm-profiles.procedures.js';

const tags = ['settings (2026)'];

export const settingsV1Router = router({
  // In a team organisation with LLM defaults (X-Org-Id, or the current one), its LLM shows: what the member's conversations there use.
  get: orgProcedure
    .meta({
      errors: ['org_permission_denied'],
      openapi: {
        method: 'GET',
        path: '/api/v1/settings',
        tags,
        summary: 'Load the settings, nested (the defaults before the first save; secrets never returned)',
      },
    })
    .input(NoInputSchema)
    .output(SettingsV1Schema)
    .query(async ({ ctx }) =>
      ctx.services.settingsV1.get(ctx.user.id, ctx.org.personal ? null : await ctx.services.organizations.llmView(ctx.org.orgId)),
    ),

  save: authedProcedure
    .meta({
      errors: ['legacy_settings_keys', 'marketplace_names_duplicated'],
      openapi: {
        method: 'POST',
        path: '/api/v1/settings',
        tags,
        summary: 'Store settings: deep-merged *_diff objects, top-level keys replace',
      },
    })
    .input(SaveSettingsV1InputSchema.prefault({}))
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.settingsV1.save(ctx.user.id, input);
      // A changed budget applies to the conversations it had stopped (docs/budgets.md).
      if (input.max_budget_per_task !== undefined || input.max_budget_per_month !== undefined) {
        await ctx.services.budgets.reconsider(ctx.user.id);
      }
      return { message: 'Settings stored' };
    }),

  agentSchema: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/settings/agent-schema', tags, summary: 'The form schema of agent_settings' } })
    .input(NoInputSchema)
    .output(SettingsSchemaDocSchema)
    .query(({ ctx }) => ctx.services.settingsV1.agentSchema()),

  conversationSchema: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/api/v1/settings/conversation-schema', tags, summary: 'The form schema of conversation_settings' },
    })
    .input(NoInputSchema)
    .output(SettingsSchemaDocSchema)
    .query(({ ctx }) => ctx.services.settingsV1.conversationSchema()),

  ...llmProfileProcedures('/api/v1/settings/profiles'),
});
