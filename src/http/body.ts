// The one body reader: every JSON body of either transport is read here, within MAX_BODY_SIZE
// and MAX_JSON_DEPTH (the depth is checked on the text, before anything parses it), and a REST
// body's content type is checked here once. Failures are BodyProblems, which each transport
// answers in its own shape (src/http/rest/answers.ts, src/http/trpc.ts). The device flow's two
// form routes read their form here too (readRestForm).
import type { IncomingMessage } from 'node:http';
import querystring from 'node:querystring';
import typeis from 'type-is';
import { jsonNestsDeeperThan } from './json-depth.js';

export type BodyProblemKind = 'too_large' | 'too_deep' | 'invalid_json' | 'unsupported_type';

export class BodyProblem extends Error {
  constructor(
    readonly kind: BodyProblemKind,
    message: string,
  ) {
    super(message);
    this.name = 'BodyProblem';
  }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** The media types read as JSON: application/json and application/<anything>+json. */
const JSON_TYPES = ['application/json', '+json'];

export interface BodyLimits {
  maxBytes: number;
  maxDepth: number;
}

/** Whether the method carries a body a REST route reads. */
export const takesBody = (method: string | undefined) => BODY_METHODS.has(method ?? '');

/** The whole body, or BodyProblem too_large once it passes `limit` bytes (the rest is drained, so an answer can still be sent). */
export function readLimited(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeListener('data', onData);
        req.resume();
        reject(new BodyProblem('too_large', 'Request body too large'));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** Refuses JSON text nested deeper than the limit, before anything parses it. */
export function checkDepth(text: string | Buffer, maxDepth: number): void {
  if (jsonNestsDeeperThan(text, maxDepth)) throw new BodyProblem('too_deep', `JSON nested deeper than ${maxDepth} levels`);
}

/** The media types read as a form (the device flow's token and verification routes). */
const FORM_TYPES = ['application/x-www-form-urlencoded'];

/**
 * A REST request's JSON body: undefined when the method takes none or none was sent; {} for an
 * empty one. Legacy: a body sent without a content type is read as JSON (FastAPI does); any
 * other type, look-alikes such as application/jsonx included, is unsupported.
 */
export async function readRestJson(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  if (!takesBody(req.method)) return undefined;
  const contentType = req.headers['content-type'] ?? 'application/json';
  const matched = typeis.is(contentType, JSON_TYPES);
  const charset = /;\s*charset=([^;\s]+)/i.exec(contentType)?.[1]?.replace(/"/g, '').toLowerCase();
  // An empty form is no body at all: what axios sends for post(url, null) (Agent Canvas's POST /api/authenticate).
  if (typeis.is(contentType, FORM_TYPES) && (!typeis.hasBody(req) || req.headers['content-length'] === '0')) return undefined;
  if (matched === false || (charset && charset !== 'utf-8' && charset !== 'utf8')) {
    req.resume(); // not read: drained so the answer can be
    const type = contentType.split(';')[0]!.trim().slice(0, 100);
    throw new BodyProblem('unsupported_type', `Unsupported content-type "${type}": send application/json`);
  }
  if (!typeis.hasBody(req)) return undefined;
  const body = await readLimited(req, limits.maxBytes);
  if (body.length === 0) return {};
  checkDepth(body, limits.maxDepth);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new BodyProblem('invalid_json', 'JSON decode error');
  }
}

/**
 * A REST request's form body (application/x-www-form-urlencoded, as OAuth clients send it;
 * without a content type too) as its fields: a field sent twice is a list, which validation
 * refuses. JSON is accepted as well, for clients that send it. undefined when no body came.
 */
export async function readRestForm(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const contentType = req.headers['content-type'];
  if (contentType !== undefined && typeis.is(contentType, JSON_TYPES)) return readRestJson(req, limits);
  if (contentType !== undefined && typeis.is(contentType, FORM_TYPES) === false) {
    req.resume();
    const type = contentType.split(';')[0]!.trim().slice(0, 100);
    throw new BodyProblem('unsupported_type', `Unsupported content-type "${type}": send application/x-www-form-urlencoded`);
  }
  if (!typeis.hasBody(req)) return undefined;
  const body = await readLimited(req, limits.maxBytes);
  return { ...querystring.parse(body.toString('utf8')) };
}
