// The REST door: every /api request but the docs page. In order: the per-client-IP limit and
// no-cache headers (every /api path, matched or not; a request with credentials that a
// procedure will check is charged there instead, to what they prove: src/trpc/procedures.ts), the route table (routes.ts first, then
// the procedures on their legacy paths), the body (the one reader: content type, size, depth),
// the final input, the procedure, and one writer of every answer (answers.ts). The reference's
// legacy shims live here, on the route they belong to.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseSize } from '../../config/config.js';
import type { Context, Deps } from '../../trpc/context.js';
import { readRestForm, readRestJson } from '../body.js';
import { createRequestContext } from '../request-context.js';
import { carriesCredential } from '../request-credentials.js';
import { chargeClient, chargeLeftCall, factsOf } from '../pipeline.js';
import { NOT_AN_OBJECT, NOT_FOUND, setNoCache, writeFailure, writeJson, writeRestError } from './answers.js';
import { handlerRoutes } from './routes.js';
import { procedureRoutes, queryInput, RouteTable, type HandlerRoute, type ProcedureRoute } from './table.js';

/**
 * Paths of the REST door: /api and below, except the docs page (served with the web pages), and
 * the device flow's routes below /oauth/device/ (its verification page, /oauth/device itself,
 * is a web page).
 */
const REST_PATH = /^\/api(\/|$)|^\/oauth\/device\/./i;
const DOCS_PATH = /^\/api\/docs(\/|$)/i;

type Route = (HandlerRoute & { kind: 'handler' }) | (ProcedureRoute & { kind: 'procedure' });

/** Serves a request if it is one of the door's; false leaves it to the web routes. */
export function restDoor(deps: Deps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const table = new RouteTable<Route>([
    ...handlerRoutes(deps).map((route) => ({ ...route, kind: 'handler' as const })),
    ...procedureRoutes().map((route) => ({ ...route, kind: 'procedure' as const })),
  ]);
  const requestContext = createRequestContext(deps, 'rest');
  const limits = { maxBytes: parseSize(deps.config.http.maxBodySize), maxDepth: deps.config.http.maxJsonDepth };
  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown, procedurePath: string | undefined) =>
    writeFailure(res, error, procedurePath, factsOf(req).log, deps.config.http.maxBodySize);

  return (req, res) => {
    const facts = factsOf(req);
    if (!REST_PATH.test(facts.path) || DOCS_PATH.test(facts.path)) return false;
    const found = table.match(req.method ?? 'GET', facts.path);
    if (!(found?.route.kind === 'handler' && found.route.open)) {
      try {
        // A path no route takes, or a route that calls no procedure (the legacy 404s), checks
        // no credentials there: charged here whatever it carries.
        const checked = !!found && (found.route.kind === 'procedure' || found.route.procedurePath !== undefined);
        chargeClient(deps, req, 1, checked && carriesCredential(req));
      } catch (error) {
        fail(req, res, error, undefined);
        return true;
      }
      setNoCache(res);
    }
    if (!found) {
      req.resume();
      writeRestError(res, NOT_FOUND);
      return true;
    }
    const { route, params } = found;
    const procedurePath = route.kind === 'procedure' ? route.procedure.path : route.procedurePath;
    serve(route, params)
      .catch((error: unknown) => {
        if (res.headersSent) return void (res.writableEnded || res.destroy());
        if (route.kind === 'procedure') res.setHeader('Content-Type', 'application/json'); // as on success
        fail(req, res, error, procedurePath);
      })
      .catch((error: unknown) => facts.log.error({ err: error }, 'answering a failure failed'));
    return true;

    async function serve(route: Route, params: Record<string, string>): Promise<void> {
      const reads = route.kind === 'procedure' ? 'json-object' : route.body;
      let body: unknown;
      try {
        body = reads === 'none' ? undefined : reads === 'form' ? await readRestForm(req, limits) : await readRestJson(req, limits);
      } catch (error) {
        chargeLeftCall(deps, req); // refused before any procedure checked the credentials
        throw error;
      }
      if (
        (reads === 'json-object' || reads === 'form') &&
        body !== undefined &&
        (typeof body !== 'object' || body === null || Array.isArray(body))
      ) {
        chargeLeftCall(deps, req);
        return writeRestError(res, NOT_AN_OBJECT);
      }
      if (route.kind === 'handler') {
        const abort = new AbortController();
        res.on('close', () => abort.abort());
        const context = (withBrowser: boolean) => requestContext(req, withBrowser ? res : undefined);
        return route.handle({ req, res, params, query: new URLSearchParams(facts.search), body, context, signal: abort.signal });
      }
      const input = route.hasInput ? procedureInput(route, params, body as Record<string, unknown> | undefined, facts.search) : undefined;
      const ctx: Context = await requestContext(req, res);
      const data = await route.procedure.call({
        path: route.procedure.path,
        ctx,
        type: route.procedure.type as 'query' | 'mutation',
        getRawInput: async () => input,
        signal: undefined,
        batchIndex: 0,
      });
      writeJson(res, route.successStatus, data);
    }
  };
}

/** GET and DELETE take the query string, other methods the JSON body; path parameters win. */
function procedureInput(route: ProcedureRoute, params: Record<string, string>, body: Record<string, unknown> | undefined, search: string) {
  const fromQuery = route.method === 'GET' || route.method === 'DELETE';
  const input: Record<string, unknown> = { ...(fromQuery ? queryInput(search, route.listKeys) : body), ...params };
  // Legacy: POST /api/v1/sandboxes takes sandbox_spec_id from the query string too; the body's wins.
  if (route.procedure.path === 'sandboxes.start' && input.sandbox_spec_id === undefined) {
    const fromSearch = new URLSearchParams(search).get('sandbox_spec_id');
    if (fromSearch !== null) input.sandbox_spec_id = fromSearch;
  }
  return input;
}
