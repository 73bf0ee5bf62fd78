// The tRPC mount at /trpc: tRPC's node:http adapter, after the checks that must happen before
// tRPC reads a request, answered in tRPC's own error envelope:
//   1. the per-client-IP rate limit (each call of a batch counts; the per-user limit is a
//      procedure middleware, src/procedures.ts, shared with REST);
//   2. the body, read by the one body reader (size, JSON nesting depth before anything
//      parses it) and handed to tRPC as text; the query-string input's depth too;
//   3. subscriptions: no valid key → 401 before any event stream starts (tRPC itself would
//      answer 200 and send the error inside the stream).
// Batches larger than TRPC_MAX_BATCH are refused by tRPC (maxBatchSize, 400). Errors that
// carry retryAfterSeconds get a Retry-After header.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TRPCError } from '@trpc/server';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { appRouter, PROCEDURES } from '../../routers/index.js';
import { unsafeInputIssue } from '../../contract/common.schema.js';
import { parseSize } from '../config.js';
import type { Deps } from '../context.js';
import { AppError, appErrorOf, InputIssuesError, toTRPCError } from '../errors.js';
import { trpcErrorAnswer } from '../library-internals.js';
import { BodyProblem, checkDepth, readLimited } from './body.js';
import { createRequestContext } from './context.js';
import { chargeClient, factsOf } from './pipeline.js';

/** tRPC reads a string `body` as the request's text instead of reading the stream again. */
type TrpcRequest = IncomingMessage & { body?: unknown };

/** Serves /trpc requests; `pathname` is the request's path (no query). */
export function trpcMount(deps: Deps) {
  const maxBodySize = parseSize(deps.config.http.maxBodySize);
  const requestContext = createRequestContext(deps, 'trpc');
  const createContext = ({ req, res }: { req: IncomingMessage; res: ServerResponse }) => requestContext(req, res);
  const options = {
    router: appRouter,
    createContext,
    maxBodySize,
    maxBatchSize: deps.config.http.trpcMaxBatch,
    responseMeta: ({ errors }: { errors: TRPCError[] }) => {
      const retryAfter = Math.max(0, ...errors.map((e) => appErrorOf(e)?.retryAfterSeconds ?? 0));
      return retryAfter > 0 ? { headers: { 'retry-after': String(retryAfter) } } : {};
    },
  };
  return (req: TrpcRequest, res: ServerResponse): void => {
    // The procedure path(s): what follows /trpc/, as tRPC's express adapter would see it.
    const path = factsOf(req).path.replace(/^\/trpc\/?/i, '');
    checks(deps, req, res, path, maxBodySize, requestContext).then(
      () => nodeHTTPRequestHandler({ ...options, req, res, path }).catch((error: unknown) => writeTrpcError(res, error)),
      (error: unknown) => writeTrpcError(res, error),
    );
  };
}

async function checks(
  deps: Deps,
  req: TrpcRequest,
  res: ServerResponse,
  path: string,
  maxBodySize: number,
  requestContext: ReturnType<typeof createRequestContext>,
): Promise<void> {
  const paths = path.split(',');
  // Each call counts; a batch over TRPC_MAX_BATCH is refused by tRPC and costs one.
  chargeClient(deps, req, paths.length > deps.config.http.trpcMaxBatch ? 1 : paths.length);

  const maxDepth = deps.config.http.maxJsonDepth;
  const search = factsOf(req).search;
  const input = search.includes('input=') ? new URLSearchParams(search).get('input') : null;
  if (input) checkInputText(input, maxDepth);
  if (req.method === 'POST') {
    const text = (await readLimited(req, maxBodySize).catch(asTrpcError)).toString('utf8');
    checkInputText(text, maxDepth);
    req.body = text;
  }

  if (paths.length === 1 && PROCEDURES.get(safeDecode(paths[0]!))?.type === 'subscription') {
    const context = await requestContext(req, res);
    if (!context.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
  }
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
 * procedures' own check (src/procedures.ts) could refuse them.
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
