import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  BatchGetSandboxSpecsInputSchema,
  SandboxSpecInfoSchema,
  SandboxSpecPageSchema,
  SearchSandboxSpecsInputSchema,
} from '../contract/sandbox-specs.schema.js';

export const sandboxSpecsRouter = router({
  search: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/sandbox-specs/search', tags: ['sandbox-specs'], summary: 'List sandbox specs' } })
    .input(SearchSandboxSpecsInputSchema.prefault({}))
    .output(SandboxSpecPageSchema)
    .query(({ ctx, input }) => ctx.services.sandboxSpecs.search(input.page_id, input.limit)),

  batchGet: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/v1/sandbox-specs', tags: ['sandbox-specs'], summary: 'Get sandbox specs by id' } })
    .input(BatchGetSandboxSpecsInputSchema)
    .output(z.array(SandboxSpecInfoSchema.nullable()))
    .query(({ ctx, input }) => ctx.services.sandboxSpecs.batchGet(input.id)),
});
