// Sandbox specs (API.md B.9).
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

/** The spec file format: a list of specs, or {"specs": [...]}; the first is the default. */
export const SandboxSpecsFileSchema = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) && 'specs' in v ? (v as { specs: unknown }).specs : v),
  z
    .array(
      z.strictObject({
        id: z.string().min(1),
        command: z.array(z.string()).nullable().default(null),
        initial_env: z.record(z.string(), z.string()).default({}),
        working_dir: z.string().default('/workspace/project'),
      }),
    )
    .min(1, 'at least one sandbox spec is required'),
);
