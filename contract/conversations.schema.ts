// V0 conversation endpoints (docs/api.md).
import { z } from 'zod';
import { BudgetStopReasonSchema, MetricsSnapshotSchema } from './budgets.schema.js';
import { ConversationTriggerSchema, jsonInt, ProviderTypeSchema, queryBool, queryInt } from './common.schema.js';
import { McpConfigInputSchema } from './mcp.schema.js';

export const SuggestedTaskSchema = z
  .object({
    git_provider: ProviderTypeSchema,
    task_type: z.enum(['MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS', 'OPEN_ISSUE', 'OPEN_PR']),
    repo: z.string(),
    issue_number: jsonInt(),
    title: z.string(),
  })
  .meta({ id: 'SuggestedTask' });
export type SuggestedTask = z.output<typeof SuggestedTaskSchema>;

// Reference: InitSessionRequest forbids unknown keys (extra='forbid').
export const NewConversationInputSchema = z
  .strictObject({
    repository: z.string().nullable().optional(),
    git_provider: ProviderTypeSchema.nullable().optional(),
    selected_branch: z.string().nullable().optional(),
    initial_user_msg: z.string().nullable().optional(),
    image_urls: z.array(z.string()).nullable().optional(),
    replay_json: z.string().nullable().optional(),
    suggested_task: SuggestedTaskSchema.nullable().optional(),
    create_microagent: z
      .object({ repo: z.string(), git_provider: ProviderTypeSchema.nullable().optional(), title: z.string().nullable().optional() })
      .nullable()
      .optional(),
    conversation_instructions: z.string().nullable().optional(),
    mcp_config: McpConfigInputSchema.nullable().optional(),
    // Reference: only honoured with ALLOW_SET_CONVERSATION_ID=1; ignored here.
    conversation_id: z.string().optional(),
  })
  .meta({ id: 'InitSessionRequest' });
export type NewConversationInput = z.output<typeof NewConversationInputSchema>;

export const NewConversationResponseSchema = z
  .object({
    status: z.literal('ok'),
    conversation_id: z.string(),
    message: z.string().nullable(),
    conversation_status: z.enum(['STARTING', 'RUNNING']),
  })
  .meta({ id: 'ConversationResponse' });

export const ConversationInfoSchema = z
  .object({
    conversation_id: z.string(),
    title: z.string(),
    last_updated_at: z.string().nullable(),
    status: z.enum(['STARTING', 'RUNNING', 'STOPPED', 'ARCHIVED', 'ERROR']),
    runtime_status: z.string().nullable(),
    selected_repository: z.string().nullable(),
    selected_branch: z.string().nullable(),
    git_provider: z.string().nullable(),
    trigger: z.string().nullable(),
    num_connections: z.number(),
    url: z.string().nullable(),
    session_api_key: z.string().nullable(),
    created_at: z.string(),
    pr_number: z.array(z.number()),
    conversation_version: z.enum(['V0', 'V1']),
    sub_conversation_ids: z.array(z.string()),
    // Ours, additive: why the workspace is paused by policy, failed or gone (e.g. ARCHIVED after retention).
    sandbox_status_reason: z.string().nullable(),
    // Ours, additive (docs/budgets.md): what it has cost, and why its agent was stopped while it is.
    metrics: MetricsSnapshotSchema.nullable(),
    execution_status_reason: BudgetStopReasonSchema.nullable(),
  })
  .meta({ id: 'ConversationInfo' });
export type ConversationInfo = z.infer<typeof ConversationInfoSchema>;

export const ListConversationsInputSchema = z.object({
  page_id: z.string().nullable().optional(),
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(20),
  selected_repository: z.string().optional(),
  conversation_trigger: ConversationTriggerSchema.optional(),
  include_sub_conversations: queryBool().default(false),
});

export const ConversationInfoPageSchema = z
  .object({ results: z.array(ConversationInfoSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'ConversationInfoResultSet' });

export const ConversationIdInputSchema = z.object({ conversation_id: z.string().min(1) });
// Reference: PATCH forbids unknown keys; the title is trimmed, 1-200 characters.
export const UpdateConversationInputSchema = z.strictObject({
  conversation_id: z.string().min(1),
  title: z.string().trim().min(1).max(200),
});
