// The 2026 start request's fields as the start uses them (docs/conversations.md): a suggested
// task becomes the first message, plugin parameters are shown to the agent with it, a planning
// agent is told its boundaries, and what the service cannot honour is refused with 422 naming
// the field, never dropped.
import type { AppConversationStartRequest, SendMessageRequest } from '../../../contract/app-conversations.schema.js';
import type { SuggestedTask } from '../../../contract/conversations.schema.js';
import type { AppConversationRecord } from '../../../models/index.js';
import { AppError } from '../../errors.js';

/** A start-request field the service cannot honour: 422 on that field. */
export function refused(field: string, message: string): AppError {
  return new AppError('UNPROCESSABLE_CONTENT', message, { reason: 'start_request_refused', fields: { field } });
}

/** The first message of a suggested task (V0 and V1 starts). */
export function suggestedTaskPrompt(task: SuggestedTask): string {
  const what = {
    MERGE_CONFLICTS: `Resolve the merge conflicts in pull request #${task.issue_number}`,
    FAILING_CHECKS: `Fix the failing checks in pull request #${task.issue_number}`,
    UNRESOLVED_COMMENTS: `Address the unresolved review comments in pull request #${task.issue_number}`,
    OPEN_ISSUE: `Resolve issue #${task.issue_number}`,
    OPEN_PR: `Continue the work in pull request #${task.issue_number}`,
  }[task.task_type];
  return `${what} of ${task.repo}: "${task.title}".`;
}

/** A sub-conversation inherits what its request leaves out from its parent (reference). */
export function inheritFromParent(request: AppConversationStartRequest, parent: AppConversationRecord): void {
  request.sandbox_id ??= parent.sandboxId;
  request.selected_repository ??= parent.selected_repository;
  request.selected_branch ??= parent.selected_branch;
  request.git_provider ??= parent.git_provider as AppConversationStartRequest['git_provider'];
  request.llm_model ??= parent.llm_model;
}

/** A suggested task as the request's first message, repository and trigger (the reference's rules). */
export function withSuggestedTask(request: AppConversationStartRequest): AppConversationStartRequest {
  const task = request.suggested_task;
  if (!task) return request;
  if (request.initial_message) throw refused('suggested_task', 'initial_message cannot be given together with suggested_task');
  return {
    ...request,
    initial_message: { role: 'user', content: [{ type: 'text', text: suggestedTaskPrompt(task) }], run: true },
    trigger: 'suggested_task',
    selected_repository: request.selected_repository || task.repo,
    git_provider: request.git_provider ?? task.git_provider,
  };
}

/** The first message with the plugins' parameters appended (the agent reads them there). */
export function withPluginParameters(
  message: SendMessageRequest | null | undefined,
  plugins: AppConversationStartRequest['plugins'],
): SendMessageRequest | null {
  const blocks = (plugins ?? []).flatMap((plugin) => {
    const entries = Object.entries(plugin.parameters ?? {});
    if (entries.length === 0) return [];
    const lines = entries.map(([key, value]) => `- ${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    return [`Parameters of plugin ${plugin.source}:\n${lines.join('\n')}`];
  });
  if (blocks.length === 0) return message ?? null;
  const text = { type: 'text' as const, text: blocks.join('\n\n') };
  return message ? { ...message, content: [...message.content, text] } : { role: 'user', content: [text], run: true };
}

/** Appended to a planning agent's system message: what it may and may not do. */
export const PLANNING_BOUNDARIES =
  'You are a planning agent. Study the repository and write a plan in the plan file; do not change code or run ' +
  'implementation commands. When the plan is complete, say so and stop: a coding agent carries the plan out.';

/** Where a planning agent keeps its plan (as the reference places it). */
export function planPath(projectDir: string, provider: string | null | undefined): string {
  // The reference keeps it out of a dot directory for GitLab repositories.
  return `${projectDir.replace(/\/+$/, '')}/${provider === 'gitlab' ? 'agents-tmp-config' : '.agents_tmp'}/PLAN.md`;
}
