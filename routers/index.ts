// The root router: one instance, mounted as tRPC at /trpc and as REST (trpc-to-openapi).
// Inside each router, static paths come before {param} paths (the REST matcher takes the
// first match); test/rest/openapi-inventory.test.ts enforces it.
import { procedureRecords, type ProcedureRecord } from '../src/library-internals.js';
import { createCallerFactory, router, type Meta } from '../src/trpc/init.js';
import { appConversationActionsRouter } from './app-conversation-actions.router.js';
import { appConversationFilesRouter } from './app-conversation-files.router.js';
import { appConversationsRouter } from './app-conversations.router.js';
import { authRouter } from './auth.router.js';
import { budgetsRouter } from './budgets.router.js';
import { conversationRuntimeRouter } from './conversation-runtime.router.js';
import { conversationWorkspaceRouter } from './conversation-workspace.router.js';
import { conversationsRouter } from './conversations.router.js';
import { deviceFlowRouter } from './device-flow.router.js';
import { eventsRouter } from './events.router.js';
import { gitProvidersRouter } from './git-providers.router.js';
import { gitV1Router } from './git-v1.router.js';
import { agentCallbacksRouter } from './agent-callbacks.router.js';
import { webhookEndpointsRouter } from './webhook-endpoints.router.js';
import { sandboxSecretsRouter } from './sandbox-secrets.router.js';
import { sandboxSpecsRouter } from './sandbox-specs.router.js';
import { sandboxesRouter } from './sandboxes.router.js';
import { secretsRouter } from './secrets.router.js';
import { secretsV1Router } from './secrets-v1.router.js';
import { settingsRouter } from './settings.router.js';
import { userRouter } from './user.router.js';
import { optionsRouter } from './options.router.js';
import { accountRouter } from './account.router.js';
import { apiKeysRouter } from './api-keys.router.js';
import { sharingRouter } from './sharing.router.js';
import { auditRouter } from './audit.router.js';
import { llmPoliciesRouter } from './llm-policies.router.js';
import { agentProfilesRouter } from './agent-profiles.router.js';
import { organizationsRouter } from './organizations.router.js';
import { organizationMembersRouter } from './organization-members.router.js';
import { organizationSecretsRouter } from './organization-secrets.router.js';
import { settingsV1Router } from './settings-v1.router.js';
import { mcpTestsRouter } from './mcp-tests.router.js';
import { quotaRouter } from './quota.router.js';
import { automationsRouter } from './automations.router.js';
import { usersRouter } from './users.router.js';

export const appRouter = router({
  auth: authRouter,
  deviceFlow: deviceFlowRouter,
  settings: settingsRouter,
  gitProviders: gitProvidersRouter,
  secrets: secretsRouter,
  secretsV1: secretsV1Router,
  sandboxSpecs: sandboxSpecsRouter,
  sandboxes: sandboxesRouter,
  sandboxSecrets: sandboxSecretsRouter,
  appConversations: appConversationsRouter,
  appConversationActions: appConversationActionsRouter,
  appConversationFiles: appConversationFilesRouter,
  conversations: conversationsRouter,
  conversationRuntime: conversationRuntimeRouter,
  conversationWorkspace: conversationWorkspaceRouter,
  events: eventsRouter,
  agentCallbacks: agentCallbacksRouter,
  webhookEndpoints: webhookEndpointsRouter,
  mcpTests: mcpTestsRouter,
  quota: quotaRouter,
  automations: automationsRouter,
  options: optionsRouter,
  user: userRouter,
  settingsV1: settingsV1Router,
  agentProfiles: agentProfilesRouter,
  organizations: organizationsRouter,
  organizationMembers: organizationMembersRouter,
  organizationSecrets: organizationSecretsRouter,
  account: accountRouter,
  apiKeys: apiKeysRouter,
  sharing: sharingRouter,
  audit: auditRouter,
  llmPolicies: llmPoliciesRouter,
  users: usersRouter,
  gitV1: gitV1Router,
  budgets: budgetsRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);

export type ProcedureInfo = ProcedureRecord<Meta>;

/** Every procedure of the app router with its meta (for the REST table and tests). */
export const PROCEDURES: ReadonlyMap<string, ProcedureInfo> = procedureRecords<Meta>(appRouter);
