// The REST route table, built once: every procedure with an `openapi` meta on its legacy path,
// plus the routes a procedure's path cannot express (routes.ts), which come first. A match
// hands its route the FINAL input, as the contract defines it, so nothing downstream fixes it
// up: path parameters decoded (Starlette does), query values as sent (an empty one included:
// the reference validates "?limit=" as the empty string; a key sent once is a list where the
// input says so), the body's fields under the path parameters (which win).
//
// Matching follows the reference's router: case-insensitive, surrounding slashes ignored,
// HEAD as GET, the first route in order wins ({name:path} takes the rest of the path).
import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import { PROCEDURES, type ProcedureInfo } from '../../../routers/index.js';
import { isEmptyInput, listKeysOf } from '../../library-internals.js';
import type { RequestContext } from '../request-context.js';

/** What a route that handles its own request gets (routes.ts, upload.ts). */
export interface HandlerCall {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** The request's context; `withBrowser` lets the session cookie authenticate (user routes, not webhooks). */
  context(withBrowser: boolean): ReturnType<RequestContext>;
  signal: AbortSignal;
}

export interface Matched<Route> {
  route: Route;
  /** Path parameters, decoded. */
  params: Record<string, string>;
}

interface Compiled<Route> {
  route: Route;
  /** The lower-cased path when it has no parameters (no regular expression needed). */
  literal: string | null;
  pattern: RegExp;
}

export interface RoutePath {
  method: string;
  /** OpenAPI-style template: /api/x/{id}, or {name:path} for a parameter holding slashes. */
  path: string;
}

export interface HandlerRoute extends RoutePath {
  /** Open routes are not rate-limited per client (documents, like the docs page). */
  open?: boolean;
  /** How the door reads the body first: a JSON object, any JSON value, a form's fields, or nothing (the handler reads it). */
  body: 'json-object' | 'json' | 'form' | 'none';
  /** The procedure whose failure-table rows answer this route's failures. */
  procedurePath: string | undefined;
  handle(call: HandlerCall): Promise<void>;
}

export class RouteTable<Route extends RoutePath> {
  private readonly byMethod = new Map<string, Compiled<Route>[]>();

  constructor(routes: Route[]) {
    for (const route of routes) {
      const path = normalizePath(route.path);
      const source = path.replace(/\{(\w+)(:path)?\}/g, (_, key: string, whole?: string) => `(?<${key}>${whole ? '.+' : '[^/]+'})`);
      const list = this.byMethod.get(route.method) ?? [];
      list.push({ route, literal: path.includes('{') ? null : path.toLowerCase(), pattern: new RegExp(`^${source}$`, 'i') });
      this.byMethod.set(route.method, list);
    }
  }

  match(method: string, pathname: string): Matched<Route> | null {
    const candidates = this.byMethod.get(method === 'HEAD' ? 'GET' : method);
    if (!candidates) return null;
    const path = normalizePath(pathname);
    const lower = path.toLowerCase();
    for (const { route, literal, pattern } of candidates) {
      if (literal !== null) {
        if (literal === lower) return { route, params: {} };
        continue;
      }
      const groups = pattern.exec(path)?.groups;
      if (groups) return { route, params: decodeAll(groups) };
    }
    return null;
  }
}

const normalizePath = (path: string) => `/${path.replace(/^\/+|\/+$/g, '')}`;

function decodeAll(groups: Record<string, string>): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(groups)) {
    try {
      params[name] = decodeURIComponent(value);
    } catch {
      params[name] = value; // a malformed escape stays as sent; validation or lookup answers for it
    }
  }
  return params;
}

/** A procedure served on its legacy path, with what building its input needs. */
export interface ProcedureRoute extends RoutePath {
  procedure: ProcedureInfo;
  successStatus: number;
  hasInput: boolean;
  /** Query keys the input declares as lists. */
  listKeys: ReadonlySet<string>;
}

export function procedureRoutes(): ProcedureRoute[] {
  return [...PROCEDURES.values()].flatMap((procedure) => {
    const openapi = procedure.meta?.openapi;
    if (!openapi || procedure.type === 'subscription') return [];
    return [
      {
        method: openapi.method,
        path: openapi.path,
        procedure,
        successStatus: procedure.meta?.successStatus ?? 200,
        hasInput: procedure.inputs.length > 0 && !isEmptyInput(procedure.inputs[0]),
        listKeys: listKeysOf(procedure.inputs[0]),
      },
    ];
  });
}

/** The query string as the contract reads it: a repeated key is a list; a key sent once is a list where the input says so. */
export function queryInput(search: string, listKeys: ReadonlySet<string>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(querystring.parse(search))) {
    if (value === undefined) continue;
    const single = Array.isArray(value) && value.length === 1 ? value[0]! : value;
    // An empty value stays a plain '' (validated as such), also for a list key.
    input[key] = listKeys.has(key) && typeof single === 'string' && single !== '' ? [single] : single;
  }
  return input;
}
