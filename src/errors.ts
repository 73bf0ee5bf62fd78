// The one error vocabulary of the domain: tRPC error codes, a human message and, where a
// caller must tell failures apart, a machine-readable reason. Services throw AppError; the
// procedure middleware turns it into a TRPCError, and the REST edge decides the legacy status
// and body (src/http/rest/legacy-errors.ts). HTTP numbers and bodies never appear in domain code.
import { TRPCError } from '@trpc/server';

export type AppErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'GONE' // not a tRPC code: mapped to PRECONDITION_FAILED on tRPC, 410 on REST
  | 'PAYLOAD_TOO_LARGE'
  | 'UNPROCESSABLE_CONTENT'
  | 'TOO_MANY_REQUESTS'
  | 'BAD_GATEWAY'
  | 'SERVICE_UNAVAILABLE'
  | 'GATEWAY_TIMEOUT'
  | 'INTERNAL_SERVER_ERROR';

/** What went wrong, for failures that callers (and the legacy REST surface) tell apart. */
export type ErrorReason =
  | 'settings_not_found'
  | 'settings_reset_removed'
  | 'llm_key_missing'
  | 'secret_exists'
  | 'secret_not_found'
  | 'secret_limit'
  | 'api_key_not_found'
  | 'not_an_admin'
  | 'oidc_refused'
  | 'oidc_not_allowed'
  | 'oidc_provider_unreachable'
  | 'invalid_provider_token'
  | 'provider_unreachable'
  | 'provider_host_not_allowed'
  | 'git_token_required'
  | 'provider_refused'
  | 'provider_not_found'
  | 'provider_rate_limited'
  | 'provider_busy'
  | 'provider_unsupported'
  | 'repository_access_denied'
  | 'conversation_not_found'
  | 'invalid_conversation_id'
  | 'parent_conversation_not_found'
  | 'start_task_not_found'
  | 'sandbox_not_found'
  | 'sandbox_spec_not_found'
  | 'sandbox_workspace_gone'
  | 'sandbox_spec_unconfigured'
  | 'sandbox_limit_reached'
  | 'sandbox_starts_busy'
  | 'sandbox_runtime_unavailable'
  | 'sandbox_isolation_unavailable'
  | 'sandbox_spec_unrunnable'
  | 'webhook_conversation_id_missing'
  | 'provider_token_not_found'
  | 'rate_limited'
  | 'database_unavailable'
  | 'json_too_deep'
  | 'sandbox_being_deleted'
  | 'sandbox_resume_failed'
  | 'sandbox_limit_reached'
  | 'sandbox_paused'
  | 'conversation_not_running'
  | 'sandbox_gone'
  | 'agent_server_unavailable'
  | 'agent_server_failed'
  | 'workspace_path_not_found'
  | 'event_not_found'
  | 'legacy_settings_keys'
  | 'marketplace_names_duplicated'
  | 'llm_profile_not_found'
  | 'llm_profile_exists'
  | 'llm_profile_limit'
  | 'llm_profile_referenced'
  | 'agent_profile_not_found'
  | 'agent_profile_exists'
  | 'agent_profile_limit'
  | 'not_an_api_key'
  | 'secrets_not_exposed'
  | 'organization_not_found'
  // Organisations (docs/organizations.md).
  | 'organization_name_taken'
  | 'org_budget_invalid'
  | 'organization_limit'
  | 'org_permission_denied'
  | 'org_header_mismatch'
  | 'org_personal'
  | 'org_member_not_found'
  | 'org_last_owner'
  | 'invitation_not_found'
  | 'invitation_not_pending'
  | 'invitation_limit'
  | 'invitation_invalid'
  | 'invitation_expired'
  | 'email_mismatch'
  | 'already_member'
  // The device authorization flow: its token endpoint's RFC 8628 / OAuth errors, and the page's code.
  | 'device_authorization_pending'
  | 'device_slow_down'
  | 'device_code_expired'
  | 'device_access_denied'
  | 'device_code_invalid'
  | 'device_grant_type_unsupported'
  | 'device_user_code_unknown'
  | 'conversation_exists'
  | 'start_request_refused'
  | 'profile_not_found'
  | 'agent_switch_refused'
  | 'agent_switch_timed_out'
  | 'pending_messages_full'
  | 'too_large_to_serve'
  // Budgets (docs/budgets.md): a message that would run an agent stopped for a budget.
  | 'budget_reached'
  | 'monthly_budget_reached'
  // The daily conversation limit (docs/budgets.md).
  | 'daily_conversation_limit_reached'
  // The LLM gateway (docs/llm-gateway.md): a model whose provider it cannot front; one its user may not run.
  | 'llm_provider_not_fronted'
  | 'model_not_allowed'
  // Lifecycle webhooks (docs/webhooks.md).
  | 'webhook_endpoint_not_found'
  | 'webhook_url_not_allowed'
  | 'webhook_endpoint_limit'
  // MCP server tests (docs/api.md "MCP servers").
  | 'mcp_server_not_found'
  | 'mcp_stdio_not_testable'
  | 'mcp_test_unavailable'
  | 'automations_not_available';

export interface AppErrorOptions {
  reason?: ErrorReason;
  /** When a retry may succeed (e.g. a limit frees up); REST sends it as Retry-After. */
  retryAfterSeconds?: number;
  /** Ids the failure is about, for error bodies that name them (e.g. conversation_id). */
  fields?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly reason: ErrorReason | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly fields: Record<string, string>;

  constructor(code: AppErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.reason = options.reason;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.fields = options.fields ?? {};
  }
}

const TRPC_CODE: Record<AppErrorCode, TRPCError['code']> = {
  BAD_REQUEST: 'BAD_REQUEST',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  GONE: 'PRECONDITION_FAILED',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNPROCESSABLE_CONTENT: 'UNPROCESSABLE_CONTENT',
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  BAD_GATEWAY: 'BAD_GATEWAY',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  GATEWAY_TIMEOUT: 'GATEWAY_TIMEOUT',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
};

export function toTRPCError(error: unknown): TRPCError {
  if (error instanceof TRPCError) return error;
  if (error instanceof AppError) {
    return new TRPCError({ code: TRPC_CODE[error.code], message: error.message, cause: error });
  }
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Internal Server Error', cause: error });
}

/** Finds the AppError behind a TRPCError, if the failure came from our domain code. */
export function appErrorOf(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    if (current instanceof AppError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Mongo duplicate-key error (E11000): MongoDB's, and FerretDB's (on update as the write gate reports it). */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}

export interface InputIssue {
  code?: string;
  path?: readonly PropertyKey[];
  message: string;
  [detail: string]: unknown;
}

/**
 * A validation failure found outside the input schema (e.g. a NUL character anywhere in
 * the input). Carries zod-shaped issues so both transports report it like a schema error.
 * (zod 4's ZodError is not an Error subclass, and tRPC drops its issues when wrapping it.)
 */
export class InputIssuesError extends Error {
  constructor(readonly issues: InputIssue[]) {
    super('Input validation failed');
    this.name = 'InputIssuesError';
  }
}

/** The field issues behind a BAD_REQUEST from input validation, or null. */
export function inputIssuesOf(error: TRPCError): InputIssue[] | null {
  if (error.code !== 'BAD_REQUEST') return null;
  const cause = error.cause as { name?: string; issues?: unknown } | undefined;
  const fromValidation = cause?.name === 'ZodError' || cause instanceof InputIssuesError;
  return fromValidation && Array.isArray(cause?.issues) ? (cause.issues as InputIssue[]) : null;
}
