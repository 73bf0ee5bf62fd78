// Input validation failures in the reference's (FastAPI/pydantic) shape:
// 422 {"detail": [{type, loc, msg}]} with loc starting at "path", "query" or "body".
import type { InputIssue } from '../../errors.js';
import type { Meta } from '../../trpc/init.js';

export interface ValidationDetail {
  type: string;
  loc: (string | number)[];
  msg: string;
}

export interface IssueLike extends InputIssue {
  expected?: string;
  origin?: string;
  inclusive?: boolean;
  minimum?: unknown;
  maximum?: unknown;
  keys?: string[];
  format?: string;
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
