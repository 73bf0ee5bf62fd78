// Per-user settings (the reference's, with our partial-update rules; docs/api.md). Secrets are
// encrypted before they reach the database and are never part of a returned DTO.
import type { Models, SettingsRecord } from '../../../models/index.js';
import { SECRET_MASK } from '../../../contract/common.schema.js';
import type { McpConfig } from '../../../contract/mcp.schema.js';
import type { SaveSettingsInput, Settings } from '../../../contract/settings.schema.js';
import type { Marketplace, SandboxGroupingStrategy } from '../../../contract/settings-v1.schema.js';
import type { SecretBox } from '../../crypto.js';
import { untilApplied, newVersion } from '../../db/versions.js';
import { AppError, isDuplicateKeyError } from '../../errors.js';
import { providerTokensSetOf } from '../../git/git-providers.service.js';
import {
  isSecretSettingsField,
  mapSettingsSecrets,
  mcpSecretAt,
  settingsSecretContext,
  type McpLike,
  type McpWith,
  type SecretSlot,
} from './settings-secrets.js';

// Defaults of the reference's Settings model for fields never saved.
const DEFAULTS = {
  enable_default_condenser: true,
  enable_sound_notifications: false,
  enable_proactive_conversation_starters: true,
  enable_solvability_analysis: true,
} as const;

/** Settings with secrets decrypted, for code that starts agents (never for responses). */
export interface ResolvedSettings extends Omit<Settings, 'llm_api_key' | 'search_api_key' | 'sandbox_api_key' | 'mcp_config'> {
  llm_api_key: string | null;
  /** With what a 2026 save keeps beside the V0 lists (names, headers, extras). */
  mcp_config: McpWith<string | null> | null;
  /** The 2026 settings a start hands the agent server: its plugin marketplaces and title prompt. */
  registered_marketplaces: Marketplace[];
  title_generation_prompt: string | null;
  search_api_key: string | null;
  sandbox_api_key: string | null;
  /** LLM keyword arguments saved through the nested shape beyond model, key and base URL (temperature…). */
  llm_extra: Record<string, unknown>;
}

/** Fields a save writes besides the V0 ones (the nested shape's own, src/services/settings/settings-v1.ts). */
export interface ExtraUpdate {
  set?: Record<string, unknown>;
  unset?: string[];
}

/** The V0 fields that make up the LLM an active LLM profile stands for. */
const LLM_FIELDS = ['llm_model', 'llm_api_key', 'llm_base_url'] as const;

