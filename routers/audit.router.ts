// The audit log, for administrators (ADMIN_USERS; src/services/audit.service.ts). Its JSON-lines
// export is a REST route of its own (src/http/rest/routes.ts), paging through this search.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { AuditPageSchema, AuditSearchInputSchema } from '../contract/audit.schema.js';

export const auditRouter = router({
  search: authedProcedure
    .meta({
      errors: ['not_an_admin'],
      openapi: { method: 'GET', path: '/api/audit/events/search', tags: ['audit'], summary: 'Who did what and when, newest first' },
    })
    .input(AuditSearchInputSchema)
    .output(AuditPageSchema)
    .query(({ ctx, input }) => ctx.services.audit.search(ctx.user.id, input)),
});
