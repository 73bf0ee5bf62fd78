// What a frontend reads from a failed call: the code, the per-field validation messages, and
// how long to wait before retrying a 429 or 503.
import { TRPCClientError } from '@trpc/client';
import type { AppRouter } from './types.js';

export type AppClientError = TRPCClientError<AppRouter>;
export type AppErrorData = NonNullable<AppClientError['data']>;
/** One validation failure: `path` runs from the input's root into nested fields and list indexes. */
export type FieldError = NonNullable<AppErrorData['fieldErrors']>[number];

/**
 * Whether a thrown value is an error of this service's client. Checks the shape rather than
 * the class, so it also holds when a bundler ends up with two copies of @trpc/client.
 */
export function isAppClientError(error: unknown): error is AppClientError {
  return error instanceof TRPCClientError || (error instanceof Error && error.name === 'TRPCClientError' && 'shape' in error);
}

/** Validation messages keyed by dotted field path ('mcp_config.stdio_servers.0.name'); {} otherwise. */
export function fieldErrorsOf(error: unknown): Record<string, string> {
  const fieldErrors = isAppClientError(error) ? error.data?.fieldErrors : null;
  const byPath: Record<string, string> = {};
  for (const fieldError of fieldErrors ?? []) byPath[fieldError.path.join('.')] ??= fieldError.message;
  return byPath;
}

/** Seconds the service asks a client to wait before retrying (rate limits, 503s), or null. */
export function retryAfterSecondsOf(error: unknown): number | null {
  return isAppClientError(error) ? (error.data?.retryAfterSeconds ?? null) : null;
}
