// V0 conversation endpoints (docs/api.md) on top of the V1 start machinery: a "new
// conversation" is a start task whose conversation id is known at once.
import type { ProviderType } from '../../../contract/common.schema.js';
import type { ConversationInfo, NewConversationInput } from '../../../contract/conversations.schema.js';
import type { AppConversation, AppConversationStartRequest } from '../../../contract/app-conversations.schema.js';
import { AppError } from '../../errors.js';
import type { AppConversationsService } from '../app-conversations.service.js';
import { untitledName } from '../records/queries.js';
import { suggestedTaskPrompt } from '../start/start-request.js';
import type { GitProvidersService } from '../../git/git-providers.service.js';
import { hasUsableLlmKey, LLM_KEY_MISSING, type SettingsService } from '../../services/settings/settings.service.js';

const PAGE_SIZE_DEFAULT = 20;

export class ConversationsService {
  constructor(
    private readonly appConversations: AppConversationsService,
    private readonly settings: SettingsService,
    private readonly gitProviders: GitProvidersService,
  ) {}

  async create(userId: string, input: NewConversationInput) {
    const settings = await this.settings.resolve(userId);
    if (!settings) {
      throw new AppError('BAD_REQUEST', 'Settings not found', { reason: 'settings_not_found' });
    }
    if (!hasUsableLlmKey(settings, settings.llm_model ?? '')) {
      throw new AppError('BAD_REQUEST', LLM_KEY_MISSING, { reason: 'llm_key_missing' });
    }
    let repository = input.repository ?? null;
    let provider = input.git_provider ?? null;
    let trigger: AppConversationStartRequest['trigger'] = 'gui';
    let text = input.initial_user_msg ?? null;
    if (input.create_microagent) {
      trigger = 'microagent_management';
      repository ??= input.create_microagent.repo;
      provider ??= input.create_microagent.git_provider ?? null;
    }
    if (input.suggested_task) {
      trigger = 'suggested_task';
      text = suggestedTaskPrompt(input.suggested_task);
      repository ??= input.suggested_task.repo;
      provider ??= input.suggested_task.git_provider;
    }
    if (repository && !(await this.gitProviders.repositoryAccess(userId, repository, provider))) {
      throw new AppError('UNAUTHORIZED', `Unable to access repo ${repository}`, { reason: 'repository_access_denied' });
    }
    const content: { type: 'text'; text: string }[] = [];
    if (input.conversation_instructions)
      content.push({ type: 'text', text: `<conversation_instructions>\n${input.conversation_instructions}\n</conversation_instructions>` });
    if (text) content.push({ type: 'text', text });
    const images = input.image_urls?.length ? [{ type: 'image' as const, image_urls: input.image_urls }] : [];
    const task = await this.appConversations.start(
      userId,
      {
        selected_repository: repository,
        selected_branch: input.selected_branch ?? null,
        git_provider: provider,
        trigger,
        pr_number: [],
        agent_type: 'default',
        ...(content.length || images.length ? { initial_message: { role: 'user', content: [...content, ...images], run: true } } : {}),
      },
      input.mcp_config ?? null,
      '2025', // the V0 route: the d6 web UI's start
    );
    const conversationId = (await this.appConversations.conversationIdOfTask(userId, task.id))!;
    return { status: 'ok' as const, conversation_id: conversationId, message: null, conversation_status: 'STARTING' as const };
  }

  async get(userId: string, id: string): Promise<ConversationInfo | null> {
    validateConversationId(id);
    const conversation = await this.appConversations.get(userId, id);
    if (conversation) return toConversationInfo(conversation);
    const task = await this.appConversations.taskForConversation(userId, id);
    if (!task) return null; // Legacy: unknown ids answer 200 null, not 404.
    const request = task.request as Partial<AppConversationStartRequest>;
    return {
      conversation_id: id,
      title: `Conversation ${id.slice(0, 5)}`,
      last_updated_at: task.updated_at,
      status: task.status === 'ERROR' ? 'ERROR' : 'STARTING',
      runtime_status: task.status === 'ERROR' ? 'STATUS$ERROR' : 'STATUS$STARTING_RUNTIME',
      selected_repository: request.selected_repository ?? null,
      selected_branch: request.selected_branch ?? null,
      git_provider: request.git_provider ?? null,
      trigger: request.trigger ?? null,
      num_connections: 0,
      url: null,
      session_api_key: null,
      created_at: task.created_at,
      pr_number: request.pr_number ?? [],
      conversation_version: 'V1',
      sub_conversation_ids: [],
      sandbox_status_reason: null,
      metrics: null,
      execution_status_reason: null,
    };
  }

