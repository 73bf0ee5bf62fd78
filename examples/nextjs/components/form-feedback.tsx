// How forms show a call's outcome: the message (with the retry hint of a 429 or 503), and
// each validation message next to the field it is about.
import type { ActionResult } from '@/lib/action-result';

export function Outcome({ result }: { result: Pick<ActionResult, 'ok' | 'message' | 'retryAfterSeconds'> }) {
  if (!result.message) return null;
  const sentence = /[.!?]$/.test(result.message) ? result.message : `${result.message}.`;
  const retry = result.retryAfterSeconds === null ? '' : ` Try again in ${result.retryAfterSeconds} s.`;
  return (
    <p className={`notice ${result.ok ? 'ok' : 'error'}`} role="status">
      {sentence + retry}
    </p>
  );
}

/** Messages for a field and anything nested in it ('mcp_config' shows 'mcp_config.stdio_servers.0.name'). */
export function FieldErrors({ errors, field }: { errors: Record<string, string>; field: string }) {
  const matching = Object.entries(errors).filter(([path]) => path === field || path.startsWith(`${field}.`));
  return matching.map(([path, message]) => (
    <p className="field-error" key={path} data-field={path}>
      {path === field ? message : `${path.slice(field.length + 1)}: ${message}`}
    </p>
  ));
}
