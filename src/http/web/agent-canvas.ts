// Agent Canvas's index.html as the service sends it: the package's own file with one script
// added to <head>, written per request, which
//   - locks Canvas to this service as its Cloud backend (window.__AGENT_CANVAS_LOCK_TO_CLOUD__,
//     what Canvas's own static server writes for --lock-to-cloud). Locked to the page's own
//     origin Canvas uses the browser's cookie, so the service's sign-in is Canvas's sign-in;
//   - turns Canvas's telemetry off (window.__AGENT_CANVAS_DO_NOT_TRACK__: otherwise it reports an
//     anonymous install event to its vendor on first use, consent or not), as no analytics
//     leave the browser by default here.
// The page allows scripts from this origin, its inline scripts by their hashes (React Router's
// and this one: no 'unsafe-inline') and the CDN Canvas's diff viewer loads its editor from.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Where Canvas's diff viewer (@monaco-editor/react's default loader) loads Monaco from. */
const MONACO_CDN = 'https://cdn.jsdelivr.net';

/** A host header as browsers send it: a name or an IPv4/IPv6 address, an optional port. */
const HOST_HEADER = /^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/;

export interface CanvasIndex {
  /** The page and its Content-Security-Policy for a browser on `origin` (this service's). */
  render(origin: string): { html: string; csp: string };
}

/** A value as a JavaScript literal that cannot end the script element it sits in. */
function scriptLiteral(value: string): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const sha256 = (text: string) => `'sha256-${crypto.createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Hashes of the page's inline scripts (scripts with a src need none: 'self' covers them). */
function inlineScriptHashes(html: string): string[] {
  return [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)]
    .filter(([, attrs]) => !/\bsrc\s*=/i.test(attrs!))
    .map(([, , body]) => sha256(body!));
}

export function loadCanvasIndex(root: string): CanvasIndex {
  const html = fs.readFileSync(path.join(root, 'index.html'), 'utf8');
  const head = html.search(/<\/head>/i);
  if (head < 0) throw new Error(`${root}/index.html has no </head>: not an Agent Canvas build`);
  const own = inlineScriptHashes(html);
  return {
    render(origin) {
      const body = `(function(){window.__AGENT_CANVAS_LOCK_TO_CLOUD__=${scriptLiteral(origin)};window.__AGENT_CANVAS_DO_NOT_TRACK__=true;}());`;
      const scripts = ["'self'", ...new Set([...own, sha256(body)]), MONACO_CDN].join(' ');
      return {
        html: `${html.slice(0, head)}<script>${body}</script>${html.slice(head)}`,
        csp: `frame-ancestors 'self'; script-src ${scripts}; object-src 'none'; base-uri 'self'`,
      };
    },
  };
}

/** This service's origin as a browser reached it (scheme and Host header); null for a Host that is no host. */
export function requestOrigin(protocol: 'http' | 'https', host: string | undefined): string | null {
  return host && HOST_HEADER.test(host) ? new URL(`${protocol}://${host}`).origin : null;
}
