// The domain, wired: the services (src/services/) and, on top of them, the conversations
// wing (src/conversations/). server.ts creates it; the request context carries it.
import { AccessTokens } from './access-token.js';
import type { Config } from './config/config.js';
import { AppConversationActionsService } from './conversations/app-conversation-actions.service.js';
import { AppConversationFilesService } from './conversations/app-conversation-files.service.js';
import { AppConversationsService } from './conversations/app-conversations.service.js';
import { BudgetsService } from './conversations/budgets/budgets.service.js';
import { ConversationRuntimeService } from './conversations/v0/conversation-runtime.service.js';
import { ConversationWorkspaceService } from './conversations/v0/conversation-workspace.service.js';
import { ConversationsService } from './conversations/v0/conversations.service.js';
import { EventStore } from './conversations/events/event-store.js';
import { EventsService } from './conversations/events/events.service.js';
import { FeedbackService } from './conversations/v0/feedback.service.js';
import { LeaseQueue } from './db/lease-queue.js';
import { PendingMessages } from './conversations/pending-messages.js';
import { profilesFromSettings, type AgentProfiles, type LlmProfiles } from './conversations/profiles.js';
import { StartWorkflow } from './conversations/start/start-workflow.js';
import { SandboxGrouping } from './conversations/start/sandbox-grouping.js';
import { DailyStarts } from './conversations/budgets/daily-starts.js';
import { startsPerUser } from './conversations/records/task-queue.js';
import { ConversationStore, type StartTask } from './conversations/records/store.js';
import {
  agentProxyBase,
  browserOrigins,
  PauseHandoffRuntime,
  SandboxAccess,
  SandboxesService,
  SandboxKeys,
  SandboxLifecycle,
  type SandboxRuntime,
  SandboxSecretsService,
  SandboxSpecsService,
} from './sandbox/index.js';
import { SpendRecords } from './conversations/budgets/spend-records.js';
import { AgentCallbacksService } from './conversations/events/agent-callbacks.service.js';
import { ConversationLifecycleEvents } from './conversations/conversation-lifecycle-events.js';
import { createLifecycleWebhooks } from './lifecycle-webhooks/index.js';
import { createLlmGateway } from './llm-gateway/index.js';
import { LlmRoutes } from './llm-gateway/llm-routes.js';
import type { PriceTable } from './llm-gateway/prices.js';
import type { SecretBox } from './crypto.js';
import { DecisionClaims } from './db/claims.js';
import type { Database } from './db/database.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import { createAccountServices } from './services/account-services.js';
import { AutomationRunSettings } from './automations/run-settings.js';
import { createCredentialServices } from './services/identity/credential-services.js';
import { ProviderHttp } from './git/providers/provider-http.js';
import { providerHostPolicy } from './git/providers/provider-hosts.js';
import { McpTestsService } from './services/mcp/mcp-tests.service.js';
import { GitProvidersService } from './git/git-providers.service.js';
import { GitSearchService } from './git/git-search.service.js';
import { DeviceFlowService } from './services/identity/device-flow.service.js';
import { SecretsService } from './services/secrets.service.js';
import { OptionsService } from './services/settings/options.service.js';
import { SharingService } from './conversations/sharing.service.js';
import { AuditService } from './services/audit.service.js';
import { createOrganizationServices } from './organizations/index.js';
import { OrgBudgetsService } from './conversations/budgets/org-budgets.js';
import { OrgDeparture } from './conversations/org-departure.js';
import { OidcService } from './services/identity/oidc.service.js';
import { SettingsService } from './services/settings/settings.service.js';
import { UserGitService } from './git/user-git.service.js';

export interface ServiceOptions {
  db: Database;
  box: SecretBox;
  config: Config;
  runtime: SandboxRuntime;
  /** This service's base URL as sandboxes reach it (webhooks, secret lookups). */
  webUrl: () => string;
  metrics: Metrics;
  log: Logger;
  /** The clock of time-bounded caches (tests move it instead of waiting). */
  clock?: () => number;
  /** The LLM gateway's price table (none: the gateway refuses every call as unpriced). */
  prices?: PriceTable | null;
  /** The profile stores conversations use (the settings side's; none by default). */
  profiles?: { agent?: AgentProfiles; llm?: LlmProfiles };
}

