// Per-user settings (API.md B.2 with the partial-update rules of A.2). Secrets are
// encrypted before they reach the database and are never part of a returned DTO.
import type { Models } from '../../models/index.js';
import { SECRET_MASK } from '../../contract/common.schema.js';
import type { McpConfig, McpConfigInput } from '../../contract/mcp.schema.js';
import type { SaveSettingsInput, Settings } from '../../contract/settings.schema.js';
import type { SecretBox } from '../crypto.js';
import { AppError } from '../errors.js';
import type { GitProvidersService } from './git-providers.service.js';

const SECRET_FIELDS = ['llm_api_key', 'search_api_key', 'sandbox_api_key'] as const;

// Defaults of the reference's Settings model for fields never saved.
const DEFAULTS = {
  enable_default_condenser: true,
  enable_sound_notifications: false,
  enable_proactive_conversation_starters: true,
  enable_solvability_analysis: true,
} as const;

interface StoredMcp {
  sse_servers?: { url: string; api_key?: string | null }[];
  stdio_servers?: { name: string; command: string; args?: string[]; env?: Record<string, string> }[];
  shttp_servers?: { url: string; api_key?: string | null; timeout?: number | null }[];
}

type StoredSettings = Record<string, unknown> & { mcp_config?: StoredMcp | null };

/** Settings with secrets decrypted, for code that starts agents (never for responses). */
export interface ResolvedSettings extends Omit<Settings, 'llm_api_key' | 'search_api_key' | 'sandbox_api_key'> {
  llm_api_key: string | null;
  search_api_key: string | null;
  sandbox_api_key: string | null;
}

export class SettingsService {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly gitProviders: GitProvidersService,
  ) {}

  async get(userId: string): Promise<Settings> {
    const [stored, providerTokensSet] = await Promise.all([
      this.models.Settings.findOne({ userId }).lean<StoredSettings>(),
      this.gitProviders.providerTokensSet(userId),
    ]);
    if (!stored) {
      throw new AppError('NOT_FOUND', 'Settings not found', { reason: 'settings_not_found' });
    }
    return toDto(stored, providerTokensSet);
  }

  /** Partial update: omitted fields keep their value; for secrets null keeps and "" clears. */
  async save(userId: string, input: SaveSettingsInput): Promise<void> {
    const set: Record<string, unknown> = { updatedAt: new Date() };
    const unset: Record<string, ''> = {};
    let storedMcp: StoredMcp | null | undefined;
    for (const [field, value] of Object.entries(input)) {
      if (value === undefined) continue;
      if ((SECRET_FIELDS as readonly string[]).includes(field)) {
        if (value === null) continue;
        const secret = String(value);
        if (secret.trim() === '') unset[field] = '';
        else set[field] = this.box.encrypt(secret, secretContext(userId, field));
      } else if (field === 'mcp_config') {
        if (value === null) {
          set.mcp_config = null;
        } else {
          storedMcp ??= (await this.models.Settings.findOne({ userId }, { mcp_config: 1 }).lean<StoredSettings>())?.mcp_config;
          set.mcp_config = this.sealMcp(userId, value as McpConfigInput, storedMcp ?? null);
        }
      } else {
        set[field] = value;
      }
    }
    await this.models.Settings.updateOne(
      { userId },
      { $set: set, ...(Object.keys(unset).length ? { $unset: unset } : {}) },
      { upsert: true },
    );
  }

  /** Decrypted settings for starting agents; null before the first save. */
  async resolve(userId: string): Promise<ResolvedSettings | null> {
    const [stored, providerTokensSet] = await Promise.all([
      this.models.Settings.findOne({ userId }).lean<StoredSettings>(),
      this.gitProviders.providerTokensSet(userId),
    ]);
    if (!stored) return null;
    const masked = toDto(stored, providerTokensSet);
    const secret = (field: (typeof SECRET_FIELDS)[number]) =>
      typeof stored[field] === 'string' ? this.box.decrypt(stored[field] as string, secretContext(userId, field)) : null;
    return {
      ...masked,
      llm_api_key: secret('llm_api_key'),
      search_api_key: secret('search_api_key'),
      sandbox_api_key: secret('sandbox_api_key'),
      mcp_config: stored.mcp_config ? this.openMcp(userId, stored.mcp_config) : null,
    };
  }

  /** Encrypts MCP credentials; a masked value sent back keeps the stored credential. */
  private sealMcp(userId: string, input: McpConfigInput, stored: StoredMcp | null): StoredMcp {
    const context = mcpContext(userId);
    const seal = (value: string | null | undefined, previous: string | null | undefined) => {
      if (value === null || value === undefined || value === '') return null;
      if (value === SECRET_MASK) return previous ?? null;
      return this.box.encrypt(value, context);
    };
    const storedByUrl = (list: { url: string; api_key?: string | null }[] | undefined, url: string) =>
      list?.find((s) => s.url === url)?.api_key;
    return {
      sse_servers: input.sse_servers.map((s) => ({ url: s.url, api_key: seal(s.api_key, storedByUrl(stored?.sse_servers, s.url)) })),
      shttp_servers: input.shttp_servers.map((s) => ({
        url: s.url,
        api_key: seal(s.api_key, storedByUrl(stored?.shttp_servers, s.url)),
        timeout: s.timeout,
      })),
      stdio_servers: input.stdio_servers.map((s) => {
        const previousEnv = stored?.stdio_servers?.find((p) => p.name === s.name)?.env ?? {};
        const env: Record<string, string> = {};
        for (const [key, value] of Object.entries(s.env)) env[key] = seal(value, previousEnv[key]) ?? this.box.encrypt('', context);
        return { name: s.name, command: s.command, args: s.args, env };
      }),
    };
  }

  private openMcp(userId: string, stored: StoredMcp): McpConfig {
    const context = mcpContext(userId);
    const open = (value: string | null | undefined) => (value ? this.box.decrypt(value, context) : null);
    return {
      sse_servers: (stored.sse_servers ?? []).map((s) => ({ url: s.url, api_key: open(s.api_key) })),
      shttp_servers: (stored.shttp_servers ?? []).map((s) => ({ url: s.url, api_key: open(s.api_key), timeout: s.timeout ?? null })),
      stdio_servers: (stored.stdio_servers ?? []).map((s) => ({
        name: s.name,
        command: s.command,
        args: s.args ?? [],
        env: Object.fromEntries(Object.entries(s.env ?? {}).map(([k, v]) => [k, open(v) ?? ''])),
      })),
    };
  }
}

