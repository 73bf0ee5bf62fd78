// REST routes a procedure's legacy path cannot express, declared beside the route table (they
// take precedence over it). Behaviour still lives in the procedures: each route calls its
// procedure through createCaller, never a service directly.
//   - GET /api/openapi.json: the OpenAPI document (open, like the docs page);
//   - POST /api/v1/app-conversations/stream-start: a streamed JSON array of task snapshots;
//   - POST /api/v1/webhooks/[{sandbox_id}/]events/{conversation_id}: the body is a JSON array;
//   - GET /api/v1/webhooks/secrets and GET /api/v1/sandboxes/{sandbox_id}/settings/secrets/
//     {secret_name}: the secret as text/plain (the SDK's LookupSecret reads the response text
//     verbatim, so a JSON string would arrive with its quotes); a secret's name may hold "/";
//   - GET /api/user/repository/{repository_name:path}/microagents[/content]: names with "/";
//   - POST /api/conversations/{conversation_id}/upload-files: multipart (upload.ts);
//   - POST /oauth/device/authorize, /token and /verify-authenticated: form-encoded bodies (OAuth
//     clients and the verification page send forms; the OpenHands clients send JSON, also read).
//   - GET /api/v1/app-conversations/{conversation_id}/file: the text as text/plain (clients read it
//     as text), and …/download: the zip's bytes as application/zip;
//   - GET /api/audit/events/export: the audit log as JSON lines (every page of the search);
//   - the automation service's routes, forwarded to it or "not available" (automation-routes.ts), and
//     its key route for users' keys;
//   - routes of other services that clients call here, answered "not available" (notAvailableRoutes).
import type { ServerResponse } from 'node:http';
import { isLaterSnapshot } from '../../../contract/app-conversations.schema.js';
import { createCaller } from '../../../routers/index.js';
import type { Deps } from '../../trpc/context.js';
import { writeBytes, writeJson, writeNotAvailable } from './answers.js';
import { openApiDocument } from './openapi-document.js';
import type { HandlerCall, HandlerRoute } from './table.js';
import { automationRoutes } from './automation-routes.js';
import { uploadFiles } from './upload.js';

const JSON_UTF8 = 'application/json; charset=utf-8';

