// The account routes today's clients call on start-up (docs/api.md "2026 /api/v1 surface"):
// the key a request came with, the user with what the SDK workspace reads, the one personal
// organisation per user (its id is the user's id), and the web client's configuration and
// searches. The automation service is not part of this server: its routes say so in the
// shape clients treat as "unavailable" without retrying.
import type { ModelsSearchInput, ProvidersSearchInput, UserInfo, WebClientConfig } from '../../../contract/account.schema.js';
import type { CreateApiKeyInput } from '../../../contract/api-keys.schema.js';
import { pageOf, pageOffset } from '../../../contract/common.schema.js';
import type { Config } from '../../config/config.js';
import { AppError } from '../../errors.js';
import { isEnvironmentKeyId, type ApiKeyInfo, type ApiKeysService } from './api-keys.service.js';
import { LLM_MODELS } from '../settings/llm-models.js';
import type { LlmProfilesService } from '../settings/llm-profiles.service.js';
import type { OptionsService } from '../settings/options.service.js';
import type { SandboxKeys } from '../../sandbox/index.js';
import { nestedSettings } from '../settings/settings-v1.js';
import { maskedMcp, type SettingsService, v0View } from '../settings/settings.service.js';
import { serverMap } from '../settings/mcp-servers.js';

const NOT_AVAILABLE = 'Automations are not available on this server';
const VERIFIED = new Set(LLM_MODELS);
/** Loaded once: the configuration's updated_at is the process's start. */
const STARTED_AT = new Date().toISOString();

