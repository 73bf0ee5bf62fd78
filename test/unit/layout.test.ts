// The architecture, checked: every import points downward (README "Layout"), the contract
// stays free of server code, only the store touches conversation records, and no domain code
// decides REST bytes. Reads the source files; a new file lands in a layer by its folder.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/processes.js';

const ROOTS = ['contract', 'models', 'routers', 'src'];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(rel);
    return entry.name.endsWith('.ts') ? [rel] : [];
  });
}

const FILES = ROOTS.flatMap(sourceFiles);
const text = (file: string) => fs.readFileSync(path.join(PACKAGE_ROOT, file), 'utf8');

/** Module specifiers of static and dynamic imports and re-exports. */
function specifiers(source: string): string[] {
  const found = [
    ...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s+'([^']+)'/g),
    ...source.matchAll(/import\(\s*'([^']+)'\s*\)/g),
  ];
  return found.map((m) => m[1]!);
}

/** Repository-relative targets of a file's relative imports ('.js' → '.ts'). */
function localImports(file: string): string[] {
  return specifiers(text(file))
    .filter((s) => s.startsWith('.'))
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'));
}

const packageImports = (file: string) => specifiers(text(file)).filter((s) => !s.startsWith('.'));

// Higher layers may import lower ones and their own; never upward.
const LAYERS: [number, RegExp][] = [
  [6, /^src\/(main|server|app|cli|bootstrap|trpc-edge)\.ts$|^src\/rest\//],
  [5, /^routers\//],
  [4, /^src\/(trpc|procedures|context|domain)\.ts$/],
  [3, /^src\/conversations\//],
  [2, /^src\/services\//],
  [1, /^src\/(sandbox|agent-server|db)\/|^models\/|^src\/(access-token|crypto|processes|logger|metrics|rate-limit|json-depth)\.ts$/],
  [0, /^contract\/|^src\/(errors|config|transformer)\.ts$/],
];
const LAYER_NAMES = ['contract & base', 'infrastructure', 'services', 'conversations', 'tRPC core', 'routers', 'app & REST edge'];

function layerOf(file: string): number {
  const layer = LAYERS.find(([, pattern]) => pattern.test(file));
  if (!layer) throw new Error(`${file} is in no layer: add it to LAYERS in test/unit/layout.test.ts`);
  return layer[0];
}

const importsMatching = (files: string[], target: RegExp) =>
  files.flatMap((file) =>
    localImports(file)
      .filter((t) => target.test(t))
      .map((t) => `${file} → ${t}`),
  );

describe('layout', () => {
  it('finds the source files (the checks below can fail)', () => {
    expect(FILES).toContain('src/conversations/store.ts');
    expect(FILES.length).toBeGreaterThan(50);
    expect(importsMatching(['src/trpc-edge.ts'], /^routers\//)).toEqual(['src/trpc-edge.ts → routers/index.ts']);
  });

  it('places every source file in a layer', () => {
    for (const file of FILES) expect(() => layerOf(file), file).not.toThrow();
  });

  it('imports only downward or within a layer', () => {
    const upward = FILES.flatMap((file) =>
      localImports(file)
        .filter((target) => layerOf(target) > layerOf(file))
        .map((target) => `${file} (${LAYER_NAMES[layerOf(file)]}) → ${target} (${LAYER_NAMES[layerOf(target)]})`),
    );
    expect(upward).toEqual([]);
  });

  // The contract is imported by frontends too; models are the database's shapes.
  it.each([
    ['contract/', 'zod'],
    ['models/', 'mongoose'],
  ])('keeps %s to %s and itself', (folder, allowed) => {
    const files = FILES.filter((f) => f.startsWith(folder));
    expect(
      files.flatMap((f) =>
        packageImports(f)
          .filter((s) => s !== allowed)
          .map((s) => `${f} → ${s}`),
      ),
    ).toEqual([]);
    expect(importsMatching(files, new RegExp(`^(?!${folder})`))).toEqual([]);
  });

  it('keeps routers to procedures: no services, conversations, models or database', () => {
    const routers = FILES.filter((f) => f.startsWith('routers/'));
    expect(importsMatching(routers, /^(src\/(services|conversations|db|sandbox|agent-server)\/|models\/)/)).toEqual([]);
  });

  it('keeps the sandbox runtimes and the agent-server client below the services', () => {
    const lower = FILES.filter((f) => /^src\/(sandbox|agent-server)\//.test(f));
    expect(importsMatching(lower, /^(src\/(services|conversations|rest|db)\/|routers\/|models\/)/)).toEqual([]);
  });

  it('lets only the conversation store read or write StartTask and AppConversation records', () => {
    const touching = FILES.filter((f) => f.startsWith('src/') && /\.(StartTask|AppConversation)\s*\./.test(text(f)));
    expect(touching).toEqual(['src/conversations/store.ts']);
  });

  it('leaves REST statuses, bodies and headers to the REST edge', () => {
    const domain = FILES.filter((f) => /^(contract|models|routers)\/|^src\/(services|conversations|sandbox|agent-server|db)\//.test(f));
    const restBytes = /\brest(Body|Status)\b|retry-after|msg_id|\bres\.(status|json|send|end|setHeader|writeHead)\(|\.statusCode\s*=[^=]/i;
    expect(domain.filter((f) => restBytes.test(text(f)))).toEqual([]);
  });

  it('keeps source files short (one job each)', () => {
    expect(FILES.filter((f) => text(f).split('\n').length > 310)).toEqual([]);
  });
});
