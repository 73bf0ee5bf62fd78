// The 2026 settings (/api/v1/settings): the same document as V0 /api/settings in the nested
// shape. Every nested field maps to a V0 field (contract/settings-fields.ts says which), except
// the LLM keyword arguments V0 has no field for (llmExtra), so V0 and V1 never disagree. A
// save turns the diffs into one V0 partial save plus those extras, so secrets, MCP credentials
// and concurrency follow the V0 rules (src/services/settings/settings.service.ts).
import type { SaveSettingsInput, Settings } from '../../../contract/settings.schema.js';
import type { Marketplace, SandboxGroupingStrategy, SaveSettingsV1Input, SettingsV1 } from '../../../contract/settings-v1.schema.js';
import { TOP_LEVEL_FIELDS } from '../../../contract/settings-v1.schema.js';
import type { SettingsRecord } from '../../../models/index.js';
import {
  AGENT_FIELDS,
  AGENT_SECTIONS,
  CONVERSATION_FIELDS,
  CONVERSATION_SECTIONS,
  LLM_EXTRA_KEYS,
  schemaDocument,
} from '../../../contract/settings-fields.js';
import { AppError } from '../../errors.js';
import type { LlmProfilesService } from './llm-profiles.service.js';
import { type ExtraUpdate, maskedMcp, type SettingsService } from './settings.service.js';
import { serverMap } from './mcp-servers.js';
import type { McpServer } from '../../../contract/mcp-servers.schema.js';

const AGENT_SCHEMA = schemaDocument('AgentSettings', AGENT_FIELDS, AGENT_SECTIONS, 'openhands');
const CONVERSATION_SCHEMA = schemaDocument('ConversationSettings', CONVERSATION_FIELDS, CONVERSATION_SECTIONS, null);

/** What the nested view needs besides the V0 view: secrets to show (null unless exposed) and profiles. */
export interface NestedParts {
  llmApiKey: string | null;
  /** agent_settings.mcp_config: the 2026 map, masked (or opened for the user's own sandbox). */
  mcpServers: Record<string, McpServer>;
  llmProfiles: SettingsV1['llm_profiles'];
  activeAgentProfileId: string | null;
}

export class SettingsV1Service {
  constructor(
    private readonly settings: SettingsService,
    private readonly llmProfiles: LlmProfilesService,
  ) {}

  agentSchema() {
    return AGENT_SCHEMA;
  }

  conversationSchema() {
    return CONVERSATION_SCHEMA;
  }

  /**
   * The defaults before the first save, not the reference's 404: every 2026 client is a Cloud
   * client, and Cloud accounts have settings from their creation (Agent Canvas re-asks on every
   * page and logs each 404; the CLI's login warns it could not fetch the user's data). V0
   * /api/settings keeps its 404.
   */
  /** orgLlm: the LLM defaults of the team organisation the call acts in, which its conversations use (docs/organizations.md). */
  async get(userId: string, orgLlm: { model: string | null; baseUrl: string | null; keySet: boolean } | null = null): Promise<SettingsV1> {
    const stored = await this.settings.stored(userId);
    const profiles = await this.llmProfiles.asKwargs(userId, false);
    const own = stored?.dto ?? this.settings.defaults();
    const dto = orgLlm ? { ...own, llm_model: orgLlm.model, llm_base_url: orgLlm.baseUrl, llm_api_key_set: orgLlm.keySet } : own;
    const record = stored?.record ?? null;
    const nested = nestedSettings(dto, record, {
      llmApiKey: null,
      mcpServers: serverMap(record ? maskedMcp(record) : null),
      llmProfiles: profiles,
      activeAgentProfileId: record?.activeAgentProfileId ?? null,
    });
    const { llm_model: _m, llm_api_key: _k, llm_base_url: _b, agent: _a, max_iterations: _i, ...rest } = dto;
    const {
      security_analyzer: _s,
      confirmation_mode: _c,
      enable_default_condenser: _e,
      condenser_max_size: _z,
      secrets_store: _x,
      ...top
    } = rest;
    return { ...top, ...nested };
  }

