// See docs/decisions/0011-lean-trpc-lane.md (why this lane, what it costs, when to delete it).
// The lean path of /trpc: queries and mutations sent as JSON, one call or a batch, answered on
// node:http directly. tRPC's node adapter turns every request into a Fetch Request and its
// answer into a Response streamed back in chunks, and superjson copies every answer before it
// is written; together they cost more CPU than the settings read itself (docs/performance.md).
// This path keeps tRPC's HTTP rules, in our code over tRPC's API (src/library-internals.ts):
// queries by GET and mutations by POST (else 405 with Allow), batches (?batch=1, each call its
// own result, 207 when the statuses differ, TRPC_MAX_BATCH), no mixing of procedure types, the
// inputs parsed once and deserialised by the router's transformer, the context created once,
// errors in the router's shape with tRPC's status, and stream-like results refused (415).
// Everything else goes to tRPC's own adapter (src/http/trpc.ts picks, with leanServes).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getTRPCErrorFromUnknown, TRPCError, type AnyRouter } from '@trpc/server';
import { getHTTPStatusCode } from '@trpc/server/http';
import { trpcWireOf, type ErrorSite, type ProcedureRecord } from '../library-internals.js';
import { transformer as superjson } from '../trpc/transformer.js';
import { isPlainJson, streamsData } from './trpc-results.js';

export interface LeanCallsOptions {
  router: AnyRouter;
  procedures: ReadonlyMap<string, ProcedureRecord<unknown>>;
  createContext(req: IncomingMessage, res: ServerResponse): Promise<unknown>;
  maxBatchSize: number;
  /** Headers an answer gets from its errors (Retry-After). */
  errorHeaders(errors: TRPCError[]): Record<string, string>;
}

export interface LeanRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** What follows /trpc/, still URL-encoded. */
  urlPath: string;
  query: URLSearchParams;
  /** A POST's body text. */
  body: string | undefined;
}

/** A call's error or result, with the result's wire envelope when it is plain JSON (made once). */
type Outcome = [error: TRPCError, data: undefined] | [error: undefined, data: unknown, envelope?: { json: unknown }];
type Item = { error: { data?: unknown } } | { result: { data: unknown } };

const VARY = 'trpc-accept, accept';
const JSON_ANSWER = { 'content-type': 'application/json' };
const METHOD_OF = { query: 'GET', mutation: 'POST' } as const;

/** The bodies only tRPC's adapter reads (the router takes neither; its answers stay tRPC's). */
const ADAPTER_MEDIA_TYPES = new Set(['multipart/form-data', 'application/octet-stream']);

/**
 * Whether the lean path serves a request as tRPC would: a GET or a POST (non-JSON POSTs are
 * refused here, 415) but not of a form or binary body, no streamed answer asked for
 * (trpc-accept, application/jsonl), no connectionParams, no subscription named in the path.
 */
export function leanServes(
  req: IncomingMessage,
  query: URLSearchParams,
  procedureOf: (urlPath: string) => ProcedureRecord<unknown> | undefined,
  urlPath: string,
): boolean {
  if ((req.method !== 'GET' && req.method !== 'POST') || ADAPTER_MEDIA_TYPES.has(mediaTypeOf(req) ?? '')) return false;
  if (req.headers['trpc-accept'] !== undefined || req.headers.accept?.includes('application/jsonl')) return false;
  if (query.has('connectionParams')) return false;
  return urlPath.split(',').every((path) => procedureOf(path)?.type !== 'subscription');
}

const mediaTypeOf = (req: IncomingMessage) => req.headers['content-type']?.split(';', 1)[0]!.trim().toLowerCase();

