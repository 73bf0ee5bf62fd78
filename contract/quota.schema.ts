// The daily conversation quota (GET /api/quota/status; docs/budgets.md "Daily conversation
// limit"): the reference's SaaS shape. Limit increases by request are not offered here, so the
// request fields are always null.
import { z } from 'zod';

export const QuotaStatusSchema = z
  .object({
    daily_limit: z.number().int().nullable(),
    used_today: z.number().int(),
    remaining: z.number().int().nullable(),
    reset_at: z.string(),
    work_email: z.string().nullable(),
    work_email_verified: z.boolean(),
    latest_request_status: z.string().nullable(),
    latest_request_requested_limit: z.number().int().nullable(),
  })
  .meta({ id: 'QuotaStatus' });
export type QuotaStatus = z.infer<typeof QuotaStatusSchema>;