export class SettingsService {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
  ) {}

  /** One query: the provider tokens it reports are in the same document. */
  async get(userId: string): Promise<Settings> {
    const stored = await this.saved(userId);
    if (!stored) {
      throw new AppError('NOT_FOUND', 'Settings not found', { reason: 'settings_not_found' });
    }
    return toDto(stored);
  }

  /**
   * Partial update: omitted fields keep their value; for secrets null keeps and "" clears. One
   * update of the fields sent (upserted on the first save). An MCP config's masked credentials
   * keep the stored ones, so that write applies only over the MCP version it read (versions.ts).
   */
  async save(userId: string, input: SaveSettingsInput, extra: ExtraUpdate = {}): Promise<void> {
    if (!input.mcp_config) {
      await this.models.Settings.updateOne({ userId }, this.updateFor(userId, input, null, extra), { upsert: true });
      return;
    }
    await untilApplied('The MCP configuration', async () => {
      const stored = await this.models.Settings.findOne({ userId }, { mcp_config: 1, mcpVersion: 1 }).lean();
      const update = this.updateFor(userId, input, stored?.mcp_config ?? null, extra);
      update.$set.mcpVersion = newVersion();
      try {
        // No document yet, or one another save just created: the upsert's insert collides and this reads again.
        await this.models.Settings.updateOne({ userId, mcpVersion: stored?.mcpVersion ?? null }, update, { upsert: true });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    });
  }

  private updateFor(userId: string, input: SaveSettingsInput, storedMcp: McpLike | null, extra: ExtraUpdate) {
    const set: Record<string, unknown> = { ...extra.set, updatedAt: new Date() };
    const unset: Record<string, ''> = Object.fromEntries((extra.unset ?? []).map((path) => [path, '' as const]));
    // An LLM changed by hand is no longer the active LLM profile's (the reference drops the pointer too).
    const llmChanged =
      LLM_FIELDS.some((field) => (field === 'llm_api_key' ? input[field] != null : input[field] !== undefined)) ||
      Object.keys(set).some((k) => k.startsWith('llmExtra'));
    if (llmChanged) unset.activeLlmProfile = '';
    const sent = input.mcp_config ? { ...input, mcp_config: withKeptExtras(input.mcp_config, storedMcp) } : input;
    const sealed = mapSettingsSecrets(userId, sent, (value, at) => this.seal(value, at, storedMcp));
    for (const [field, value] of Object.entries(input)) {
      if (value === undefined) continue;
      if (isSecretSettingsField(field)) {
        const ciphertext = sealed.fields[field];
        if (ciphertext === null) unset[field] = '';
        else if (ciphertext !== undefined) set[field] = ciphertext;
      } else if (field === 'mcp_config') {
        set.mcp_config = sealed.mcp_config;
      } else {
        set[field] = value;
      }
    }
    return { $set: set, ...(Object.keys(unset).length ? { $unset: unset } : {}) };
  }

  /** Decrypted settings for starting agents; null before the first save. */
  async resolve(userId: string): Promise<ResolvedSettings | null> {
    const stored = await this.saved(userId);
    if (!stored) return null;
    const opened = mapSettingsSecrets(userId, stored, this.open);
    const llm_extra = isPlainObject(stored.llmExtra) ? stored.llmExtra : {};
    return {
      ...toDto(stored),
      ...opened.fields,
      mcp_config: opened.mcp_config ?? null,
      llm_extra,
      registered_marketplaces: (stored.registered_marketplaces as Marketplace[] | undefined) ?? [],
      title_generation_prompt: stored.title_generation_prompt ?? null,
    };
  }

  /** The stored document and its V0 view, once settings were saved (the nested shape is built from both). */
  async stored(userId: string): Promise<{ record: SettingsRecord; dto: Settings } | null> {
    const record = await this.saved(userId);
    return record ? { record, dto: toDto(record) } : null;
  }

  /** The user's budgets (docs/budgets.md): nulls when never set. One small read, for every cost report. */
  async budgets(userId: string): Promise<{ max_budget_per_task: number | null; max_budget_per_month: number | null }> {
    const projection = { max_budget_per_task: 1, max_budget_per_month: 1 };
    const stored = await this.models.Settings.collection.findOne({ userId }, { projection });
    return { max_budget_per_task: num(stored?.max_budget_per_task), max_budget_per_month: num(stored?.max_budget_per_month) };
  }

  /** How the user's new conversations share sandboxes (settings sandbox_grouping_strategy). */
  async groupingStrategy(userId: string): Promise<SandboxGroupingStrategy> {
    const stored = await this.models.Settings.collection.findOne({ userId }, { projection: { sandbox_grouping_strategy: 1 } });
    return (stored?.sandbox_grouping_strategy as SandboxGroupingStrategy | undefined) ?? 'NO_GROUPING';
  }

  /** The V0 view of a user who never saved settings (users/me answers with it). */
  defaults(): Settings {
    return toDto({ userId: '' } as SettingsRecord);
  }

  /** The defaults as a start reads them, for a user who saved none and whose LLM comes from elsewhere (an organisation's). */
  blank(): ResolvedSettings {
    return {
      ...this.defaults(),
      llm_api_key: null,
      search_api_key: null,
      sandbox_api_key: null,
      mcp_config: null,
      llm_extra: {},
      registered_marketplaces: [],
      title_generation_prompt: null,
    };
  }

  /** A stored secret field opened (for the user's own running sandbox only: users/me?expose_secrets). */
  openField(userId: string, record: SettingsRecord, field: 'llm_api_key' | 'search_api_key' | 'sandbox_api_key'): string | null {
    const value = record[field];
    return typeof value === 'string' ? this.box.decrypt(value, settingsSecretContext(userId, field)) : null;
  }

  /** The MCP configuration with its credentials opened (the same caller as openField). */
  openMcp(userId: string, record: SettingsRecord): McpWith<string | null> | null {
    return mapSettingsSecrets(userId, record, this.open).mcp_config ?? null;
  }

  /** A stored secret opened; env and header slots always open to a string ("" when empty). */
  private readonly open = (value: string | null | undefined, at: SecretSlot): string | null =>
    value ? this.box.decrypt(value, at.context) : at.kind === 'env' || at.kind === 'header' ? '' : null;

  /** The user's settings document once settings were saved (a document with only provider tokens is not). */
  private async saved(userId: string): Promise<SettingsRecord | null> {
    // The driver's own findOne: what lean() returns, without mongoose's query machinery (hot path).
    const stored = (await this.models.Settings.collection.findOne({ userId })) as SettingsRecord | null;
    return stored?.updatedAt ? stored : null;
  }

  /**
   * What a sent secret stores. Fields: null keeps, blank clears (null here), else ciphertext.
   * MCP: empty stores null (an env value stores an encrypted ""), and the mask keeps the
   * stored credential.
   */
  private seal(value: string | null | undefined, at: SecretSlot, storedMcp: McpLike | null): string | null | undefined {
    if (at.kind === 'field') {
      if (value === null || value === undefined) return undefined;
      return value.trim() === '' ? null : this.box.encrypt(value, at.context);
    }
    let sealed: string | null;
    if (value === null || value === undefined || value === '') sealed = null;
    else if (value === SECRET_MASK) sealed = mcpSecretAt(storedMcp, at) ?? null;
    else sealed = this.box.encrypt(value, at.context);
    return sealed ?? (at.kind === 'env' ? this.box.encrypt('', at.context) : null);
  }
}

