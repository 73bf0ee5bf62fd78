// The models a user may run, set by the service's administrators (docs/llm-gateway.md, Models
// allowed): globs over the model as named (`anthropic/*`, `openai/gpt-4o`), `*` matching anything.
import { z } from 'zod';

const ModelGlob = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:/@*+-]+$/, 'A model name or glob: letters, digits, . _ : / @ + - and *');

export const LlmPolicyInputSchema = z.object({ user_id: z.string().min(1).max(200) });

export const SetLlmPolicyInputSchema = LlmPolicyInputSchema.extend({
  /** null: no list of the user's own (the service's applies); [] allows no model at all. */
  allowed_models: z.array(ModelGlob).max(100).nullable(),
});

export const LlmPolicySchema = z
  .object({
    user_id: z.string(),
    allowed_models: z.array(z.string()).nullable(),
    /** LLM_ALLOWED_MODELS, which applies to everyone as well (empty: every model). */
    service_allowed_models: z.array(z.string()),
    updated_by: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'LlmPolicy' });
export type LlmPolicy = z.output<typeof LlmPolicySchema>;
