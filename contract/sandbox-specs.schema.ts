// Sandbox specs (docs/api.md).
import { z } from 'zod';
import { idListSchema, PagingInputSchema } from './common.schema.js';

export const SandboxSpecInfoSchema = z
  .object({
    id: z.string(),
    command: z.array(z.string()).nullable(),
    created_at: z.string(),
    initial_env: z.record(z.string(), z.string()),
    working_dir: z.string(),
  })
  .meta({ id: 'SandboxSpecInfo' });
export type SandboxSpecInfo = z.infer<typeof SandboxSpecInfoSchema>;

export const SearchSandboxSpecsInputSchema = PagingInputSchema;
export const BatchGetSandboxSpecsInputSchema = z.object({ id: idListSchema() });

export const SandboxSpecPageSchema = z
  .object({ items: z.array(SandboxSpecInfoSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'SandboxSpecInfoPage' });

/** Which client generation started a conversation (docs/clients.md): its sandbox runs the agent server those clients read. */
export const ClientGenerationSchema = z.enum(['2025', '2026']);
export type ClientGeneration = z.infer<typeof ClientGenerationSchema>;
