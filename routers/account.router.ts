// The routes today's clients call on start-up whatever they do next (docs/api.md "2026
// /api/v1 surface"): the key's own record, the CLI's BYOR key, the automation service's
// "not available", the web client's configuration and the model, provider and skill searches.
import { authedProcedure, orgProcedure, publicProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { NoInputSchema } from '../contract/common.schema.js';
import {
  ApiKeyCurrentSchema,
  AutomationHealthSchema,
  AutomationSdkVersionSchema,
  ByorKeySchema,
  LlmModelPageSchema,
  LlmProviderPageSchema,
  ModelsSearchInputSchema,
  ProvidersSearchInputSchema,
  SkillPageSchema,
  SkillsSearchInputSchema,
  WebClientConfigSchema,
} from '../contract/account.schema.js';

export const accountRouter = router({
  currentKey: orgProcedure
    .meta({
      errors: ['not_an_api_key', 'org_permission_denied'],
      openapi: { method: 'GET', path: '/api/keys/current', tags: ['account'], summary: 'The API key this request authenticated with' },
    })
    .input(NoInputSchema)
    .output(ApiKeyCurrentSchema)
    .query(({ ctx }) => ctx.services.account.currentKey(ctx.user.id, ctx.user.keyId, ctx.org.orgId, ctx.user.boundOrgId ?? null)),

  // The stored LLM key is write-only: it reaches the user's own sandboxes, never a client.
  byorKey: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/keys/llm/byor', tags: ['account'], summary: 'No key is handed out: always null' } })
    .input(NoInputSchema)
    .output(ByorKeySchema)
    .query(() => ({ key: null })),

  automationHealth: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/automation/health',
        tags: ['account'],
        summary: "The automation service's readiness ('error' when none is configured)",
      },
    })
    .input(NoInputSchema)
    .output(AutomationHealthSchema)
    .query(({ ctx }) => ctx.services.account.automationHealth()),

  // Public, as upstream's: an automation run's setup.sh reads it before it holds a credential, and
  // it is a public package's version (the SDK the automation service runs).
  automationSdkVersion: publicProcedure
    .meta({
      auth: 'none',
      openapi: {
        method: 'GET',
        path: '/api/automation/sdk-version',
        tags: ['account'],
        summary: 'The SDK version automation runs install; no credential needed',
        protect: false,
      },
    })
    .input(NoInputSchema)
    .output(AutomationSdkVersionSchema)
    .query(({ ctx }) => ctx.services.account.automationSdkVersion()),

  webClientConfig: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/web-client/config', tags: ['config'], summary: "The web client's configuration" } })
    .input(NoInputSchema)
    .output(WebClientConfigSchema)
    .query(({ ctx }) => ctx.services.account.webClientConfig()),

  searchModels: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/config/models/search', tags: ['config'], summary: 'LLM models, paged' } })
    .input(ModelsSearchInputSchema)
    .output(LlmModelPageSchema)
    .query(({ ctx, input }) => ctx.services.account.searchModels(input)),

  searchProviders: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/config/providers/search', tags: ['config'], summary: 'LLM providers, paged' } })
    .input(ProvidersSearchInputSchema)
    .output(LlmProviderPageSchema)
    .query(({ ctx, input }) => ctx.services.account.searchProviders(input)),

  // No global or user-level skills exist outside a conversation here (a repository's are
  // listed per conversation): an honest empty page.
  searchSkills: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/skills/search', tags: ['config'], summary: 'Skills outside a conversation: none' } })
    .input(SkillsSearchInputSchema)
    .output(SkillPageSchema)
    .query(() => ({ items: [], next_page_id: null })),
});
