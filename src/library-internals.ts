// Every reach into a library's private parts, in one place, each for a reason the public API
// does not serve. test/unit/library-internals.test.ts pins the versions read here and
// exercises each reach, so a release that moves one breaks that test, not the service.
//
// - tRPC: a router's procedure records (type, meta, input schemas, and a caller of the
//   procedure's middleware chain, used by the REST table and the lean /trpc path: createCaller's
//   proxy costs a lookup per call, and tRPC's own chain copies its options with a property-by-
//   property spread helper four times per layer), its root config (the transformer, the path separator, the error
//   formatter behind getErrorShape), and the error envelope tRPC writes (for failures found
//   before tRPC reads a request).
// - zod: whether an input schema is empty and which of its keys are lists (the REST table
//   reads a key sent once as a list when the schema says so).
// - mongoose: the driver collection of a model and the Db that hands them out (the write gate,
//   src/db/write-gate/gated-collections.ts).
import { getErrorShape, getTRPCErrorFromUnknown, TRPCError, type AnyRouter } from '@trpc/server';
import {
  getHTTPStatusCodeFromError,
  middlewareMarker,
  transformTRPCResponse,
  urlPathToProcedurePath,
  type CombinedDataTransformer,
  type ProcedureType,
} from '@trpc/server/unstable-core-do-not-import';
import type { Collection, Db } from 'mongodb';
import type { Connection, Model } from 'mongoose';

/** The versions these reaches were written against (checked by the test). */
export const WRITTEN_AGAINST = { '@trpc/server': '11.25.2', zod: '4.6.7', mongoose: '8.24.10' } as const;

/** A procedure as the router holds it: call it with a context and a raw-input getter. */
export type ProcedureCall = (opts: {
  path: string;
  ctx: unknown;
  type: 'query' | 'mutation' | 'subscription';
  getRawInput: () => Promise<unknown>;
  signal: AbortSignal | undefined;
  batchIndex: number;
}) => Promise<unknown>;

export interface ProcedureRecord<Meta> {
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  meta: Meta | undefined;
  inputs: unknown[];
  call: ProcedureCall;
}

/** A procedure as tRPC builds it: its middlewares, the resolver last. */
interface ProcedureDef<Meta> {
  type: ProcedureRecord<Meta>['type'];
  meta?: Meta;
  inputs: unknown[];
  middlewares: Middleware[];
}
type MiddlewareResult = { ok: true; data: unknown } | { ok: false; error: TRPCError };
type Middleware = (opts: MiddlewareOptions) => Promise<MiddlewareResult>;
type CallOptions = Parameters<ProcedureCall>[0];
type NextOptions = { ctx?: object; input?: unknown; getRawInput?: () => Promise<unknown> } | undefined;
type MiddlewareOptions = CallOptions & { input: unknown; meta: unknown; next(options?: NextOptions): Promise<MiddlewareResult> };

/** Every procedure of a router, by dotted path, in router order. */
export function procedureRecords<Meta>(router: AnyRouter): Map<string, ProcedureRecord<Meta>> {
  const procedures = router._def.procedures as Record<string, { _def: ProcedureDef<Meta> }>;
  return new Map(
    Object.entries(procedures).map(([path, procedure]) => {
      const def = procedure._def;
      return [path, { path, type: def.type, meta: def.meta, inputs: def.inputs, call: chainCaller(def) }];
    }),
  );
}

/**
 * What one middleware layer is given. A class, not an object literal: `signal` is an accessor
 * (read through: the lean /trpc path makes its abort signal only for a procedure that reads it),
 * and an accessor in an object literal costs about 0.4 µs per object, 20 times a plain one's
 * (five layers a call). On the prototype it is read by destructuring as before; a spread would not copy it.
 */
class LayerOptions {
  readonly path: string;
  readonly type: CallOptions['type'];
  readonly batchIndex: number;
  readonly #call: CallOptions;
  constructor(
    call: CallOptions,
    readonly ctx: unknown,
    readonly input: unknown,
    readonly getRawInput: () => Promise<unknown>,
    readonly meta: unknown,
    readonly next: MiddlewareOptions['next'],
  ) {
    this.path = call.path;
    this.type = call.type;
    this.batchIndex = call.batchIndex;
    this.#call = call;
  }
  get signal(): AbortSignal | undefined {
    return this.#call.signal;
  }
}

/**
 * See docs/decisions/0011-lean-trpc-lane.md (the chain runner's why, cost and deletion).
 * Runs a procedure's middleware chain as tRPC's own caller does (each layer gets the call's
 * options with meta and next; next() merges a given ctx into the context and may replace the
 * input or the raw-input getter; a throw becomes a failed result), with one options object per layer instead
 * of tRPC's spread helper: `settings.get`'s whole chain takes about a third of the CPU it takes through tRPC's (docs/performance.md).
 */
