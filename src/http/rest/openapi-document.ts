// The OpenAPI document of the REST surface: trpc-to-openapi generates the operations from the
// routers' meta/input/output; the responses are then rewritten to what the wire carries. The
// success status comes from the procedure's meta (e.g. 201); every failure status and its
// exact body shapes come from the REST edge's one table (legacy-errors.ts), so routes added
// later are described by the same rules without anyone writing responses by hand.
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { appRouter, PROCEDURES, type ProcedureInfo } from '../../../routers/index.js';
import { restFailuresOf } from './legacy-errors.js';
import { BODY_SCHEMAS } from './legacy-shapes.js';

/** Answers that are not JSON (the agent SDK reads the git token as plain text; clients read a file as text, an export as a zip: routes.ts). */
const RAW_SUCCESS: Record<string, Record<string, { schema: Record<string, string> }>> = {
  'GET /api/v1/webhooks/secrets': { 'text/plain': { schema: { type: 'string' } } },
  'GET /api/v1/sandboxes/{sandbox_id}/settings/secrets/{secret_name}': { 'text/plain': { schema: { type: 'string' } } },
  'GET /api/v1/app-conversations/{conversation_id}/file': { 'text/plain': { schema: { type: 'string' } } },
  'GET /api/v1/app-conversations/{conversation_id}/download': { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
};

/** Bodies read as a form (routes.ts): OAuth clients post forms; `alsoJson` routes take JSON too (what the OpenHands clients send). */
const FORM_BODIES: Record<string, { alsoJson: boolean }> = {
  'POST /oauth/device/authorize': { alsoJson: true },
  'POST /oauth/device/token': { alsoJson: false },
  'POST /oauth/device/verify-authenticated': { alsoJson: false },
};

/** Bodies that are a JSON array on the wire; the procedure takes it under this field (routes.ts). */
const ARRAY_BODIES: Record<string, string> = {
  'POST /api/v1/webhooks/{sandbox_id}/events/{conversation_id}': 'events',
  'POST /api/v1/webhooks/events/{conversation_id}': 'events',
};

const DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request',
  401: 'Missing or unknown key',
  403: 'A browser-session request from another site, or a change from an untrusted origin',
  404: 'Not found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Request body larger than MAX_BODY_SIZE, or an answer larger than the service serves',
  415: 'Body not sent as application/json',
  422: 'Validation error: invalid input, malformed JSON, or JSON nested deeper than MAX_JSON_DEPTH',
  429: 'Rate limit or per-user sandbox limit reached; see Retry-After',
  502: 'An upstream service (git provider, agent server) failed',
  503: 'A dependency is unavailable or at capacity (database, sandbox runtime); see Retry-After',
  504: 'The agent server did not finish in time',
};

let cached: OpenAPIObject | undefined;

export function openApiDocument(): OpenAPIObject {
  if (cached) return cached;
  const generated = generateOpenApiDocument(appRouter, {
    title: 'Agent control plane',
    description:
      'OpenHands-compatible REST API. Every operation requires an API key, as Authorization: Bearer ' +
      'or the X-Session-API-Key header (browsers: the acp_session cookie from POST /api/auth/session), ' +
      "except the agent servers' webhooks and sandbox routes (the sandbox's own key in X-Session-API-Key) and " +
      "except the device flow's own steps (/oauth/device/authorize, /token) and the reads of a public conversation " +
      '(/api/shared-conversations[/{id}], /api/shared-events/search) and the SDK version automation runs install ' +
      '(/api/automation/sdk-version); ' +
      'the same operations are available as typed tRPC procedures at /trpc. Error bodies are the ' +
      "reference server's: {detail}, {error}, {message}, the V0 {status, message, msg_id}, or a bare string.",
    version: '0.1.0',
    baseUrl: '/',
    securitySchemes: {
      SessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' },
      BearerApiKey: { type: 'http', scheme: 'bearer', description: 'An API key, as today’s OpenHands clients send it' },
    },
  });
  // Each step rewrites what the generator cannot know: the wire's responses and bodies.
  const steps = [
    withWireResponses,
    withRequiredBodies,
    withoutBearerForSandboxes,
    describeUploadBody,
    describeArrayBodies,
    describeFormBodies,
  ];
  cached = steps.reduce((document, step) => step(document), generated);
  return cached;
}

/**
 * The generator lists every scheme on every protected operation; sandboxes and agents present
 * the sandbox's key (or a signed token) in X-Session-API-Key, never a Bearer user key.
 */