export class AccountService {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly settings: SettingsService,
    private readonly llmProfiles: LlmProfilesService,
    private readonly sandboxKeys: SandboxKeys,
    private readonly options: OptionsService,
    private readonly web: Config['webUi'],
    /** AUTOMATION_URL: the automation service behind this one (src/http/rest/automation-routes.ts). */
    private readonly automationUrl: string | null = null,
  ) {}

  /** The key the request authenticated with; a browser session has none (400, which Agent Canvas reads as connected). */
  async currentKey(userId: string, keyId: string | undefined, orgId: string, boundOrgId: string | null) {
    if (!keyId) {
      throw new AppError('BAD_REQUEST', 'This request is authenticated by a browser session, not an API key', { reason: 'not_an_api_key' });
    }
    const label = isEnvironmentKeyId(keyId)
      ? 'SESSION_API_KEY'
      : ((await this.apiKeys.list(userId)).find((k) => k.id === keyId)?.label ?? '');
    // org_id: where this request acts (the bound organisation, X-Org-Id, the current one).
    return { id: keyId, name: label, org_id: orgId, bound_org_id: boundOrgId, user_id: userId, auth_type: 'api_key' };
  }

  /** The user's keys that still work or have only expired; revoked ones are gone, as the Cloud deletes them. */
  async listKeys(userId: string) {
    return (await this.apiKeys.list(userId)).filter((key) => key.revokedAt === null).map(keyView);
  }

  async createKey(userId: string, input: CreateApiKeyInput) {
    const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    const { key, info } = await this.apiKeys.create(userId, input.name ?? null, expiresAt, input.org_id ?? null);
    return { ...keyView(info), key };
  }

  /** Another user's key answers as absent. */
  async revokeKey(userId: string, keyId: string): Promise<void> {
    if (!(await this.apiKeys.revokeOwn(userId, keyId))) {
      throw new AppError('NOT_FOUND', 'API key not found', { reason: 'api_key_not_found', fields: { keyId } });
    }
  }

  /** The automation service's readiness (its database reached), when AUTOMATION_URL names one. */
  async automationHealth(): Promise<{ status: 'ok' | 'error'; message?: string }> {
    if (!this.automationUrl) return { status: 'error', message: NOT_AVAILABLE };
    const answer = await fetch(`${this.automationUrl}/ready`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
    return answer?.ok ? { status: 'ok' } : { status: 'error', message: 'The automation service is not ready' };
  }

  /** The SDK version the automation service runs (its runs install the same), or null with why. */
  async automationSdkVersion() {
    if (!this.automationUrl) return { sdk_version: null, version: null, message: NOT_AVAILABLE };
    const answer = await fetch(`${this.automationUrl}/sdk-version`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
    const version = answer?.ok ? ((await answer.json().catch(() => null)) as { version?: unknown } | null)?.version : null;
    if (typeof version !== 'string') throw new AppError('BAD_GATEWAY', 'The automation service could not be reached');
    return { sdk_version: version, version };
  }

  webClientConfig(): WebClientConfig {
    return {
      app_mode: 'oss',
      posthog_client_key: this.web.posthogClientKey || null,
      feature_flags: {
        enable_billing: this.web.enableBilling,
        hide_llm_settings: this.web.hideLlmSettings,
        enable_jira: false,
        enable_jira_dc: false,
        enable_linear: false,
        hide_users_page: true,
        hide_billing_page: true,
        hide_integrations_page: false,
        hide_personal_workspaces: false,
        allow_user_llm_configuration: true,
        enable_acp: false,
        deployment_mode: null,
        enable_onboarding: false,
        enable_automations: this.automationUrl !== null,
      },
      // No provider signs users in here; users add their own git tokens.
      providers_configured: [],
      maintenance_start_time: this.web.maintenanceStart ?? null,
      auth_url: null,
      recaptcha_site_key: null,
      faulty_models: [],
      error_message: null,
      updated_at: STARTED_AT,
      github_app_slug: null,
      gitlab_enabled: true,
      provider_default_hosts: { github: 'github.com', gitlab: 'gitlab.com', bitbucket: 'bitbucket.org' },
      slack_enabled: false,
      email_enabled: false,
      acp_providers: [],
    };
  }

  /** The same model list as /api/options/models; the maintained ones are "verified", LLM_MODELS additions not. */
  searchModels(input: ModelsSearchInput) {
    const query = input.query?.toLowerCase();
    const models = this.options
      .models()
      .map((id) => {
        const slash = id.indexOf('/');
        const [provider, name] = slash > 0 ? [id.slice(0, slash), id.slice(slash + 1)] : [null, id];
        return { provider, name, verified: VERIFIED.has(id), hidden: false, canonical: null };
      })
      .filter((m) => !query || m.name.toLowerCase().includes(query))
      .filter((m) => input.verified__eq == null || m.verified === input.verified__eq)
      .filter((m) => input.provider__eq == null || m.provider === input.provider__eq);
    return paged(models, input.page_id, input.limit);
  }

  searchProviders(input: ProvidersSearchInput) {
    const providers = new Map<string, boolean>();
    for (const id of this.options.models()) {
      const slash = id.indexOf('/');
      if (slash > 0) providers.set(id.slice(0, slash), (providers.get(id.slice(0, slash)) ?? false) || VERIFIED.has(id));
    }
    const query = input.query?.toLowerCase();
    const items = [...providers]
      .map(([name, verified]) => ({ name, verified }))
      .sort((a, b) => Number(b.verified) - Number(a.verified) || a.name.localeCompare(b.name))
      .filter((p) => !query || p.name.includes(query))
      .filter((p) => input.verified__eq == null || p.verified === input.verified__eq);
    return paged(items, input.page_id, input.limit);
  }

  /**
   * GET /api/v1/users/me. Secrets (the LLM, search and sandbox keys, the LLM profiles' keys)
   * are opened only with expose_secrets and the X-Session-API-Key of a running sandbox of this
   * user; expose_secrets without one is refused, never answered masked. MCP credentials are
   * opened whenever that sandbox key comes along: the SDK's workspace asks for the MCP config
   * without expose_secrets and configures the agent's MCP servers from it, in that sandbox.
   */
  async me(userId: string, exposeSecrets: boolean, sessionKey: string | undefined): Promise<UserInfo> {
    const fromOwnSandbox = sessionKey !== undefined && (await this.sandboxKeys.isRunningSandboxOf(userId, sessionKey));
    if (exposeSecrets && !fromOwnSandbox) {
      throw new AppError('FORBIDDEN', 'expose_secrets needs the X-Session-API-Key of a running sandbox of yours', {
        reason: 'secrets_not_exposed',
      });
    }
    const stored = await this.settings.stored(userId);
    const dto = stored?.dto ?? this.settings.defaults();
    const record = stored?.record ?? null;
    const open = (field: 'llm_api_key' | 'search_api_key' | 'sandbox_api_key') =>
      exposeSecrets && record ? this.settings.openField(userId, record, field) : null;
    const llmApiKey = open('llm_api_key');
    const mcp = record ? (fromOwnSandbox ? this.settings.openMcp(userId, record) : maskedMcp(record)) : null;
    const nested = nestedSettings(dto, record, {
      llmApiKey,
      mcpServers: serverMap(mcp),
      llmProfiles: await this.llmProfiles.asKwargs(userId, exposeSecrets),
      activeAgentProfileId: record?.activeAgentProfileId ?? null,
    });
    return {
      ...dto,
      ...nested,
      id: userId,
      llm_api_key: llmApiKey,
      search_api_key: open('search_api_key'),
      sandbox_api_key: open('sandbox_api_key'),
      // The V0 lists, as the SDK workspace's get_mcp_config reads them.
      mcp_config: fromOwnSandbox ? v0View(mcp) : dto.mcp_config,
    };
  }
}

function paged<T>(items: T[], pageId: string | null | undefined, limit: number) {
  const offset = pageOffset(pageId);
  return pageOf(items.slice(offset, offset + limit), offset, limit, items.length);
}

function keyView(key: ApiKeyInfo) {
  return {
    id: key.id,
    name: key.label,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    org_id: key.orgId,
  };
}
