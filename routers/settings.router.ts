import { AppError } from '../src/errors.js';
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema } from '../contract/common.schema.js';
import { SaveSettingsInputSchema, SettingsSchema } from '../contract/settings.schema.js';

export const settingsRouter = router({
  get: authedProcedure
    .meta({
      errors: ['settings_not_found'],
      openapi: { method: 'GET', path: '/api/settings', tags: ['settings'], summary: "Load the user's settings (secrets masked)" },
    })
    .input(NoInputSchema)
    .output(SettingsSchema)
    .query(({ ctx }) => ctx.services.settings.get(ctx.user.id)),

  save: authedProcedure
    .meta({ openapi: { method: 'POST', path: '/api/settings', tags: ['settings'], summary: 'Store settings (partial update)' } })
    .input(SaveSettingsInputSchema.prefault({}))
    .output(MessageResponseSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.settings.save(ctx.user.id, input);
      // A changed budget applies to the conversations it had stopped (docs/budgets.md).
      if (input.max_budget_per_task !== undefined || input.max_budget_per_month !== undefined) {
        await ctx.services.budgets.reconsider(ctx.user.id);
      }
      return { message: 'Settings stored' };
    }),

  // Legacy: the reference removed reset and always answers 410.
  reset: authedProcedure
    .meta({
      errors: ['settings_reset_removed'],
      openapi: { method: 'POST', path: '/api/reset-settings', tags: ['settings'], summary: 'Removed; always 410' },
    })
    .input(NoInputSchema)
    .output(MessageResponseSchema)
    .mutation(() => {
      throw new AppError('GONE', 'Reset settings functionality has been removed.', { reason: 'settings_reset_removed' });
    }),
});