function toDto(stored: StoredSettings, providerTokensSet: Settings['provider_tokens_set']): Settings {
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
    mcp_config: stored.mcp_config ? maskMcp(stored.mcp_config) : null,
    search_api_key: null,
    sandbox_api_key: null,
    max_budget_per_task: num(stored.max_budget_per_task),
    condenser_max_size: num(stored.condenser_max_size),
    email: str(stored.email),
    email_verified: bool(stored.email_verified),
    git_user_name: str(stored.git_user_name),
    git_user_email: str(stored.git_user_email),
    llm_api_key_set: typeof stored.llm_api_key === 'string',
    search_api_key_set: typeof stored.search_api_key === 'string',
    provider_tokens_set: providerTokensSet,
  };
}

function maskMcp(stored: StoredMcp): McpConfig {
  const mask = (value: string | null | undefined) => (value ? SECRET_MASK : null);
  return {
    sse_servers: (stored.sse_servers ?? []).map((s) => ({ url: s.url, api_key: mask(s.api_key) })),
    shttp_servers: (stored.shttp_servers ?? []).map((s) => ({ url: s.url, api_key: mask(s.api_key), timeout: s.timeout ?? null })),
    stdio_servers: (stored.stdio_servers ?? []).map((s) => ({
      name: s.name,
      command: s.command,
      args: s.args ?? [],
      env: Object.fromEntries(Object.keys(s.env ?? {}).map((k) => [k, SECRET_MASK])),
    })),
  };
}

export const LLM_KEY_MISSING = 'Error authenticating with the LLM provider. Please check your API key';

/** Whether an agent can call its LLM: a key is stored, or the model needs none. */
export function hasUsableLlmKey(settings: Pick<ResolvedSettings, 'llm_api_key'>, model: string): boolean {
  // Reference: bedrock/ and lemonade/ models authenticate without an API key.
  return Boolean(settings.llm_api_key?.trim()) || /^(bedrock|lemonade)\//.test(model);
}

export const secretContext = (userId: string, field: string) => `settings:${userId}:${field}`;
export const mcpContext = (userId: string) => `settings:${userId}:mcp_config`;

const str = (v: unknown) => (typeof v === 'string' ? v : null);
const num = (v: unknown) => (typeof v === 'number' ? v : null);
const bool = (v: unknown) => (typeof v === 'boolean' ? v : null);
