// The outcome of a call to the service as plain data a component renders: what server actions
// return to their forms, and what client components keep in state.
import { fieldErrorsOf, isAppClientError, retryAfterSecondsOf } from '@agent-control-plane/client';

export interface ActionResult {
  ok: boolean;
  message: string;
  /** Validation messages by dotted field path, shown next to the fields. */
  fieldErrors: Record<string, string>;
  /** Set for 429 and 503: when to try again. */
  retryAfterSeconds: number | null;
}

export const idle: ActionResult = { ok: false, message: '', fieldErrors: {}, retryAfterSeconds: null };

export function succeeded(message: string): ActionResult {
  return { ...idle, ok: true, message };
}

/** Turns a failed call into a form result; anything not from the service is rethrown. */
export function failed(error: unknown): ActionResult {
  if (!isAppClientError(error)) throw error;
  const fieldErrors = fieldErrorsOf(error);
  // Field messages are shown next to their fields; the summary only points at them.
  const message = Object.keys(fieldErrors).length > 0 ? 'Please correct the marked fields.' : error.message;
  return { ok: false, message, fieldErrors, retryAfterSeconds: retryAfterSecondsOf(error) };
}