export function createServices({ db, box, config, runtime: bareRuntime, webUrl, metrics, log, clock, profiles, prices }: ServiceOptions) {
  const models = db.models;
  // Every pause, wherever it comes from, lets the sandbox's agent server hand its conversations over first.
  const runtime: SandboxRuntime = new PauseHandoffRuntime(
    bareRuntime,
    (sandboxId: string) => sandboxes.agentOf(sandboxId),
    log.child({ component: 'sandboxes' }),
  );
  const providerHttp = new ProviderHttp({
    timeoutMs: config.providers.timeoutMs,
    maxConcurrent: config.providers.maxConcurrency,
    log: log.child({ component: 'git-providers' }),
    hosts: providerHostPolicy(config.providers),
  });
  const gitProviders = new GitProvidersService(models, box, config.providers, providerHttp);
  const settings = new SettingsService(models, box);
  const secrets = new SecretsService(models, box);
  const sandboxSpecs = new SandboxSpecsService(config.sandbox);
  const corsOrigins = () => browserOrigins(config.publicUrl ?? webUrl(), config.session.trustedOrigins);
  // Where agent servers call back: an isolated process sandbox only through its network's one path.
  const callbackUrl = () => runtime.callbackOrigin?.() ?? webUrl();
  const sandboxes: SandboxesService = new SandboxesService(
    db,
    box,
    sandboxSpecs,
    runtime,
    config.sandbox,
    callbackUrl,
    metrics,
    corsOrigins,
    agentProxyBase(config.sandbox, config.publicUrl, webUrl),
  );
  const accessTokens = new AccessTokens(box.deriveKey('git-token-lookup'), config.conversations.gitTokenTtlSeconds);
  const claims = new DecisionClaims(models);
  const store = new ConversationStore(db, box, claims);
  // Lifecycle webhooks: the sandboxes and conversations emit into their outbox (docs/webhooks.md).
  const lifecycleWebhooks = createLifecycleWebhooks({ models, box, claims, config: config.webhooks, metrics, log });
  sandboxes.events.use(lifecycleWebhooks.events);
  const sandboxLifecycle = new SandboxLifecycle({
    models,
    tables: db.tables,
    runtime,
    sandboxes,
    specs: sandboxSpecs,
    claims,
    metrics,
    log,
    config: config.lifecycle,
    startupTimeoutMs: config.sandbox.startupTimeoutMs,
    onGone: (sandboxId, reason) => store.markSandboxGone(sandboxId, reason),
  });
  // A sandbox's key, presented by its agent server or by code in it, is a use of that sandbox.
  const sandboxKeys = new SandboxKeys(models, box, sandboxes, sandboxLifecycle.usage, log);
  const { apiKeys, sessions } = createCredentialServices(models, config, clock);
  const options = new OptionsService(config.webUi);
  const account = createAccountServices({ models, box, config, settings, apiKeys, sandboxKeys, options });
  // Conversations launch from and switch to the profiles the settings side keeps (tests may plug in others).
  const stored = profilesFromSettings({ agent: account.agentProfiles, llm: account.llmProfiles });
  const agentProfiles: AgentProfiles = profiles?.agent ?? stored.agent;
  const llmProfiles: LlmProfiles = profiles?.llm ?? stored.llm;
  // The conversation routes resume a paused sandbox the same way a conversation start does.
  const sandboxAccess = new SandboxAccess(store, sandboxes, config.conversations.sandboxCallTimeoutMs, (userId, sandboxId, current) =>
    sandboxLifecycle.ensureRunning(userId, sandboxId, current),
  );
  // The LLM gateway (docs/llm-gateway.md): agents get the gateway's URL and a token, never the key.
  const llmRoutes = new LlmRoutes(models, box);
  const orgDeparture = new OrgDeparture({ store, apiKeys, sessions, llmRoutes, sandboxes, log: log.child({ component: 'organizations' }) });
  const audit = new AuditService(models.AuditEvent, models.UserRole, {
    ...config.audit,
    log: log.child({ component: 'audit' }),
    ...(clock ? { now: clock } : {}),
  });
  const organizations = createOrganizationServices({
    models,
    box,
    isAdmin: (userId) => audit.isAdmin(userId),
    emailOf: async (userId) => {
      const email = (await settings.stored(userId))?.dto.email ?? (userId.includes('@') ? userId : null);
      return email ? email.toLowerCase() : null;
    },
    // Defined further down (it needs the sandboxes and the gateway's routes); called only later.
    onLeft: (orgId, userId, how) => orgDeparture.left(orgId, userId, how),
    personalLlm: async (userId) => {
      const dto = (await settings.stored(userId))?.dto;
      return { model: dto?.llm_model ?? null, baseUrl: dto?.llm_base_url ?? null, keySet: dto?.llm_api_key_set === true };
    },
    ...(clock ? { now: clock } : {}),
  });
  const budgets = new BudgetsService({
    countedByGateway: (conversationId) => llmRoutes.has(conversationId),
    records: new SpendRecords(models),
    settings,
    access: sandboxAccess,
    defaultMonthlyCap: config.budgets.defaultMonthlyCap,
    orgMonthlyCap: (orgId) => organizations.organizations.monthlyBudget(orgId),
    log: log.child({ component: 'budgets' }),
    clock,
  });
  const conversationLifecycle = new ConversationLifecycleEvents(store, sandboxes, budgets, log.child({ component: 'lifecycle-webhooks' }));
  conversationLifecycle.use(lifecycleWebhooks.events);
  budgets.whenReached(({ userId, conversationId }) =>
    conversationLifecycle.conversationChanged('conversation.budget_reached', userId, conversationId),
  );
  const pendingMessages = new PendingMessages(models, store, sandboxAccess, log.child({ component: 'pending-messages' }));
  const startLog = log.child({ component: 'start-tasks' });
  const { modelPolicy, agentLlms, llmGateway } = createLlmGateway({
    config,
    models,
    routes: llmRoutes,
    prices: prices ?? null,
    budgets,
    isAdmin: (userId) => audit.isAdmin(userId),
    keyInSandboxChosen: async (userId) => (await settings.stored(userId))?.record.llm_key_in_sandbox === true,
    origin: callbackUrl,
    sandboxExists: async (sandboxId) => (await sandboxes.credentials(sandboxId)) !== null,
    sandboxConversation: (sandboxId, userId) => store.latestInSandbox(userId, sandboxId),
    metrics,
    log,
    clock,
  });
  if (llmGateway) sandboxes.events.whenDeleted((sandboxId) => llmGateway.forgetSandbox(sandboxId));
  const workflow = new StartWorkflow({
    store,
    settings,
    gitProviders,
    secrets,
    sandboxes,
    lifecycle: sandboxLifecycle,
    accessTokens,
    metrics,
    config,
    webUrl: callbackUrl,
    log: startLog,
    profiles: agentProfiles,
    pendingMessages,
    events: conversationLifecycle,
    agentLlms,
    orgLlm: (orgId) => organizations.organizations.llmDefaults(orgId),
    orgSecrets: (orgId) => organizations.orgSecrets.resolve(orgId),
  });
  const startTasks = new LeaseQueue<StartTask>({
    store: store.taskLeases,
    worker: (task, owner) => workflow.run(task, owner),
    leaseMs: config.conversations.leaseMs,
    pollMs: config.conversations.pollMs,
    maxConcurrent: config.conversations.workers,
    log: startLog,
    share: { keyOf: (task) => task.userId, max: startsPerUser(config.conversations.workers) },
  });
  const events = new EventsService(
    new EventStore(models, config.events.maxPerConversation),
    config.events.retentionMs,
    log.child({ component: 'events' }),
    async (userId, conversationId) => (await store.conversation(userId, conversationId)) !== null,
  );
  const feedback = new FeedbackService(models, sandboxAccess, events);
  const removeConversationData = async (userId: string, conversationId: string) => {
    await events.removeConversation(conversationId);
    await feedback.removeConversation(userId, conversationId);
    await pendingMessages.drop(conversationId);
    // Its gateway token opens nothing from now on (its sandbox may serve other conversations).
    await llmRoutes.close({ conversationId });
  };
  const dailyStarts = new DailyStarts(models, config.budgets.dailyConversationLimit);
  const appConversations = new AppConversationsService(
    store,
    sandboxes,
    () => startTasks.kick(),
    log,
    budgets,
    removeConversationData,
    agentProfiles,
    conversationLifecycle,
    new SandboxGrouping({ settings, sandboxes, store, maxConversations: config.sandbox.maxConversations }),
    dailyStarts,
  );
  const userGit = new UserGitService(gitProviders, providerHttp, config.providers, log.child({ component: 'git-providers' }));
  return {
    ...account,
    llmRoutes,
    llmGateway,
    agentLlms,
    modelPolicy,
    apiKeys,
    sessions,
    deviceFlow: new DeviceFlowService(models, apiKeys, config.deviceFlow, clock),
    /** OpenID Connect sign-in (docs/oidc.md), when OIDC_ISSUER is set. */
    oidc: config.oidc
      ? new OidcService(config.oidc, box, sessions, models.UserRole, log.child({ component: 'oidc' }), {
          // No provider group and no user of the provider (an email) named administrator: the first to sign in is one.
          firstRunAdmin: config.oidc.adminGroups.length === 0 && !config.audit.admins.some((id) => id.includes('@')),
          // Joining by sign-in is in the audit log as the invitation's acceptance.
          signedIn: async (userId) => {
            for (const orgId of await organizations.orgInvitations.acceptPendingFor(userId, userId)) {
              audit.record({ userId, action: 'organizationMembers.acceptInvitation', outcome: 'ok', input: { org_id: orgId }, via: 'web' });
            }
          },
        })
      : null,
    settings,
    gitProviders,
    secrets,
    sandboxSpecs,
    sandboxes,
    sandboxLifecycle,
    startTasks,
    appConversations,
    sharing: new SharingService(store, events, budgets),
    audit,
    ...organizations,
    orgBudgets: new OrgBudgetsService(organizations.organizations, budgets),
    options,
    userGit,
    gitSearch: new GitSearchService(userGit),
    conversations: new ConversationsService(appConversations, settings, gitProviders),
    sandboxKeys,
    sandboxSecrets: new SandboxSecretsService(secrets, gitProviders),
    agentCallbacks: new AgentCallbacksService(
      store,
      gitProviders,
      accessTokens,
      sandboxLifecycle.usage,
      events,
      budgets,
      conversationLifecycle,
    ),
    /** What an automation run's code gets of users/me in its sandbox (the LLM through the gateway). */
    automationRuns: new AutomationRunSettings(sandboxKeys, settings, agentLlms),
    budgets,
    webhookEndpoints: lifecycleWebhooks.service,
    dailyStarts,
    mcpTests: McpTestsService.create(settings, config.mcpTests),
    /** Sends the lifecycle webhooks' deliveries (started with the server). */
    webhookDispatcher: lifecycleWebhooks.dispatcher,
    /** Emits start-task and conversation events (e.g. conversation.budget_reached). */
    conversationLifecycle,
    events,
    feedback,
    conversationRuntime: new ConversationRuntimeService(sandboxAccess, sandboxes),
    conversationWorkspace: new ConversationWorkspaceService(sandboxAccess, events),
    appConversationActions: new AppConversationActionsService(
      store,
      appConversations,
      sandboxAccess,
      pendingMessages,
      llmProfiles,
      budgets,
      agentLlms,
    ),
    appConversationFiles: new AppConversationFilesService(
      sandboxAccess,
      events,
      (userId, id) => appConversations.get(userId, id),
      config.events.maxPerConversation,
    ),
  };
}

export type Services = ReturnType<typeof createServices>;
