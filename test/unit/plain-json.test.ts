// The lean /trpc path sends a result as { json: value } without superjson's walk only when
// superjson itself would send exactly that: the client then deserialises the same value.
// Checked against superjson on what results hold, and on everything superjson annotates.
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { isPlainJson } from '../../src/http/trpc-results.js';

const plain = (value: unknown) => isPlainJson(value, new Set());

const shared = { a: 1 };
class Point {
  constructor(
    readonly x = 1,
    readonly y = 2,
  ) {}
}

const PLAIN: [string, unknown][] = [
  ['a settings document', { llm_model: 'm', llm_api_key: null, max_iterations: 3, mcp_config: { stdio_servers: [{ args: ['-y'] }] } }],
  ['an empty object', {}],
  [
    'a list of records',
    [
      { id: 'a', n: 0 },
      { id: 'b', n: -1.5 },
    ],
  ],
  ['a string', 'text'],
  ['null', null],
  ['false', false],
  ['an object without a prototype', Object.assign(Object.create(null) as object, { a: 'b' })],
  ['keys with dots and digits', { 'a.b': 1, '0': 2, 'a\\.b': 3 }],
  ['an equal but distinct object twice', { a: { x: 1 }, b: { x: 1 } }],
];

const NOT_PLAIN: [string, unknown][] = [
  ['undefined', undefined],
  ['an undefined field', { a: undefined }],
  ['a Date', { at: new Date(0) }],
  ['NaN', { n: NaN }],
  ['Infinity', [Infinity]],
  ['-0', { n: -0 }],
  ['a bigint', { n: 1n }],
  ['a Map', { m: new Map([['a', 1]]) }],
  ['a Set', { s: new Set([1]) }],
  ['a RegExp', { r: /x/ }],
  ['an Error', { e: new Error('x') }],
  ['a URL', { u: new URL('http://x/') }],
  ['a class instance', { p: new Point() }],
  ['a shared reference', { a: shared, b: shared }],
  ['a hole in a list', { list: [1, , 3] }], // eslint-disable-line no-sparse-arrays
  ['a function', { f: () => 1 }],
  ['a symbol', { s: Symbol('x') }],
];

describe('isPlainJson (when the lean /trpc path skips superjson)', () => {
  it.each(PLAIN)('sends %s as superjson would, without meta', (_name, value) => {
    expect(plain(value)).toBe(true);
    const serialized = superjson.serialize(value);
    expect(serialized.meta).toBeUndefined();
    expect(JSON.stringify({ json: value })).toBe(JSON.stringify(serialized));
    expect(superjson.deserialize(JSON.parse(JSON.stringify({ json: value })) as never)).toEqual(superjson.deserialize(serialized));
  });

  it.each(NOT_PLAIN)('leaves %s to superjson', (_name, value) => {
    expect(plain(value)).toBe(false);
  });

  it('leaves keys superjson refuses to superjson (it throws)', () => {
    const value = JSON.parse('{"__proto__": {"x": 1}}') as unknown;
    expect(plain(value)).toBe(false);
    expect(() => superjson.serialize(value)).toThrow(/prototype pollution/);
    expect(plain({ constructor: 1 })).toBe(false);
  });

  // The rest (class instances, functions, symbols, holes) superjson passes on as they are, and
  // JSON.stringify then drops or changes them: left to superjson, they stay as today.
  it('gives superjson something to say about the other values it is left', () => {
    for (const [name, value] of NOT_PLAIN) {
      if (['a class instance', 'a function', 'a symbol', 'a hole in a list'].includes(name)) continue;
      expect(superjson.serialize(value).meta, name).toBeDefined();
    }
  });
});
