// The one table of the legacy REST surface's failures (the reference server's own shapes). It
// decides the bytes of every error answer (toRestError) and, from the same rows, what the
// OpenAPI document lists per operation (restFailuresOf, used by openapi-document.ts):
// - input validation → 422 {"detail": [{loc, msg, type}]} (validation-detail.ts);
// - domain errors → the row of their reason (per router where the reference differs);
//   a domain error without a reason → {"detail": message} with its code's status;
// - the transport's own failures (no key, body too large, wrong media type, rate limit,
//   database down) → TRANSPORT_FAILURES, which every operation lists;
// - anything unexpected → 500 {"detail": "Internal Server Error"}, never the cause's text.
// Domain errors with retryAfterSeconds carry a Retry-After header.
import { TRPCError } from '@trpc/server';
import { PROCEDURES, type ProcedureInfo } from '../../../routers/index.js';
import { appErrorOf, inputIssuesOf, type ErrorReason } from '../../errors.js';
import { BODY_SHAPES, type BodyShape } from './legacy-shapes.js';
import { issuesToDetail, type IssueLike } from './validation-detail.js';

export interface RestError {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const STATUS: Record<string, number> = {
  BAD_REQUEST: 400,
  PARSE_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_SUPPORTED: 405,
  TIMEOUT: 408,
  CONFLICT: 409,
  GONE: 410,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE_CONTENT: 422,
  TOO_MANY_REQUESTS: 429,
  CLIENT_CLOSED_REQUEST: 499,
  INTERNAL_SERVER_ERROR: 500,
  NOT_IMPLEMENTED: 501,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
};

const REASON_PHRASE: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' };

/** A legacy answer: its status and the shape of its body. */
export interface LegacyAnswer {
  status: number;
  body: BodyShape;
}

const {
  detail,
  errorKey,
  errorKeys,
  messageKey,
  bareString,
  plainNotFound,
  v0Status,
  v0Action,
  v0ActionNotFound,
  oauthError,
  fieldValidation,
} = BODY_SHAPES;

/** The conversation page's routes say why they cannot have something now as {"error": …} (the web UI shows that text). */
const onConversationPage = (status: number) => ({
  conversationRuntime: { status, body: errorKey },
  conversationWorkspace: { status, body: errorKey },
});
/** The V1 git searches answer FastAPI's {"detail": …} where /api/user/* has the reference's V0 shapes. */
const onGitV1 = (status: number) => ({ gitV1: { status, body: detail } });
/** The 2026 conversation routes answer FastAPI's {"detail": …} throughout (the reference's HTTPException). */
const onV1Conversations = (status: number) => ({
  appConversationActions: { status, body: detail },
  appConversationFiles: { status, body: detail },
});
/** V0 start/stop answer {"status":"error","conversation_id",…}. */
const onV0Actions = (answer: LegacyAnswer) => ({ 'conversationRuntime.start': answer, 'conversationRuntime.stop': answer });

/**
 * Every failure reason's answer; `routers` holds the rows of routers (the first segment of
 * the procedure path) or of single procedures (the whole path) where the reference answers
 * the same failure differently. A procedure's row wins over its router's.
 */
export const FAILURES: Record<ErrorReason, LegacyAnswer & { routers?: Record<string, LegacyAnswer> }> = {
  settings_not_found: {
    status: 404,
    body: errorKey,
    routers: { conversations: { status: 400, body: v0Status('CONFIGURATION$SETTINGS_NOT_FOUND') } },
  },
  settings_reset_removed: { status: 410, body: errorKey },
  llm_key_missing: { status: 400, body: v0Status('STATUS$ERROR_LLM_AUTHENTICATION') },
  // The V1 routes (secretsV1) answer FastAPI's {"detail": …} where V0 had its own keys.
  // An organisation's secrets (ours, docs/organizations.md): a taken name is a conflict.
  secret_exists: {
    status: 400,
    body: messageKey,
    routers: { secretsV1: { status: 400, body: detail }, organizationSecrets: { status: 409, body: detail } },
  },
  secret_not_found: {
    status: 404,
    body: errorKey,
    routers: {
      secretsV1: { status: 404, body: detail },
      sandboxSecrets: { status: 404, body: detail },
      organizationSecrets: { status: 404, body: detail },
    },
  },
  secret_limit: { status: 409, body: detail },
  invalid_provider_token: {
    status: 401,
    body: errorKey,
    routers: { user: { status: 401, body: bareString }, secretsV1: { status: 401, body: detail }, ...onGitV1(401) },
  },
  provider_unreachable: { status: 502, body: errorKey, routers: { secretsV1: { status: 502, body: detail }, ...onGitV1(502) } },
  // Storing a token for such a host is invalid input; using one stored earlier is refused.
  provider_host_not_allowed: {
    status: 422,
    body: BODY_SHAPES.validation,
    routers: { user: { status: 403, body: errorKey }, ...onGitV1(403) },
  },
  // users/git-info: the key is fine, the user has no provider connected (a 401 would read as signed out).
  git_token_required: { status: 401, body: bareString, routers: { users: { status: 403, body: detail }, ...onGitV1(401) } },
  provider_unsupported: { status: 400, body: bareString, routers: onGitV1(400) },
  provider_refused: { status: 403, body: errorKey, routers: onGitV1(403) },
  provider_not_found: { status: 404, body: errorKey, routers: onGitV1(404) },
  provider_rate_limited: { status: 429, body: errorKey, routers: onGitV1(429) },
  provider_busy: { status: 503, body: errorKey, routers: onGitV1(503) },
  repository_access_denied: { status: 401, body: bareString },
  conversation_not_found: {
    status: 404,
    body: v0Status('CONVERSATION$NOT_FOUND'),
    routers: {
      conversationRuntime: { status: 404, body: detail },
      conversationWorkspace: { status: 404, body: detail },
      sharing: { status: 404, body: detail },
      ...onV1Conversations(404),
      ...onV0Actions({ status: 404, body: v0ActionNotFound }),
    },
  },
  conversation_not_running: {
    status: 409,
    body: detail,
    routers: { ...onConversationPage(409), ...onV0Actions({ status: 409, body: v0Action }) },
  },
  sandbox_gone: { status: 409, body: detail, routers: { ...onConversationPage(409), ...onV0Actions({ status: 409, body: v0Action }) } },
  agent_server_unavailable: { status: 503, body: detail, routers: onConversationPage(503) },
  agent_server_failed: { status: 502, body: detail, routers: onConversationPage(502) },
  workspace_path_not_found: { status: 404, body: errorKey, routers: onV1Conversations(404) },
  event_not_found: { status: 404, body: errorKey },
  invalid_conversation_id: { status: 400, body: detail },
  parent_conversation_not_found: { status: 404, body: detail },
  start_task_not_found: { status: 404, body: plainNotFound },
  sandbox_not_found: { status: 404, body: plainNotFound },
  sandbox_spec_not_found: { status: 404, body: plainNotFound },
  sandbox_workspace_gone: { status: 404, body: plainNotFound },
  sandbox_spec_unconfigured: { status: 409, body: detail },
  sandbox_limit_reached: {
    status: 429,
    body: detail,
    routers: { ...onConversationPage(429), ...onV0Actions({ status: 429, body: v0Action }) },
  },
  sandbox_starts_busy: { status: 503, body: detail },
  sandbox_runtime_unavailable: { status: 503, body: detail },
  sandbox_isolation_unavailable: { status: 503, body: detail },
  sandbox_spec_unrunnable: { status: 400, body: detail },
  sandbox_being_deleted: { status: 409, body: detail },
  sandbox_paused: { status: 409, body: detail },
  sandbox_resume_failed: {
    status: 503,
    body: detail,
    routers: { ...onConversationPage(503), ...onV0Actions({ status: 503, body: v0Action }) },
  },
  webhook_conversation_id_missing: { status: 400, body: detail },
  conversation_exists: { status: 409, body: detail },
  start_request_refused: { status: 422, body: fieldValidation },
  profile_not_found: { status: 404, body: detail },
  agent_switch_refused: { status: 400, body: detail },
  agent_switch_timed_out: { status: 504, body: detail },
  pending_messages_full: { status: 429, body: detail },
  budget_reached: { status: 409, body: detail },
  monthly_budget_reached: { status: 409, body: detail },
  daily_conversation_limit_reached: { status: 429, body: BODY_SHAPES.quotaDetail },
  llm_provider_not_fronted: { status: 400, body: detail },
  model_not_allowed: { status: 403, body: detail },
  too_large_to_serve: { status: 413, body: detail },
  provider_token_not_found: { status: 404, body: detail },
  // The 2026 surface (docs/api.md "2026 /api/v1 surface"): the reference's bodies where it has them.
  legacy_settings_keys: { status: 422, body: errorKeys },
  marketplace_names_duplicated: { status: 400, body: errorKey },
  llm_profile_not_found: { status: 404, body: detail },
  llm_profile_exists: { status: 409, body: detail },
  llm_profile_limit: { status: 409, body: detail },
  llm_profile_referenced: { status: 409, body: detail },
  agent_profile_not_found: { status: 404, body: detail },
  agent_profile_exists: { status: 409, body: detail },
  agent_profile_limit: { status: 409, body: detail },
  not_an_api_key: { status: 400, body: detail },
  api_key_not_found: { status: 404, body: detail },
  not_an_admin: { status: 403, body: detail },
  oidc_refused: { status: 401, body: detail },
  oidc_not_allowed: { status: 403, body: detail },
  oidc_provider_unreachable: { status: 502, body: detail },
  secrets_not_exposed: { status: 403, body: detail },
  organization_not_found: { status: 404, body: detail },
  organization_name_taken: { status: 409, body: detail },
  org_budget_invalid: { status: 400, body: detail },
  organization_limit: { status: 409, body: detail },
  org_permission_denied: { status: 403, body: detail },
  org_header_mismatch: { status: 400, body: detail },
  org_personal: { status: 403, body: detail },
  org_member_not_found: { status: 404, body: detail },
  org_last_owner: { status: 400, body: detail },
  invitation_not_found: { status: 404, body: detail },
  invitation_not_pending: { status: 409, body: detail },
  invitation_limit: { status: 409, body: detail },
  invitation_invalid: { status: 400, body: detail },
  invitation_expired: { status: 400, body: detail },
  email_mismatch: { status: 403, body: detail },
  already_member: { status: 409, body: detail },
  device_authorization_pending: { status: 400, body: oauthError('authorization_pending') },
  device_slow_down: { status: 400, body: oauthError('slow_down') },
  device_code_expired: { status: 400, body: oauthError('expired_token') },
  device_access_denied: { status: 400, body: oauthError('access_denied') },
  device_code_invalid: { status: 400, body: oauthError('invalid_grant') },
  device_grant_type_unsupported: { status: 400, body: oauthError('unsupported_grant_type') },
  device_user_code_unknown: { status: 404, body: detail },
  // Lifecycle webhooks: ours, in FastAPI's shapes (a refused URL is invalid input, as a refused provider host).
  webhook_endpoint_not_found: { status: 404, body: detail },
  webhook_url_not_allowed: { status: 422, body: fieldValidation },
  webhook_endpoint_limit: { status: 409, body: detail },
  // MCP server tests: the reference's HTTPException details.
  mcp_server_not_found: { status: 404, body: detail },
  mcp_stdio_not_testable: { status: 422, body: detail },
  mcp_test_unavailable: { status: 503, body: detail },
  automations_not_available: { status: 404, body: detail },
  // Those every operation can meet; listed by TRANSPORT_FAILURES.
  rate_limited: { status: 429, body: messageKey },
  database_unavailable: { status: 503, body: detail },
  json_too_deep: { status: 422, body: BODY_SHAPES.validation },
};

export function legacyAnswerFor(procedurePath: string | undefined, reason: ErrorReason): LegacyAnswer {
  const row = FAILURES[reason];
  return row.routers?.[procedurePath ?? ''] ?? row.routers?.[procedurePath?.split('.')[0] ?? ''] ?? row;
}

export function toRestError(error: unknown, procedurePath: string | undefined): RestError {
  const trpcError = error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error });
  const issues = inputIssuesOf(trpcError) as IssueLike[] | null;
  if (issues) {
    const meta = procedurePath ? PROCEDURES.get(procedurePath)?.meta : undefined;
    return { status: 422, body: { detail: issuesToDetail(issues, meta) } };
  }
  const appError = appErrorOf(trpcError);
  if (appError) {
    const headers = appError.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(appError.retryAfterSeconds) };
    const withHeaders = (answer: Omit<RestError, 'headers'>): RestError => ({ ...answer, ...(headers ? { headers } : {}) });
    if (appError.reason) {
      const answer = legacyAnswerFor(procedurePath, appError.reason);
      return withHeaders({ status: answer.status, body: answer.body.build(appError.message, appError.fields) });
    }
    const status = STATUS[appError.code] ?? 500;
    const message = status >= 500 && status !== 502 && status !== 503 ? REASON_PHRASE[500] : appError.message;
    return withHeaders({ status, body: { detail: message } });
  }
  const status = STATUS[trpcError.code] ?? 500;
  if (status >= 500) return { status: 500, body: { detail: REASON_PHRASE[500] } };
  return { status, body: { detail: REASON_PHRASE[status] ?? trpcError.message } };
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * What the REST edge itself may answer on an operation, whatever the procedure does: no or a
 * wrong key (or a session cookie sent cross-site), invalid input (any operation: a NUL or reserved key in any parameter), a body
 * too large, not JSON or not parseable, a path parameter that forms no route, the rate
 * limits, and the database being down.
 */
