// /api/options/*: the web UI's first call (config) and its settings pages' choices.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { NameListSchema, WebConfigSchema } from '../contract/options.schema.js';
import { NoInputSchema } from '../contract/common.schema.js';

const get = (path: `/api/${string}`, summary: string) => ({ openapi: { method: 'GET' as const, path, tags: ['options'], summary } });

export const optionsRouter = router({
  config: authedProcedure
    .meta(get('/api/options/config', "The web UI's start-up configuration (OSS mode)"))
    .input(NoInputSchema)
    .output(WebConfigSchema)
    .query(({ ctx }) => ctx.services.options.config()),

  models: authedProcedure
    .meta(get('/api/options/models', 'LLM model ids (maintained list plus LLM_MODELS), sorted'))
    .input(NoInputSchema)
    .output(NameListSchema)
    .query(({ ctx }) => ctx.services.options.models()),

  agents: authedProcedure
    .meta(get('/api/options/agents', 'Agent names, sorted'))
    .input(NoInputSchema)
    .output(NameListSchema)
    .query(({ ctx }) => ctx.services.options.agents()),

  securityAnalyzers: authedProcedure
    .meta(get('/api/options/security-analyzers', 'Security analyzer names, sorted'))
    .input(NoInputSchema)
    .output(NameListSchema)
    .query(({ ctx }) => ctx.services.options.securityAnalyzers()),
});