function toDto(stored: SettingsRecord): Settings {
  return {
    language: str(stored.language),
    agent: str(stored.agent),
    max_iterations: num(stored.max_iterations),
    security_analyzer: str(stored.security_analyzer),
    confirmation_mode: bool(stored.confirmation_mode),
    llm_model: str(stored.llm_model),
    llm_api_key: null,
    llm_base_url: str(stored.llm_base_url),
    remote_runtime_resource_factor: num(stored.remote_runtime_resource_factor),
    // Legacy: the reference always serialises this constant.
    secrets_store: { provider_tokens: {} },
    enable_default_condenser: bool(stored.enable_default_condenser) ?? DEFAULTS.enable_default_condenser,
    enable_sound_notifications: bool(stored.enable_sound_notifications) ?? DEFAULTS.enable_sound_notifications,
    enable_proactive_conversation_starters:
      bool(stored.enable_proactive_conversation_starters) ?? DEFAULTS.enable_proactive_conversation_starters,
    enable_solvability_analysis: bool(stored.enable_solvability_analysis) ?? DEFAULTS.enable_solvability_analysis,
    user_consents_to_analytics: bool(stored.user_consents_to_analytics),
    sandbox_base_container_image: str(stored.sandbox_base_container_image),
    sandbox_runtime_container_image: str(stored.sandbox_runtime_container_image),
    mcp_config: v0View(maskedMcp(stored)),
    search_api_key: null,
    sandbox_api_key: null,
    max_budget_per_task: num(stored.max_budget_per_task),
    max_budget_per_month: num(stored.max_budget_per_month),
    condenser_max_size: num(stored.condenser_max_size),
    email: str(stored.email),
    email_verified: bool(stored.email_verified),
    git_user_name: str(stored.git_user_name),
    git_user_email: str(stored.git_user_email),
    llm_api_key_set: typeof stored.llm_api_key === 'string',
    search_api_key_set: typeof stored.search_api_key === 'string',
    provider_tokens_set: providerTokensSetOf(stored),
  };
}

/** Every MCP credential as the mask (env and header values always; an api_key when one is stored). */
export function maskedMcp(stored: SettingsRecord): McpWith<string | null> | null {
  const masked = mapSettingsSecrets(stored.userId, stored, (value, at) =>
    at.kind === 'env' || at.kind === 'header' || value ? SECRET_MASK : null,
  );
  return masked.mcp_config ?? null;
}

/** The V0 view: the lists without what a 2026 save keeps beside them. */
export function v0View(mcp: McpWith<string | null> | null): McpConfig | null {
  if (!mcp) return null;
  return {
    sse_servers: mcp.sse_servers.map((s) => ({ url: s.url, api_key: s.api_key })),
    shttp_servers: mcp.shttp_servers.map((s) => ({ url: s.url, api_key: s.api_key, timeout: s.timeout })),
    stdio_servers: mcp.stdio_servers.map((s) => ({ name: s.name, command: s.command, args: s.args, env: s.env as Record<string, string> })),
  };
}

/**
 * A V0 save sends the lists only: an entry it keeps (the same URL, or the same stdio name) keeps
 * what a 2026 save stored beside it, its header values by the mask.
 */
function withKeptExtras(sent: McpLike, stored: McpLike | null): McpLike {
  if (!stored) return sent;
  const remote = (list: 'sse_servers' | 'shttp_servers') =>
    (sent[list] ?? []).map((s) => {
      if (s.name !== undefined) return s;
      const kept = stored[list]?.find((k) => k.url === s.url && k.name);
      if (!kept) return s;
      const headers = kept.headers ? Object.fromEntries(headerNames(kept.headers).map((key) => [key, SECRET_MASK])) : undefined;
      return { ...s, name: kept.name, ...(headers ? { headers } : {}), ...(kept.extras ? { extras: kept.extras } : {}) };
    });
  return {
    sse_servers: remote('sse_servers'),
    shttp_servers: remote('shttp_servers'),
    stdio_servers: (sent.stdio_servers ?? []).map((s) => {
      if (s.extras !== undefined) return s;
      const kept = stored.stdio_servers?.find((k) => k.name === s.name)?.extras;
      return kept ? { ...s, extras: kept } : s;
    }),
  };
}

const headerNames = (headers: Readonly<Record<string, string>> | ReadonlyMap<string, string>) =>
  headers instanceof Map ? [...headers.keys()] : Object.keys(headers);

export const LLM_KEY_MISSING = 'Error authenticating with the LLM provider. Please check your API key';

/** Whether an agent can call its LLM: a key is stored, or the model needs none. */
export function hasUsableLlmKey(settings: Pick<ResolvedSettings, 'llm_api_key'>, model: string): boolean {
  // Reference: bedrock/ and lemonade/ models authenticate without an API key.
  return Boolean(settings.llm_api_key?.trim()) || /^(bedrock|lemonade)\//.test(model);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : null);
const num = (v: unknown) => (typeof v === 'number' ? v : null);
const bool = (v: unknown) => (typeof v === 'boolean' ? v : null);
