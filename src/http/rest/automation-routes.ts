// The OpenHands automation service behind this one (docs/automation-service-notes.md), when
// AUTOMATION_URL names it:
//   - /api/automation/v1… from users (Agent Canvas, CloudClient) goes on to it with the user's
//     automation key as the Bearer, whatever credential the user came with (the session cookie
//     too, which the automation service would not take), their own and nothing else: no cookie,
//     no other header of theirs. Without AUTOMATION_URL it answers "not available" (404) to a
//     signed-in user, 401 to anyone else.
//   - POST /api/automation/v1/events/{org_id}/{source} (a provider's event) goes on without a
//     user's credential: the automation service checks the source's signature;
//   - POST /api/service/users/{user_id}/orgs/{org_id}/api-keys is how the automation service gets
//     a user's key (X-Service-API-Key: AUTOMATION_SERVICE_KEY), by the ids it knows them by.
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { createCaller } from '../../../routers/index.js';
import { secretsEqual } from '../../crypto.js';
import { AUTOMATION_KEY_NAME } from '../../automations/automation-access.js';
import type { Deps } from '../../trpc/context.js';
import { writeJson, writeNotAvailable, writeRestError } from './answers.js';
import type { HandlerCall, HandlerRoute } from './table.js';

type Caller = (call: HandlerCall, withBrowser: boolean) => Promise<ReturnType<typeof createCaller>>;

/** What of the user's request the automation service gets: what it reads, never a credential. */
const PASSED_REQUEST = ['content-type', 'content-length', 'accept', 'accept-encoding', 'if-none-match'];
const NEVER_PASSED = new Set([
  'authorization',
  'cookie',
  'x-session-api-key',
  'host',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
]);
const DROPPED_ANSWER = new Set(['set-cookie', 'connection', 'keep-alive', 'transfer-encoding', 'trailer']);
const NOT_AVAILABLE = 'Automations are not available on this server';

export function automationRoutes(deps: Deps, caller: Caller): HandlerRoute[] {
  const service = deps.config.automations;
  // A run's own reports (phase, completion) first: the only forwarding an automation key may use.
  const forwardedAs = (paths: string[], procedure: 'forwardingKey' | 'runReportKey') =>
    ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].flatMap((method) =>
      paths.map((path): HandlerRoute => ({
        method,
        path,
        body: 'none',
        procedurePath: `automations.${procedure}`,
        handle: async (call) => {
          if (!service) return writeNotAvailable(call, NOT_AVAILABLE);
          const { key } = await (await caller(call, true)).automations[procedure]();
          await forward(deps, service.url, key, call);
        },
      })),
    );
  const forwarded = [
    ...forwardedAs(['/api/automation/v1/runs/{rest:path}'], 'runReportKey'),
    ...forwardedAs(['/api/automation/v1', '/api/automation/v1/{rest:path}'], 'forwardingKey'),
  ];
  return [
    {
      // A provider's event: no user credential, its signature checked by the automation service.
      method: 'POST',
      path: '/api/automation/v1/events/{org_id}/{source}',
      body: 'none',
      procedurePath: undefined,
      handle: async (call) => {
        if (!service) {
          call.req.resume();
          return writeRestError(call.res, { status: 404, body: { detail: NOT_AVAILABLE } });
        }
        await forward(deps, service.url, null, call);
      },
    },
    {
      // A run's completion report (its code in the sandbox sends it): a run its budget cut short
      // is reported failed with why (upstream's script reports a paused agent as done), and its
      // cost is the gateway's count.
      method: 'POST',
      path: '/api/automation/v1/runs/{run_id}/complete',
      body: 'json-object',
      procedurePath: 'automations.runOutcome',
      handle: async (call) => {
        if (!service) return writeNotAvailable(call, NOT_AVAILABLE);
        const procedures = await caller(call, true);
        const { key } = await procedures.automations.runReportKey();
        const report = call.body as { status?: unknown; conversation_id?: unknown; error?: unknown; cost?: unknown };
        if (typeof report.conversation_id === 'string') {
          const outcome = await procedures.automations.runOutcome({ conversation_id: report.conversation_id });
          if (outcome.cost !== null) report.cost = outcome.cost;
          if (outcome.stopped_for) {
            report.status = 'FAILED';
            report.error = `${outcome.stopped_for}: the conversation was stopped at its budget`;
          }
        }
        await forward(deps, service.url, key, call, Buffer.from(JSON.stringify(report)));
      },
    },
    ...forwarded,
    {
      method: 'POST',
      path: '/api/service/users/{user_id}/orgs/{org_id}/api-keys',
      body: 'json-object',
      procedurePath: undefined,
      handle: async ({ req, res, params, body }) => {
        const serviceKey = deps.services.automations.serviceKey;
        if (!serviceKey || !presentedServiceKey(req, serviceKey))
          return writeRestError(res, { status: 401, body: { detail: 'Unauthorized' } });
        const name = (body as { name?: unknown }).name ?? AUTOMATION_KEY_NAME;
        if (name !== AUTOMATION_KEY_NAME) {
          return writeRestError(res, { status: 422, body: { detail: `Only the "${AUTOMATION_KEY_NAME}" key is handed out here` } });
        }
        const who = await deps.services.automations.fromAliases(params.user_id!, params.org_id!);
        if (!who) return writeRestError(res, { status: 404, body: { detail: 'No such user in that organization' } });
        // Only a key the user holds: revoking it (or leaving the organisation) stops their automations.
        const key = await deps.services.automations.heldKey(who.userId, who.orgId);
        if (!key) return writeRestError(res, { status: 404, body: { detail: 'No automation access for that user' } });
        writeJson(res, 200, { key, user_id: params.user_id, org_id: params.org_id, name });
      },
    },
  ];
}

function presentedServiceKey(req: IncomingMessage, serviceKey: string): boolean {
  const presented = req.headers['x-service-api-key'];
  return typeof presented === 'string' && secretsEqual(presented, serviceKey);
}

/**
 * The request on to the automation service, its answer back as it comes: with the user's
 * automation key, only what it reads of theirs; without one (a provider's event), every header
 * but credentials and hop-by-hop ones, since each source signs in a header of its own.
 */
function forward(deps: Deps, base: string, key: string | null, call: HandlerCall, body: Buffer | null = null): Promise<void> {
  const target = new URL(call.req.url!, base);
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  for (const [name, value] of Object.entries(call.req.headers)) {
    const passed = key ? PASSED_REQUEST.includes(name) : !NEVER_PASSED.has(name);
    if (passed && typeof value === 'string') headers[name] = value;
  }
  if (body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(body.length) });
  return new Promise((resolve) => {
    const request = target.protocol === 'https:' ? https.request : http.request;
    const upstream = request(target, { method: call.req.method, headers, signal: call.signal });
    upstream.once('response', (answer) => {
      const passed: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (value !== undefined && !DROPPED_ANSWER.has(name)) passed[name] = value;
      call.res.writeHead(answer.statusCode ?? 502, passed);
      answer.pipe(call.res);
      answer.once('end', resolve);
      answer.once('error', () => (call.res.destroy(), resolve()));
    });
    upstream.once('error', (error) => {
      if (!call.signal.aborted) deps.log.warn({ err: error }, 'automation service unreachable');
      if (!call.res.headersSent) writeRestError(call.res, { status: 502, body: { detail: 'The automation service could not be reached' } });
      else call.res.destroy();
      resolve();
    });
    if (body) upstream.end(body);
    else call.req.pipe(upstream);
  });
}
