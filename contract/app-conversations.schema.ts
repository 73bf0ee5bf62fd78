// V1 app conversations and start tasks (docs/api.md).
import { z } from 'zod';
import {
  ConversationTriggerSchema,
  idListSchema,
  isoDateTime,
  jsonBool,
  jsonInt,
  PagingInputSchema,
  ProviderTypeSchema,
  queryBool,
  storedJson,
  uuidString,
} from './common.schema.js';
import { BudgetStopReasonSchema, budgetAmount, MetricsSnapshotSchema } from './budgets.schema.js';
import { SuggestedTaskSchema } from './conversations.schema.js';

const TextContentSchema = z.strictObject({ type: z.literal('text'), text: z.string(), cache_prompt: jsonBool().optional() });
const ImageContentSchema = z.strictObject({
  type: z.literal('image'),
  image_urls: z.array(z.string()),
  cache_prompt: jsonBool().optional(),
});

export const MessageContentSchema = z.discriminatedUnion('type', [TextContentSchema, ImageContentSchema]);

export const SendMessageRequestSchema = z
  .object({
    role: z.enum(['user', 'system', 'assistant', 'tool']).default('user'),
    content: z.array(MessageContentSchema).default([]),
    run: jsonBool().default(false),
  })
  .meta({ id: 'SendMessageRequest' });
export type SendMessageRequest = z.output<typeof SendMessageRequestSchema>;

export const StartTaskStatusSchema = z
  .enum([
    'WORKING',
    'WAITING_FOR_SANDBOX',
    'PREPARING_REPOSITORY',
    'RUNNING_SETUP_SCRIPT',
    'SETTING_UP_GIT_HOOKS',
    'STARTING_CONVERSATION',
    'READY',
    'ERROR',
  ])
  .meta({ id: 'AppConversationStartTaskStatus' });
export type StartTaskStatus = z.infer<typeof StartTaskStatusSchema>;

/** A plugin the agent server loads into the conversation (the SDK's PluginSource, plus the user's parameters). */
export const PluginSpecSchema = z
  .object({
    source: z.string().min(1).max(2000),
    ref: z.string().min(1).max(256).nullable().optional(),
    repo_path: z
      .string()
      .max(1000)
      .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'repo_path must be relative, without ".."')
      .nullable()
      .optional(),
    // Shown to the agent with the first message (the reference's way), so kept as sent.
    parameters: storedJson(z.record(z.string(), z.unknown()).nullable()).optional(),
  })
  .meta({ id: 'PluginSpec' });

/** Observability metadata: scalars or homogeneous scalar lists (what OpenTelemetry takes; the agent server checks the same). */
const TraceValue = z.union([
  z.string(),
  z.boolean(),
  z.number(),
  z.array(z.string()),
  z.array(z.boolean()),
  z
    .array(z.number())
    .refine((list) => list.every(Number.isInteger) || !list.some(Number.isInteger), 'Mixed integers and fractions cannot be traced'),
]);

export const AppConversationStartRequestSchema = z
  .object({
    sandbox_id: z.string().min(1).nullable().optional(),
    // A client-chosen id: honoured when nobody has it (409 otherwise).
    conversation_id: uuidString().nullable().optional(),
    initial_message: SendMessageRequestSchema.nullable().optional(),
    system_message_suffix: z.string().max(100_000).nullable().optional(),
    // Kept as sent (the agent server's processor models), so checked for what cannot be stored.
    processors: storedJson(z.array(z.looseObject({ kind: z.string() })).nullable()).optional(),
    llm_model: z.string().nullable().optional(),
    // An agent profile to launch from (its settings over the user's); unknown ids are refused.
    agent_profile_id: z.string().min(1).max(200).nullable().optional(),
    selected_repository: z
      .string()
      .regex(/^[\w.-]+(\/[\w.-]+)+$/, 'Repository must look like owner/repo')
      .nullable()
      .optional(),
    selected_branch: z.string().min(1).nullable().optional(),
    git_provider: ProviderTypeSchema.nullable().optional(),
    // The first message is built from it (then initial_message must be absent).
    suggested_task: SuggestedTaskSchema.nullable().optional(),
    // Legacy: accepted but not used by the reference (the frontend sends instructions here).
    title: z.string().nullable().optional(),
    trigger: ConversationTriggerSchema.nullable().optional(),
    pr_number: z.array(jsonInt()).default([]),
    parent_conversation_id: z.string().nullable().optional(),
    agent_type: z.enum(['default', 'plan']).default('default'),
    public: jsonBool().nullable().optional(),
    plugins: z.array(PluginSpecSchema).max(20).nullable().optional(),
    // Merged over the stored secrets (the request wins); stored encrypted, never shown again.
    secrets: storedJson(z.record(z.string().min(1).max(256), z.string().max(65_536)).nullable()).optional(),
    observability_span_name: z
      .string()
      .max(128)
      .regex(/^[A-Za-z0-9._:/-]+$/, 'Letters, numbers, dots, underscores, colons, slashes and hyphens only')
      .nullable()
      .optional(),
    observability_tags: z.array(z.string().min(1).max(256)).max(50).nullable().optional(),
    observability_metadata: storedJson(z.record(z.string().min(1), TraceValue).nullable()).optional(),
    // Ours, additive: this conversation's budget in dollars, over the settings' max_budget_per_task (docs/budgets.md).
    max_budget_per_task: budgetAmount().nullable().optional(),
  })
  .meta({ id: 'AppConversationStartRequest' });
