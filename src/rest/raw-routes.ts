// REST routes the adapter cannot express, as plain express handlers. Behaviour still lives
// in the procedures: each handler calls createCaller, never a service directly.
//   - POST /api/v1/app-conversations/stream-start: a streamed JSON array of task snapshots;
//   - POST /api/v1/webhooks/{sandbox_id}/events/{conversation_id}: the body is a JSON array;
//   - GET /api/v1/webhooks/secrets: the token as text/plain (the SDK's LookupSecret reads the
//     response text verbatim, so a JSON string would arrive with its quotes);
//   - GET /api/user/repository/{repository_name:path}/microagents[/content]: names with "/".
import express, { type Request, type Response, type Router } from 'express';
import { createCaller } from '../../routers/index.js';
import type { Deps } from '../context.js';
import { createRestContext } from './context.js';
import { writeProcedureError } from './error-writer.js';

export function rawRoutes(deps: Deps): Router {
  const routes = express.Router();
  const context = createRestContext(deps);
  // Only user routes pass the response: it carries the browser facts, so the session cookie
  // authenticates them; the webhooks never accept it.
  const callerFor = async (req: Request, res?: Response, signal?: AbortSignal) =>
    createCaller(await context({ req, ...(res ? { res } : {}) }), signal ? { signal } : {});

  routes.post('/api/v1/app-conversations/stream-start', async (req, res) => {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    try {
      const caller = await callerFor(req, res, abort.signal);
      const task = await caller.appConversations.start(req.body);
      const snapshots = await caller.appConversations.watchStartTask({ task_id: task.id });
      res.status(200).type('application/json');
      res.write('[');
      let first = true;
      for await (const snapshot of snapshots) {
        res.write((first ? '' : ',') + JSON.stringify(snapshot));
        first = false;
      }
      res.end(']');
    } catch (error) {
      if (res.headersSent) res.end(']');
      else writeProcedureError(res, error, 'appConversations.start');
    }
  });

  routes.post('/api/v1/webhooks/:sandbox_id/events/:conversation_id', async (req, res) => {
    try {
      const caller = await callerFor(req);
      res.json(
        await caller.webhooks.events({
          sandbox_id: req.params.sandbox_id!,
          conversation_id: req.params.conversation_id!,
          events: req.body,
        }),
      );
    } catch (error) {
      writeProcedureError(res, error, 'webhooks.events');
    }
  });

  routes.get('/api/v1/webhooks/secrets', async (req, res) => {
    try {
      const caller = await callerFor(req);
      const token = await caller.webhooks.gitToken({});
      res.type('text/plain').send(token);
    } catch (error) {
      writeProcedureError(res, error, 'webhooks.gitToken');
    }
  });

  // GET /api/user/repository/{repository_name:path}/microagents[/content]: the name holds "/",
  // which a {param} of the adapter cannot.
  const repositoryName = (req: Request) => {
    const segments = (req.params as { repository_name?: string | string[] }).repository_name ?? [];
    return Array.isArray(segments) ? segments.join('/') : segments;
  };
  routes.get('/api/user/repository/*repository_name/microagents', async (req, res) => {
    try {
      res.json(await (await callerFor(req, res)).user.microagents({ repository_name: repositoryName(req) }));
    } catch (error) {
      writeProcedureError(res, error, 'user.microagents');
    }
  });
  routes.get('/api/user/repository/*repository_name/microagents/content', async (req, res) => {
    try {
      const input = { repository_name: repositoryName(req), file_path: req.query.file_path };
      res.json(await (await callerFor(req, res)).user.microagentContent(input as { repository_name: string; file_path: string }));
    } catch (error) {
      writeProcedureError(res, error, 'user.microagentContent');
    }
  });

  return routes;
}
