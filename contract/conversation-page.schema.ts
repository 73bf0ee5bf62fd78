// The per-conversation routes of the conversation page (/api/conversations/{id}/…) and the
// microagent-management list, in the reference server's shapes (its V0 routes).
import { z } from 'zod';
import { ProviderTypeSchema, queryInt } from './common.schema.js';

export const ConversationStatusSchema = z.enum(['STARTING', 'RUNNING', 'STOPPED', 'ARCHIVED', 'ERROR']).meta({ id: 'ConversationStatus' });
export type ConversationStatus = z.infer<typeof ConversationStatusSchema>;

export const ConversationPathSchema = z.object({ conversation_id: z.string().min(1) });

export const ConversationConfigSchema = z
  .object({ runtime_id: z.string().nullable(), session_id: z.string().nullable() })
  .meta({ id: 'ConversationConfig' });

// Reference: ProvidersSetModel (the web UI sends the user's providers; nothing here needs them).
export const StartConversationInputSchema = ConversationPathSchema.extend({
  providers_set: z.array(ProviderTypeSchema).nullable().optional(),
});

export const ConversationActionResponseSchema = z
  .object({
    status: z.literal('ok'),
    conversation_id: z.string(),
    message: z.string().nullable(),
    conversation_status: ConversationStatusSchema,
  })
  .meta({ id: 'ConversationActionResponse' });

export const WebHostsSchema = z.object({ hosts: z.record(z.string(), z.number()) }).meta({ id: 'WebHosts' });
export const VscodeUrlSchema = z.object({ vscode_url: z.string().nullable() }).meta({ id: 'VSCodeUrl' });

export const MicroagentSchema = z
  .object({
    name: z.string(),
    type: z.enum(['repo', 'knowledge']),
    content: z.string(),
    triggers: z.array(z.string()),
    inputs: z.array(z.object({ name: z.string(), description: z.string() })),
    tools: z.array(z.string()),
  })
  .meta({ id: 'Microagent' });
export const MicroagentsSchema = z.object({ microagents: z.array(MicroagentSchema) }).meta({ id: 'Microagents' });

export const ListFilesInputSchema = ConversationPathSchema.extend({ path: z.string().optional() });

export const GitChangeSchema = z.object({ status: z.enum(['M', 'A', 'D', 'R', 'U']), path: z.string() }).meta({ id: 'GitChange' });
export const GitDiffInputSchema = ConversationPathSchema.extend({ path: z.string().min(1) });
export const GitDiffSchema = z.object({ modified: z.string(), original: z.string() }).meta({ id: 'GitChangeDiff' });

/** Files as tRPC sends them; REST takes multipart/form-data with repeated `files` parts (src/http/rest/upload.ts). */
export const UploadFilesInputSchema = ConversationPathSchema.extend({
  files: z
    .array(z.object({ name: z.string(), content_base64: z.string() }))
    .min(1)
    .max(100),
});
export const UploadFilesResultSchema = z
  .object({
    uploaded_files: z.array(z.string()),
    skipped_files: z.array(z.object({ name: z.string(), reason: z.string() })),
  })
  .meta({ id: 'FileUploadSuccessResponse' });

export const TrajectorySchema = z.object({ trajectory: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'Trajectory' });

export const RememberPromptInputSchema = ConversationPathSchema.extend({
  // The position of the event in the conversation's stored history (0 = its first event).
  event_id: queryInt().pipe(z.number().min(0)),
});
export const RememberPromptSchema = z.object({ status: z.literal('success'), prompt: z.string() }).meta({ id: 'RememberPrompt' });

export const FeedbackInputSchema = ConversationPathSchema.extend({
  version: z.string().max(200).default(''),
  email: z.string().max(320).default(''),
  // Accepted and ignored, as the reference does: the trajectory is the stored one.
  token: z.string().optional(),
  polarity: z.enum(['positive', 'negative']),
  permissions: z.enum(['public', 'private']).default('private'),
  trajectory: z.array(z.unknown()).nullable().optional(),
});
export const FeedbackResponseSchema = z
  .object({
    statusCode: z.number(),
    body: z.object({ message: z.string(), feedback_id: z.string(), password: z.string() }),
  })
  .meta({ id: 'FeedbackResponse' });

export const MicroagentManagementInputSchema = z.object({
  selected_repository: z.string().min(1),
  page_id: z.string().nullable().optional(),
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(20),
});
