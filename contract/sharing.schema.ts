// Shared conversations (docs/api.md, "Sharing"): OpenHands Cloud's read-only view of a
// conversation its owner made public, and of its events.
import { z } from 'zod';
import { AppConversationSchema } from './app-conversations.schema.js';
import { idListSchema, uuidString } from './common.schema.js';

export const SharedConversationSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_id: z.string().nullable(),
    selected_repository: z.string().nullable(),
    selected_branch: z.string().nullable(),
    git_provider: z.string().nullable(),
    title: z.string().nullable(),
    pr_number: z.array(z.number()),
    llm_model: z.string().nullable(),
    metrics: AppConversationSchema.shape.metrics,
    parent_conversation_id: z.string().nullable(),
    sub_conversation_ids: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'SharedConversation' });

export const SharedConversationsInputSchema = z.object({ ids: idListSchema() });
export const SharedConversationInputSchema = z.object({ conversation_id: uuidString() });
export const SharedConversationListSchema = z.array(SharedConversationSchema.nullable());
