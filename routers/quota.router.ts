// The daily conversation quota (docs/budgets.md "Daily conversation limit"): the reference's
// SaaS route, which the OpenHands web client reads to show how many starts are left today.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { NoInputSchema } from '../contract/common.schema.js';
import { QuotaStatusSchema } from '../contract/quota.schema.js';

export const quotaRouter = router({
  status: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/quota/status',
        tags: ['budgets'],
        summary: 'Conversations started today, the daily limit and when it resets',
      },
    })
    .input(NoInputSchema)
    .output(QuotaStatusSchema)
    .query(({ ctx }) => ctx.services.dailyStarts.status(ctx.user.id)),
});
