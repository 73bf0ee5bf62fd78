// Maps a failed procedure to the legacy REST status and body (API.md B.0.1):
// - input validation → 422 {"detail": [{loc, msg, type}]} with FastAPI-style loc paths;
// - domain errors → their legacy body ({"error": ...}, {"message": ...}) or {"detail": msg};
// - anything unexpected → 500 {"detail": "Internal Server Error"}, never the cause's text.
import type { TRPCError } from '@trpc/server';
import { PROCEDURES } from '../../routers/index.js';
import { appErrorOf, inputIssuesOf, type InputIssue } from '../errors.js';
import type { Meta } from '../trpc.js';

export interface RestError {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface ValidationDetail {
  type: string;
  loc: (string | number)[];
  msg: string;
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

const REASON: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' };

interface IssueLike extends InputIssue {
  expected?: string;
  origin?: string;
  inclusive?: boolean;
  minimum?: unknown;
  maximum?: unknown;
  keys?: string[];
  format?: string;
}

export function toRestError(error: TRPCError, procedurePath: string | undefined): RestError {
  const issues = inputIssuesOf(error) as IssueLike[] | null;
  if (issues) {
    const meta = procedurePath ? PROCEDURES.get(procedurePath)?.meta : undefined;
    return { status: 422, body: { detail: issuesToDetail(issues, meta) } };
  }
  const appError = appErrorOf(error);
  if (appError) {
    const status = appError.restStatus ?? STATUS[appError.code] ?? 500;
    const body = appError.restBody ?? { detail: status >= 500 && status !== 502 && status !== 503 ? REASON[500] : appError.message };
    return { status, body, ...(appError.headers ? { headers: appError.headers } : {}) };
  }
  const status = STATUS[error.code] ?? 500;
  if (status >= 500) return { status: 500, body: { detail: REASON[500] } };
  return { status, body: { detail: REASON[status] ?? error.message } };
}

/** Where an input key came from: a {path} parameter, the query string, or the JSON body. */
function sourceOf(key: PropertyKey | undefined, meta: Meta | undefined): 'path' | 'query' | 'body' {
  const route = meta?.openapi;
  if (!route) return 'body';
  if (typeof key === 'string' && route.path.includes(`{${key}}`)) return 'path';
  return route.method === 'GET' || route.method === 'DELETE' ? 'query' : 'body';
}

export function issuesToDetail(issues: IssueLike[], meta?: Meta): ValidationDetail[] {
  const detail: ValidationDetail[] = [];
  for (const issue of issues) {
    const path = (issue.path ?? []).map((p) => (typeof p === 'symbol' ? String(p) : p)) as (string | number)[];
    const loc = [sourceOf(path[0], meta), ...path];
    if (issue.code === 'unrecognized_keys' && issue.keys) {
      // pydantic reports one error per extra key, located at the key itself.
      for (const key of issue.keys) detail.push({ type: 'extra_forbidden', loc: [...loc, key], msg: 'Extra inputs are not permitted' });
      continue;
    }
    detail.push({ type: issueType(issue), loc, msg: issue.message });
  }
  return detail;
}

/** pydantic's error type names for the zod issue kinds we produce. */
function issueType(issue: IssueLike): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.message === 'Field required') return 'missing';
      return (
        {
          string: 'string_type',
          number: 'float_type',
          int: 'int_type',
          boolean: 'bool_type',
          object: 'dict_type',
          record: 'dict_type',
          array: 'list_type',
        }[issue.expected ?? ''] ?? 'type_error'
      );
    case 'too_small':
      if (issue.origin === 'string') return 'string_too_short';
      if (issue.origin === 'array') return 'too_short';
      return issue.inclusive === false ? 'greater_than' : 'greater_than_equal';
    case 'too_big':
      if (issue.origin === 'string') return 'string_too_long';
      if (issue.origin === 'array') return 'too_long';
      return issue.inclusive === false ? 'less_than' : 'less_than_equal';
    case 'invalid_format':
      return issue.format === 'regex' ? 'string_pattern_mismatch' : `${issue.format ?? 'string'}_parsing`;
    case 'invalid_value':
      return 'enum';
    default:
      return 'value_error';
  }
}