  /** Deep-merges the diffs (null in a diff: back to the default; a key: null keeps, "" clears). */
  async save(userId: string, input: SaveSettingsV1Input): Promise<void> {
    const legacy = (['agent_settings', 'conversation_settings'] as const).filter((key) => input[key] !== undefined);
    if (legacy.length) {
      throw new AppError('UNPROCESSABLE_CONTENT', 'Use *_diff nested settings payloads instead of legacy keys', {
        reason: 'legacy_settings_keys',
        fields: { keys: legacy.join(',') },
      });
    }
    const flat: Record<string, unknown> = {};
    for (const field of TOP_LEVEL_FIELDS) if (input[field] !== undefined) flat[field] = input[field];
    const agent = input.agent_settings_diff ?? {};
    const conversation = input.conversation_settings_diff ?? {};
    const mapped: [string, unknown][] = [
      ['agent', agent.agent],
      ['llm_model', agent.llm?.model],
      ['llm_api_key', agent.llm?.api_key],
      ['llm_base_url', agent.llm?.base_url],
      ['enable_default_condenser', agent.condenser?.enabled],
      ['condenser_max_size', agent.condenser?.max_size],
      ['mcp_config', agent.mcp_config],
      ['max_iterations', conversation.max_iterations],
      ['confirmation_mode', conversation.confirmation_mode],
      ['security_analyzer', conversation.security_analyzer],
    ];
    for (const [field, value] of mapped) if (value !== undefined) flat[field] = value;
    const extra: ExtraUpdate = { set: {}, unset: [] };
    for (const key of LLM_EXTRA_KEYS) {
      const value = (agent.llm as Record<string, unknown> | undefined)?.[key];
      if (value === null) extra.unset!.push(`llmExtra.${key}`);
      else if (value !== undefined) extra.set![`llmExtra.${key}`] = value;
    }
    if (input.disabled_skills !== undefined) extra.set!.disabled_skills = input.disabled_skills;
    if (input.git_full_clone !== undefined) extra.set!.git_full_clone = input.git_full_clone;
    if (input.llm_key_in_sandbox !== undefined) extra.set!.llm_key_in_sandbox = input.llm_key_in_sandbox;
    for (const key of ['sandbox_grouping_strategy', 'registered_marketplaces', 'title_generation_prompt'] as const) {
      const value = input[key];
      if (value === null || value === '') extra.unset!.push(key);
      else if (value !== undefined) extra.set![key] = value;
    }
    if (input.registered_marketplaces) assertDistinctNames(input.registered_marketplaces);
    await this.settings.save(userId, flat as SaveSettingsInput, extra);
  }
}

/** The reference's check on a save: marketplace names are unique (400 with the names). */
function assertDistinctNames(marketplaces: Marketplace[]): void {
  const seen = new Set<string>();
  const duplicated = new Set(marketplaces.map((m) => m.name).filter((name) => seen.has(name) || !seen.add(name)));
  if (duplicated.size > 0) {
    throw new AppError('BAD_REQUEST', `Marketplace name(s) already in use or duplicated: ${[...duplicated].sort().join(', ')}`, {
      reason: 'marketplace_names_duplicated',
    });
  }
}

/** The nested fields of a stored document (V1 GET and users/me): built from its V0 view. */
export function nestedSettings(dto: Settings, record: SettingsRecord | null, parts: NestedParts) {
  const stored = (record?.llmExtra ?? {}) as Record<string, unknown>;
  const extra = Object.fromEntries(LLM_EXTRA_KEYS.filter((k) => stored[k] != null).map((k) => [k, stored[k]]));
  return {
    agent_settings: {
      agent_kind: 'openhands' as const,
      agent: dto.agent,
      llm: { model: dto.llm_model, api_key: parts.llmApiKey, base_url: dto.llm_base_url, ...extra },
      condenser: { enabled: dto.enable_default_condenser, max_size: dto.condenser_max_size },
      mcp_config: parts.mcpServers,
    },
    conversation_settings: {
      max_iterations: dto.max_iterations,
      confirmation_mode: dto.confirmation_mode,
      security_analyzer: dto.security_analyzer,
    },
    user_version: null,
    disabled_skills: record?.disabled_skills ?? null,
    git_full_clone: record?.git_full_clone ?? false,
    llm_key_in_sandbox: record?.llm_key_in_sandbox ?? false,
    v1_enabled: true as const,
    sandbox_grouping_strategy: (record?.sandbox_grouping_strategy as SandboxGroupingStrategy | undefined) ?? 'NO_GROUPING',
    llm_profiles: parts.llmProfiles,
    active_agent_profile_id: parts.activeAgentProfileId,
    registered_marketplaces: (record?.registered_marketplaces as Marketplace[] | undefined) ?? [],
    inherited_marketplaces: [],
    title_llm_profile: null,
    title_generation_prompt: record?.title_generation_prompt ?? null,
  };
}
