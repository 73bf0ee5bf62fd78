// Wire helpers shared by the resource schemas. This file imports only zod so the schemas
// can be shared with the Next.js frontend.
import { z } from 'zod';

/**
 * Wraps a leaf schema so trpc-to-openapi's input coercion cannot reach it.
 *
 * The REST adapter coerces number/boolean leaves of every input object with JavaScript
 * semantics (Boolean("false") === true) and does so by mutating the shared schema in
 * place, which would make tRPC behaviour depend on whether a REST request came first
 * (a trpc-to-openapi pitfall). A pipe is opaque to that walk; the identity transform keeps
 * the wire type and the OpenAPI document unchanged. test/unit/schemas.test.ts checks that
 * no REST input exposes a coercible leaf.
 */
export function noCoerce<T extends z.ZodType>(schema: T) {
  return schema.pipe(z.transform((value: z.output<T>) => value));
}

export const jsonBool = () => noCoerce(z.boolean());
export const jsonInt = () => noCoerce(z.number().int());
export const jsonNumber = () => noCoerce(z.number());

/**
 * The input of a procedure that takes nothing: callers may leave it out (`trpc.secrets.list.query()`).
 * Inputs whose fields are all optional do the same with `.prefault({})` (test/unit/schemas.test.ts).
 */
export const NoInputSchema = z.object({}).prefault({});

export const MessageResponseSchema = z.object({ message: z.string() }).meta({ id: 'MessageResponse' });

export const ProviderTypeSchema = z.enum(['github', 'gitlab', 'bitbucket', 'enterprise_sso']).meta({ id: 'ProviderType' });
export type ProviderType = z.infer<typeof ProviderTypeSchema>;

/** The mask shown in place of a stored credential; sending it back keeps the stored value. */
export const SECRET_MASK = '**********';

// Validation messages in the reference server's (pydantic's) words, so legacy clients that
// display `msg` read the same text. Set once, process-wide, when the schemas load.
z.config({
  customError(issue) {
    if (issue.code === 'invalid_type') {
      if (issue.input === undefined) return 'Field required';
      return TYPE_MESSAGES[issue.expected] ?? undefined;
    }
    if (issue.code === 'unrecognized_keys') return 'Extra inputs are not permitted';
    return undefined;
  },
});

const TYPE_MESSAGES: Record<string, string> = {
  string: 'Input should be a valid string',
  number: 'Input should be a valid number',
  int: 'Input should be a valid integer',
  boolean: 'Input should be a valid boolean',
  object: 'Input should be a valid dictionary',
  record: 'Input should be a valid dictionary',
  array: 'Input should be a valid list',
  null: 'Input should be None',
};

/** An integer from the query string ("7") or from a tRPC call (7); opaque to REST coercion. */
export const queryInt = () =>
  z.preprocess((value) => (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value), z.number().int());

/**
 * Keys refused anywhere in input: JSON.parse makes them own properties, but assigning them
 * (as validation and merging do) drops them silently or reaches Object's own members.
 */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Deepest nesting of free-form JSON that is stored as sent (agent processors, metrics). */
export const MAX_STORED_DEPTH = 20;

export interface ValueIssue {
  path: (string | number)[];
  message: string;
}

/** A reserved key, or a string or key with a NUL character (MongoDB-wire servers refuse those), or null. */
export function unsafeInputIssue(value: unknown, path: (string | number)[] = []): ValueIssue | null {
  if (typeof value === 'string') return value.includes('\u0000') ? { path, message: 'String should not contain NUL characters' } : null;
  if (typeof value !== 'object' || value === null || path.length > MAX_INPUT_WALK_DEPTH) return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = [...path, Array.isArray(value) ? Number(key) : key];
    if (!Array.isArray(value) && RESERVED_KEYS.has(key)) return { path: childPath, message: `"${key}" is a reserved name` };
    if (key.includes('\u0000')) return { path: childPath, message: 'Keys must not contain NUL characters' };
    const found = unsafeInputIssue(child, childPath);
    if (found) return found;
  }
  return null;
}
// Request bodies are refused beyond MAX_JSON_DEPTH (64 by default) before they are parsed.
const MAX_INPUT_WALK_DEPTH = 1000;

/**
 * What a MongoDB-wire database (FerretDB in particular) cannot store, in free-form JSON kept
 * as sent: keys that start with "$" or contain "." or NUL, reserved keys, arrays directly
 * inside arrays, and nesting deeper than MAX_STORED_DEPTH. At most `limit` issues.
 */