function transportFailures(procedure: ProcedureInfo): [number, BodyShape][] {
  const route = procedure.meta!.openapi!;
  // An open route (the device flow's own steps) refuses no credential.
  const credentials: [number, BodyShape][] = [
    [401, detail],
    [403, detail], // a browser-session request from another site or origin
  ];
  const failures: [number, BodyShape][] = [
    ...(procedure.meta?.auth === 'none' ? [] : credentials),
    [422, BODY_SHAPES.validation],
    [legacyAnswerFor(undefined, 'rate_limited').status, legacyAnswerFor(undefined, 'rate_limited').body],
    [legacyAnswerFor(undefined, 'database_unavailable').status, legacyAnswerFor(undefined, 'database_unavailable').body],
  ];
  if (BODY_METHODS.has(route.method)) failures.push([413, detail], [415, detail]);
  if (route.path.includes('{')) failures.push([404, detail]);
  return failures;
}

/** Every status a REST operation can answer besides success, with the body shapes of each. */
export function restFailuresOf(procedure: ProcedureInfo): Map<number, { shapes: BodyShape[]; reasons: string[] }> {
  const byStatus = new Map<number, { shapes: BodyShape[]; reasons: string[] }>();
  const add = (status: number, shape: BodyShape, reason: string) => {
    const entry = byStatus.get(status) ?? { shapes: [], reasons: [] };
    if (!entry.shapes.some((known) => known.schema === shape.schema)) entry.shapes.push(shape);
    entry.reasons.push(reason);
    byStatus.set(status, entry);
  };
  for (const [status, shape] of transportFailures(procedure)) add(status, shape, 'request');
  for (const reason of procedure.meta?.errors ?? []) {
    const answer = legacyAnswerFor(procedure.path, reason);
    add(answer.status, answer.body, reason);
  }
  return byStatus;
}
