// The legacy REST answer of every domain error the reference answers in its own shape, row by
// row, plus the defaults and the precedence between a router's row and the '*' rows.
import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { AppError, InputIssuesError, toTRPCError, type AppErrorCode, type ErrorReason } from '../../src/errors.js';
import { FAILURES, toRestError } from '../../src/http/rest/legacy-errors.js';

const failed = (code: AppErrorCode, message: string, reason?: ErrorReason, retryAfterSeconds?: number) =>
  toTRPCError(new AppError(code, message, { ...(reason ? { reason } : {}), ...(retryAfterSeconds ? { retryAfterSeconds } : {}) }));

const ROWS = [
  ['settings.get', 'NOT_FOUND', 'Settings not found', 'settings_not_found', 404, { error: 'Settings not found' }],
  ['settings.reset', 'GONE', 'Removed.', 'settings_reset_removed', 410, { error: 'Removed.' }],
  ['secrets.create', 'CONFLICT', 'Secret A already exists', 'secret_exists', 400, { message: 'Secret A already exists' }],
  ['secrets.update', 'CONFLICT', 'Secret A already exists', 'secret_exists', 400, { message: 'Secret A already exists' }],
  ['secrets.delete', 'NOT_FOUND', 'Secret with ID x not found', 'secret_not_found', 404, { error: 'Secret with ID x not found' }],
  ['secretsV1.create', 'CONFLICT', 'Secret A already exists', 'secret_exists', 400, { detail: 'Secret A already exists' }],
  ['sandboxSecrets.value', 'NOT_FOUND', 'Secret not found', 'secret_not_found', 404, { detail: 'Secret not found' }],
  ['secretsV1.update', 'NOT_FOUND', 'Secret with ID x not found', 'secret_not_found', 404, { detail: 'Secret with ID x not found' }],
  ['secretsV1.storeGitProviders', 'UNAUTHORIZED', 'Invalid token.', 'invalid_provider_token', 401, { detail: 'Invalid token.' }],
  [
    'secretsV1.storeGitProviders',
    'BAD_GATEWAY',
    'Could not reach github',
    'provider_unreachable',
    502,
    { detail: 'Could not reach github' },
  ],
  ['gitProviders.add', 'UNAUTHORIZED', 'Invalid token.', 'invalid_provider_token', 401, { error: 'Invalid token.' }],
  ['gitProviders.add', 'BAD_GATEWAY', 'Could not reach github', 'provider_unreachable', 502, { error: 'Could not reach github' }],
  [
    'conversations.create',
    'BAD_REQUEST',
    'Settings not found',
    'settings_not_found',
    400,
    { status: 'error', message: 'Settings not found', msg_id: 'CONFIGURATION$SETTINGS_NOT_FOUND' },
  ],
  [
    'conversations.create',
    'BAD_REQUEST',
    'No key',
    'llm_key_missing',
    400,
    { status: 'error', message: 'No key', msg_id: 'STATUS$ERROR_LLM_AUTHENTICATION' },
  ],
  [
    'conversations.update',
    'NOT_FOUND',
    'Conversation not found',
    'conversation_not_found',
    404,
    { status: 'error', message: 'Conversation not found', msg_id: 'CONVERSATION$NOT_FOUND' },
  ],
  ['conversations.create', 'UNAUTHORIZED', 'Unable to access repo o/r', 'repository_access_denied', 401, 'Unable to access repo o/r'],
  ['sandboxes.pause', 'NOT_FOUND', 'Sandbox not found', 'sandbox_not_found', 404, { detail: 'Not Found' }],
  ['sandboxes.start', 'NOT_FOUND', 'Sandbox spec not found: x', 'sandbox_spec_not_found', 404, { detail: 'Not Found' }],
  ['sandboxes.resume', 'NOT_FOUND', 'Sandbox workspace is gone', 'sandbox_workspace_gone', 404, { detail: 'Not Found' }],
  ['appConversations.start', 'NOT_FOUND', 'Start task not found', 'start_task_not_found', 404, { detail: 'Not Found' }],
  ['user.info', 'UNAUTHORIZED', 'Git provider token required.', 'git_token_required', 401, 'Git provider token required.'],
  ['gitV1.repositories', 'UNAUTHORIZED', 'No github token is stored', 'git_token_required', 401, { detail: 'No github token is stored' }],
  ['gitV1.branches', 'UNAUTHORIZED', 'Invalid github token', 'invalid_provider_token', 401, { detail: 'Invalid github token' }],
  [
    'gitV1.installations',
    'BAD_REQUEST',
    "Provider gitlab doesn't support installations",
    'provider_unsupported',
    400,
    { detail: "Provider gitlab doesn't support installations" },
  ],
  ['gitV1.branches', 'FORBIDDEN', 'github refused access', 'provider_refused', 403, { detail: 'github refused access' }],
  ['gitV1.branches', 'NOT_FOUND', 'Not found on github', 'provider_not_found', 404, { detail: 'Not found on github' }],
  [
    'gitV1.suggestedTasks',
    'TOO_MANY_REQUESTS',
    'github rate limit reached',
    'provider_rate_limited',
    429,
    { detail: 'github rate limit reached' },
  ],
  [
    'gitV1.repositories',
    'SERVICE_UNAVAILABLE',
    'Too many git provider requests',
    'provider_busy',
    503,
    { detail: 'Too many git provider requests' },
  ],
  ['gitV1.repositories', 'BAD_GATEWAY', 'Could not reach github', 'provider_unreachable', 502, { detail: 'Could not reach github' }],
  [
    'gitV1.repositories',
    'FORBIDDEN',
    'Git provider host x is not allowed here (GIT_PROVIDER_HOSTS)',
    'provider_host_not_allowed',
    403,
    { detail: 'Git provider host x is not allowed here (GIT_PROVIDER_HOSTS)' },
  ],
  ['user.repositories', 'UNAUTHORIZED', 'Invalid github token', 'invalid_provider_token', 401, 'Invalid github token'],
  [
    'user.installations',
    'BAD_REQUEST',
    "Provider gitlab doesn't support installations",
    'provider_unsupported',
    400,
    "Provider gitlab doesn't support installations",
  ],
  ['user.branches', 'BAD_GATEWAY', 'Could not reach gitlab', 'provider_unreachable', 502, { error: 'Could not reach gitlab' }],
  ['user.info', 'FORBIDDEN', 'github refused access', 'provider_refused', 403, { error: 'github refused access' }],
  [
    'user.microagentContent',
    'NOT_FOUND',
    'Microagent file x not found in o/r',
    'provider_not_found',
    404,
    { error: 'Microagent file x not found in o/r' },
  ],
  [
    'user.suggestedTasks',
    'TOO_MANY_REQUESTS',
    'github rate limit reached',
    'provider_rate_limited',
    429,
    { error: 'github rate limit reached' },
  ],
  [
    'user.searchRepositories',
    'SERVICE_UNAVAILABLE',
    'Too many git provider requests',
    'provider_busy',
    503,
    { error: 'Too many git provider requests' },
  ],
  [
    'sandboxes.delete',
    'CONFLICT',
    'The sandbox is being deleted',
    'sandbox_being_deleted',
    409,
    { detail: 'The sandbox is being deleted' },
  ],
  [
    'sandboxes.resume',
    'CONFLICT',
    'Sandbox x was paused while it was resuming',
    'sandbox_paused',
    409,
    { detail: 'Sandbox x was paused while it was resuming' },
  ],
  [
    'sandboxes.resume',
    'SERVICE_UNAVAILABLE',
    'Sandbox x could not be resumed',
    'sandbox_resume_failed',
    503,
    { detail: 'Sandbox x could not be resumed' },
  ],
  [
    'gitProviders.add',
    'UNPROCESSABLE_CONTENT',
    'Host x not allowed',
    'provider_host_not_allowed',
    422,
    { detail: [{ type: 'value_error', loc: ['body'], msg: 'Host x not allowed' }] },
  ],
  [
    'user.info',
    'FORBIDDEN',
    'Git provider host x is not allowed here (GIT_PROVIDER_HOSTS)',
    'provider_host_not_allowed',
    403,
    { error: 'Git provider host x is not allowed here (GIT_PROVIDER_HOSTS)' },
  ],
  [
    'conversations.get',
    'BAD_REQUEST',
    'Conversation ID is too long',
    'invalid_conversation_id',
    400,
    { detail: 'Conversation ID is too long' },
  ],
  [
    'appConversations.start',
    'NOT_FOUND',
    'Parent conversation not found: p',
    'parent_conversation_not_found',
    404,
    { detail: 'Parent conversation not found: p' },
  ],
  ['sandboxes.resume', 'CONFLICT', 'Spec gone', 'sandbox_spec_unconfigured', 409, { detail: 'Spec gone' }],
  [
    'sandboxes.start',
    'TOO_MANY_REQUESTS',
    'Sandbox limit reached (2 running)',
    'sandbox_limit_reached',
    429,
    { detail: 'Sandbox limit reached (2 running)' },
  ],
  ['sandboxes.start', 'SERVICE_UNAVAILABLE', 'Busy', 'sandbox_starts_busy', 503, { detail: 'Busy' }],
  ['sandboxes.start', 'SERVICE_UNAVAILABLE', 'No Python', 'sandbox_runtime_unavailable', 503, { detail: 'No Python' }],
  ['sandboxes.start', 'SERVICE_UNAVAILABLE', 'Cannot isolate', 'sandbox_isolation_unavailable', 503, { detail: 'Cannot isolate' }],
  [
    'sandboxes.start',
    'BAD_REQUEST',
    'Cannot run the sandbox command',
    'sandbox_spec_unrunnable',
    400,
    { detail: 'Cannot run the sandbox command' },
  ],
  ['agentCallbacks.conversation', 'BAD_REQUEST', 'No id', 'webhook_conversation_id_missing', 400, { detail: 'No id' }],
  [
    'deviceFlow.token',
    'BAD_REQUEST',
    'Waiting',
    'device_authorization_pending',
    400,
    { error: 'authorization_pending', error_description: 'Waiting' },
  ],
  ['deviceFlow.token', 'BAD_REQUEST', 'Slower', 'device_slow_down', 400, { error: 'slow_down', error_description: 'Slower' }],
  ['deviceFlow.token', 'BAD_REQUEST', 'Expired', 'device_code_expired', 400, { error: 'expired_token', error_description: 'Expired' }],
  ['deviceFlow.token', 'BAD_REQUEST', 'Denied', 'device_access_denied', 400, { error: 'access_denied', error_description: 'Denied' }],
  ['deviceFlow.token', 'BAD_REQUEST', 'Unknown', 'device_code_invalid', 400, { error: 'invalid_grant', error_description: 'Unknown' }],
  [
    'deviceFlow.token',
    'BAD_REQUEST',
    'Only device_code',
    'device_grant_type_unsupported',
    400,
    { error: 'unsupported_grant_type', error_description: 'Only device_code' },
  ],
  ['deviceFlow.verify', 'NOT_FOUND', 'Unknown code', 'device_user_code_unknown', 404, { detail: 'Unknown code' }],
  ['agentCallbacks.gitToken', 'NOT_FOUND', 'No such provider', 'provider_token_not_found', 404, { detail: 'No such provider' }],
  // The 2026 surface.
  ['settingsV1.save', 'UNPROCESSABLE_CONTENT', 'Use *_diff', 'legacy_settings_keys', 422, { error: 'Use *_diff', keys: [] }],
  ['settingsV1.profilesGet', 'NOT_FOUND', "Profile 'x' not found", 'llm_profile_not_found', 404, { detail: "Profile 'x' not found" }],
  ['settingsV1.profilesRename', 'CONFLICT', 'Exists', 'llm_profile_exists', 409, { detail: 'Exists' }],
  ['settingsV1.profilesSave', 'CONFLICT', 'Limit', 'llm_profile_limit', 409, { detail: 'Limit' }],
  ['settingsV1.profilesDelete', 'CONFLICT', 'Named', 'llm_profile_referenced', 409, { detail: 'Named' }],
  ['agentProfiles.get', 'NOT_FOUND', 'No profile', 'agent_profile_not_found', 404, { detail: 'No profile' }],
  ['agentProfiles.rename', 'CONFLICT', 'Exists', 'agent_profile_exists', 409, { detail: 'Exists' }],
  ['agentProfiles.save', 'CONFLICT', 'Limit', 'agent_profile_limit', 409, { detail: 'Limit' }],
  ['account.currentKey', 'BAD_REQUEST', 'A session', 'not_an_api_key', 400, { detail: 'A session' }],
  ['apiKeys.delete', 'NOT_FOUND', 'API key not found', 'api_key_not_found', 404, { detail: 'API key not found' }],
  ['audit.search', 'FORBIDDEN', 'Admins only', 'not_an_admin', 403, { detail: 'Admins only' }],
  ['auth.signIn', 'UNAUTHORIZED', 'Sign in again', 'oidc_refused', 401, { detail: 'Sign in again' }],
  ['auth.signIn', 'FORBIDDEN', 'Not here', 'oidc_not_allowed', 403, { detail: 'Not here' }],
  ['auth.signIn', 'BAD_GATEWAY', 'Unreachable', 'oidc_provider_unreachable', 502, { detail: 'Unreachable' }],
  ['sharing.searchEvents', 'NOT_FOUND', 'Conversation not found', 'conversation_not_found', 404, { detail: 'Conversation not found' }],
  ['users.me', 'FORBIDDEN', 'Not yours', 'secrets_not_exposed', 403, { detail: 'Not yours' }],
  ['organizations.me', 'NOT_FOUND', 'Organization not found', 'organization_not_found', 404, { detail: 'Organization not found' }],
  ['organizations.create', 'CONFLICT', 'Taken', 'organization_name_taken', 409, { detail: 'Taken' }],
  ['organizationSecrets.create', 'CONFLICT', 'Exists', 'secret_exists', 409, { detail: 'Exists' }],
  ['organizationSecrets.create', 'CONFLICT', 'Too many', 'secret_limit', 409, { detail: 'Too many' }],
  ['organizationSecrets.delete', 'NOT_FOUND', 'No secret', 'secret_not_found', 404, { detail: 'No secret' }],
  ['organizations.updateBudget', 'BAD_REQUEST', 'Limit needed', 'org_budget_invalid', 400, { detail: 'Limit needed' }],
  ['organizations.create', 'CONFLICT', 'Too many', 'organization_limit', 409, { detail: 'Too many' }],
  [
    'organizations.get',
    'FORBIDDEN',
    'Requires view_org_settings permission',
    'org_permission_denied',
    403,
    { detail: 'Requires view_org_settings permission' },
  ],
  ['organizations.get', 'BAD_REQUEST', 'Mismatch', 'org_header_mismatch', 400, { detail: 'Mismatch' }],
  ['organizations.delete', 'FORBIDDEN', 'Personal', 'org_personal', 403, { detail: 'Personal' }],
  ['organizationMembers.update', 'NOT_FOUND', 'No member', 'org_member_not_found', 404, { detail: 'No member' }],
  ['organizationMembers.remove', 'BAD_REQUEST', 'Last owner', 'org_last_owner', 400, { detail: 'Last owner' }],
  ['organizationMembers.revokeInvitation', 'NOT_FOUND', 'No invitation', 'invitation_not_found', 404, { detail: 'No invitation' }],
  ['organizationMembers.revokeInvitation', 'CONFLICT', 'Not pending', 'invitation_not_pending', 409, { detail: 'Not pending' }],
  ['organizationMembers.invite', 'CONFLICT', 'Too many', 'invitation_limit', 409, { detail: 'Too many' }],
  [
    'organizationMembers.acceptInvitation',
    'BAD_REQUEST',
    'invitation_invalid',
    'invitation_invalid',
    400,
    { detail: 'invitation_invalid' },
  ],
  [
    'organizationMembers.acceptInvitation',
    'BAD_REQUEST',
    'invitation_expired',
    'invitation_expired',
    400,
    { detail: 'invitation_expired' },
  ],
  ['organizationMembers.acceptInvitation', 'FORBIDDEN', 'email_mismatch', 'email_mismatch', 403, { detail: 'email_mismatch' }],
  ['organizationMembers.acceptInvitation', 'CONFLICT', 'already_member', 'already_member', 409, { detail: 'already_member' }],
  ['users.gitInfo', 'UNAUTHORIZED', 'Git provider token required.', 'git_token_required', 403, { detail: 'Git provider token required.' }],
  [
    'appConversations.start',
    'CONFLICT',
    'Conversation id c is taken',
    'conversation_exists',
    409,
    { detail: 'Conversation id c is taken' },
  ],
  [
    'appConversations.start',
    'UNPROCESSABLE_CONTENT',
    'Agent profile not found: p',
    'start_request_refused',
    422,
    { detail: [{ type: 'value_error', loc: ['body'], msg: 'Agent profile not found: p' }] },
  ],
  [
    'appConversationActions.switchProfile',
    'NOT_FOUND',
    "Profile 'p' not found",
    'profile_not_found',
    404,
    { detail: "Profile 'p' not found" },
  ],
  ['appConversationActions.switchAcpModel', 'BAD_REQUEST', 'Refused', 'agent_switch_refused', 400, { detail: 'Refused' }],
  ['appConversationActions.switchAcpModel', 'GATEWAY_TIMEOUT', 'Too slow', 'agent_switch_timed_out', 504, { detail: 'Too slow' }],
  ['appConversationActions.queueMessage', 'TOO_MANY_REQUESTS', 'Too many', 'pending_messages_full', 429, { detail: 'Too many' }],
  ['appConversationActions.sendMessage', 'CONFLICT', 'Over budget', 'budget_reached', 409, { detail: 'Over budget' }],
  ['appConversationActions.queueMessage', 'CONFLICT', 'Month over', 'monthly_budget_reached', 409, { detail: 'Month over' }],
  ['appConversationActions.switchProfile', 'BAD_REQUEST', 'Not fronted', 'llm_provider_not_fronted', 400, { detail: 'Not fronted' }],
  ['appConversationActions.switchProfile', 'FORBIDDEN', 'Not yours', 'model_not_allowed', 403, { detail: 'Not yours' }],
  ['llmPolicies.set', 'FORBIDDEN', 'Admins only', 'not_an_admin', 403, { detail: 'Admins only' }],
  ['appConversationFiles.readFile', 'PAYLOAD_TOO_LARGE', 'Too large', 'too_large_to_serve', 413, { detail: 'Too large' }],
  ['webhookEndpoints.get', 'NOT_FOUND', 'No endpoint', 'webhook_endpoint_not_found', 404, { detail: 'No endpoint' }],
  ['webhookEndpoints.create', 'CONFLICT', 'At most 20', 'webhook_endpoint_limit', 409, { detail: 'At most 20' }],
  ['settingsV1.save', 'BAD_REQUEST', 'Duplicated: a', 'marketplace_names_duplicated', 400, { error: 'Duplicated: a' }],
  [
    'appConversations.start',
    'TOO_MANY_REQUESTS',
    'Limit',
    'daily_conversation_limit_reached',
    429,
    { detail: { code: 'daily_conversation_limit_reached', message: 'Limit', limit: null, used: null, reset_at: null } },
  ],
  ['mcpTests.testStored', 'NOT_FOUND', 'MCP server was not found', 'mcp_server_not_found', 404, { detail: 'MCP server was not found' }],
  ['mcpTests.test', 'UNPROCESSABLE_CONTENT', 'stdio', 'mcp_stdio_not_testable', 422, { detail: 'stdio' }],
  ['mcpTests.testStored', 'SERVICE_UNAVAILABLE', 'Later', 'mcp_test_unavailable', 503, { detail: 'Later' }],
  [
    'automations.forwardingKey',
    'NOT_FOUND',
    'Automations are not available on this server',
    'automations_not_available',
    404,
    { detail: 'Automations are not available on this server' },
  ],
  [
    'webhookEndpoints.create',
    'UNPROCESSABLE_CONTENT',
    'Host not allowed',
    'webhook_url_not_allowed',
    422,
    { detail: [{ type: 'value_error', loc: ['body'], msg: 'Host not allowed' }] },
  ],
  ['appConversationFiles.readFile', 'NOT_FOUND', 'No such file: x', 'workspace_path_not_found', 404, { detail: 'No such file: x' }],
  [
    'appConversationActions.delete',
    'NOT_FOUND',
    'Conversation not found',
    'conversation_not_found',
    404,
    { detail: 'Conversation not found' },
  ],
  [
    'appConversationFiles.download',
    'NOT_FOUND',
    'Conversation c not found',
    'conversation_not_found',
    404,
    { detail: 'Conversation c not found' },
  ],
  ['appConversationActions.update', 'NOT_FOUND', 'No such file: x', 'workspace_path_not_found', 404, { detail: 'No such file: x' }],
  ['secrets.list', 'TOO_MANY_REQUESTS', 'Too many requests', 'rate_limited', 429, { message: 'Too many requests' }],
  ['settings.get', 'SERVICE_UNAVAILABLE', 'Database unavailable', 'database_unavailable', 503, { detail: 'Database unavailable' }],
  [
    'settings.save',
    'UNPROCESSABLE_CONTENT',
    'Too deep',
    'json_too_deep',
    422,
    { detail: [{ type: 'value_error', loc: ['body'], msg: 'Too deep' }] },
  ],
] as const;

