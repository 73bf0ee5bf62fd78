// The REST adapter: serves every procedure that has an `openapi` meta on its legacy path.
// trpc-to-openapi generates the OpenAPI document from the same meta (openapi-document.ts); its
// request handler is not used, because it redoes per request what can be done once: it scans
// every route's regular expression, walks the input schema to coerce it, builds a fetch
// Request with an AbortSignal, and a caller proxy. This adapter keeps its observable rules:
//   - paths match case-insensitively with surrounding slashes ignored, the first route in
//     router order wins, path parameters arrive still percent-encoded (context.ts decodes);
//   - GET and DELETE read the query string (a repeated key is a list, a key given once is a
//     value, an empty value is left out), other methods the JSON body; path parameters win;
//   - a body method without a JSON content type is refused (415); a procedure without input
//     gets none; the success status is the meta's successStatus, else 200.
// The procedure lane (procedure-lane.ts) runs the request checks first; failures go to the one
// REST error writer.
import querystring from 'node:querystring';
import { TRPCError } from '@trpc/server';
import type { ServerResponse } from 'node:http';
import { appRouter, PROCEDURES } from '../../routers/index.js';
import type { Context, Deps } from '../context.js';
import { createRestContext } from './context.js';
import { writeProcedureError } from './error-writer.js';
import type { RestRequest } from './request-checks.js';

type ProcedureFn = (opts: {
  path: string;
  ctx: Context;
  type: 'query' | 'mutation';
  getRawInput: () => Promise<unknown>;
  signal: AbortSignal | undefined;
  batchIndex: number;
}) => Promise<unknown>;

interface Route {
  pattern: RegExp;
  /** The path itself when it has no parameters (compared lower-cased, no regex needed). */
  literal: string | null;
  path: string;
  type: 'query' | 'mutation';
  call: ProcedureFn;
  successStatus: number;
  hasInput: boolean;
  /** Query keys the input declares as lists (a key sent once still arrives as a list). */
  listKeys: ReadonlySet<string>;
}

const normalizePath = (path: string) => `/${path.replace(/^\/|\/$/g, '')}`;

function buildRoutes(): Map<string, Route[]> {
  const routes = new Map<string, Route[]>();
  const procedures = appRouter._def.procedures as unknown as Record<string, ProcedureFn>;
  for (const info of PROCEDURES.values()) {
    const openapi = info.meta?.openapi;
    if (!openapi || info.type === 'subscription') continue;
    const path = normalizePath(openapi.path);
    const hasParams = path.includes('{');
    const pattern = new RegExp(`^${path.replace(/\{(.+?)\}/g, (_, key: string) => `(?<${key}>[^/]+)`)}$`, 'i');
    const shape = objectShape(info.inputs[0]);
    const list = routes.get(openapi.method) ?? [];
    list.push({
      pattern,
      literal: hasParams ? null : path.toLowerCase(),
      path: info.path,
      type: info.type,
      call: procedures[info.path]!,
      successStatus: info.meta?.successStatus ?? 200,
      hasInput: info.inputs.length > 0 && !isVoid(info.inputs[0]),
      listKeys: new Set(Object.entries(shape ?? {}).flatMap(([key, schema]) => (isList(schema) ? [key] : []))),
    });
    routes.set(openapi.method, list);
  }
  return routes;
}

// Just enough of zod's structure to tell lists and empty inputs apart (what the adapter needs).
interface ZodLike {
  _zod?: { def?: { type?: string; innerType?: ZodLike; shape?: Record<string, ZodLike>; in?: ZodLike } };
}
const kind = (schema: unknown) => (schema as ZodLike | undefined)?._zod?.def?.type;
function unwrap(schema: unknown): ZodLike | undefined {
  let current = schema as ZodLike | undefined;
  while (['optional', 'nullable', 'default', 'prefault'].includes(kind(current) ?? '')) current = current?._zod?.def?.innerType;
  return current;
}
const isVoid = (schema: unknown) => ['void', 'undefined', 'never'].includes(kind(unwrap(schema)) ?? '');
const isList = (schema: unknown) => kind(unwrap(schema)) === 'array';
const objectShape = (schema: unknown) => {
  const unwrapped = unwrap(schema);
  return kind(unwrapped) === 'object' ? unwrapped?._zod?.def?.shape : undefined;
};

function match(routes: Route[], path: string): { route: Route; params: Record<string, string> } | null {
  const lower = path.toLowerCase();
  for (const route of routes) {
    if (route.literal !== null) {
      if (route.literal === lower) return { route, params: {} };
      continue;
    }
    const groups = route.pattern.exec(path)?.groups;
    if (groups) return { route, params: { ...groups } };
  }
  return null;
}

function queryInput(search: string, listKeys: ReadonlySet<string>): Record<string, unknown> {
  const parsed = querystring.parse(search);
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!value) continue; // an empty value counts as absent
    const single = Array.isArray(value) && value.length === 1 ? value[0] : value;
    input[key] = listKeys.has(key) && !Array.isArray(single) ? [single] : single;
  }
  return input;
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

/** The procedure route for a method and path, if any. */
export function procedureRoutes(): (method: string, pathname: string) => RouteMatch | null {
  const routes = buildRoutes();
  return (method, pathname) => {
    const candidates = routes.get(method);
    return candidates ? match(candidates, normalizePath(pathname)) : null;
  };
}

/** Calls the matched procedure with the request's input and writes its answer. */
export function procedureCaller(deps: Deps) {
  const createContext = createRestContext(deps);
  return async ({ route, params }: RouteMatch, req: RestRequest, res: ServerResponse, search: string): Promise<void> => {
    try {
      const usesBody = req.method !== 'GET' && req.method !== 'DELETE';
      const contentType = req.headers['content-type'];
      if (usesBody && !contentType?.startsWith('application/json')) {
        throw new TRPCError({
          code: 'UNSUPPORTED_MEDIA_TYPE',
          message: contentType ? `Unsupported content-type "${contentType}` : 'Missing content-type header',
        });
      }
      let input: Record<string, unknown> | undefined;
      if (route.hasInput) {
        const fields = usesBody ? (req.body as Record<string, unknown> | undefined) : queryInput(search, route.listKeys);
        input = { ...fields, ...params };
      }
      const ctx = await createContext({ req, res });
      const data = await route.call({
        path: route.path,
        ctx,
        type: route.type,
        getRawInput: async () => input,
        signal: undefined,
        batchIndex: 0,
      });
      const text = JSON.stringify(data);
      res.statusCode = route.successStatus;
      res.setHeader('Content-Type', 'application/json');
      res.end(text);
    } catch (error) {
      res.setHeader('Content-Type', 'application/json'); // as on success (the writer keeps it)
      writeProcedureError(res, error, route.path);
    }
  };
}