function chainCaller<Meta>(def: ProcedureDef<Meta>): ProcedureCall {
  const { middlewares, meta } = def;
  const run = async (
    index: number,
    call: CallOptions,
    ctx: unknown,
    input: unknown,
    getRawInput: () => Promise<unknown>,
  ): Promise<MiddlewareResult> => {
    try {
      const next: MiddlewareOptions['next'] = (given) =>
        run(
          index + 1,
          call,
          given?.ctx ? { ...(ctx as object), ...given.ctx } : ctx,
          given && 'input' in given ? given.input : input,
          given?.getRawInput ?? getRawInput,
        );
      return await middlewares[index]!(new LayerOptions(call, ctx, input, getRawInput, meta, next) as unknown as MiddlewareOptions);
    } catch (cause) {
      return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: middlewareMarker } as MiddlewareResult;
    }
  };
  return async (call) => {
    const result = await run(0, call, call.ctx, undefined, call.getRawInput);
    // tRPC's words when a middleware returns nothing.
    if (!result)
      throw new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'No result from middlewares - did you forget to `return next()`?' });
    if (!result.ok) throw result.error;
    return result.data;
  };
}

/** tRPC's own error answer (status and body: the router's errorFormatter, then its transformer). */
export function trpcErrorAnswer(router: AnyRouter, error: TRPCError): { status: number; body: string } {
  const config = router._def._config;
  const shape = getErrorShape({ config, error, type: 'unknown', path: undefined, input: undefined, ctx: undefined });
  return { status: getHTTPStatusCodeFromError(error), body: JSON.stringify(transformTRPCResponse(config, { error: shape })) };
}

/** Where a formatted error happened, as tRPC's error formatter is told. */
export interface ErrorSite {
  type: ProcedureType | 'unknown';
  path: string | undefined;
  input: unknown;
  ctx: unknown;
}

/** A router's wire rules, read from its root config (the lean /trpc path, src/http/trpc-calls.ts). */
export interface TrpcWire {
  transformer: CombinedDataTransformer;
  /** A URL path segment ("settings.get", or with another separator) → the procedure path. */
  procedurePath(urlPath: string): string;
  /** The error shape the client gets: the router's errorFormatter over tRPC's default shape. */
  errorShape(error: TRPCError, site: ErrorSite): { data?: unknown };
}

export function trpcWireOf(router: AnyRouter): TrpcWire {
  const config = router._def._config;
  return {
    transformer: config.transformer,
    procedurePath: (urlPath) => urlPathToProcedurePath(urlPath, config.pathSeparator),
    errorShape: (error, site) => getErrorShape({ config, error, ...site }) as { data?: unknown },
  };
}

// Just enough of zod 4's structure to tell lists and empty inputs apart.
interface ZodLike {
  _zod?: { def?: { type?: string; innerType?: ZodLike; shape?: Record<string, ZodLike> } };
}
const kind = (schema: unknown) => (schema as ZodLike | undefined)?._zod?.def?.type;
function unwrap(schema: unknown): ZodLike | undefined {
  let current = schema as ZodLike | undefined;
  while (['optional', 'nullable', 'default', 'prefault'].includes(kind(current) ?? '')) current = current?._zod?.def?.innerType;
  return current;
}

/** Whether a procedure input schema takes nothing (void, undefined, never). */
export function isEmptyInput(schema: unknown): boolean {
  return ['void', 'undefined', 'never'].includes(kind(unwrap(schema)) ?? '');
}

/** The keys of an object input schema whose values are lists. */
export function listKeysOf(schema: unknown): Set<string> {
  const unwrapped = unwrap(schema);
  const shape = kind(unwrapped) === 'object' ? unwrapped?._zod?.def?.shape : undefined;
  return new Set(Object.entries(shape ?? {}).flatMap(([key, value]) => (kind(unwrap(value)) === 'array' ? [key] : [])));
}

/** The driver collection a model's queries go to (null before the connection opened). */
export function driverCollectionOf(model: Model<never>): Collection | null {
  return (model.collection as unknown as { collection: Collection | null }).collection;
}

/**
 * Has `wrap` see every driver collection the connection hands out: mongoose obtains each from
 * `connection.db.collection(name)` (its NativeCollection, mongoose 8), again after a reconnect.
 */
export function interceptCollections(connection: Connection, wrap: (collection: Collection) => Collection): void {
  const db = connection.db as Db;
  const collection = db.collection.bind(db);
  db.collection = ((name: string, options?: object) => wrap(collection(name, options))) as Db['collection'];
}