function withoutBearerForSandboxes(document: OpenAPIObject): OpenAPIObject {
  for (const procedure of PROCEDURES.values()) {
    const openapi = procedure.meta?.openapi;
    if (!openapi || !procedure.meta?.auth || procedure.meta.auth === 'none') continue;
    const operation = operationAt(document, `${openapi.method} ${openapi.path}`) as { security?: Record<string, string[]>[] } | undefined;
    if (operation?.security) operation.security = operation.security.filter((requirement) => !('BearerApiKey' in requirement));
  }
  return document;
}

/**
 * A tRPC caller may leave out an input whose fields are all optional, so trpc-to-openapi marks
 * such bodies optional; over REST a body method without a JSON body is refused (415), so every
 * body stays required.
 */
function withRequiredBodies(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item as Record<string, { requestBody?: { required?: boolean } }>)) {
      if (operation.requestBody) operation.requestBody.required = true;
    }
  }
  return document;
}

/** The upload route reads multipart parts (upload-route.ts), not the procedure's JSON input: document those. */
function describeUploadBody(document: OpenAPIObject): OpenAPIObject {
  const operation = document.paths?.['/api/conversations/{conversation_id}/upload-files']?.post;
  if (!operation) return document;
  const schema = {
    type: 'object' as const,
    properties: {
      files: {
        type: 'array' as const,
        items: { type: 'string' as const, format: 'binary' },
        description: 'One part per file; its file name names it',
      },
    },
    required: ['files'],
  };
  operation.requestBody = { required: true, content: { 'multipart/form-data': { schema } } };
  return document;
}

/** The form a route reads, with the fields of the procedure's input. */
function describeFormBodies(document: OpenAPIObject): OpenAPIObject {
  for (const [route, { alsoJson }] of Object.entries(FORM_BODIES)) {
    const content = operationAt(document, route)?.requestBody?.content;
    const json = content?.['application/json'];
    if (!content || !json) continue;
    content['application/x-www-form-urlencoded'] = structuredClone(json);
    if (!alsoJson) delete content['application/json'];
  }
  return document;
}

type BodyOperation = { requestBody?: { content?: Record<string, { schema?: any }> } };

function operationAt(document: OpenAPIObject, route: string): BodyOperation | undefined {
  const [method, path] = route.split(' ') as [string, string];
  return (document.paths?.[path] as Record<string, BodyOperation> | undefined)?.[method.toLowerCase()];
}

/** The array the wire carries in place of the procedure's object holding it. */
function describeArrayBodies(document: OpenAPIObject): OpenAPIObject {
  for (const [route, field] of Object.entries(ARRAY_BODIES)) {
    const json = operationAt(document, route)?.requestBody?.content?.['application/json'];
    const array = json?.schema?.properties?.[field];
    if (json && array) json.schema = array;
  }
  return document;
}

type Operation = { responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }> };

function withWireResponses(document: OpenAPIObject): OpenAPIObject {
  const byRoute = new Map([...PROCEDURES.values()].flatMap((p) => (p.meta?.openapi ? [[routeKey(p), p] as const] : [])));
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, Operation>)) {
      const procedure = byRoute.get(`${method.toUpperCase()} ${path}`);
      if (procedure) operation.responses = wireResponses(procedure, operation);
    }
  }
  const schemas = Object.fromEntries(Object.entries(document.components?.schemas ?? {}).filter(([name]) => !name.startsWith('error.')));
  const legacy = structuredClone(BODY_SCHEMAS) as unknown as NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>;
  document.components = { ...document.components, schemas: { ...schemas, ...legacy } };
  return document;
}

function wireResponses(procedure: ProcedureInfo, operation: Operation): NonNullable<Operation['responses']> {
  const success = operation.responses?.['200'] ?? { description: 'Successful response' };
  const key = routeKey(procedure);
  const content = RAW_SUCCESS[key] ?? success.content;
  const responses: NonNullable<Operation['responses']> = {
    [String(procedure.meta?.successStatus ?? 200)]: {
      description: success.description ?? 'Successful response',
      ...(content ? { content } : {}),
    },
  };
  for (const [status, { shapes, reasons }] of [...restFailuresOf(procedure)].sort(([a], [b]) => a - b)) {
    const refs = shapes.map((shape) => ({ $ref: `#/components/schemas/${shape.schema}` }));
    const named = reasons.filter((r) => r !== 'request');
    responses[String(status)] = {
      description: `${DESCRIPTIONS[status] ?? 'Error'}${named.length ? `; failures: ${named.join(', ')}` : ''}`,
      content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } },
    };
  }
  return responses;
}

const routeKey = (procedure: ProcedureInfo) => `${procedure.meta!.openapi!.method} ${procedure.meta!.openapi!.path}`;
