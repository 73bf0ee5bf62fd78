// The lean /trpc path's abort signal (src/http/trpc-calls.ts): a procedure that reads it learns
// when its client leaves before the answer; one that does not read it costs no controller and no
// listener on the response. Served by the lean path alone, over real HTTP, with a small router.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leanCalls } from '../../src/http/trpc-calls.js';
import { procedureRecords } from '../../src/library-internals.js';
import { eventually } from '../helpers/eventually.js';

const t = initTRPC.create({ transformer: superjson });
let waiting = 0;
let aborted = 0;
const router = t.router({
  waits: t.procedure.mutation(
    ({ signal }) =>
      new Promise((resolve) => {
        waiting++;
        signal!.addEventListener('abort', () => {
          aborted++;
          resolve('left');
        });
      }),
  ),
  quick: t.procedure.query(() => 'ok'),
});
const lean = leanCalls({
  router,
  procedures: procedureRecords(router),
  createContext: async () => ({}),
  maxBatchSize: 10,
  errorHeaders: () => ({}),
});
/** 'close' listeners a response gained while the lean path served it. */
const listenersAdded: number[] = [];
let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const before = res.listenerCount('close');
    const [pathname, search] = (req.url ?? '').split('?');
    void lean({
      req,
      res,
      urlPath: pathname!.slice(1),
      query: new URLSearchParams(search),
      body: req.method === 'POST' ? '' : undefined,
    }).then(() => listenersAdded.push(res.listenerCount('close') - before));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("the lean /trpc path's abort signal", () => {
  it('is made only for a procedure that reads it', async () => {
    const answer = await fetch(`${url}/quick`);
    expect(await answer.json()).toEqual({ result: { data: { json: 'ok' } } });
    await eventually('the answer', async () => listenersAdded.length > 0);
    expect(listenersAdded).toEqual([0]);
  });

  it('aborts when the client leaves before the answer', async () => {
    const request = http.request(`${url}/waits`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    request.on('error', () => {}); // destroyed below
    request.end();
    await eventually('the call under way', async () => waiting > 0);
    expect(aborted).toBe(0);
    request.destroy();
    await eventually('the abort', async () => aborted > 0);
    expect(aborted).toBe(1);
  });
});