export type AppConversationStartRequest = z.output<typeof AppConversationStartRequestSchema>;

export const SandboxSourceSchema = z.enum(['warm_pool', 'cold_start', 'existing']).meta({ id: 'SandboxSource' });
export type SandboxSource = z.infer<typeof SandboxSourceSchema>;

export const AppConversationStartTaskSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string().nullable(),
    status: StartTaskStatusSchema,
    detail: z.string().nullable(),
    app_conversation_id: z.string().nullable(),
    sandbox_id: z.string().nullable(),
    agent_server_url: z.string().nullable(),
    request: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
    // Ours, additive: when the task first entered each status (ISO times, keyed by status).
    phase_times: z.record(z.string(), z.string()),
    // Ours, additive: where the sandbox came from (null until known).
    sandbox_source: SandboxSourceSchema.nullable(),
  })
  .meta({ id: 'AppConversationStartTask' });
export type AppConversationStartTask = z.infer<typeof AppConversationStartTaskSchema>;

/** Whether a task snapshot moves a stream on from the last one sent: never back in time, never the same twice. */
export function isLaterSnapshot(snapshot: AppConversationStartTask, last: AppConversationStartTask): boolean {
  return snapshot.updated_at >= last.updated_at && JSON.stringify(snapshot) !== JSON.stringify(last);
}

export const AppConversationSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string().nullable(),
    // Ours: null while the conversation's start has not chosen its sandbox yet (the reference
    // creates the record only once the conversation is ready).
    sandbox_id: z.string().nullable(),
    selected_repository: z.string().nullable(),
    selected_branch: z.string().nullable(),
    git_provider: z.string().nullable(),
    title: z.string().nullable(),
    trigger: z.string().nullable(),
    llm_model: z.string().nullable(),
    pr_number: z.array(z.number()),
    // What the conversation has cost and the budget in force (docs/budgets.md); null before the first report.
    metrics: MetricsSnapshotSchema.nullable(),
    parent_conversation_id: z.string().nullable(),
    sub_conversation_ids: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    sandbox_status: z.enum(['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING']),
    // Ours, additive: why the sandbox is PAUSED by policy, in ERROR, or MISSING (e.g. deleted by retention).
    sandbox_status_reason: z.string().nullable(),
    execution_status: z.string().nullable(),
    // Ours, additive: why the agent was stopped (a budget), while it is; null otherwise (docs/budgets.md).
    execution_status_reason: BudgetStopReasonSchema.nullable(),
    // Ours, additive: the conversation's own budget (PATCH it); null follows the settings' max_budget_per_task.
    max_budget_per_task: z.number().nullable(),
    conversation_url: z.string().nullable(),
    session_api_key: z.string().nullable(),
    // 2026 fields: this service runs the OpenHands agent (no ACP agents).
    agent_kind: z.string(),
    public: z.boolean().nullable(),
    tags: z.record(z.string(), z.string()),
    acp_server: z.string().nullable(),
    launched_agent_profile: z.object({ agent_profile_id: z.string(), revision: z.number() }).nullable(),
  })
  .meta({ id: 'AppConversation' });
export type AppConversation = z.infer<typeof AppConversationSchema>;

const ConversationFilters = {
  title__contains: z.string().optional(),
  created_at__gte: isoDateTime().optional(),
  created_at__lt: isoDateTime().optional(),
  updated_at__gte: isoDateTime().optional(),
  updated_at__lt: isoDateTime().optional(),
  sandbox_id__eq: z.string().min(1).optional(),
};
export const CountAppConversationsInputSchema = z.object(ConversationFilters);
export type ConversationFilters = z.output<typeof CountAppConversationsInputSchema>;
export const ConversationSortOrderSchema = z
  .enum(['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC', 'TITLE', 'TITLE_DESC'])
  .meta({ id: 'AppConversationSortOrder' });
export type ConversationSortOrder = z.infer<typeof ConversationSortOrderSchema>;
export const SearchAppConversationsInputSchema = PagingInputSchema.extend({
  ...ConversationFilters,
  sort_order: ConversationSortOrderSchema.default('CREATED_AT_DESC'),
  include_sub_conversations: queryBool().default(false),
});
export const BatchGetAppConversationsInputSchema = z.object({ ids: idListSchema() });

export const AppConversationPageSchema = z
  .object({ items: z.array(AppConversationSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AppConversationPage' });

const TaskFilters = {
  conversation_id__eq: z.string().optional(),
  created_at__gte: isoDateTime().optional(),
};
export const CountStartTasksInputSchema = z.object(TaskFilters);
export type StartTaskFilters = z.output<typeof CountStartTasksInputSchema>;
export const SearchStartTasksInputSchema = PagingInputSchema.extend({
  ...TaskFilters,
  sort_order: z.enum(['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC']).default('CREATED_AT_DESC'),
});
export const BatchGetStartTasksInputSchema = z.object({ ids: idListSchema() });
export const WatchStartTaskInputSchema = z.object({ task_id: z.string().min(1) });
export const WatchAppConversationInputSchema = z.object({ conversation_id: z.string().min(1).max(64) });
export const StartTaskPageSchema = z
  .object({ items: z.array(AppConversationStartTaskSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AppConversationStartTaskPage' });
