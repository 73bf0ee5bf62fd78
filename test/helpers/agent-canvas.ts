// Agent Canvas in the browser tests: the package's build from the cache (scripts/setup-agent-canvas.sh;
// npm test fetches it before the suite, after which no test needs the network), a recorder of
// every request a page makes (ours, the agent servers', and outside hosts), and Canvas served
// from another origin the way its own static server does (`--lock-to-cloud <this service>`),
// where Canvas signs in with the device flow instead of the cookie.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import type { Page } from 'playwright-core';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { loadCanvasIndex } from '../../src/http/web/agent-canvas.js';

/**
 * Outside hosts Canvas's pages may ask for, all harmless (nothing of the user's is sent): its
 * web fonts' stylesheet and files, and the logos of the MCP marketplace. With the machine's
 * network closed they fail, and the pages render with fallbacks. Anything else fails the test,
 * telemetry above all (the service turns it off: src/http/web/agent-canvas.ts).
 */
export const HARMLESS_OUTSIDE_HOSTS = ['fonts.googleapis.com', 'fonts.gstatic.com', 'cdn.simpleicons.org', 'cdn.jsdelivr.net'];

/** The cached Canvas build folder; says how to get it when it cannot be had here. */
export function agentCanvasBuild(): string {
  try {
    const out = execFileSync('bash', [path.join(PACKAGE_ROOT, 'scripts', 'setup-agent-canvas.sh')], { encoding: 'utf8' });
    return out.trim().split('\n').pop()!;
  } catch (error) {
    throw new Error(
      `Agent Canvas is not in the cache and could not be fetched (${(error as Error).message.split('\n')[0]}). ` +
        'Run `bash scripts/setup-agent-canvas.sh` once with the npm registry reachable (npm test does it before the suite).',
    );
  }
}

export interface Seen {
  method: string;
  url: string;
  status: number | null;
  /** Whether it carried an Authorization header (a key; cookie mode sends none). */
  authorization: boolean;
  /** The browser's error for a request that got no answer (a closed network, a refused CORS check). */
  failure?: string;
}

export interface Traffic {
  seen: Seen[];
  /** Answers of `origins` with status 404 or 5xx, and requests to outside hosts not in the allowed list. */
  problems(): string[];
  /** The outside hosts asked for, sorted. */
  outsideHosts(): string[];
  /** The requests to outside hosts, with their answer or the browser's error. */
  outsideRequests(): Seen[];
}

/** Records every request of the page; `origins` are ours, loopback others are the agent servers. */
export function recordTraffic(page: Page, origins: string[]): Traffic {
  const seen: Seen[] = [];
  page.on('response', (response) => {
    const request = response.request();
    seen.push({
      method: request.method(),
      url: request.url(),
      status: response.status(),
      authorization: 'authorization' in request.headers(),
    });
  });
  page.on('requestfailed', (request) => {
    const authorization = 'authorization' in request.headers();
    seen.push({
      method: request.method(),
      url: request.url(),
      status: null,
      authorization,
      failure: request.failure()?.errorText ?? 'failed',
    });
  });
  const outside = (url: string) => {
    const { protocol, hostname } = new URL(url);
    return /^(https?|wss?):$/.test(protocol) && hostname !== '127.0.0.1' && hostname !== 'localhost';
  };
  return {
    seen,
    problems: () =>
      seen.flatMap((s) => {
        const at = `${s.method} ${s.url} → ${s.status ?? s.failure}`;
        if (origins.includes(new URL(s.url).origin)) return s.status === 404 || (s.status ?? 0) >= 500 ? [at] : [];
        if (outside(s.url) && !HARMLESS_OUTSIDE_HOSTS.includes(new URL(s.url).hostname)) return [`outside host: ${at}`];
        return [];
      }),
    outsideHosts: () => [...new Set(seen.filter((s) => outside(s.url)).map((s) => new URL(s.url).hostname))].sort(),
    outsideRequests: () => seen.filter((s) => outside(s.url)),
  };
}

/** Canvas's build on another origin (localhost), locked to the URL set with lockTo, as its own static server serves it. */
export async function serveCanvasElsewhere(root: string): Promise<{ url: string; lockTo(cloudUrl: string): void; close(): Promise<void> }> {
  const index = loadCanvasIndex(root);
  let cloudUrl = '';
  const app = express();
  app.use(express.static(root, { index: false }));
  app.use((_req, res) => {
    const page = index.render(cloudUrl);
    res.setHeader('content-security-policy', page.csp).type('html').send(page.html);
  });
  const server = http.createServer(app);
  // Named localhost (another host than the service's 127.0.0.1, so another cookie jar), listening on IPv4.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}`,
    lockTo: (url) => void (cloudUrl = url),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
