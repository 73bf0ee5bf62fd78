// The one place that decides which status and body a failed procedure becomes on the legacy
// REST surface (the reference server's own shapes):
// - input validation → 422 {"detail": [{loc, msg, type}]} (validation-detail.ts);
// - domain errors → the legacy answer LEGACY_ANSWERS names for the router and the error's
//   reason, else {"detail": message} with the code's status;
// - anything unexpected → 500 {"detail": "Internal Server Error"}, never the cause's text.
// Domain errors with retryAfterSeconds carry a Retry-After header.
import { TRPCError } from '@trpc/server';
import { PROCEDURES } from '../../routers/index.js';
import { appErrorOf, inputIssuesOf, type ErrorReason } from '../errors.js';
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

/** A legacy answer: the body built from the error's message (and the ids it names), and a status when not the code's own. */
export interface LegacyAnswer {
  status?: number;
  body: (message: string, fields: Record<string, string>) => unknown;
}

const errorKey = (message: string) => ({ error: message });
const messageKey = (message: string) => ({ message });
/** The V0 conversation routes' error body, with the frontend's i18n message id. */
const v0Status = (msgId: string) => (message: string) => ({ status: 'error', message, msg_id: msgId });
/** Legacy: the reference answers a bare JSON string. */
const bareString = (message: string) => message;
/** Legacy: the reference hides which thing was missing. */
const plainNotFound = () => ({ detail: REASON_PHRASE[404] });
/** The V0 start/stop error body: the conversation id, and the message unless the conversation is unknown. */
const v0Action = (message: string, fields: Record<string, string>) => ({
  status: 'error',
  conversation_id: fields.conversation_id ?? null,
  message,
});
const v0ActionNotFound = (_message: string, fields: Record<string, string>) => ({
  status: 'error',
  conversation_id: fields.conversation_id ?? null,
});
/** Why the conversation page cannot have something now, as {"error": …} (the web UI shows that text). */
const sandboxRefusals: Partial<Record<ErrorReason, LegacyAnswer>> = {
  conversation_not_running: { body: errorKey },
  sandbox_gone: { body: errorKey },
  sandbox_limit_reached: { body: errorKey },
  sandbox_resume_failed: { body: errorKey },
  agent_server_unavailable: { body: errorKey },
  agent_server_failed: { body: errorKey },
  workspace_path_not_found: { body: errorKey },
  event_not_found: { body: errorKey },
};
const v0Actions: Partial<Record<ErrorReason, LegacyAnswer>> = {
  conversation_not_found: { body: v0ActionNotFound },
  sandbox_gone: { body: v0Action },
  conversation_not_running: { body: v0Action },
  sandbox_limit_reached: { body: v0Action },
  sandbox_resume_failed: { body: v0Action },
};

/**
 * Legacy answers by procedure path or router (its first segment), then by the error's reason.
 * Reasons under '*' answer the same everywhere. A procedure's row wins over its router's,
 * which wins over '*'.
 */
export const LEGACY_ANSWERS: Record<string, Partial<Record<ErrorReason, LegacyAnswer>>> = {
  settings: {
    settings_not_found: { body: errorKey },
    settings_reset_removed: { body: errorKey },
  },
  secrets: {
    secret_exists: { status: 400, body: messageKey },
    secret_not_found: { body: errorKey },
  },
  gitProviders: {
    invalid_provider_token: { body: errorKey },
    provider_unreachable: { body: errorKey },
  },
  user: {
    git_token_required: { body: bareString },
    invalid_provider_token: { body: bareString },
    provider_unsupported: { body: bareString },
    provider_unreachable: { body: errorKey },
    provider_refused: { body: errorKey },
    provider_not_found: { body: errorKey },
    provider_rate_limited: { body: errorKey },
    provider_busy: { body: errorKey },
  },
  conversations: {
    settings_not_found: { body: v0Status('CONFIGURATION$SETTINGS_NOT_FOUND') },
    llm_key_missing: { body: v0Status('STATUS$ERROR_LLM_AUTHENTICATION') },
    conversation_not_found: { body: v0Status('CONVERSATION$NOT_FOUND') },
    repository_access_denied: { body: bareString },
  },
  conversationRuntime: sandboxRefusals,
  conversationWorkspace: sandboxRefusals,
  'conversationRuntime.start': v0Actions,
  'conversationRuntime.stop': v0Actions,
  '*': {
    sandbox_not_found: { body: plainNotFound },
    sandbox_spec_not_found: { body: plainNotFound },
    sandbox_workspace_gone: { body: plainNotFound },
    start_task_not_found: { body: plainNotFound },
  },
};

export function legacyAnswerFor(procedurePath: string | undefined, reason: ErrorReason | undefined): LegacyAnswer | undefined {
  if (!reason) return undefined;
  const router = procedurePath?.split('.')[0] ?? '';
  return (
    (procedurePath ? LEGACY_ANSWERS[procedurePath]?.[reason] : undefined) ??
    LEGACY_ANSWERS[router]?.[reason] ??
    LEGACY_ANSWERS['*']?.[reason]
  );
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
    const answer = legacyAnswerFor(procedurePath, appError.reason);
    const status = answer?.status ?? STATUS[appError.code] ?? 500;
    const body = answer
      ? answer.body(appError.message, appError.fields)
      : { detail: status >= 500 && status !== 502 && status !== 503 ? REASON_PHRASE[500] : appError.message };
    const headers = appError.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(appError.retryAfterSeconds) };
    return { status, body, ...(headers ? { headers } : {}) };
  }
  const status = STATUS[trpcError.code] ?? 500;
  if (status >= 500) return { status: 500, body: { detail: REASON_PHRASE[500] } };
  return { status, body: { detail: REASON_PHRASE[status] ?? trpcError.message } };
}