export function leanCalls(options: LeanCallsOptions) {
  const wire = trpcWireOf(options.router);
  const fastEnvelope = wire.transformer.output === superjson;
  // The inputs were just parsed from the request's text: superjson need not copy them first.
  const deserialize: (sent: unknown) => unknown =
    wire.transformer.input === superjson
      ? (sent) => superjson.deserialize(sent as Parameters<typeof superjson.deserialize>[0], { inPlace: true })
      : (sent) => wire.transformer.input.deserialize(sent);
  /** The transformer's envelope of a result: plain JSON's (most results) is made in the call, without superjson's copying walk. */
  const envelopeOf = ([, data, envelope]: Outcome) => envelope ?? wire.transformer.output.serialize(data);

  return async ({ req, res, urlPath, query, body }: LeanRequest): Promise<void> => {
    const method = req.method as 'GET' | 'POST';
    const batch = query.get('batch') === '1';
    let calls: { path: string; procedure: ProcedureRecord<unknown> | undefined }[];
    let type: ErrorSite['type'];
    try {
      const all = wire.procedurePath(decodePath(urlPath));
      if (method === 'POST' && mediaTypeOf(req) !== 'application/json') throw unsupportedBody(req.headers['content-type']);
      const paths = batch ? all.split(',') : [all];
      if (batch && paths.length > options.maxBatchSize)
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'Batch call exceeds maximum size' });
      calls = paths.map((path) => ({ path, procedure: options.procedures.get(path) }));
      type = batch ? typeOfBatch(calls) : (calls[0]!.procedure?.type ?? 'unknown');
    } catch (cause) {
      // Refused before any call: one error, answered as a body without a media type.
      return answerWhole(res, getTRPCErrorFromUnknown(cause), { type: 'unknown', path: undefined, input: undefined, ctx: undefined });
    }

    // The inputs, parsed and deserialised once for all calls, when the first call asks.
    let parsed: unknown[] | undefined;
    let unparsable: TRPCError | undefined;
    const readInputs = (): unknown[] => {
      if (unparsable) throw unparsable;
      try {
        return (parsed ??= parseInputs(batch ? calls.length : 0, method === 'GET' ? query.get('input') : body));
      } catch (cause) {
        throw (unparsable = cause as TRPCError);
      }
    };

    let ctx: unknown;
    let ctxError: TRPCError | undefined;
    try {
      ctx = await options.createContext(req, res);
    } catch (cause) {
      ctxError = getTRPCErrorFromUnknown(cause);
    }
    // Made when a procedure first reads it (few do): a controller and a listener per request cost ~2 % of the CPU.
    let abort: AbortController | undefined;
    const signal = () => {
      if (abort) return abort.signal;
      abort = new AbortController();
      const left = () => !res.writableEnded && abort!.abort(); // the client left before its answer
      if (res.closed) left();
      else res.once('close', left);
      return abort.signal;
    };
    let allow: string | undefined;

    const run = async ({ path, procedure }: (typeof calls)[number], index: number): Promise<Outcome> => {
      try {
        if (!procedure) throw new TRPCError({ code: 'NOT_FOUND', message: `No procedure found on path "${path}"` });
        const accepted = METHOD_OF[procedure.type as 'query' | 'mutation'];
        if (method !== accepted) {
          allow = accepted;
          throw new TRPCError({
            code: 'METHOD_NOT_SUPPORTED',
            message: `Unsupported ${method}-request to ${procedure.type} procedure at path "${path}"`,
          });
        }
        if (ctxError) throw ctxError;
        const getRawInput = async () => readInputs()[index];
        const data = await procedure.call(new LeanCall(path, ctx, procedure.type as 'query' | 'mutation', getRawInput, index, signal));
        // Plain JSON (most results) is sent as it is, and cannot be stream-like.
        if (fastEnvelope && isPlainJson(data, new Set())) return [undefined, data, { json: data }];
        if (streamsData(data)) {
          const unsupported = new TRPCError({
            code: 'UNSUPPORTED_MEDIA_TYPE',
            message: 'Cannot use stream-like response in non-streaming request - use httpBatchStreamLink',
          });
          if (!batch) throw new WholeRequestError(unsupported);
          return [unsupported, undefined];
        }
        return [undefined, data];
      } catch (cause) {
        if (cause instanceof WholeRequestError) throw cause;
        return [getTRPCErrorFromUnknown(cause), undefined];
      }
    };
    let outcomes: Outcome[];
    try {
      // One call (most requests) without a batch's arrays.
      outcomes = batch ? await Promise.all(calls.map(run)) : [await run(calls[0]!, 0)];
    } catch (cause) {
      if (!(cause instanceof WholeRequestError)) throw cause;
      return answerWhole(res, cause.error, { type, path: undefined, input: undefined, ctx }, 'application/json');
    }
    if (outcomes.every(([error]) => error === undefined)) {
      // Every call answered: 200, as tRPC's status rule gives for results only.
      const results = outcomes.map((outcome) => ({ result: { data: envelopeOf(outcome) } }));
      return writeAnswer(res, 200, JSON.stringify(batch ? results : results[0]), JSON_ANSWER);
    }

    const items: Item[] = outcomes.map(([error, data], index) => {
      if (!error) return { result: { data } };
      const site = {
        type: batch ? (calls[index]!.procedure?.type ?? 'unknown') : type,
        path: calls[index]!.path,
        input: parsed?.[index],
        ctx,
      };
      return { error: wire.errorShape(error, site) };
    });
    const errors = outcomes.flatMap(([error]) => (error ? [error] : []));
    const wireItems = items.map((item, index) =>
      'error' in item ? { error: wire.transformer.output.serialize(item.error) } : { result: { data: envelopeOf(outcomes[index]!) } },
    );
    writeAnswer(
      res,
      getHTTPStatusCode(
        items as never,
        outcomes.map(([error]) => error),
      ),
      JSON.stringify(batch ? wireItems : wireItems[0]),
      {
        ...JSON_ANSWER,
        ...(allow ? { allow } : {}),
        ...options.errorHeaders(errors),
      },
    );
  };

  function answerWhole(res: ServerResponse, error: TRPCError, site: ErrorSite, contentType = 'text/plain;charset=UTF-8'): void {
    const shape = wire.errorShape(error, site);
    const body = JSON.stringify({ error: wire.transformer.output.serialize(shape) });
    writeAnswer(res, getHTTPStatusCode({ error: shape } as never, [error]), body, {
      'content-type': contentType,
      ...options.errorHeaders([error]),
    });
  }

  /** Each call's input by its index in the batch (holes for calls sent none). */
  function parseInputs(batchSize: number, text: string | null | undefined): unknown[] {
    try {
      const sent: unknown = text ? JSON.parse(text) : undefined;
      const inputs: unknown[] = [];
      if (sent === undefined) return inputs;
      if (batchSize === 0) {
        inputs[0] = deserialize(sent);
        return inputs;
      }
      if (typeof sent !== 'object' || sent === null || Array.isArray(sent))
        throw new TRPCError({ code: 'BAD_REQUEST', message: '"input" needs to be an object when doing a batch call' });
      for (let index = 0; index < batchSize; index++) {
        const input = (sent as Record<number, unknown>)[index];
        if (input !== undefined) inputs[index] = deserialize(input);
      }
      return inputs;
    } catch (cause) {
      if (cause instanceof TRPCError) throw cause;
      throw new TRPCError({ code: 'BAD_REQUEST', message: cause instanceof Error ? cause.message : 'Invalid input', cause });
    }
  }
}

