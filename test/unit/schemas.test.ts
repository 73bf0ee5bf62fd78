import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PROCEDURES } from '../../routers/index.js';
import { parseEnvString, shellSplit } from '../../contract/mcp.schema.js';

/** The walk trpc-to-openapi's coerceSchema makes over a REST input (utils/zod.mjs). */
function coercibleLeaves(schema: any, path: string[] = []): string[] {
  const unwrap = (s: any): any => {
    const kind = s?._zod?.def?.type;
    if (kind === 'array') return unwrap(s._zod.def.element);
    if (['nullable', 'optional', 'default', 'prefault'].includes(kind)) return unwrap(s._zod.def.innerType);
    if (kind === 'lazy') return unwrap(s._zod.def.getter());
    return s;
  };
  const found: string[] = [];
  for (const [key, child] of Object.entries(schema._zod.def.shape ?? {})) {
    const leaf = unwrap(child);
    const kind = leaf?._zod?.def?.type;
    if (['number', 'boolean', 'bigint', 'date'].includes(kind)) found.push([...path, key].join('.'));
    else if (kind === 'object') found.push(...coercibleLeaves(leaf, [...path, key]));
  }
  return found;
}

describe('REST input schemas', () => {
  const restProcedures = [...PROCEDURES.values()].filter((p) => p.meta?.openapi);

  it.each(restProcedures.map((p) => [p.path, p]))('%s exposes no leaf the REST adapter would coerce', (_path, procedure) => {
    for (const input of procedure.inputs) expect(coercibleLeaves(input)).toEqual([]);
  });

  it('the walk itself finds a plain z.boolean() leaf (the check can fail)', async () => {
    expect(coercibleLeaves(z.object({ a: z.boolean(), b: z.object({ c: z.array(z.number()) }).optional() }))).toEqual(['a', 'b.c']);
  });
});

describe('procedure inputs', () => {
  const withInput = [...PROCEDURES.values()].filter((p) => p.inputs.length > 0);
  const allOptional = withInput.filter((p) => (p.inputs[0] as z.ZodType).safeParse({}).success);

  // A caller writes `trpc.secrets.list.query()`, not `query({})`: an input that `{}` satisfies may be left out.
  it.each(allOptional.map((p) => [p.path, p]))('%s may be called without input, as with {}', (_path, procedure) => {
    const schema = procedure.inputs[0] as z.ZodType;
    expect(schema.safeParse(undefined)).toEqual(schema.safeParse({}));
  });

  it('finds the inputs that are all optional (the check can fail)', () => {
    expect(allOptional.map((p) => p.path)).toEqual(
      expect.arrayContaining(['secrets.list', 'settings.get', 'sandboxes.search', 'settings.save']),
    );
    expect(allOptional.map((p) => p.path)).not.toContain('secrets.create');
    expect(z.object({ a: z.string().optional() }).safeParse(undefined).success).toBe(false);
  });
});

describe('MCP shorthands', () => {
  it.each([
    ['-y server', ['-y', 'server']],
    ['  a   b ', ['a', 'b']],
    [`--name "two words" 'single quoted' esc\\ aped`, ['--name', 'two words', 'single quoted', 'esc aped']],
    ['""', ['']],
    ['', []],
  ])('shell-splits %j', (input, expected) => {
    expect(shellSplit(input)).toEqual(expected);
  });

  it('reports an unterminated quote', () => {
    expect(shellSplit('a "b')).toBeNull();
  });

  it('parses K=V lists', () => {
    expect(parseEnvString('A=1, B = two ,C=x=y')).toEqual({ A: '1', B: 'two', C: 'x=y' });
  });
});
