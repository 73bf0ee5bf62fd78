// The 2026 routes on one V1 conversation (/api/v1/app-conversations/{id}/…, and its pending
// messages under /api/v1/conversations/{id}/…), in the shapes of the reference (openhands-ai
// 1.11 and the Cloud OpenAPI document).
import { z } from 'zod';
import { MessageContentSchema } from './app-conversations.schema.js';
import { budgetAmount } from './budgets.schema.js';
import { jsonBool, ProviderTypeSchema } from './common.schema.js';

export const V1ConversationPathSchema = z.object({ conversation_id: z.string().min(1).max(200) });

// Every field may be null (it clears); a field left out keeps its value (the reference's rule).
export const UpdateAppConversationInputSchema = V1ConversationPathSchema.extend({
  title: z.string().trim().max(200).nullable().optional(),
  public: jsonBool().nullable().optional(),
  selected_repository: z
    .string()
    .regex(/^[\w.-]+(\/[\w.-]+)+$/, 'Repository must look like owner/repo')
    .nullable()
    .optional(),
  selected_branch: z.string().min(1).max(255).nullable().optional(),
  git_provider: ProviderTypeSchema.nullable().optional(),
  // Ours, additive: the conversation's budget (null: follow the settings); a conversation it
  // had stopped continues once no budget holds it back (docs/budgets.md).
  max_budget_per_task: budgetAmount().nullable().optional(),
});
export type UpdateAppConversationInput = z.output<typeof UpdateAppConversationInputSchema>;

export const AppSendMessageInputSchema = V1ConversationPathSchema.extend({
  // Reference: only user messages are relayed.
  role: z.literal('user').default('user'),
  content: z.array(MessageContentSchema).min(1),
  run: jsonBool().default(true),
});

export const SandboxStatusSchema = z.enum(['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING']);

export const AppSendMessageResponseSchema = z
  .object({ success: z.boolean(), sandbox_status: SandboxStatusSchema, message: z.string().nullable() })
  .meta({ id: 'AppSendMessageResponse' });

/** Confirmation mode's answer: accept runs the action the agent waits on, reject gives it the reason instead. */
export const ConfirmationAnswerInputSchema = V1ConversationPathSchema.extend({
  accept: jsonBool(),
  reason: z.string().max(2000).optional(),
});

export const SwitchProfileInputSchema = V1ConversationPathSchema.extend({ profile_name: z.string().min(1).max(256) });
export const SwitchAcpModelInputSchema = V1ConversationPathSchema.extend({ model: z.string().min(1).max(256) });

export const PendingMessageInputSchema = V1ConversationPathSchema.extend({
  role: z.literal('user').default('user'),
  content: z.array(MessageContentSchema).min(1),
});
export type PendingMessageInput = z.output<typeof PendingMessageInputSchema>;

export const PendingMessageResponseSchema = z
  .object({
    id: z.string(),
    // false: the conversation was ready, so the message went to its agent at once.
    queued: z.boolean(),
    // 1-based place in the queue (0 when delivered at once).
    position: z.number().int(),
  })
  .meta({ id: 'PendingMessageResponse' });

// Paths under /workspace/project name the sandbox's working directory (OpenHands' own
// sandboxes work there, and clients assume it); others are read as given inside the sandbox.
// At most 1024 characters: percent-encoded, a query stays below Node's 16 KB header limit.
export const ReadFileInputSchema = V1ConversationPathSchema.extend({
  file_path: z.string().min(1).max(1024).default('/workspace/project/PLAN.md'),
});
export const ListWorkspaceFilesInputSchema = V1ConversationPathSchema.extend({
  path: z.string().min(1).max(1024).default('/workspace/project'),
});
export const V1GitChangesInputSchema = V1ConversationPathSchema.extend({
  path: z.string().min(1).max(1024),
  ref: z.string().min(1).max(256).optional(),
});
export const V1GitDiffInputSchema = V1GitChangesInputSchema;

export const V1GitChangeSchema = z
  .object({ status: z.enum(['MOVED', 'ADDED', 'DELETED', 'UPDATED']), path: z.string() })
  .meta({ id: 'AgentGitChange' });
export const V1GitDiffSchema = z.object({ modified: z.string().nullable(), original: z.string().nullable() }).meta({ id: 'AgentGitDiff' });

export const SkillsResponseSchema = z
  .object({
    skills: z.array(
      z.object({
        name: z.string(),
        type: z.enum(['repo', 'knowledge', 'agentskills']),
        content: z.string(),
        triggers: z.array(z.string()),
      }),
    ),
  })
  .meta({ id: 'ConversationSkills' });

export const HooksResponseSchema = z
  .object({
    hooks: z.array(
      z.object({
        event_type: z.string(),
        matchers: z.array(
          z.object({
            matcher: z.string(),
            hooks: z.array(z.object({ type: z.string(), command: z.string(), timeout: z.number(), async: z.boolean() })),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'ConversationHooks' });

/** tRPC carries the zip as base64; REST sends its bytes as application/zip. */
export const ConversationExportSchema = z.object({ file_name: z.string(), content_base64: z.string() }).meta({ id: 'ConversationExport' });
