// Budgets (docs/budgets.md): the caller's limits and what the month has cost. A conversation's
// own cost and budget are on the conversation (metrics, max_budget_per_task; PATCH it).
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { UserBudgetSchema } from '../contract/budgets.schema.js';
import { NoInputSchema } from '../contract/common.schema.js';

export const budgetsRouter = router({
  get: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/v1/budget',
        tags: ['budgets'],
        summary: "Your budgets: the default per conversation, the monthly cap, this month's cost and the conversations stopped",
      },
    })
    .input(NoInputSchema)
    .output(UserBudgetSchema)
    .query(({ ctx }) => ctx.services.budgets.userBudget(ctx.user.id)),
});
