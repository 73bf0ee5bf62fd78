// What a procedure's result is, for the lean /trpc path (trpc-calls.ts): plain JSON that superjson
// would send as it is, or something only tRPC's streaming links can carry.

/** A result tRPC would only stream: an async iterable, or an object holding promises or async iterables. */
export function streamsData(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const streams = (v: unknown) =>
    typeof v === 'object' && v !== null && (Symbol.asyncIterator in v || typeof (v as { then?: unknown }).then === 'function');
  return Symbol.asyncIterator in value || Object.values(value).some(streams);
}

/**
 * Whether superjson would send a value as it is, with no meta: strings, booleans, finite
 * numbers but -0, null, and plain objects and arrays of those, each object met once (superjson
 * records shared references) and no key superjson refuses. Anything else goes through superjson.
 */
export function isPlainJson(value: unknown, seen: Set<object>): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !(value === 0 && 1 / value < 0);
    case 'object': {
      if (value === null) return true;
      if (seen.has(value)) return false;
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !isPlainJson(value[i], seen)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) {
        if (key === '__proto__' || key === 'constructor' || key === 'prototype') return false;
        if (!isPlainJson((value as Record<string, unknown>)[key], seen)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}
