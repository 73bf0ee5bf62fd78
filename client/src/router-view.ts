// The router's type as a client sees it: every procedure keeps its input, output and error
// shape; the server-only parts (the request context, the OpenAPI meta) are erased, and the
// agent-facing routers (webhooks, sandbox-scoped secrets) are left out. Each type below
// resolves to an anonymous object type (the `infer O` steps drop the alias), so the declaration
// emitter writes the result out in full instead of naming a server module (see app-router.ts).
import type { AnyRouter, TRPCMutationProcedure, TRPCQueryProcedure, TRPCSubscriptionProcedure } from '@trpc/server';

/** Deeply copies plain object types, so named server interfaces become inline types. */
type Plain<T> = T extends readonly (infer E)[] ? Plain<E>[] : T extends object ? { [K in keyof T]: Plain<T[K]> } : T;

interface ProcedureTypes {
  input: unknown;
  output: unknown;
  errorShape: unknown;
}

/**
 * What a subscription yields, as the client's link hands it over: an event `tracked` with its id
 * arrives as `{ id, data }` (tRPC's own name for that, TrackedData, lives in its internals,
 * which the package must not name: the same shape, spelled out).
 */
type ClientYield<Y> = Y extends { id: string; data: infer D } ? { id: string; data: Plain<D> } : Plain<Y>;
type SubscriptionOutput<O> = O extends AsyncIterable<infer Y> ? AsyncIterable<ClientYield<Y>> : O;

type ClientProcedure<P> = P extends { _def: { type: infer Kind; $types: infer D extends ProcedureTypes } }
  ? Kind extends 'query'
    ? TRPCQueryProcedure<{ input: D['input']; output: D['output']; meta: object; errorShape: Plain<D['errorShape']> }>
    : Kind extends 'mutation'
      ? TRPCMutationProcedure<{ input: D['input']; output: D['output']; meta: object; errorShape: Plain<D['errorShape']> }>
      : TRPCSubscriptionProcedure<{
          input: D['input'];
          output: SubscriptionOutput<D['output']>;
          meta: object;
          errorShape: Plain<D['errorShape']>;
        }>
  : never;

type ClientRecord<R> = R extends infer O
  ? { [K in keyof O]: O[K] extends { _def: { procedure: true } } ? ClientProcedure<O[K]> : ClientRecord<O[K]> }
  : never;

/** Procedures that only sandboxes call (their own key), never a frontend. */
type AgentFacing = 'webhooks' | 'sandboxSecrets';

export type ClientRoot<R extends AnyRouter> = Plain<{
  ctx: object;
  meta: object;
  errorShape: R['_def']['_config']['$types']['errorShape'];
  transformer: true;
}>;

export type ClientProcedures<R extends AnyRouter> = ClientRecord<Omit<R['_def']['record'], AgentFacing>>;

/** Turns a type into its declared value's type: the emitter then prints it structurally. */
export const typeOf = <T>(): T => undefined as never;
