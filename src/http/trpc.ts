// The tRPC mount at /trpc. First the checks that must happen before tRPC reads a request,
// answered in tRPC's own error envelope:
//   1. the per-client-IP rate limit for calls without credentials (each call of a batch
//      counts); calls with credentials are charged by the procedure middlewares, shared with
//      REST (src/trpc/procedures.ts): the user's limit, the sandbox's, or the address's after all;
//   2. the body, read by the one body reader (size, JSON nesting depth before anything
//      parses it); the query-string input's depth too;
//   3. subscriptions: no valid key → 401 before any event stream starts (tRPC itself would
//      answer 200 and send the error inside the stream).
// Then queries and mutations sent as JSON take the lean path (trpc-calls.ts: tRPC's rules
// without its Fetch Request and Response), and so do subscriptions by GET (trpc-subscriptions.ts:
// tRPC's event-stream wire without its web streams); the rest (streamed batches, form and
// binary bodies, other methods) tRPC's node:http adapter. Batches larger than TRPC_MAX_BATCH
// are refused (400). Errors that carry retryAfterSeconds get a Retry-After header. Both paths
// keep the pipeline's Vary (CORS: Origin) beside tRPC's own.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TRPCError } from '@trpc/server';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { appRouter, PROCEDURES } from '../../routers/index.js';
import { unsafeInputIssue } from '../../contract/common.schema.js';
import { parseSize } from '../config/config.js';
import type { Context, Deps } from '../trpc/context.js';
import { AppError, appErrorOf, InputIssuesError, toTRPCError } from '../errors.js';
import { trpcErrorAnswer } from '../library-internals.js';
import { BodyProblem, checkDepth, readLimited } from './body.js';
import { createRequestContext } from './request-context.js';
import { carriesCredential } from './request-credentials.js';
import { chargeClient, chargeLeftCall, factsOf } from './pipeline.js';
import { leanCalls, leanServes, withVary } from './trpc-calls.js';
import { leanSubscribes, leanSubscriptions } from './trpc-subscriptions.js';

/** tRPC reads a string `body` as the request's text instead of reading the stream again. */
type TrpcRequest = IncomingMessage & { body?: unknown };

/** Serves /trpc requests. */
export function trpcMount(deps: Deps) {
  const maxBodySize = parseSize(deps.config.http.maxBodySize);
  const maxBatchSize = deps.config.http.trpcMaxBatch;
  const requestContext = createRequestContext(deps, 'trpc');
  const errorHeaders = (errors: TRPCError[]): Record<string, string> => {
    const retryAfter = Math.max(0, ...errors.map((e) => appErrorOf(e)?.retryAfterSeconds ?? 0));
    return retryAfter > 0 ? { 'retry-after': String(retryAfter) } : {};
  };
  const lean = leanCalls({ router: appRouter, procedures: PROCEDURES, createContext: requestContext, maxBatchSize, errorHeaders });
  const subscriptions = leanSubscriptions({
    router: appRouter,
    procedures: PROCEDURES,
    createContext: requestContext,
    userOf: (ctx) => (ctx as Context).user?.id ?? null,
    maxPerUser: deps.config.http.trpcMaxSubscriptionsPerUser,
  });
  const procedureOf = (urlPath: string) => PROCEDURES.get(safeDecode(urlPath));
  const adapterOptions = {
    router: appRouter,
    createContext: ({ req, res }: { req: IncomingMessage; res: ServerResponse }) => requestContext(req, res),
    maxBodySize,
    maxBatchSize,
    responseMeta: ({ errors }: { errors: TRPCError[] }) => ({ headers: errorHeaders(errors) }),
  };
  return (req: TrpcRequest, res: ServerResponse): void => {
    const facts = factsOf(req);
    // The procedure path(s): what follows /trpc/, as tRPC's express adapter would see it.
    const urlPath = facts.path.replace(/^\/trpc\/?/i, '');
    const query = new URLSearchParams(facts.search);
    checks(deps, req, res, urlPath, query, maxBodySize, requestContext)
      .then((body) =>
        leanServes(req, query, procedureOf, urlPath)
          ? lean({ req, res, urlPath, query, body })
          : leanSubscribes(req, query, procedureOf(urlPath))
            ? subscriptions(req, res, safeDecode(urlPath), query)
            : nodeHTTPRequestHandler({ ...adapterOptions, req, res: keepingVary(res), path: urlPath }),
      )
      .catch((error: unknown) => writeTrpcError(res, error));
  };
}

