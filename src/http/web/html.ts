import type { ServerResponse } from 'node:http';

// The one HTML escape of the service's own pages: text placed in element content or in a quoted
// attribute value.
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The headers each of the service's own pages sends before anything else: never cached (what it
 * shows depends on who asks and may change at once), never framed, no type sniffing, and the
 * referrer the page can afford (none where its URL carries a token or a shared link).
 */
export function pageHeaders(res: ServerResponse, referrer: 'same-origin' | 'no-referrer'): void {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', referrer);
}
