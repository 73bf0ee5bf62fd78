// Typed configuration, parsed once from the environment by main.ts / cli.ts and passed
// down as a dependency. Nothing else in the service reads process.env.
import path from 'node:path';
import { z } from 'zod';
import { cacheRoot } from './config-values.js';
import { llmGatewayConfig, llmGatewayEnv } from './config-llm.js';
import { oidcConfig, oidcEnv } from './config-oidc.js';
import { sandboxConfig, sandboxEnv } from './config-sandbox.js';
import {
  byteSize,
  hostRules,
  isKey,
  durations,
  KEY_FORMAT,
  optionalHttpUrl,
  optionalString,
  origins,
  parseTrustProxy,
  port,
  rateLimit,
  shaped,
  splitList,
  trimSlash,
} from './config-values.js';

export { parseSize } from './config-values.js';

const EnvSchema = z
  .object({
    PORT: port(3000),
    HOST: z.string().default('127.0.0.1'),
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    DATA_DIR: z.string().default('./.data'),
    AGENT_CP_CACHE_DIR: optionalString,
    MONGODB_URI: optionalString,
    // Removed: the embedded database listens on a Unix socket only (src/db/ferretdb/embedded-mongo.ts).
    EMBEDDED_MONGO_PORT: optionalString.refine((v) => v === undefined, {
      error: 'is no longer supported: the embedded database listens only on a Unix socket in DATA_DIR/ferretdb',
    }),
    DB_OPERATION_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5_000),
    DB_COMMAND_METRICS: z.stringbool().default(false),
    SESSION_API_KEY: optionalString,
    AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
    // Users who may read the audit log (docs/audit.md); "default" is the embedded service's first user.
    ADMIN_USERS: z.string().default('default'),
    AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
    ENCRYPTION_KEY: optionalString.refine((v) => v === undefined || isKey(v), KEY_FORMAT),
    ENCRYPTION_KEY_PREVIOUS: optionalString.refine((v) => splitList(v).every(isKey), KEY_FORMAT),
    MAX_BODY_SIZE: byteSize('1mb'),
    MAX_JSON_DEPTH: z.coerce.number().int().min(2).max(1000).default(64),
    PERMITTED_CORS_ORIGINS: optionalString,
    RATE_LIMIT_PER_USER: rateLimit(600),
    RATE_LIMIT_PER_IP: rateLimit(1200),
    // Agent servers' callbacks per sandbox: the 1200 all local sandboxes once shared from 127.0.0.1, each.
    RATE_LIMIT_PER_SANDBOX: rateLimit(1200),
    RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),
    TRPC_MAX_BATCH: z.coerce.number().int().min(1).max(10_000).default(50),
    // Open tRPC subscriptions (live event streams) per user on one replica.
    TRPC_MAX_SUBSCRIPTIONS_PER_USER: z.coerce.number().int().min(1).max(10_000).default(100),
    GIT_PROVIDER_HOSTS: hostRules,
    // Lifecycle webhooks (src/lifecycle-webhooks/): where endpoints may point, as GIT_PROVIDER_HOSTS.
    WEBHOOK_HOSTS: hostRules,
    // Standard Webhooks' schedule after the first attempt: 8 attempts over about 27 hours.
    WEBHOOK_RETRY_SCHEDULE: durations('5s,5m,30m,2h,5h,10h,10h'),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
    WEBHOOK_POLL_MS: z.coerce.number().int().min(50).default(1_000),
    WEBHOOK_HISTORY_DAYS: z.coerce.number().min(1).default(30),
    WEBHOOK_TESTS_PER_MINUTE: z.coerce.number().int().min(1).max(1000).default(10),
    // The MCP server tests (src/services/mcp/): which servers they may reach, as GIT_PROVIDER_HOSTS, and how often.
    MCP_TEST_HOSTS: hostRules,
    MCP_TESTS_PER_MINUTE: z.coerce.number().int().min(1).max(1000).default(20),
    // The OpenHands automation service this one forwards /api/automation/* to, and the key it
    // mints users' keys with (docs/automation-service-notes.md); unset: automations not available.
    AUTOMATION_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/[^/]+\/?$/.test(v), {
      message: 'must be an http(s) origin such as http://127.0.0.1:8100',
    }),
    AUTOMATION_SERVICE_KEY: optionalString.refine((v) => v === undefined || v.length >= 32, { message: 'must be at least 32 characters' }),
    // AUTOMATIONS=on: the automation service runs here, beside this one (src/automations/embedded-service.ts).
    AUTOMATIONS: z.enum(['off', 'on']).default('off'),
    AUTOMATION_PORT: z.coerce.number().int().min(1).max(65535).default(8100),
    // Its PostgreSQL's port on 127.0.0.1 (AUTOMATIONS=on without AUTOMATION_DB_URL); default AUTOMATION_PORT + 1.
    AUTOMATION_DB_PORT: z.coerce.number().int().min(1).max(65535).optional(),
    GITHUB_API_URL: z.url().default('https://api.github.com'),
    GITLAB_API_URL: z.url().default('https://gitlab.com/api/v4'),
    BITBUCKET_API_URL: z.url().default('https://api.bitbucket.org/2.0'),
    PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    PROVIDER_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
    WEB_URL: optionalString,
    PUBLIC_URL: optionalHttpUrl,
    TRUSTED_ORIGINS: origins,
    TRUST_PROXY: optionalString,
    // Which web UI is served at /: Agent Canvas (fetched on first start), the d6 UI built into
    // WEB_UI_DIR, or none (the small home page). Unset: d6 when WEB_UI_DIR is set, else canvas.
    WEB_UI: z.enum(['canvas', 'd6', 'none']).optional(),
    WEB_UI_DIR: optionalString,
    AGENT_CANVAS_DIR: optionalString, // a Canvas build served as it is; unset: fetched into the cache (scripts/setup-agent-canvas.sh)
    AGENT_CANVAS_VERSION: shaped(/^[0-9A-Za-z.+-]+$/, '1.20.0', 'a version such as 1.20.0'),
    POSTHOG_CLIENT_KEY: z.string().trim().default(''),
    GITHUB_APP_CLIENT_ID: z.string().trim().default(''),
    ENABLE_BILLING: z.stringbool().default(false),
    HIDE_LLM_SETTINGS: z.stringbool().default(false),
    MAINTENANCE_START_TIME: optionalString.pipe(z.iso.datetime({ offset: true }).optional()),
    LLM_MODELS: optionalString,
    SESSION_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 24 * 3600)
      .default(12 * 3600),
    // Idle timeout of a browser session (a minute's precision); "off": none, only SESSION_TTL_SECONDS.
    SESSION_IDLE_SECONDS: z
      .union([
        z.literal('off'),
        z.coerce
          .number()
          .int()
          .min(300)
          .max(30 * 24 * 3600),
      ])
      .default(2 * 3600),
    SESSION_COOKIE_SECURE: z.stringbool().default(false),
    DEVICE_CODE_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(600),
    DEVICE_CODE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(60).default(5),
    ...sandboxEnv,
    ...llmGatewayEnv,
    ...oidcEnv,
    START_TASK_LEASE_MS: z.coerce.number().int().min(1000).default(30_000),
    START_TASK_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(3),
    START_TASK_DEADLINE_MS: z.coerce
      .number()
      .int()
      .min(10_000)
      .default(15 * 60_000),
    START_TASK_POLL_MS: z.coerce.number().int().min(50).default(1_000),
    START_TASK_WORKERS: z.coerce.number().int().min(1).max(64).default(4),
    AGENT_TOOLS: z.string().default('terminal,file_editor,task_tracker'),
    EVENTS_MAX_PER_CONVERSATION: z.coerce.number().int().min(10).default(10_000),
    EVENTS_RETENTION_DAYS: z.coerce.number().min(0).default(0),
    SANDBOX_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
    MAX_UPLOAD_SIZE: byteSize('25mb'),
    // Dollars: the monthly cap of users who set no max_budget_per_month; unset, none (docs/budgets.md).
    MAX_BUDGET_PER_MONTH: optionalString.pipe(z.coerce.number<string | undefined>().min(0).max(1_000_000).optional()),
    // Conversations a user may start per UTC day (docs/budgets.md); unset: no limit.
    DAILY_CONVERSATION_LIMIT: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).max(1_000_000).optional()),
    GIT_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).default(86_400),
  })
  .refine((e) => e.WEB_UI !== 'd6' || e.WEB_UI_DIR, {
    path: ['WEB_UI_DIR'],
    message: 'is required with WEB_UI=d6 (a built OpenHands d6 web UI)',
    when: () => true,
  })
  .refine((e) => !e.WEB_UI_DIR || e.WEB_UI === undefined || e.WEB_UI === 'd6', {
    path: ['WEB_UI_DIR'],
    message: 'serves the d6 web UI: unset it, or set WEB_UI=d6 (a Canvas build goes in AGENT_CANVAS_DIR)',
    when: () => true,
  })
  .refine((e) => !e.MONGODB_URI || e.ENCRYPTION_KEY, {
    path: ['ENCRYPTION_KEY'],
    message: 'is required when MONGODB_URI is set (generate one with: npm run cli -- encryption generate-key)',
    // Checked even when other variables are bad: one message lists them all.
    when: () => true,
  });