export function storageIssues(value: unknown, limit = 10): ValueIssue[] {
  const issues: ValueIssue[] = [];
  const visit = (node: unknown, path: (string | number)[], depth: number, inArray: boolean) => {
    if (issues.length >= limit || typeof node !== 'object' || node === null) return;
    if (depth > MAX_STORED_DEPTH) return void issues.push({ path, message: `Nested deeper than ${MAX_STORED_DEPTH} levels` });
    if (Array.isArray(node)) {
      if (inArray) return void issues.push({ path, message: 'Arrays directly inside arrays cannot be stored' });
      node.forEach((child, i) => visit(child, [...path, i], depth + 1, true));
      return;
    }
    for (const [key, child] of Object.entries(node)) {
      const problem = keyProblem(key);
      if (problem) issues.push({ path: [...path, key], message: problem });
      else visit(child, [...path, key], depth + 1, false);
      if (issues.length >= limit) return;
    }
  };
  visit(value, [], 0, false);
  return issues;
}

function keyProblem(key: string): string | null {
  if (RESERVED_KEYS.has(key)) return `"${key}" is a reserved name`;
  if (key.startsWith('$')) return 'Keys must not start with "$"';
  if (key.includes('.')) return 'Keys must not contain "."';
  if (key.includes('\u0000')) return 'Keys must not contain NUL characters';
  return null;
}

/** Free-form JSON stored as sent: the raw value is checked with storageIssues() first. */
export function storedJson<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    for (const issue of storageIssues(value)) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: value });
    return value;
  }, schema);
}

/** Refuses reserved keys of a record (validation would otherwise drop "__proto__" silently). */
export function withoutReservedKeys<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const key of Object.keys(value)) {
        if (RESERVED_KEYS.has(key)) ctx.addIssue({ code: 'custom', message: `"${key}" is a reserved name`, path: [key], input: value });
      }
    }
    return value;
  }, schema);
}

/** V1 paging (docs/api.md): page_id is an opaque string (a decimal offset), limit 1..100. */
export const PagingInputSchema = z.object({
  page_id: z.string().nullable().optional(),
  // Reference: limit > 100 fails an assert (500); we answer 422.
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(100),
});

/** The Cloud routes' paging (organisations, members): an offset as page_id, limit 1..100. */
export const pagingShape = (defaultLimit: number) => ({
  page_id: z.string().max(20).nullable().optional(),
  limit: queryInt().pipe(z.number().gt(0).max(100)).default(defaultLimit),
});

/** Batch ids from a repeated query parameter (?id=a&id=b), at most 100. */
export const idListSchema = () => z.array(z.string().min(1)).min(1).max(100);

export function pageOffset(pageId: string | null | undefined): number {
  // Reference: a non-integer page_id is treated as 0.
  const offset = Number.parseInt(pageId ?? '', 10);
  return Number.isFinite(offset) && offset > 0 ? offset : 0;
}

export function pageOf<T>(items: T[], offset: number, limit: number, total: number) {
  return { items, next_page_id: offset + limit < total ? String(offset + limit) : null };
}

/**
 * A page read as limit + 1 records (one query, no count): the extra record only says that
 * another page exists.
 */
export function pageFromExtra<T>(records: T[], offset: number, limit: number): { page: T[]; next_page_id: string | null } {
  return { page: records.slice(0, limit), next_page_id: records.length > limit ? String(offset + limit) : null };
}

export const SuccessSchema = z.object({ success: z.boolean() }).meta({ id: 'Success' });

/** A boolean from the query string ("true"/"false") or from a tRPC call; opaque to REST coercion. */
export const queryBool = () => z.preprocess((value) => (value === 'true' ? true : value === 'false' ? false : value), z.boolean());

/** An ISO-8601 datetime (query filters); kept as a string, parsed by the service. */
export const isoDateTime = () => z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'Input should be a valid datetime');

export const ConversationTriggerSchema = z
  .enum([
    'resolver',
    'gui',
    'suggested_task',
    'openhands_api',
    'slack',
    'microagent_management',
    'jira',
    'jira_dc',
    'linear',
    'bitbucket',
    'automation',
  ])
  .meta({ id: 'ConversationTrigger' });

/** A UUID as the reference accepts it: 32 hex digits, or dashed. */
export const UUID_PATTERN = /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/;
export const uuidString = () => z.string().regex(UUID_PATTERN, 'Input should be a valid UUID');
/** Our id form of a UUID: 32 lowercase hex digits. */
export const hexId = (uuid: string) => uuid.replace(/-/g, '').toLowerCase();