export function handlerRoutes(deps: Deps): HandlerRoute[] {
  const caller = async (call: HandlerCall, withBrowser: boolean) => createCaller(await call.context(withBrowser), { signal: call.signal });
  return [
    {
      method: 'GET',
      path: '/api/openapi.json',
      open: true,
      body: 'none',
      procedurePath: undefined,
      handle: async ({ res }) => writeJson(res, 200, openApiDocument(), JSON_UTF8),
    },
    {
      method: 'POST',
      path: '/api/v1/app-conversations/stream-start',
      body: 'json-object',
      procedurePath: 'appConversations.start',
      handle: async (call) => {
        const conversations = (await caller(call, true)).appConversations;
        const task = await conversations.start(call.body as Parameters<typeof conversations.start>[0]);
        const snapshots = await conversations.watchStartTask({ task_id: task.id });
        const { res } = call;
        res.statusCode = 200;
        res.setHeader('Content-Type', JSON_UTF8);
        // The task as started comes first: the runner may have moved it on before the watch began.
        let last = task;
        res.write(`[${JSON.stringify(task)}`);
        try {
          for await (const snapshot of snapshots) {
            if (!isLaterSnapshot(snapshot, last)) continue;
            res.write(`,${JSON.stringify(snapshot)}`);
            last = snapshot;
          }
        } finally {
          res.end(']'); // a failure after the first bytes ends the array where it is
        }
      },
    },
    {
      method: 'POST',
      path: '/api/v1/webhooks/events/{conversation_id}',
      body: 'json',
      procedurePath: 'agentCallbacks.eventsByKey',
      handle: async (call) => {
        const { conversation_id } = call.params as { conversation_id: string };
        const result = await (await caller(call, false)).agentCallbacks.eventsByKey({ conversation_id, events: call.body as never });
        writeJson(call.res, 200, result, JSON_UTF8);
      },
    },
    {
      method: 'POST',
      path: '/api/v1/webhooks/{sandbox_id}/events/{conversation_id}',
      body: 'json',
      procedurePath: 'agentCallbacks.events',
      handle: async (call) => {
        const { sandbox_id, conversation_id } = call.params as { sandbox_id: string; conversation_id: string };
        const result = await (await caller(call, false)).agentCallbacks.events({ sandbox_id, conversation_id, events: call.body as never });
        writeJson(call.res, 200, result, JSON_UTF8);
      },
    },
    {
      method: 'GET',
      path: '/api/v1/webhooks/secrets',
      body: 'none',
      procedurePath: 'agentCallbacks.gitToken',
      handle: async (call) => writeText(call.res, await (await caller(call, false)).agentCallbacks.gitToken({})),
    },
    {
      method: 'GET',
      path: '/api/v1/sandboxes/{sandbox_id}/settings/secrets/{secret_name:path}',
      body: 'none',
      procedurePath: 'sandboxSecrets.value',
      handle: async (call) => {
        const { sandbox_id, secret_name } = call.params as { sandbox_id: string; secret_name: string };
        writeText(call.res, await (await caller(call, false)).sandboxSecrets.value({ sandbox_id, secret_name }));
      },
    },
    {
      method: 'GET',
      path: '/api/user/repository/{repository_name:path}/microagents/content',
      body: 'none',
      procedurePath: 'user.microagentContent',
      handle: async (call) => {
        const input = { repository_name: call.params.repository_name!, file_path: (call.query.get('file_path') ?? undefined) as string };
        writeJson(call.res, 200, await (await caller(call, true)).user.microagentContent(input), JSON_UTF8);
      },
    },
    {
      method: 'GET',
      path: '/api/user/repository/{repository_name:path}/microagents',
      body: 'none',
      procedurePath: 'user.microagents',
      handle: async (call) => {
        writeJson(
          call.res,
          200,
          await (await caller(call, true)).user.microagents({ repository_name: call.params.repository_name! }),
          JSON_UTF8,
        );
      },
    },
    {
      method: 'GET',
      path: '/api/v1/app-conversations/{conversation_id}/file',
      body: 'none',
      procedurePath: 'appConversationFiles.readFile',
      handle: async (call) => {
        const input = {
          conversation_id: call.params.conversation_id!,
          ...(call.query.has('file_path') ? { file_path: call.query.get('file_path')! } : {}),
        };
        writeBytes(
          call.res,
          Buffer.from(await (await caller(call, true)).appConversationFiles.readFile(input)),
          'text/plain; charset=utf-8',
        );
      },
    },
    {
      method: 'GET',
      path: '/api/v1/app-conversations/{conversation_id}/download',
      body: 'none',
      procedurePath: 'appConversationFiles.download',
      handle: async (call) => {
        const zip = await (await caller(call, true)).appConversationFiles.download({ conversation_id: call.params.conversation_id! });
        call.res.setHeader('Content-Disposition', `attachment; filename="${zip.file_name}"`);
        writeBytes(call.res, Buffer.from(zip.content_base64, 'base64'), 'application/zip');
      },
    },
    {
      // The audit log as JSON lines, newest first, with the search's filters (docs/audit.md).
      method: 'GET',
      path: '/api/audit/events/export',
      body: 'none',
      procedurePath: 'audit.search',
      handle: async (call) => {
        const audit = (await caller(call, true)).audit;
        const filters = Object.fromEntries(
          ['user_id', 'action', 'since', 'until'].flatMap((k) => (call.query.has(k) ? [[k, call.query.get(k)!]] : [])),
        );
        // The first page before the head: a refusal (403, 422) still answers in its shape.
        let page = await audit.search({ ...filters, limit: 1000 });
        const { res } = call;
        res.statusCode = 200;
        res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
        res.setHeader('Content-Disposition', 'attachment; filename="audit.jsonl"');
        try {
          for (;;) {
            for (const item of page.items) res.write(`${JSON.stringify(item)}\n`);
            if (!page.next_page_id || call.signal.aborted) break;
            page = await audit.search({ ...filters, limit: 1000, page_id: page.next_page_id });
          }
          res.end();
        } catch {
          res.destroy(); // a later page failed (the database went away): the client sees a cut download, never a short one
        }
      },
    },
    {
      method: 'POST',
      path: '/oauth/device/authorize',
      body: 'form',
      procedurePath: 'deviceFlow.authorize',
      handle: async (call) => {
        const requested = await (await caller(call, false)).deviceFlow.authorize((call.body ?? {}) as never);
        writeJson(call.res, 200, requested, JSON_UTF8);
      },
    },
    {
      method: 'POST',
      path: '/oauth/device/token',
      body: 'form',
      procedurePath: 'deviceFlow.token',
      handle: async (call) => {
        const token = await (await caller(call, false)).deviceFlow.token((call.body ?? {}) as never);
        writeJson(call.res, 200, token, JSON_UTF8);
      },
    },
    {
      method: 'POST',
      path: '/oauth/device/verify-authenticated',
      body: 'form',
      procedurePath: 'deviceFlow.verify',
      handle: async (call) => {
        writeJson(call.res, 200, await (await caller(call, true)).deviceFlow.verify((call.body ?? {}) as never), JSON_UTF8);
      },
    },
    {
      method: 'POST',
      path: '/api/conversations/{conversation_id}/upload-files',
      body: 'none',
      procedurePath: 'conversationWorkspace.uploadFiles',
      handle: (call) => uploadFiles(deps, call),
    },
    ...automationRoutes(deps, caller),
    ...notAvailableRoutes(),
  ];
}

/**
 * Routes of other services that today's clients call on this server, answered "not available"
 * to a signed-in user (401 to anyone else), never a bare "Not Found" that reads as a wrong URL:
 *   - the Model Router's meta-profiles (/api/organizations/{org}/meta-profiles…, newer Agent
 *     Canvas): switching a conversation's LLM by message class needs the LLM gateway to hold
 *     several upstreams per conversation, which it does not (docs/api.md, Not available here);
 *   - POST /api/cloud-proxy, a relay to agent servers that Agent Canvas's own launcher once
 *     served on Canvas's origin (now this service's). Canvas reaches agent servers directly;
 *     for the calls it still sends there (a conversation's commits, answers to a confirmation,
 *     a condense) it reads a 404 as "endpoint missing" (the commits section hides), as it does
 *     wherever Canvas is served without its launcher.
 */
function notAvailableRoutes(): HandlerRoute[] {
  const proxy = 'The cloud proxy is not available on this server: the browser reaches agent servers directly';
  const router = 'The model router (meta-profiles) is not available on this server: a conversation uses one LLM';
  const routes: [string, string, string][] = [
    ...['GET', 'POST', 'PATCH', 'DELETE'].flatMap((method) => [
      [method, '/api/organizations/{org_id}/meta-profiles', router] as [string, string, string],
      [method, '/api/organizations/{org_id}/meta-profiles/{rest:path}', router] as [string, string, string],
    ]),
    ['POST', '/api/cloud-proxy', proxy],
  ];
  return routes.map(([method, path, detail]) => ({
    method,
    path,
    body: 'none' as const,
    procedurePath: undefined,
    handle: (call: HandlerCall) => writeNotAvailable(call, detail),
  }));
}

/** A secret for LookupSecret: the text itself, never cached. */
function writeText(res: ServerResponse, text: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