describe('legacy REST answers of domain errors', () => {
  it.each(ROWS)('%s %s (%s) → its legacy answer', (path, code, message, reason, status, body) => {
    expect(toRestError(failed(code, message, reason), path)).toEqual({ status, body });
  });

  it('names the refused field of a start request in the 422 detail', () => {
    const error = toTRPCError(
      new AppError('UNPROCESSABLE_CONTENT', 'Agent profile not found: p', {
        reason: 'start_request_refused',
        fields: { field: 'agent_profile_id' },
      }),
    );
    expect(toRestError(error, 'appConversations.start')).toEqual({
      status: 422,
      body: { detail: [{ type: 'value_error', loc: ['body', 'agent_profile_id'], msg: 'Agent profile not found: p' }] },
    });
  });

  const refusals = [
    ['conversation_not_running', 'CONFLICT', 409],
    ['sandbox_gone', 'CONFLICT', 409],
    ['sandbox_limit_reached', 'TOO_MANY_REQUESTS', 429],
    ['sandbox_resume_failed', 'SERVICE_UNAVAILABLE', 503],
    ['agent_server_unavailable', 'SERVICE_UNAVAILABLE', 503],
    ['agent_server_failed', 'BAD_GATEWAY', 502],
    ['workspace_path_not_found', 'NOT_FOUND', 404],
    ['event_not_found', 'NOT_FOUND', 404],
  ] as const;
  it.each(
    ['conversationRuntime.webHosts', 'conversationWorkspace.gitChanges'].flatMap((path) => refusals.map((row) => [path, ...row] as const)),
  )('%s %s → {"error": message} (the text the web UI shows)', (path, reason, code, status) => {
    expect(toRestError(failed(code, 'Why not', reason), path)).toEqual({ status, body: { error: 'Why not' } });
  });

  const withConversation = (code: AppErrorCode, message: string, reason: ErrorReason) =>
    toTRPCError(new AppError(code, message, { reason, fields: { conversation_id: 'c1' } }));
  it.each([
    ['conversationRuntime.start', 'sandbox_gone', 409],
    ['conversationRuntime.start', 'conversation_not_running', 409],
    ['conversationRuntime.stop', 'sandbox_gone', 409],
    ['conversationRuntime.stop', 'conversation_not_running', 409],
    ['conversationRuntime.start', 'sandbox_limit_reached', 429],
    ['conversationRuntime.start', 'sandbox_resume_failed', 503],
  ] as const)('%s %s → the V0 action error with the conversation id', (path, reason, status) => {
    const code = ({ 409: 'CONFLICT', 429: 'TOO_MANY_REQUESTS', 503: 'SERVICE_UNAVAILABLE' } as const)[status];
    expect(toRestError(withConversation(code, 'Failed to start conversation: x', reason), path)).toEqual({
      status,
      body: { status: 'error', conversation_id: 'c1', message: 'Failed to start conversation: x' },
    });
  });
  it.each(['conversationRuntime.start', 'conversationRuntime.stop'])('%s of an unknown conversation → 404 with its id only', (path) => {
    expect(toRestError(withConversation('NOT_FOUND', 'Conversation c1 not found', 'conversation_not_found'), path)).toEqual({
      status: 404,
      body: { status: 'error', conversation_id: 'c1' },
    });
    // The other conversation-page routes answer the reference's {"detail": …}.
    for (const other of ['conversationRuntime.config', 'conversationWorkspace.listFiles']) {
      expect(toRestError(withConversation('NOT_FOUND', 'Conversation c1 not found', 'conversation_not_found'), other)).toEqual({
        status: 404,
        body: { detail: 'Conversation c1 not found' },
      });
    }
  });

  it('has a test row above for every row of the table', () => {
    // The conversation-page rows are tested by the tables above; together they cover FAILURES.
    const pageRows = [
      ...['conversationRuntime.webHosts', 'conversationWorkspace.gitChanges'].flatMap((path) => refusals.map(([reason]) => [path, reason])),
      ...['conversationRuntime.start', 'conversationRuntime.stop'].flatMap((path) =>
        ['conversation_not_found', 'sandbox_gone', 'conversation_not_running', 'sandbox_limit_reached', 'sandbox_resume_failed'].map(
          (reason) => [path, reason],
        ),
      ),
      ['conversationRuntime.config', 'conversation_not_found'],
      ['conversationWorkspace.listFiles', 'conversation_not_found'],
    ];
    const all = [...ROWS.map(([path, , , reason]) => [path, reason]), ...pageRows] as [string, string][];
    // A row key is a router (tested by any of its procedures) or one procedure's path.
    const tested = (key: string) => all.filter(([path]) => path === key || path.startsWith(`${key}.`)).map(([, reason]) => reason);
    expect([...new Set(all.map(([, reason]) => reason))].sort()).toEqual(Object.keys(FAILURES).sort());
    for (const [reason, row] of Object.entries(FAILURES)) {
      for (const key of Object.keys(row.routers ?? {})) expect(tested(key), `${key}:${reason}`).toContain(reason);
    }
  });

  it('gives the daily limit, the count and the reset time of a refused start, as numbers and a time', () => {
    const fields = { limit: '3', used: '3', reset_at: '2026-11-30T00:00:00.000Z' };
    const error = toTRPCError(new AppError('TOO_MANY_REQUESTS', 'Limit of 3', { reason: 'daily_conversation_limit_reached', fields }));
    expect(toRestError(error, 'appConversations.start').body).toEqual({
      detail: { code: 'daily_conversation_limit_reached', message: 'Limit of 3', limit: 3, used: 3, reset_at: '2026-11-30T00:00:00.000Z' },
    });
  });

  it('names the refused legacy keys of a 2026 settings save', () => {
    const error = toTRPCError(
      new AppError('UNPROCESSABLE_CONTENT', 'Use *_diff', { reason: 'legacy_settings_keys', fields: { keys: 'a,b' } }),
    );
    expect(toRestError(error, 'settingsV1.save')).toEqual({ status: 422, body: { error: 'Use *_diff', keys: ['a', 'b'] } });
  });

  it('picks the row by router: the same reason answers differently on another router', () => {
    expect(toRestError(failed('NOT_FOUND', 'Settings not found', 'settings_not_found'), 'settings.get')).toEqual({
      status: 404,
      body: { error: 'Settings not found' },
    });
    expect(toRestError(failed('BAD_REQUEST', 'Settings not found', 'settings_not_found'), 'conversations.create')).toEqual({
      status: 400,
      body: { status: 'error', message: 'Settings not found', msg_id: 'CONFIGURATION$SETTINGS_NOT_FOUND' },
    });
  });

  it("adds the interval a slow_down asks for to the device flow's error", () => {
    const error = toTRPCError(
      new AppError('BAD_REQUEST', 'Poll at most every 10 seconds', { reason: 'device_slow_down', fields: { interval: '10' } }),
    );
    expect(toRestError(error, 'deviceFlow.token')).toEqual({
      status: 400,
      body: { error: 'slow_down', error_description: 'Poll at most every 10 seconds', interval: 10 },
    });
  });

  it('answers a reason by its own row on every router, and without a procedure path', () => {
    for (const path of ['sandboxes.delete', 'conversations.delete', undefined]) {
      expect(toRestError(failed('NOT_FOUND', 'Sandbox not found', 'sandbox_not_found'), path)).toEqual({
        status: 404,
        body: { detail: 'Not Found' },
      });
    }
  });
});

