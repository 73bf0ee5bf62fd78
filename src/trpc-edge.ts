// The tRPC transport at /trpc: tRPC's node:http adapter plus the checks that must happen
// before tRPC reads a request, answered in tRPC's own error envelope:
//   1. the per-client-IP rate limit (each call of a batch counts; the per-user limit is a
//      procedure middleware, src/procedures.ts, shared with REST);
//   2. JSON nesting depth of the input (query string or body), before anything parses it;
//   3. subscriptions: no valid key → 401 before any event stream starts (tRPC itself would
//      answer 200 and send the error inside the stream).
// Batches larger than TRPC_MAX_BATCH are refused by tRPC (maxBatchSize, 400). Errors that
// carry retryAfterSeconds get a Retry-After header.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TRPCError } from '@trpc/server';
import { internal_exceptionHandler, nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { getErrorShape, getHTTPStatusCodeFromError, transformTRPCResponse } from '@trpc/server/unstable-core-do-not-import';
import { appRouter, PROCEDURES } from '../routers/index.js';
import { parseSize } from './config.js';
import { createContextFactory, type Deps } from './context.js';
import { unsafeInputIssue } from '../contract/common.schema.js';
import { AppError, appErrorOf, InputIssuesError, toTRPCError } from './errors.js';
import { jsonNestsDeeperThan } from './json-depth.js';

/** The request as the front door hands it over: `ip` is the client address under TRUST_PROXY (src/app.ts). */
type EdgeRequest = IncomingMessage & { ip?: string; body?: unknown };

/** Serves /trpc requests; `pathname` is the request's path (no query). */
export function trpcHandler(deps: Deps) {
  const maxBodySize = parseSize(deps.config.http.maxBodySize);
  const createContext = createContextFactory(deps, 'trpc');
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
  return (req: EdgeRequest, res: ServerResponse, pathname: string): void => {
    // The procedure path(s): what follows /trpc/, as tRPC's express adapter would see it.
    const path = pathname.replace(/^\/trpc\/?/i, '');
    const middleware = (_req: unknown, _res: unknown, next: () => void) => {
      edgeChecks(deps, req, res, path, maxBodySize, createContext).then(next, (error: unknown) => writeTrpcError(res, error));
    };
    const handler = { ...options, req, res, path, middleware };
    nodeHTTPRequestHandler(handler).catch(internal_exceptionHandler(handler));
  };
}

async function edgeChecks(
  deps: Deps,
  req: EdgeRequest,
  res: ServerResponse,
  path: string,
  maxBodySize: number,
  createContext: ReturnType<typeof createContextFactory>,
): Promise<void> {
  const paths = path.split(',');
  // Each call counts; a batch over TRPC_MAX_BATCH is refused by tRPC and costs one.
  const cost = paths.length > deps.config.http.trpcMaxBatch ? 1 : paths.length;
  deps.limits.ip(req.ip ?? req.socket.remoteAddress ?? 'unknown', cost);

  const maxDepth = deps.config.http.maxJsonDepth;
  const url = req.url ?? '';
  const input = url.includes('input=') ? new URL(url, 'http://localhost').searchParams.get('input') : null;
  if (input) checkInputText(input, maxDepth);
  if (req.method === 'POST') {
    const text = (await readBody(req, maxBodySize)).toString('utf8');
    checkInputText(text, maxDepth);
    // tRPC takes a string body as the request's text instead of reading the stream again.
    req.body = text;
  }

  if (paths.length === 1 && PROCEDURES.get(safeDecode(paths[0]!))?.type === 'subscription') {
    const context = await createContext({ req, res });
    if (!context.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
  }
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
  if (jsonNestsDeeperThan(text, maxDepth)) throw tooDeep(maxDepth);
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

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume(); // drain the rest so the answer can be read
        reject(new TRPCError({ code: 'PAYLOAD_TOO_LARGE', message: 'Request body too large' }));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** tRPC's own error envelope (formatted by the router's errorFormatter, transformed by superjson). */
function writeTrpcError(res: ServerResponse, cause: unknown): void {
  const error = toTRPCError(cause);
  const config = appRouter._def._config;
  const shape = getErrorShape({ config, error, type: 'unknown', path: undefined, input: undefined, ctx: undefined });
  const text = JSON.stringify(transformTRPCResponse(config, { error: shape }));
  res.statusCode = getHTTPStatusCodeFromError(error);
  res.setHeader('content-type', 'application/json');
  const retryAfter = appErrorOf(error)?.retryAfterSeconds;
  if (retryAfter !== undefined) res.setHeader('retry-after', String(retryAfter));
  res.end(text);
}
