// The automation service's side of this service (docs/automation-service-notes.md): the key a
// user's automation calls are forwarded with (src/http/rest/automation-routes.ts). It is the
// user's own key, listed with their others as "automation" and revocable like them; tRPC shows
// it too, so a frontend may point its user at it.
import { z } from 'zod';
import { NoInputSchema } from '../contract/common.schema.js';
import { AppError } from '../src/errors.js';
import { orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';

const keyProcedure = orgProcedure
  .meta({ errors: [...ORG_SCOPE_ERRORS, 'automations_not_available'] })
  .input(NoInputSchema)
  .output(z.object({ key: z.string() }))
  .query(async ({ ctx }) => {
    if (!ctx.deps.config.automations) {
      throw new AppError('NOT_FOUND', 'Automations are not available on this server', { reason: 'automations_not_available' });
    }
    return { key: await ctx.services.automations.keyFor(ctx.user.id, ctx.org.orgId) };
  });

export const automationsRouter = router({
  forwardingKey: keyProcedure,

  /** The same key, for a run's own reports (/api/automation/v1/runs/…): the one forwarding an automation key may use (automation-key-scope.ts). */
  runReportKey: keyProcedure,

  /**
   * How a run's conversation ended here, for its completion report (automation-routes.ts): the
   * budget stop that cut it short, if one did, and its cost as the gateway counted it.
   */
  runOutcome: orgProcedure
    .meta({ errors: [...ORG_SCOPE_ERRORS] })
    .input(z.object({ conversation_id: z.string().max(100) }))
    .output(z.object({ stopped_for: z.string().nullable(), cost: z.number().nullable() }))
    .query(async ({ ctx, input }) => {
      const found = await ctx.services.appConversations.get(ctx.user.id, input.conversation_id.replace(/-/g, ''));
      const stoppedFor = found?.execution_status_reason;
      return {
        stopped_for: stoppedFor === 'budget_reached' || stoppedFor === 'monthly_budget_reached' ? stoppedFor : null,
        cost: found?.metrics?.accumulated_cost ?? null,
      };
    }),
});
