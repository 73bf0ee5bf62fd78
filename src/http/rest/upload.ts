// POST /api/conversations/{conversation_id}/upload-files: multipart/form-data with one
// repeated `files` part per file (the reference's shape), which the JSON body reader does not
// take. The key is checked before the body is read; the body is read here, up to
// MAX_UPLOAD_SIZE, and handed to the procedure (createCaller), which holds the behaviour.
import typeis from 'type-is';
import { createCaller } from '../../../routers/index.js';
import { parseSize } from '../../config/config.js';
import type { Deps } from '../../trpc/context.js';
import { BodyProblem, readLimited } from '../body.js';
import { writeJson, writeRestError } from './answers.js';
import type { HandlerCall } from './table.js';

interface UploadedPart {
  name: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export async function uploadFiles(deps: Deps, call: HandlerCall): Promise<void> {
  const { req, res } = call;
  const limit = parseSize(deps.config.http.maxUploadSize);
  const tooLarge = { status: 413, body: { detail: `Request body too large (limit ${deps.config.http.maxUploadSize})` } };
  const ctx = await call.context(true); // a browser session cookie authenticates too
  if (!ctx.user) {
    req.resume();
    ctx.chargeAddress?.(); // the edge left the charge to credentials that proved nothing
    return writeRestError(res, { status: 401, body: { detail: 'Unauthorized' } });
  }
  // Refused before the procedure (which charges the user) runs: the user's bucket pays here.
  const user = ctx.user.id;
  const refuse = (answer: Parameters<typeof writeRestError>[1]) => {
    deps.limits.user(user);
    writeRestError(res, answer);
  };
  if (typeis(req, ['multipart/form-data']) !== 'multipart/form-data') {
    req.resume();
    return refuse({ status: 415, body: { detail: 'Expected multipart/form-data with "files" parts' } });
  }
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    req.resume();
    return refuse(tooLarge);
  }
  let body: Buffer;
  try {
    body = await readLimited(req, limit);
  } catch (error) {
    if (error instanceof BodyProblem) return refuse(tooLarge);
    throw error;
  }
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': req.headers['content-type']! } }).formData();
  } catch {
    return refuse(invalidBody('value_error', 'Invalid multipart/form-data body'));
  }
  const parts = form.getAll('files').flatMap((part) => (typeof part === 'string' ? [] : [part as unknown as UploadedPart]));
  if (parts.length === 0) return refuse(invalidBody('missing', 'Field required'));
  const files = await Promise.all(
    parts.map(async (file) => ({ name: file.name, content_base64: Buffer.from(await file.arrayBuffer()).toString('base64') })),
  );
  const result = await createCaller(ctx).conversationWorkspace.uploadFiles({ conversation_id: call.params.conversation_id!, files });
  writeJson(res, 200, result, 'application/json; charset=utf-8');
}

function invalidBody(type: string, msg: string) {
  return { status: 422, body: { detail: [{ type, loc: ['body', 'files'], msg }] } };
}