  async list(
    userId: string,
    input: {
      page_id?: string | null;
      limit?: number;
      selected_repository?: string;
      conversation_trigger?: string;
      include_sub_conversations: boolean;
    },
  ) {
    const limit = input.limit ?? PAGE_SIZE_DEFAULT;
    const page = await this.appConversations.searchFiltered(userId, {
      offset: decodePageId(input.page_id),
      limit,
      selected_repository: input.selected_repository,
      trigger: input.conversation_trigger,
      include_sub_conversations: input.include_sub_conversations,
    });
    return {
      results: page.items.map(toConversationInfo),
      next_page_id: page.nextOffset === null ? null : encodePageId(page.nextOffset),
    };
  }

  /**
   * Conversations started to create a microagent on one repository (trigger
   * microagent_management), newest first, without those whose last pull request is closed.
   */
  async microagentManagement(userId: string, input: { selected_repository: string; page_id?: string | null; limit: number }) {
    const page = await this.list(userId, {
      page_id: input.page_id,
      limit: input.limit,
      selected_repository: input.selected_repository,
      conversation_trigger: 'microagent_management',
      include_sub_conversations: false,
    });
    const open = await Promise.all(
      page.results.map((c) => {
        const last = c.pr_number.at(-1);
        if (last === undefined) return true;
        return this.gitProviders.pullRequestOpen(userId, c.git_provider as ProviderType | null, input.selected_repository, last);
      }),
    );
    return { results: page.results.filter((_, i) => open[i]), next_page_id: page.next_page_id };
  }

  async setTitle(userId: string, id: string, title: string): Promise<boolean> {
    validateConversationId(id);
    if (!(await this.appConversations.setTitle(userId, id, title))) {
      throw new AppError('NOT_FOUND', 'Conversation not found', { reason: 'conversation_not_found' });
    }
    return true;
  }

  async delete(userId: string, id: string): Promise<boolean> {
    validateConversationId(id);
    return this.appConversations.delete(userId, id);
  }
}

/** The V1 → V0 mapping of the reference (_to_conversation_info). */
export function toConversationInfo(c: AppConversation): ConversationInfo {
  const status = ({ RUNNING: 'RUNNING', STARTING: 'STARTING', PAUSED: 'STOPPED', ERROR: 'ERROR', MISSING: 'ARCHIVED' } as const)[
    c.sandbox_status
  ];
  const ready = ['idle', 'running', 'paused', 'waiting_for_confirmation', 'finished'];
  return {
    conversation_id: c.id,
    title: c.title ?? untitledName(c.id),
    last_updated_at: c.updated_at,
    status,
    // The reference leaves it null unless RUNNING; the d6 UI then falls back to its socket state
    // and shows "Connecting…" for a start that failed. STATUS$ERROR makes it show the error.
    runtime_status:
      status === 'RUNNING'
        ? c.execution_status && ready.includes(c.execution_status)
          ? 'STATUS$READY'
          : 'STATUS$ERROR'
        : status === 'ERROR'
          ? 'STATUS$ERROR'
          : null,
    selected_repository: c.selected_repository,
    selected_branch: c.selected_branch,
    git_provider: c.git_provider,
    trigger: c.trigger,
    num_connections: 0,
    url: c.conversation_url,
    session_api_key: c.session_api_key,
    created_at: c.created_at,
    pr_number: c.pr_number,
    conversation_version: 'V1',
    sub_conversation_ids: c.sub_conversation_ids,
    sandbox_status_reason: c.sandbox_status_reason,
    metrics: c.metrics,
    execution_status_reason: c.execution_status_reason,
  };
}

/** Reference path checks on conversation ids. */
function validateConversationId(id: string): void {
  const fail = (detail: string) => {
    throw new AppError('BAD_REQUEST', detail, { reason: 'invalid_conversation_id' });
  };
  if (id.length > 100) fail('Conversation ID is too long');
  if (id.includes('\0')) fail('Conversation ID contains invalid characters');
  if (id.includes('..') || id.includes('/') || id.includes('\\')) fail('Conversation ID contains invalid path characters');
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(id)) fail('Conversation ID contains control characters');
}

// Reference paging for GET /api/conversations: base64 of {"v0": <id|null>, "v1": <id|null>}.
function encodePageId(offset: number): string {
  return Buffer.from(JSON.stringify({ v0: null, v1: String(offset) })).toString('base64');
}

function decodePageId(pageId: string | null | undefined): number {
  if (!pageId) return 0;
  try {
    const decoded = JSON.parse(Buffer.from(pageId, 'base64').toString('utf8')) as unknown;
    const v1 = decoded && typeof decoded === 'object' ? (decoded as { v1?: unknown }).v1 : decoded;
    const offset = Number.parseInt(String(v1 ?? ''), 10);
    return Number.isFinite(offset) && offset > 0 ? offset : 0;
  } catch {
    return 0; // a legacy V0 page id: there are no V0 conversations here
  }
}
