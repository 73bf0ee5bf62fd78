// The fields of the 2026 nested settings (`agent_settings`, `conversation_settings`), in one
// table: the JSON schemas GET /api/v1/settings/agent-schema and /conversation-schema serve
// (the agent SDK's settings-schema format, which Agent Canvas renders as forms), the zod
// validators of the POST diffs and of LLM profiles, and the V0 flat field each one maps to
// (docs/api.md, "2026 /api/v1 surface") are all built from it. Only fields the service stores
// and hands to agents are offered; a diff naming any other key is refused (422), not dropped.
import { z } from 'zod';
import { noCoerce } from './common.schema.js';

export type ValueType = 'string' | 'integer' | 'number' | 'boolean' | 'object';
export type Prominence = 'critical' | 'major' | 'minor';

export interface SettingsField {
  /** Dotted path inside the nested object ("llm.model"). */
  key: string;
  label: string;
  description: string;
  section: string;
  value_type: ValueType;
  default: unknown;
  prominence: Prominence;
  depends_on?: string[];
  secret?: boolean;
  choices?: string[];
  /** The V0 flat settings field holding this value (one document, two wire shapes). */
  v0?: string;
}

const f = (
  key: string,
  value_type: ValueType,
  def: unknown,
  prominence: Prominence,
  label: string,
  description: string,
  extra: Partial<SettingsField> = {},
): SettingsField => ({
  key,
  value_type,
  default: def,
  prominence,
  label,
  description,
  section: key.includes('.') ? key.split('.')[0]! : 'general',
  ...extra,
});

export const AGENT_SECTIONS: Record<string, string> = { general: 'General', llm: 'LLM', condenser: 'Condenser' };
export const CONVERSATION_SECTIONS: Record<string, string> = { general: 'General', verification: 'Verification' };

/** The keys of llm.* that are LLM keyword arguments beyond model, api_key and base_url. */
export const AGENT_FIELDS: readonly SettingsField[] = [
  f('agent', 'string', 'CodeActAgent', 'major', 'Agent', 'The agent class that runs conversations.', { v0: 'agent' }),
  f('mcp_config', 'object', null, 'minor', 'MCP servers', 'MCP servers the agent may use: {sse_servers, shttp_servers, stdio_servers}.', {
    v0: 'mcp_config',
  }),
  f('llm.model', 'string', null, 'critical', 'Model', 'LLM model id as LiteLLM names it, e.g. "anthropic/claude-sonnet-4-5".', {
    v0: 'llm_model',
  }),
  f('llm.api_key', 'string', null, 'critical', 'API key', 'Key for the LLM provider; stored encrypted, never returned.', {
    secret: true,
    v0: 'llm_api_key',
  }),
  f('llm.base_url', 'string', null, 'major', 'Base URL', 'Custom endpoint of the LLM provider.', { v0: 'llm_base_url' }),
  f('llm.api_version', 'string', null, 'minor', 'API version', 'API version some providers (Azure) require.'),
  f('llm.temperature', 'number', null, 'minor', 'Temperature', 'Sampling temperature; empty uses the model default.'),
  f('llm.top_p', 'number', null, 'minor', 'Top p', 'Nucleus sampling; empty uses the model default.'),
  f('llm.top_k', 'number', null, 'minor', 'Top k', 'Top-k sampling; empty uses the model default.'),
  f('llm.max_input_tokens', 'integer', null, 'minor', 'Max input tokens', 'Context size to assume; empty uses the model default.'),
  f('llm.max_output_tokens', 'integer', null, 'minor', 'Max output tokens', 'Longest answer to ask for.'),
  f('llm.timeout', 'integer', 300, 'minor', 'Timeout (s)', 'Seconds to wait for one LLM call.'),
  f('llm.num_retries', 'integer', 5, 'minor', 'Retries', 'Retries of a failed LLM call.'),
  f('llm.reasoning_effort', 'string', 'high', 'minor', 'Reasoning effort', 'Effort for reasoning models.', {
    choices: ['low', 'medium', 'high', 'none'],
  }),
  f('llm.drop_params', 'boolean', true, 'minor', 'Drop unsupported parameters', 'Leave out parameters the model does not support.'),
  f('llm.caching_prompt', 'boolean', true, 'minor', 'Prompt caching', 'Use prompt caching where the provider offers it.'),
  f('llm.native_tool_calling', 'boolean', true, 'minor', 'Native tool calling', "Use the provider's tool calling."),
  f('llm.disable_vision', 'boolean', null, 'minor', 'Disable vision', 'Never send images to the model.'),
  f('condenser.enabled', 'boolean', true, 'critical', 'Condense history', 'Summarise old events when the history grows.', {
    v0: 'enable_default_condenser',
  }),
  f('condenser.max_size', 'integer', 240, 'minor', 'Condenser size', 'Events kept before condensing (at least 20).', {
    depends_on: ['condenser.enabled'],
    v0: 'condenser_max_size',
  }),
];