export type Env = z.input<typeof EnvSchema>;

export type WebUiKind = 'canvas' | 'd6' | 'none';

/** Every bad variable at once, in words for the operator (main.ts prints it without a stack). */
export class ConfigError extends Error {
  constructor(readonly issues: string) {
    super(`Invalid configuration:\n${issues}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv) {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `  ${issue.path.join('.') || 'environment'}: ${issue.message}`).join('\n'));
  }
  const e = parsed.data;
  if (e.OIDC_ISSUER && !e.OIDC_CLIENT_ID) throw new ConfigError('  OIDC_CLIENT_ID: required with OIDC_ISSUER');
  if (e.AUTOMATION_URL && e.AUTOMATIONS === 'on') {
    throw new ConfigError('  AUTOMATIONS: "on" starts an automation service here, AUTOMATION_URL names one elsewhere: set one of them');
  }
  if (e.AUTOMATION_URL && !e.AUTOMATION_SERVICE_KEY) throw new ConfigError('  AUTOMATION_SERVICE_KEY: required with AUTOMATION_URL');
  const dataDir = path.resolve(e.DATA_DIR);
  const cacheDir = cacheRoot(e.AGENT_CP_CACHE_DIR);
  return Object.freeze({
    env: e.NODE_ENV,
    http: {
      port: e.PORT,
      host: e.HOST,
      maxBodySize: e.MAX_BODY_SIZE,
      maxUploadSize: e.MAX_UPLOAD_SIZE,
      maxJsonDepth: e.MAX_JSON_DEPTH,
      corsOrigins: splitList(e.PERMITTED_CORS_ORIGINS),
      trustProxy: parseTrustProxy(e.TRUST_PROXY),
      trpcMaxBatch: e.TRPC_MAX_BATCH,
      trpcMaxSubscriptionsPerUser: e.TRPC_MAX_SUBSCRIPTIONS_PER_USER,
    },
    rateLimits: {
      perUser: e.RATE_LIMIT_PER_USER,
      perIp: e.RATE_LIMIT_PER_IP,
      perSandbox: e.RATE_LIMIT_PER_SANDBOX,
      windowMs: e.RATE_LIMIT_WINDOW_MS,
    },
    log: { level: e.LOG_LEVEL },
    dataDir,
    cacheDir,
    mongo: { uri: e.MONGODB_URI, operationTimeoutMs: e.DB_OPERATION_TIMEOUT_MS, commandMetrics: e.DB_COMMAND_METRICS },
    auth: { sessionApiKey: e.SESSION_API_KEY, cacheTtlMs: e.AUTH_CACHE_TTL_MS },
    audit: { admins: splitList(e.ADMIN_USERS), retentionMs: e.AUDIT_RETENTION_DAYS * 86_400_000 },
    encryption: { key: e.ENCRYPTION_KEY, previousKeys: splitList(e.ENCRYPTION_KEY_PREVIOUS) },
    // Where sandboxes call back (webhooks); unset = this service's own listening URL.
    webUrl: e.WEB_URL ? trimSlash(e.WEB_URL) : undefined,
    // Where browsers reach this service (its origin is trusted for cookie requests); unset = WEB_URL.
    publicUrl: e.PUBLIC_URL ? trimSlash(e.PUBLIC_URL) : undefined,
    webUi: {
      kind: (e.WEB_UI ?? (e.WEB_UI_DIR ? 'd6' : 'canvas')) as WebUiKind,
      dir: e.WEB_UI_DIR ? path.resolve(e.WEB_UI_DIR) : undefined,
      canvasDir: e.AGENT_CANVAS_DIR ? path.resolve(e.AGENT_CANVAS_DIR) : undefined,
      canvasVersion: e.AGENT_CANVAS_VERSION,
      posthogClientKey: e.POSTHOG_CLIENT_KEY,
      githubClientId: e.GITHUB_APP_CLIENT_ID,
      enableBilling: e.ENABLE_BILLING,
      hideLlmSettings: e.HIDE_LLM_SETTINGS,
      maintenanceStart: e.MAINTENANCE_START_TIME,
      extraModels: splitList(e.LLM_MODELS),
    },
    session: {
      ttlSeconds: e.SESSION_TTL_SECONDS,
      idleSeconds: e.SESSION_IDLE_SECONDS === 'off' ? null : e.SESSION_IDLE_SECONDS,
      cookieSecure: e.SESSION_COOKIE_SECURE,
      trustedOrigins: e.TRUSTED_ORIGINS,
    },
    // The device authorization flow (CLI login): how long a code lives, how often a device may poll.
    deviceFlow: { ttlSeconds: e.DEVICE_CODE_TTL_SECONDS, intervalSeconds: e.DEVICE_CODE_INTERVAL_SECONDS },
    ...sandboxConfig(e),
    ...llmGatewayConfig(e),
    ...oidcConfig(e),
    conversations: {
      leaseMs: e.START_TASK_LEASE_MS,
      maxAttempts: e.START_TASK_MAX_ATTEMPTS,
      deadlineMs: e.START_TASK_DEADLINE_MS,
      pollMs: e.START_TASK_POLL_MS,
      /** Start tasks one replica works at once; each user holds at most half of them (task-queue.ts, startsPerUser). */
      workers: e.START_TASK_WORKERS,
      agentTools: splitList(e.AGENT_TOOLS),
      gitTokenTtlSeconds: e.GIT_TOKEN_TTL_SECONDS,
      /** Every call this service makes into a sandbox's agent server for a conversation page gives up after this. */
      sandboxCallTimeoutMs: e.SANDBOX_CALL_TIMEOUT_MS,
    },
    budgets: { defaultMonthlyCap: e.MAX_BUDGET_PER_MONTH ?? null, dailyConversationLimit: e.DAILY_CONVERSATION_LIMIT ?? null },
    events: {
      maxPerConversation: e.EVENTS_MAX_PER_CONVERSATION,
      retentionMs: e.EVENTS_RETENTION_DAYS > 0 ? e.EVENTS_RETENTION_DAYS * 24 * 3600_000 : null,
    },
    webhooks: {
      allowedHosts: splitList(e.WEBHOOK_HOSTS).map((h) => h.toLowerCase()),
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      pollMs: e.WEBHOOK_POLL_MS,
      historyMs: e.WEBHOOK_HISTORY_DAYS * 24 * 3600_000,
      testsPerMinute: e.WEBHOOK_TESTS_PER_MINUTE,
    },
    automations: automationsConfig(e, env),
    mcpTests: {
      allowedHosts: splitList(e.MCP_TEST_HOSTS).map((h) => h.toLowerCase()),
      perMinute: e.MCP_TESTS_PER_MINUTE,
    },
    providers: {
      githubApiUrl: trimSlash(e.GITHUB_API_URL),
      gitlabApiUrl: trimSlash(e.GITLAB_API_URL),
      bitbucketApiUrl: trimSlash(e.BITBUCKET_API_URL),
      timeoutMs: e.PROVIDER_TIMEOUT_MS,
      maxConcurrency: e.PROVIDER_MAX_CONCURRENCY,
      // Which hosts users may name for their tokens: "*" (public addresses), hosts, networks; empty = "*".
      allowedHosts: splitList(e.GIT_PROVIDER_HOSTS).map((h) => h.toLowerCase()),
    },
  });
}

export type Config = ReturnType<typeof loadConfig>;

/**
 * The automation service behind this one: elsewhere (AUTOMATION_URL) or started here
 * (AUTOMATIONS=on: its key derived from the encryption key unless given; the automation
 * service's own AUTOMATION_* variables in this environment passed on to it). Null: none.
 */
function automationsConfig(e: z.output<typeof EnvSchema>, env: NodeJS.ProcessEnv) {
  if (e.AUTOMATION_URL && e.AUTOMATION_SERVICE_KEY) {
    return { url: trimSlash(e.AUTOMATION_URL), serviceKey: e.AUTOMATION_SERVICE_KEY as string | null, embedded: null };
  }
  if (e.AUTOMATIONS !== 'on') return null;
  const ours = new Set(['AUTOMATIONS', 'AUTOMATION_URL', 'AUTOMATION_PORT', 'AUTOMATION_DB_PORT', 'AUTOMATION_SERVICE_KEY']);
  const passed = Object.entries(env).filter(([name, value]) => name.startsWith('AUTOMATION_') && !ours.has(name) && value !== undefined);
  return {
    url: `http://127.0.0.1:${e.AUTOMATION_PORT}`,
    serviceKey: e.AUTOMATION_SERVICE_KEY ?? null,
    embedded: {
      port: e.AUTOMATION_PORT,
      databasePort: e.AUTOMATION_DB_PORT ?? Math.min(e.AUTOMATION_PORT + 1, 65535),
      env: Object.fromEntries(passed) as Record<string, string>,
    },
  };
}
