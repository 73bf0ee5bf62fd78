// The audit log (docs/audit.md): who did what and when, for administrators.
import { z } from 'zod';
import { isoDateTime, queryInt } from './common.schema.js';

export const AuditSearchInputSchema = z
  .object({
    user_id: z.string().min(1).max(128).optional(),
    action: z.string().min(1).max(200).optional(),
    since: isoDateTime().optional(),
    until: isoDateTime().optional(),
    page_id: z
      .string()
      .regex(/^\d{1,16}_[0-9a-f]{24}$/, 'Input should be a next_page_id of this search')
      .nullable()
      .optional(),
    limit: queryInt().pipe(z.number().gt(0).max(1000)).default(100),
  })
  .prefault({});
export type AuditSearchInput = z.output<typeof AuditSearchInputSchema>;

export const AuditEventSchema = z
  .object({
    id: z.string(),
    at: z.string(),
    user_id: z.string(),
    action: z.string(),
    outcome: z.string(),
    target: z.record(z.string(), z.string()),
    fields: z.array(z.string()),
    via: z.string(),
  })
  .meta({ id: 'AuditEvent' });

export const AuditPageSchema = z
  .object({ items: z.array(AuditEventSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AuditPage' });
