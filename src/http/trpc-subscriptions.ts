// See docs/decisions/0011-lean-trpc-lane.md. The lean path of /trpc for subscriptions (the
// server-sent events httpSubscriptionLink opens, by GET): tRPC's adapter passes every value
// through a Fetch Response and three web streams per subscriber, and with a conversation's
// events fanned out to a thousand subscribers that was most of the service's CPU
// (bench/event-delivery.ts). Here each value is written to the node:http response as tRPC's
// wire has it: `event: connected` (the client options: none are set), each value as `data:` in
// the router's transformer (a tracked one with its `id:`, which the link sends back as
// Last-Event-Id to resume; that id, from the header or the query, goes into the input as
// `lastEventId`), `event: return` when it ends and `event: serialized-error` with the error's
// shape when it fails — a refused input and a procedure's own refusal alike, after a 200, as
// tRPC answers them. A slow reader is waited for (the socket's drain) before the next value;
// the client leaving aborts the procedure's signal and ends its generator.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getTRPCErrorFromUnknown, isTrackedEnvelope, TRPCError, type AnyRouter } from '@trpc/server';
import { trpcWireOf, type ProcedureRecord } from '../library-internals.js';
import { withVary } from './trpc-calls.js';

export interface LeanSubscriptionOptions {
  router: AnyRouter;
  procedures: ReadonlyMap<string, ProcedureRecord<unknown>>;
  createContext(req: IncomingMessage, res: ServerResponse): Promise<unknown>;
  /** Whose subscription it is (null: nobody's, not counted). */
  userOf(ctx: unknown): string | null;
  /** TRPC_MAX_SUBSCRIPTIONS_PER_USER: open at once per user on this replica; the next one is refused. */
  maxPerUser: number;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
};

/** Whether the lean path serves it: one subscription, by GET (tRPC's adapter refuses the rest in its words). */
export function leanSubscribes(req: IncomingMessage, query: URLSearchParams, procedure: ProcedureRecord<unknown> | undefined): boolean {
  return req.method === 'GET' && procedure?.type === 'subscription' && !query.has('batch') && !query.has('connectionParams');
}

export function leanSubscriptions(options: LeanSubscriptionOptions) {
  const wire = trpcWireOf(options.router);
  const serialize = (value: unknown) => JSON.stringify(wire.transformer.output.serialize(value));
  /** Open subscriptions by user (each holds a socket and a place in the event feed's reads). */
  const open = new Map<string, number>();

  return async (req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): Promise<void> => {
    const procedure = options.procedures.get(path)!;
    const header = req.headers['last-event-id'];
    const resumeFrom = (typeof header === 'string' ? header : null) ?? query.get('lastEventId') ?? query.get('Last-Event-Id');
    let input: unknown;
    const getRawInput = async () => {
      const text = query.get('input');
      try {
        input = text ? wire.transformer.input.deserialize(JSON.parse(text)) : undefined;
      } catch (cause) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: cause instanceof Error ? cause.message : 'Invalid input', cause });
      }
      if (resumeFrom) input = isObject(input) ? { ...input, lastEventId: resumeFrom } : (input ?? { lastEventId: resumeFrom });
      return input;
    };
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    res.writeHead(200, { ...SSE_HEADERS, vary: withVary(res.getHeader('vary'), 'trpc-accept, accept') });
    res.write(frame({ event: 'connected', data: '{}' }));
    const send = async (frame: string) => {
      if (!res.write(frame) && !abort.signal.aborted) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            abort.signal.removeEventListener('abort', done);
            resolve();
          };
          res.once('drain', done);
          abort.signal.addEventListener('abort', done, { once: true });
        });
      }
    };
    let ctx: unknown;
    let ended = () => {};
    let counted: string | null = null;
    try {
      ctx = await options.createContext(req, res);
      const user = options.userOf(ctx);
      if (user !== null) {
        if ((open.get(user) ?? 0) >= options.maxPerUser)
          throw new TRPCError({
            code: 'TOO_MANY_REQUESTS',
            message: `Too many open subscriptions for this user (at most ${options.maxPerUser}): close one first`,
          });
        open.set(user, (open.get(user) ?? 0) + 1);
        counted = user;
      }
      const values = await procedure.call({ path, ctx, type: 'subscription', getRawInput, signal: abort.signal, batchIndex: 0 });
      if (!isAsyncIterable(values))
        throw new TRPCError({
          code: 'INTERNAL_SERVER_ERROR',
          message: `Subscription ${path} did not return an observable or a AsyncGenerator`,
        });
      let lastEventId = resumeFrom && !/[\0\n\r]/.test(resumeFrom) ? resumeFrom : null;
      // The client leaving ends the wait for the next value even if the procedure does not listen
      // to its signal; its generator is then told to return.
      const iterator = values[Symbol.asyncIterator]();
      ended = () => void iterator.return?.().catch(() => undefined);
      for (;;) {
        const next = await nextUnlessLeft(iterator, abort.signal);
        if (next === null || next.done) break;
        const value = next.value;
        if (isTrackedEnvelope(value)) {
          lastEventId = String(value[0]);
          await send(frame({ data: serialize(value[1]), id: lastEventId }));
        } else if (lastEventId === null) await send(frame({ data: serialize(value) }));
        // An untracked value after a tracked one: sent without an id, then the last id restored (tRPC's rule).
        else await send(frame({ data: serialize(value), id: '' }) + frame({ event: 'restore-id', data: '', id: lastEventId }));
      }
      if (!abort.signal.aborted) res.write(frame({ event: 'return', data: '' }));
    } catch (cause) {
      if (!abort.signal.aborted) {
        const error = getTRPCErrorFromUnknown(cause);
        res.write(
          frame({ event: 'serialized-error', data: serialize(wire.errorShape(error, { type: 'subscription', path, input, ctx })) }),
        );
      }
    } finally {
      ended();
      if (counted !== null) {
        const left = (open.get(counted) ?? 1) - 1;
        if (left > 0) open.set(counted, left);
        else open.delete(counted);
      }
      res.end();
    }
  };
}

/** The iterator's next value, or null as soon as the client has left (a listener per wait, removed after it). */
function nextUnlessLeft(iterator: AsyncIterator<unknown>, signal: AbortSignal): Promise<IteratorResult<unknown> | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const left = () => resolve(null);
    signal.addEventListener('abort', left, { once: true });
    iterator.next().then(
      (result) => {
        signal.removeEventListener('abort', left);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', left);
        reject(error);
      },
    );
  });
}

/** One message as tRPC writes it: its fields in this order, each on a line, then a blank line (and one more: tRPC's). */
const frame = (f: { event?: string; data?: string; id?: string }) =>
  `${f.event === undefined ? '' : `event: ${f.event}\n`}${f.data === undefined ? '' : `data: ${f.data}\n`}${f.id === undefined ? '' : `id: ${f.id}\n`}\n\n`;

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);
const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  !!value && typeof value === 'object' && Symbol.asyncIterator in value;
