// POST /api/conversations/{conversation_id}/upload-files: multipart/form-data with one
// repeated `files` part per file (the reference's shape), which the REST adapter cannot read.
// The body is read here, up to MAX_UPLOAD_SIZE, and handed to the procedure (createCaller),
// which holds the behaviour. The key is checked before the body is read.
import type { IncomingMessage } from 'node:http';
import express, { type Router } from 'express';
import { createCaller } from '../../routers/index.js';
import type { Deps } from '../context.js';
import { createRestContext } from './context.js';
import { writeProcedureError, writeRestError } from './error-writer.js';
import { parseSize } from '../config.js';

const PROCEDURE = 'conversationWorkspace.uploadFiles';

interface UploadedPart {
  name: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export function uploadRoute(deps: Deps): Router {
  const routes = express.Router();
  const context = createRestContext(deps);
  const limit = parseSize(deps.config.http.maxUploadSize);
  const tooLarge = { status: 413, body: { detail: `Request body too large (limit ${deps.config.http.maxUploadSize})` } };

  routes.post('/api/conversations/:conversation_id/upload-files', async (req, res) => {
    try {
      const ctx = await context({ req, res }); // res: a browser session cookie authenticates too
      if (!ctx.user) {
        req.resume();
        return writeRestError(res, { status: 401, body: { detail: 'Unauthorized' } });
      }
      if (!req.is('multipart/form-data')) {
        req.resume();
        return writeRestError(res, { status: 415, body: { detail: 'Expected multipart/form-data with "files" parts' } });
      }
      if (Number(req.headers['content-length'] ?? 0) > limit) {
        req.resume();
        return writeRestError(res, tooLarge);
      }
      const body = await readUpTo(req, limit);
      if (!body) return writeRestError(res, tooLarge);
      let form: FormData;
      try {
        form = await new Response(body, { headers: { 'content-type': req.headers['content-type']! } }).formData();
      } catch {
        return writeRestError(res, invalidBody('value_error', 'Invalid multipart/form-data body'));
      }
      const parts = form.getAll('files').flatMap((part) => (typeof part === 'string' ? [] : [part as unknown as UploadedPart]));
      if (parts.length === 0) return writeRestError(res, invalidBody('missing', 'Field required'));
      const files = await Promise.all(
        parts.map(async (file) => ({ name: file.name, content_base64: Buffer.from(await file.arrayBuffer()).toString('base64') })),
      );
      const caller = createCaller(ctx);
      res.json(await caller.conversationWorkspace.uploadFiles({ conversation_id: req.params.conversation_id!, files }));
    } catch (error) {
      writeProcedureError(res, error, PROCEDURE);
    }
  });
  return routes;
}

/** The whole body, or null once it passes `limit` bytes (the rest is drained, so an answer can still be sent). */
async function readUpTo(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= limit) chunks.push(chunk as Buffer);
  }
  return size > limit ? null : Buffer.concat(chunks);
}

function invalidBody(type: string, msg: string) {
  return { status: 422, body: { detail: [{ type, loc: ['body', 'files'], msg }] } };
}
