import { z } from 'zod';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { SuccessSchema } from '../contract/common.schema.js';
import {
  BatchGetSandboxesInputSchema,
  DeleteSandboxInputSchema,
  SandboxIdInputSchema,
  SandboxInfoSchema,
  SandboxPageSchema,
  SearchSandboxesInputSchema,
  StartSandboxInputSchema,
} from '../contract/sandboxes.schema.js';

// Static paths (search) before {param} paths: the REST matcher takes the first match.
export const sandboxesRouter = router({
  search: authedProcedure
    .meta({
      errors: ['sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/v1/sandboxes/search', tags: ['sandboxes'], summary: 'List your sandboxes, newest first' },
    })
    .input(SearchSandboxesInputSchema.prefault({}))
    .output(SandboxPageSchema)
    .query(({ ctx, input }) => ctx.services.sandboxes.search(ctx.user.id, input.page_id, input.limit)),

  batchGet: authedProcedure
    .meta({
      errors: ['sandbox_runtime_unavailable'],
      openapi: { method: 'GET', path: '/api/v1/sandboxes', tags: ['sandboxes'], summary: 'Get sandboxes by id' },
    })
    .input(BatchGetSandboxesInputSchema)
    .output(z.array(SandboxInfoSchema.nullable()))
    .query(({ ctx, input }) => ctx.services.sandboxes.batchGet(ctx.user.id, input.id)),

  start: authedProcedure
    .meta({
      errors: [
        'sandbox_spec_not_found',
        'sandbox_spec_unrunnable',
        'sandbox_limit_reached',
        'sandbox_starts_busy',
        'sandbox_runtime_unavailable',
        'sandbox_isolation_unavailable',
      ],
      openapi: { method: 'POST', path: '/api/v1/sandboxes', tags: ['sandboxes'], summary: 'Start a sandbox' },
    })
    .input(StartSandboxInputSchema.prefault({}))
    .output(SandboxInfoSchema)
    .mutation(async ({ ctx, input }) =>
      // The automation service starts each run's sandbox with its automation key.
      ctx.services.sandboxes.start(
        ctx.user.id,
        input.sandbox_spec_id,
        (await ctx.services.automations.isAutomationKey(ctx.user)) ? 'automation' : null,
      ),
    ),

  pause: authedProcedure
    .meta({
      errors: ['sandbox_not_found', 'sandbox_being_deleted', 'sandbox_runtime_unavailable'],
      openapi: { method: 'POST', path: '/api/v1/sandboxes/{sandbox_id}/pause', tags: ['sandboxes'], summary: 'Pause a sandbox' },
    })
    .input(SandboxIdInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.sandboxes.pause(ctx.user.id, input.sandbox_id);
      return { success: true };
    }),

  resume: authedProcedure
    .meta({
      errors: [
        'sandbox_not_found',
        'sandbox_being_deleted',
        'sandbox_workspace_gone',
        'sandbox_limit_reached',
        'sandbox_starts_busy',
        'sandbox_spec_unconfigured',
        'sandbox_spec_unrunnable',
        'sandbox_runtime_unavailable',
      ],
      openapi: { method: 'POST', path: '/api/v1/sandboxes/{sandbox_id}/resume', tags: ['sandboxes'], summary: 'Resume a sandbox' },
    })
    .input(SandboxIdInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.sandboxes.resume(ctx.user.id, input.sandbox_id);
      return { success: true };
    }),

  delete: authedProcedure
    .meta({
      errors: ['sandbox_not_found', 'sandbox_runtime_unavailable'],
      openapi: { method: 'DELETE', path: '/api/v1/sandboxes/{id}', tags: ['sandboxes'], summary: 'Delete a sandbox' },
    })
    .input(DeleteSandboxInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.sandboxes.delete(ctx.user.id, input.sandbox_id ?? input.id);
      return { success: true };
    }),

  /** tRPC only: the sandbox (status, URLs, reason) each time it changes, on any replica; ends when it is deleted. */
  watch: authedProcedure.input(SandboxIdInputSchema).subscription(async function* ({ ctx, input, signal }) {
    yield* ctx.services.sandboxes.watch(ctx.user.id, input.sandbox_id, signal);
  }),
});
