// What a failing agent server said, without what was sent to it: its answers can echo the
// request (FastAPI validation errors quote the input; messages may quote keys or secrets).

/** Every string in a request body (the values a failing agent server may echo back). */
export function stringsOf(value: unknown, found: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') found.push(value);
  else if (value && typeof value === 'object' && depth < 32) for (const child of Object.values(value)) stringsOf(child, found, depth + 1);
  return found;
}

/** Strings this short are words and numbers, not secrets; redacting them would garble the summary. */
const MIN_REDACTED_LENGTH = 6;
/** Long unbroken runs of key-like characters: credentials whatever they belong to. */
const KEY_LIKE = /[A-Za-z0-9_\-+/=.]{24,}/g;

/**
 * The agent server's error without what we sent: FastAPI validation errors echo the
 * offending `input`, and any message may quote the LLM key or secrets of the request. Keeps
 * the locations and messages (at most 300 characters), with every sent string of some length
 * and every key-like run of characters replaced by [redacted]; nothing of a non-JSON body.
 */
export function errorSummary(body: string, sent: readonly string[] = []): string {
  let summary: string;
  try {
    const parsed = JSON.parse(body) as { detail?: unknown; exception?: unknown };
    if (Array.isArray(parsed.detail)) {
      summary = parsed.detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg ?? 'invalid'}`).join('; ');
    } else {
      const message = typeof parsed.exception === 'string' ? parsed.exception : typeof parsed.detail === 'string' ? parsed.detail : null;
      if (!message) return '';
      summary = message;
    }
  } catch {
    return '';
  }
  for (const secret of [...sent].filter((s) => s.length >= MIN_REDACTED_LENGTH).sort((a, b) => b.length - a.length)) {
    summary = summary.split(secret).join('[redacted]');
  }
  return `: ${summary.replace(KEY_LIKE, '[redacted]').slice(0, 300)}`;
}