/** A call's options: a class, for its signal made when first read (an accessor in an object literal costs ~0.4 µs each). */
class LeanCall {
  readonly #signal: () => AbortSignal;
  constructor(
    readonly path: string,
    readonly ctx: unknown,
    readonly type: 'query' | 'mutation',
    readonly getRawInput: () => Promise<unknown>,
    readonly batchIndex: number,
    signal: () => AbortSignal,
  ) {
    this.#signal = signal;
  }
  get signal(): AbortSignal {
    return this.#signal();
  }
}

/** The one procedure type of a batch's calls ('unknown' when none is found); a mix is refused as tRPC does. */
function typeOfBatch(calls: { procedure: ProcedureRecord<unknown> | undefined }[]): ErrorSite['type'] {
  const types = [...new Set(calls.flatMap((call) => (call.procedure ? [call.procedure.type] : [])))];
  if (types.length > 1) throw new TRPCError({ code: 'BAD_REQUEST', message: `Cannot mix procedure types in call: ${types.join(', ')}` });
  return types[0] ?? 'unknown';
}

/** A failure of the whole request found after the calls ran (a single call's stream-like result). */
class WholeRequestError extends Error {
  constructor(readonly error: TRPCError) {
    super(error.message);
  }
}

/** tRPC's words, its missing closing quote included. */
const unsupportedBody = (contentType: string | undefined) =>
  new TRPCError({
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: contentType === undefined ? 'Missing content-type header' : `Unsupported content-type "${contentType}`,
  });

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch (cause) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid URL-encoding in path "${path}"`, cause });
  }
}

function writeAnswer(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  if (res.headersSent) return void res.destroy();
  res.statusCode = status;
  res.setHeader('vary', withVary(res.getHeader('vary'), VARY));
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body); // one write: headers and body together
}

/**
 * A Vary header with `added` after what the answer already varies on (the pipeline's CORS:
 * Origin), each name once. tRPC's adapter replaces it, and a cache could then hand an answer
 * allowed for one origin to another.
 */
export function withVary(current: number | string | string[] | undefined, added: string): string {
  if (current === undefined) return added; // most answers: no allowed Origin was sent
  const names = [current, added].flat().flatMap((value) => String(value).split(','));
  const seen = new Set<string>();
  return names
    .map((name) => name.trim())
    .filter((name) => name && !seen.has(name.toLowerCase()) && seen.add(name.toLowerCase()))
    .join(', ');
}
