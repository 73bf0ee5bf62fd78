// V1 sandboxes (docs/api.md).
import { z } from 'zod';
import { idListSchema, PagingInputSchema } from './common.schema.js';

export const SandboxStatusSchema = z.enum(['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING']).meta({ id: 'SandboxStatus' });

export const SandboxInfoSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string().nullable(),
    sandbox_spec_id: z.string(),
    status: SandboxStatusSchema,
    session_api_key: z.string().nullable(),
    exposed_urls: z.array(z.object({ name: z.string(), url: z.string() })).nullable(),
    created_at: z.string(),
    // Ours, additive: why a sandbox is in ERROR or MISSING.
    status_reason: z.string().nullable(),
  })
  .meta({ id: 'SandboxInfo' });
export type SandboxInfo = z.infer<typeof SandboxInfoSchema>;

export const SandboxPageSchema = z
  .object({ items: z.array(SandboxInfoSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'SandboxPage' });

export const SearchSandboxesInputSchema = PagingInputSchema;
export const BatchGetSandboxesInputSchema = z.object({ id: idListSchema() });
// Legacy: the reference reads sandbox_spec_id from the query string of a POST (see rest shim).
export const StartSandboxInputSchema = z.object({ sandbox_spec_id: z.string().min(1).nullable().optional() });
export const SandboxIdInputSchema = z.object({ sandbox_id: z.string().min(1) });
// Legacy: DELETE's path segment is {id} while the reference handler reads ?sandbox_id=.
export const DeleteSandboxInputSchema = z.object({ id: z.string().min(1), sandbox_id: z.string().min(1).optional() });
