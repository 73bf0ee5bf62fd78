// Every reach into a library's private parts, in one place, each for a reason the public API
// does not serve. test/unit/library-internals.test.ts pins the versions read here and
// exercises each reach, so a release that moves one breaks that test, not the service.
//
// - tRPC: a router's procedure records (type, meta, input schemas, and the procedure itself,
//   called directly by the REST table and the lean /trpc path: createCaller's proxy costs a
//   lookup per call), its root config (the transformer, the path separator, the error
//   formatter behind getErrorShape), and the error envelope tRPC writes (for failures found
//   before tRPC reads a request).
// - zod: whether an input schema is empty and which of its keys are lists (the REST table
//   reads a key sent once as a list when the schema says so).
// - mongoose: the driver collection of a model and the Db that hands them out (the write gate,
//   src/db/gated-collections.ts).
import { getErrorShape, type AnyRouter, type TRPCError } from '@trpc/server';
import {
  getHTTPStatusCodeFromError,
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
  type: 'query' | 'mutation';
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

/** Every procedure of a router, by dotted path, in router order. */
export function procedureRecords<Meta>(router: AnyRouter): Map<string, ProcedureRecord<Meta>> {
  const procedures = router._def.procedures as Record<
    string,
    ProcedureCall & { _def: { type: ProcedureRecord<Meta>['type']; meta?: Meta; inputs: unknown[] } }
  >;
  return new Map(
    Object.entries(procedures).map(([path, procedure]) => [
      path,
      { path, type: procedure._def.type, meta: procedure._def.meta, inputs: procedure._def.inputs, call: procedure },
    ]),
  );
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
