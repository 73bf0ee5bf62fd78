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
} from './common.schema.js';

const TextContentSchema = z.strictObject({ type: z.literal('text'), text: z.string(), cache_prompt: jsonBool().optional() });
const ImageContentSchema = z.strictObject({
  type: z.literal('image'),
  image_urls: z.array(z.string()),
  cache_prompt: jsonBool().optional(),
});

export const SendMessageRequestSchema = z
  .object({
    role: z.enum(['user', 'system', 'assistant', 'tool']).default('user'),
    content: z.array(z.discriminatedUnion('type', [TextContentSchema, ImageContentSchema])).default([]),
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

export const AppConversationStartRequestSchema = z
  .object({
    sandbox_id: z.string().min(1).nullable().optional(),
    initial_message: SendMessageRequestSchema.nullable().optional(),
    // Kept as sent (the agent server's processor models), so checked for what cannot be stored.
    processors: storedJson(z.array(z.looseObject({ kind: z.string() })).nullable()).optional(),
    llm_model: z.string().nullable().optional(),
    selected_repository: z
      .string()
      .regex(/^[\w.-]+(\/[\w.-]+)+$/, 'Repository must look like owner/repo')
      .nullable()
      .optional(),
    selected_branch: z.string().min(1).nullable().optional(),
    git_provider: ProviderTypeSchema.nullable().optional(),
    // Legacy: accepted but not used by the reference (the frontend sends instructions here).
    title: z.string().nullable().optional(),
    trigger: ConversationTriggerSchema.nullable().optional(),
    pr_number: z.array(jsonInt()).default([]),
    parent_conversation_id: z.string().nullable().optional(),
    agent_type: z.enum(['default', 'plan']).default('default'),
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
    metrics: z.record(z.string(), z.unknown()).nullable(),
    parent_conversation_id: z.string().nullable(),
    sub_conversation_ids: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    sandbox_status: z.enum(['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING']),
    // Ours, additive: why the sandbox is PAUSED by policy, in ERROR, or MISSING (e.g. deleted by retention).
    sandbox_status_reason: z.string().nullable(),
    execution_status: z.string().nullable(),
    conversation_url: z.string().nullable(),
    session_api_key: z.string().nullable(),
  })
  .meta({ id: 'AppConversation' });
export type AppConversation = z.infer<typeof AppConversationSchema>;

const ConversationFilters = {
  title__contains: z.string().optional(),
  created_at__gte: isoDateTime().optional(),
  created_at__lt: isoDateTime().optional(),
  updated_at__gte: isoDateTime().optional(),
  updated_at__lt: isoDateTime().optional(),
};
export const CountAppConversationsInputSchema = z.object(ConversationFilters);
export type ConversationFilters = z.output<typeof CountAppConversationsInputSchema>;
export const SearchAppConversationsInputSchema = PagingInputSchema.extend({
  ...ConversationFilters,
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
export const StartTaskPageSchema = z
  .object({ items: z.array(AppConversationStartTaskSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'AppConversationStartTaskPage' });