/** tRPC's adapter sets its own Vary: the pipeline's (CORS: Origin) is kept beside it (withVary). */
export function keepingVary(res: ServerResponse): ServerResponse {
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name, value) => setHeader(name, name.toLowerCase() === 'vary' ? withVary(res.getHeader('vary'), String(value)) : value);
  return res;
}

/** The checks before tRPC reads a request; resolves to a POST's body text. */
async function checks(
  deps: Deps,
  req: TrpcRequest,
  res: ServerResponse,
  urlPath: string,
  query: URLSearchParams,
  maxBodySize: number,
  requestContext: ReturnType<typeof createRequestContext>,
): Promise<string | undefined> {
  const paths = urlPath.split(',');
  // Each call counts; a batch over TRPC_MAX_BATCH is refused by tRPC and costs one. Calls with
  // credentials are charged by their procedures, to what the credentials prove; a refused batch
  // or a path naming no procedure reaches none, so it is charged here whatever it carries.
  const refused = paths.length > deps.config.http.trpcMaxBatch;
  const checked = !refused && paths.every((p) => PROCEDURES.has(safeDecode(p))) && carriesCredential(req);
  chargeClient(deps, req, refused ? 1 : paths.length, checked);

  const maxDepth = deps.config.http.maxJsonDepth;
  let body: string | undefined;
  try {
    const input = query.get('input');
    if (input) checkInputText(input, maxDepth);
    if (req.method === 'POST') {
      body = (await readLimited(req, maxBodySize).catch(asTrpcError)).toString('utf8');
      checkInputText(body, maxDepth);
      req.body = body;
    }
  } catch (error) {
    chargeLeftCall(deps, req); // refused before any procedure checked the credentials
    throw error;
  }

  if (paths.length === 1 && PROCEDURES.get(safeDecode(paths[0]!))?.type === 'subscription') {
    const context = await requestContext(req, res);
    if (!context.user) {
      context.chargeAddress?.();
      throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
    }
  }
  return body;
}

/** The body reader's refusals in tRPC's terms. */
function asTrpcError(error: unknown): never {
  if (error instanceof BodyProblem && error.kind === 'too_large')
    throw new TRPCError({ code: 'PAYLOAD_TOO_LARGE', message: 'Request body too large' });
  throw error;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // tRPC answers NOT_FOUND for it
  }
}

/**
 * Depth, and "__proto__" keys: superjson drops those while deserialising, before the
 * procedures' own check (src/trpc/procedures.ts) could refuse them.
 */
function checkInputText(text: string, maxDepth: number): void {
  try {
    checkDepth(text, maxDepth);
  } catch {
    throw tooDeep(maxDepth);
  }
  if (!text.includes('__proto__')) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return; // tRPC answers the parse error itself
  }
  const issue = unsafeInputIssue(parsed);
  if (!issue) return;
  // The path inside the envelope ({"json": …} or {"0": {"json": …}}) → the path inside the input.
  const path = issue.path.slice(issue.path.indexOf('json') + 1);
  throw new TRPCError({
    code: 'BAD_REQUEST',
    message: 'Input validation failed',
    cause: new InputIssuesError([{ code: 'custom', path, message: issue.message }]),
  });
}

const tooDeep = (max: number) =>
  new AppError('UNPROCESSABLE_CONTENT', `JSON input nested deeper than ${max} levels`, { reason: 'json_too_deep' });

/** tRPC's own error envelope (formatted by the router's errorFormatter, transformed by superjson). */
function writeTrpcError(res: ServerResponse, cause: unknown): void {
  if (res.headersSent) return void res.destroy();
  const error = toTRPCError(cause);
  const { status, body } = trpcErrorAnswer(appRouter, error);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  const retryAfter = appErrorOf(error)?.retryAfterSeconds;
  if (retryAfter !== undefined) res.setHeader('retry-after', String(retryAfter));
  res.end(body);
}