export const CONVERSATION_FIELDS: readonly SettingsField[] = [
  f('max_iterations', 'integer', 500, 'major', 'Max iterations', 'Agent steps before a conversation stops.', { v0: 'max_iterations' }),
  f('confirmation_mode', 'boolean', false, 'critical', 'Confirmation mode', 'Ask before running risky actions.', {
    section: 'verification',
    v0: 'confirmation_mode',
  }),
  f('security_analyzer', 'string', 'llm', 'major', 'Security analyzer', 'What judges the risk of actions.', {
    section: 'verification',
    depends_on: ['confirmation_mode'],
    choices: ['llm', 'invariant', 'grayswan', 'none'],
    v0: 'security_analyzer',
  }),
];

/** The LLM fields of the table, without the "llm." prefix. */
export const LLM_FIELDS = AGENT_FIELDS.filter((field) => field.key.startsWith('llm.')).map((field) => ({
  ...field,
  name: field.key.slice(4),
}));
/** LLM keyword arguments kept as sent (not one of the three V0-mapped ones). */
export const LLM_EXTRA_KEYS = LLM_FIELDS.filter((field) => !field.v0).map((field) => field.name);

function leaf(field: SettingsField): z.ZodType {
  const choice = field.choices ? z.enum(field.choices as [string, ...string[]]) : null;
  // Numbers and booleans opaque to the REST adapter's coercion (common.schema.ts, noCoerce).
  const base =
    field.value_type === 'integer'
      ? noCoerce(
          z
            .number()
            .int()
            .min(field.key === 'condenser.max_size' ? 20 : 0),
        )
      : field.value_type === 'number'
        ? noCoerce(z.number())
        : field.value_type === 'boolean'
          ? noCoerce(z.boolean())
          : (choice ?? z.string().max(4096));
  return base.nullable().optional();
}

/** A strict object of the given fields (keys relative to the object). */
export function fieldsObject(fields: readonly { name: string; field: SettingsField }[]) {
  return z.strictObject(Object.fromEntries(fields.map(({ name, field }) => [name, leaf(field)])));
}

/** The SDK settings-schema document (model_name and sections of fields). */
export const SettingsSchemaDocSchema = z
  .object({
    model_name: z.string(),
    sections: z.array(
      z.object({
        key: z.string(),
        label: z.string(),
        variant: z.string().nullable(),
        fields: z.array(
          z.object({
            key: z.string(),
            label: z.string(),
            description: z.string(),
            section: z.string(),
            section_label: z.string(),
            value_type: z.string(),
            default: z.unknown(),
            prominence: z.string(),
            depends_on: z.array(z.string()),
            secret: z.boolean(),
            choices: z.array(z.object({ value: z.string(), label: z.string() })),
            variant: z.string().nullable(),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'SettingsSchemaDocument' });
export type SettingsSchemaDoc = z.infer<typeof SettingsSchemaDocSchema>;

/** The schema document of a table, grouped by section in table order. */
export function schemaDocument(
  modelName: string,
  fields: readonly SettingsField[],
  sections: Record<string, string>,
  variant: string | null,
) {
  return {
    model_name: modelName,
    sections: Object.entries(sections).map(([key, label]) => ({
      key,
      label,
      variant: key === 'general' ? null : variant,
      fields: fields
        .filter((field) => field.section === key)
        .map((field) => ({
          key: field.key,
          label: field.label,
          description: field.description,
          section: key,
          section_label: label,
          value_type: field.value_type,
          default: field.default,
          prominence: field.prominence,
          depends_on: field.depends_on ?? [],
          secret: field.secret ?? false,
          choices: (field.choices ?? []).map((value) => ({ value, label: value })),
          variant,
        })),
    })),
  };
}