describe('default REST answers', () => {
  it('answers {"detail": message} with the code status for a domain error without a row', () => {
    expect(toRestError(failed('CONFLICT', 'Spec gone'), 'sandboxes.resume')).toEqual({ status: 409, body: { detail: 'Spec gone' } });
    expect(toRestError(failed('GONE', 'Gone'), 'sandboxes.resume')).toEqual({ status: 410, body: { detail: 'Gone' } });
  });

  it('sends Retry-After for a domain error with retryAfterSeconds', () => {
    expect(toRestError(failed('TOO_MANY_REQUESTS', 'Sandbox limit reached (2 running)', undefined, 30), 'sandboxes.start')).toEqual({
      status: 429,
      body: { detail: 'Sandbox limit reached (2 running)' },
      headers: { 'retry-after': '30' },
    });
  });

  it('keeps 502 and 503 messages and hides other 5xx messages', () => {
    expect(toRestError(failed('BAD_GATEWAY', 'Agent server unreachable'), 'x.y').body).toEqual({ detail: 'Agent server unreachable' });
    expect(toRestError(failed('SERVICE_UNAVAILABLE', 'Kubernetes is down'), 'x.y').body).toEqual({ detail: 'Kubernetes is down' });
    expect(toRestError(failed('INTERNAL_SERVER_ERROR', 'secret internals'), 'x.y')).toEqual({
      status: 500,
      body: { detail: 'Internal Server Error' },
    });
  });

  it('answers tRPC errors that are not domain errors with the reason phrase, and anything else with a bare 500', () => {
    expect(toRestError(new TRPCError({ code: 'UNAUTHORIZED', message: 'x' }), 'settings.get')).toEqual({
      status: 401,
      body: { detail: 'Unauthorized' },
    });
    expect(toRestError(new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Bad type' }), 'settings.save')).toEqual({
      status: 415,
      body: { detail: 'Bad type' },
    });
    expect(toRestError(new Error('boom with internals'), 'settings.get')).toEqual({
      status: 500,
      body: { detail: 'Internal Server Error' },
    });
  });

  it('answers input validation with 422 and the field located in path, query or body', () => {
    const invalid = (path: (string | number)[]) =>
      new TRPCError({
        code: 'BAD_REQUEST',
        cause: new InputIssuesError([{ code: 'custom', path, message: 'String should not contain NUL characters' }]),
      });
    expect(toRestError(invalid(['secret_id']), 'secrets.update')).toEqual({
      status: 422,
      body: { detail: [{ type: 'value_error', loc: ['path', 'secret_id'], msg: 'String should not contain NUL characters' }] },
    });
    expect(toRestError(invalid(['name']), 'secrets.update').body).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'name'], msg: 'String should not contain NUL characters' }],
    });
    expect(toRestError(invalid(['limit']), 'sandboxes.search').body).toEqual({
      detail: [{ type: 'value_error', loc: ['query', 'limit'], msg: 'String should not contain NUL characters' }],
    });
  });
});
