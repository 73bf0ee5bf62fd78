// createApp(deps): the service's one request listener (tests start it on port 0). Every
// request passes the pipeline once (pipeline.ts: id and access line, CORS, client facts),
// then goes to exactly one of:
//   health and metrics (open, unlimited) → /trpc (trpc.ts) → the LLM gateway (/llm/…,
//   llm-gateway.ts: agents' LLM calls, with their conversation's token) → agent servers on the
//   service's origin (/agent-servers/…, agent-server-proxy.ts; its sockets through `upgrade`) → the
//   REST door (rest/: every /api path but the docs page) → the web pages on express (web/: docs
//   page, sign-in, web UI, the JSON 404).
// The per-IP limit and the credentials are the transports' next steps, each through the one
// function for it (pipeline.ts chargeClient, credentials.ts). The hot requests never reach
// express: its per-request setup cost more CPU than a whole settings read (docs/performance.md).
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Deps } from '../trpc/context.js';
import { agentServerProxy } from './agent-server-proxy.js';
import { llmGatewayMount } from './llm-gateway.js';
import { createPipeline, factsOf } from './pipeline.js';
import { restDoor } from './rest/index.js';
import { trpcMount } from './trpc.js';
import { webRoutes } from './web/index.js';
import type { ServedUi } from './web/served-ui.js';

/** The request listener, with the server's 'upgrade' listener and what to close on stop. */
export type App = RequestListener & { upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void; close(): void };

export function createApp(deps: Deps, ui: ServedUi = { kind: 'none' }): App {
  const begin = createPipeline(deps);
  const health = healthRoutes(deps);
  const trpc = trpcMount(deps);
  const rest = restDoor(deps);
  const web = webRoutes(deps, ui);
  const llm = llmGatewayMount(deps.services.llmGateway, deps.log);
  const agents = agentServerProxy(deps.services.sandboxes, deps.log.child({ component: 'agent-server-proxy' }), (req) =>
    deps.limits.ip(factsOf(req).clientAddress),
  );
  const listener: RequestListener = (req, res) => {
    try {
      if (!begin(req, res)) return;
      const path = factsOf(req).path;
      if (health(req, res, path)) return;
      if (/^\/trpc(\/|$)/i.test(path)) return trpc(req, res);
      if (llm(req, res, path)) return;
      if (agents.http(req, res, path)) return;
      if (rest(req, res)) return;
      web(req, res);
    } catch (error) {
      failed(deps, req, res, error);
    }
  };
  return Object.assign(listener, { upgrade: agents.upgrade, close: agents.close });
}

/** An unexpected failure outside every handler's own error answers: logged, a bare 500. */
function failed(deps: Deps, req: IncomingMessage, res: ServerResponse, error: unknown): void {
  deps.log.error({ err: error, path: req.url?.split('?')[0] }, 'unhandled error');
  if (!res.headersSent) sendJson(res, 500, { detail: 'Internal Server Error' });
  else res.destroy();
}

const sendJson = (res: ServerResponse, status: number, value: unknown) => {
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
};

/** GET (and HEAD) of /alive, /health, /ready and /metrics; true when it answered. */
function healthRoutes(deps: Deps) {
  return (req: IncomingMessage, res: ServerResponse, pathname: string): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    // Paths match as the reference's router matches them: any case, a trailing slash allowed.
    switch (pathname.toLowerCase().replace(/\/$/, '')) {
      case '/alive':
        sendJson(res, 200, { status: 'ok' });
        return true;
      case '/health':
        sendJson(res, 200, 'OK'); // reference answers the JSON string "OK"
        return true;
      case '/ready':
        deps.db.ping().then(
          (database) => sendJson(res, database ? 200 : 503, { status: database ? 'ready' : 'not ready', checks: { database } }),
          (error: unknown) => failed(deps, req, res, error),
        );
        return true;
      case '/metrics':
        deps.metrics.registry.metrics().then(
          (text) => {
            res.setHeader('Content-Type', deps.metrics.registry.contentType);
            res.end(text);
          },
          (error: unknown) => failed(deps, req, res, error),
        );
        return true;
      default:
        return false;
    }
  };
}
