// src/library-internals.ts reaches into tRPC, zod and mongoose where their public APIs fall
// short. Pinned here: the installed versions must be those it was written against (a bump
// fails this file first: re-read the reaches, then raise WRITTEN_AGAINST), and each reach is
// exercised against the real libraries.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { initTRPC, TRPCError } from '@trpc/server';
import mongoose from 'mongoose';
import superjson from 'superjson';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  driverCollectionOf,
  interceptCollections,
  isEmptyInput,
  listKeysOf,
  procedureRecords,
  trpcErrorAnswer,
  trpcWireOf,
  WRITTEN_AGAINST,
} from '../../src/library-internals.js';
import { testDatabaseUri, uniqueDbName } from '../helpers/app.js';

const require = createRequire(import.meta.url);
const installed = (name: string) =>
  (JSON.parse(fs.readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version;

const t = initTRPC.create({ transformer: superjson });
const router = t.router({
  lists: t.procedure.input(z.object({ ids: z.array(z.string()).optional(), name: z.string() })).query(({ input }) => input),
  nothing: t.procedure.input(z.void()).mutation(() => 'done'),
});

const connections: mongoose.Connection[] = [];
afterAll(async () => {
  for (const connection of connections) await connection.close();
});

describe('library internals', () => {
  it.each(Object.entries(WRITTEN_AGAINST))('reads %s at the version it was written against (%s)', (name, version) => {
    expect(installed(name)).toBe(version);
  });

  it("lists a router's procedures with their type, inputs and a callable procedure", async () => {
    const records = procedureRecords(router);
    expect([...records.keys()]).toEqual(['lists', 'nothing']);
    const lists = records.get('lists')!;
    expect(lists.type).toBe('query');
    const result = await lists.call({
      path: 'lists',
      ctx: {},
      type: 'query',
      getRawInput: async () => ({ ids: ['a'], name: 'n' }),
      signal: undefined,
      batchIndex: 0,
    });
    expect(result).toEqual({ ids: ['a'], name: 'n' });
    expect(listKeysOf(lists.inputs[0])).toEqual(new Set(['ids']));
    expect(isEmptyInput(records.get('nothing')!.inputs[0])).toBe(true);
    expect(isEmptyInput(lists.inputs[0])).toBe(false);
  });

  it("runs a procedure's middleware chain as tRPC's own caller does", async () => {
    type Ctx = { user?: string; seen?: string[] };
    const c = initTRPC.context<Ctx>().create();
    const withUser = c.procedure.use(({ ctx, next }) => next({ ctx: { user: `u:${ctx.seen?.join('+') ?? ''}` } }));
    const chains = c.router({
      // ctx merged from next({ctx}); the raw input replaced; input parsed; output parsed; what a layer sees.
      full: withUser
        .use(({ next, getRawInput }) => next({ getRawInput: async () => ({ ...((await getRawInput()) as object), extra: 1 }) }))
        .input(z.object({ name: z.string(), extra: z.number() }))
        .use(({ input, next }) => next({ input: { ...input, name: input.name.toUpperCase() } }))
        .output(z.object({ name: z.string(), extra: z.number(), user: z.string(), path: z.string(), meta: z.unknown() }))
        .meta({ tag: 'm' } as never)
        .query((opts) => ({
          ...opts.input,
          user: opts.ctx.user!,
          path: opts.path,
          meta: (opts as { meta?: unknown }).meta,
          dropped: 'by the output schema',
        })),
      throws: withUser.mutation(() => {
        throw new Error('boom');
      }),
      badInput: c.procedure.input(z.object({ n: z.number() })).query(() => 1),
      badOutput: c.procedure.output(z.string()).query(() => 2 as never),
      noNext: c.procedure.use((() => undefined) as never).query(() => 1),
    });
    const records = procedureRecords(chains);
    const own = chains._def.procedures as Record<string, (opts: unknown) => Promise<unknown>>;
    const options = (path: string, type: 'query' | 'mutation', raw: unknown) => ({
      path,
      ctx: { seen: ['a', 'b'] } as Ctx,
      type,
      getRawInput: async () => raw,
      signal: undefined,
      batchIndex: 0,
    });
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        (data) => ({ data }),
        (error: TRPCError) => ({ error: [error.constructor.name, error.code, error.message, (error.cause as Error | undefined)?.message] }),
      );
    const cases: [string, 'query' | 'mutation', unknown][] = [
      ['full', 'query', { name: 'x' }],
      ['throws', 'mutation', undefined],
      ['badInput', 'query', { n: 'no' }],
      ['badOutput', 'query', undefined],
      ['noNext', 'query', undefined],
    ];
    for (const [path, type, raw] of cases) {
      const ours = await outcome(records.get(path)!.call(options(path, type, raw)));
      expect(ours, path).toEqual(await outcome(own[path]!(options(path, type, raw))));
    }
    expect(await records.get('full')!.call(options('full', 'query', { name: 'x' }))).toEqual({
      name: 'X',
      extra: 1,
      user: 'u:a+b',
      path: 'full',
      meta: { tag: 'm' },
    });
  });

  it("writes tRPC's own error envelope, through the router's transformer", () => {
    const answer = trpcErrorAnswer(router, new TRPCError({ code: 'NOT_FOUND', message: 'gone' }));
    expect(answer.status).toBe(404);
    const body = JSON.parse(answer.body) as { error: { json: { message: string; code: number; data: { code: string } } } };
    expect(body.error.json).toMatchObject({ message: 'gone', code: -32004, data: { code: 'NOT_FOUND' } });
  });

  it("reads a router's wire rules: its transformer, path separator and formatted error shape", () => {
    const formatted = initTRPC.create({
      transformer: superjson,
      isDev: false,
      errorFormatter: ({ shape, path }) => ({ ...shape, data: { ...shape.data, seenPath: path ?? null } }),
    });
    const wire = trpcWireOf(formatted.router({ a: formatted.procedure.query(() => 1) }));
    expect(wire.transformer.output).toBe(superjson);
    expect(wire.transformer.input).toBe(superjson);
    expect(wire.procedurePath('settings.get')).toBe('settings.get');
    const shape = wire.errorShape(new TRPCError({ code: 'METHOD_NOT_SUPPORTED', message: 'no' }), {
      type: 'query',
      path: 'a',
      input: undefined,
      ctx: undefined,
    });
    expect(shape).toEqual({
      message: 'no',
      code: -32005,
      data: { code: 'METHOD_NOT_SUPPORTED', httpStatus: 405, path: 'a', seenPath: 'a' },
    });
    const slashes = initTRPC.create({ pathSeparator: '/' } as never);
    expect(trpcWireOf(slashes.router({})).procedurePath('settings/get')).toBe('settings.get');
  });

  it('sees every driver collection mongoose obtains, and finds a model’s', async () => {
    const connection = mongoose.createConnection(testDatabaseUri(uniqueDbName('internals')), { bufferCommands: false });
    connections.push(connection);
    await connection.asPromise();
    const seen: string[] = [];
    interceptCollections(connection, (collection) => {
      seen.push(collection.collectionName);
      return collection;
    });
    const Thing = connection.model('Thing', new mongoose.Schema({ name: String }));
    await Thing.create({ name: 'x' });
    expect(seen).toContain('things');
    expect(driverCollectionOf(Thing as never)?.collectionName).toBe('things');
  });
});
