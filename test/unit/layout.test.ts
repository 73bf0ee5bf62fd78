// The architecture, checked: every import points downward (docs/architecture.md), the contract
// stays free of server code, only the store touches conversation records, no domain code
// decides REST bytes, and the client package and the example app stay apart from the server.
// Reads the source files; a new file lands in a layer by its folder.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/processes.js';

const ROOTS = ['contract', 'models', 'routers', 'src'];

/** Generated or installed folders and files inside the example app, not its source. */
const NOT_SOURCE = new Set(['node_modules', '.next', '.next-test', 'dist', 'next-env.d.ts']);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (NOT_SOURCE.has(entry.name)) return [];
    if (entry.isDirectory()) return sourceFiles(rel);
    return /\.tsx?$/.test(entry.name) ? [rel] : [];
  });
}

const FILES = ROOTS.flatMap(sourceFiles);
/** The client package, a package of its own that frontends install (docs/frontend.md). */
const CLIENT_FILES = sourceFiles('client/src');
/** The example Next.js app: a frontend like any other, outside the service. */
const EXAMPLE_FILES = sourceFiles('examples/nextjs');
const text = (file: string) => fs.readFileSync(path.join(PACKAGE_ROOT, file), 'utf8');

interface ImportStatement {
  specifier: string;
  /** `import type …` / `export type … from`: erased from the JavaScript, types only. */
  typeOnly: boolean;
}

/** Static, side-effect and dynamic imports and re-exports of a source text. */
function imports(source: string): ImportStatement[] {
  return [
    ...[...source.matchAll(/(?:^|\n)\s*(?:import|export)\b(\s+type\b)?[^'"`;]*?from\s+'([^']+)'/g)].map((m) => ({
      specifier: m[2]!,
      typeOnly: Boolean(m[1]),
    })),
    ...[...source.matchAll(/(?:^|\n)\s*import\s+'([^']+)'/g), ...source.matchAll(/import\(\s*'([^']+)'\s*\)/g)].map((m) => ({
      specifier: m[1]!,
      typeOnly: false,
    })),
  ];
}

/** Module specifiers of static and dynamic imports and re-exports. */
const specifiers = (source: string): string[] => imports(source).map((i) => i.specifier);

/** Repository-relative target of a relative import ('.js' → '.ts'). */
const resolveFrom = (file: string, specifier: string) =>
  path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts');

/** Repository-relative targets of a file's relative imports. */
function localImports(file: string): string[] {
  return specifiers(text(file))
    .filter((s) => s.startsWith('.'))
    .map((s) => resolveFrom(file, s));
}

/** Each import loop once, as "a → b → … → a" (a depth-first walk; a loop is reported from its first file). */
function circles(graph: Map<string, string[]>): string[] {
  const found = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') {
        const loop = stack.slice(stack.indexOf(next));
        found.add([...loop, next].join(' → '));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return [...found];
}

const packageImports = (file: string) => specifiers(text(file)).filter((s) => !s.startsWith('.'));

// Higher layers may import lower ones and their own; never upward.
const LAYERS: [number, RegExp][] = [
  [6, /^src\/(main|server|cli|cli-webhooks|bootstrap)\.ts$|^src\/http\//],
  [5, /^routers\//],
  [4, /^src\/trpc\/|^src\/domain\.ts$/],
  [3, /^src\/conversations\/|^src\/lifecycle-webhooks\/(?!lifecycle-events\.ts$)/],
  // The sandbox wing's services, lifecycle, access and entry point; its runtimes are layer 1.
  [
    2,
    /^src\/services\/|^src\/organizations\/|^src\/automations\/|^src\/llm-gateway\/|^src\/git\/[^/]+$|^src\/sandbox\/(service\/|lifecycle\/|sandbox-access\.ts$|index\.ts$)/,
  ],
  [
    1,
    // lifecycle-events.ts: the event the domain emits, below every emitter (sandboxes' and conversations').
    /^src\/(sandbox|agent-server|db)\/|^src\/git\/providers\/|^src\/lifecycle-webhooks\/lifecycle-events\.ts$|^models\/|^src\/(access-token|crypto|processes|keyed-queue|logger|metrics|rate-limit)\.ts$/,
  ],
  [0, /^contract\/|^src\/config\/|^src\/(errors|library-internals)\.ts$/],
];
const LAYER_NAMES = ['contract & base', 'infrastructure', 'services', 'conversations', 'tRPC core', 'routers', 'HTTP wing & entry'];

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

/** The folders under the roots, highest layer first, each with the folders it imports (a wing's entry point shown as such). */
function folderGraph(): string {
  const folderOf = (f: string) => (f === 'src/sandbox/index.ts' ? 'src/sandbox (wing entry)' : path.posix.dirname(f));
  const edges = new Map<string, Set<string>>();
  const layer = new Map<string, number>();
  for (const file of FILES) {
    const from = folderOf(file);
    layer.set(from, Math.max(layer.get(from) ?? 0, layerOf(file)));
    const targets = edges.get(from) ?? new Set<string>();
    for (const t of localImports(file)) if (FILES.includes(t) && folderOf(t) !== from) targets.add(folderOf(t));
    edges.set(from, targets);
  }
  return [...edges]
    .sort(([a], [b]) => layer.get(b)! - layer.get(a)! || a.localeCompare(b))
    .map(([from, to]) => `[${layer.get(from)}] ${from} → ${[...to].sort().join(', ') || '—'}`)
    .join('\n');
}

describe('layout', () => {
  it('finds the source files (the checks below can fail)', () => {
    expect(FILES).toContain('src/conversations/records/store.ts');
    expect(FILES.length).toBeGreaterThan(50);
    expect(importsMatching(['src/http/trpc.ts'], /^routers\//)).toEqual(['src/http/trpc.ts → routers/index.ts']);
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

  it('has no import circles (a type shared by two files lives below both)', () => {
    const graph = new Map(FILES.map((f) => [f, localImports(f).filter((t) => FILES.includes(t))]));
    expect(circles(graph)).toEqual([]);
    // The check can fail: a two-file loop is found.
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts']],
        ]),
      ),
    ).toEqual(['a.ts → b.ts → a.ts']);
  });

  it('keeps routers to procedures: no services, conversations, models or database', () => {
    const routers = FILES.filter((f) => f.startsWith('routers/'));
    expect(importsMatching(routers, /^(src\/(services|conversations|db|sandbox|agent-server)\/|models\/)/)).toEqual([]);
  });

  it('keeps the sandbox runtimes and the agent-server client below the services', () => {
    // The sandbox wing's runtimes (process, isolation, kubernetes) under its services and lifecycle.
    const upper = /^src\/sandbox\/(service\/|lifecycle\/|sandbox-access\.ts$|index\.ts$)/;
    const lower = FILES.filter((f) => /^src\/(sandbox|agent-server)\//.test(f) && !upper.test(f));
    const above = new RegExp(`^(src\\/(services|conversations|http|db|git)\\/|routers\\/|models\\/)|${upper.source}`);
    expect(importsMatching(lower, above)).toEqual([]);
  });

  it('lets the rest of the service reach the sandbox wing through its entry point only', () => {
    const outside = FILES.filter((f) => !f.startsWith('src/sandbox/'));
    expect(importsMatching(outside, /^src\/sandbox\/(?!index\.ts$)/)).toEqual([]);
    // Inside, files import each other directly: the entry point would make circles.
    const inside = FILES.filter((f) => f.startsWith('src/sandbox/'));
    expect(importsMatching(inside, /^src\/sandbox\/index\.ts$/)).toEqual([]);
    // The check can fail: domain.ts uses the wing, through the entry point.
    expect(importsMatching(['src/domain.ts'], /^src\/sandbox\//)).toEqual(['src/domain.ts → src/sandbox/index.ts']);
  });

  it('lets only the conversation store read or write StartTask and AppConversation records', () => {
    const touching = FILES.filter((f) => f.startsWith('src/') && /\.(StartTask|AppConversation)\s*\./.test(text(f)));
    // The store and its searches (the indexed ones; the embedded ones read the record tables),
    // its spend side (budgets' fields and ledger) and its lease side (the claims the start-task
    // queue makes), each kept in a file of its own.
    expect(touching).toEqual([
      'src/conversations/budgets/spend-records.ts',
      'src/conversations/records/searches.ts',
      'src/conversations/records/store.ts',
      'src/conversations/records/task-leases.ts',
    ]);
  });

  // A folder is read by listing it: past about fifteen files its name no longer says what is in
  // it. The per-resource layers stay flat (one file per resource, found by the resource's name).
  it('keeps every folder under src/ to about fifteen files at its top', () => {
    const FLAT = /^(routers|contract|models)$/;
    const counts = new Map<string, number>();
    for (const f of FILES) counts.set(path.posix.dirname(f), (counts.get(path.posix.dirname(f)) ?? 0) + 1);
    expect([...counts].filter(([dir, n]) => !FLAT.test(dir) && n > 15).map(([dir, n]) => `${dir}: ${n}`)).toEqual([]);
    expect(counts.get('src/conversations')).toBeGreaterThan(1);
  });

  // `npm run layout` prints the folders and what each imports, by layer (docs/architecture.md draws it).
  it('draws the import graph by folder', () => {
    const graph = folderGraph();
    expect(graph).toContain('src/sandbox (wing entry)');
    if (process.env.LAYOUT_GRAPH) console.log(graph);
  });

  it('leaves REST statuses, bodies and headers to the REST edge', () => {
    const domain = FILES.filter((f) =>
      /^(contract|models|routers)\/|^src\/(services|conversations|lifecycle-webhooks|llm-gateway|sandbox|agent-server|db|git)\//.test(f),
    );
    // Reading a dependency's Retry-After is domain work; writing one (a headers-object key) is not.
    const restBytes =
      /\brest(Body|Status)\b|['"]retry-after['"]\s*:|msg_id|\bres\.(status|json|send|end|setHeader|writeHead)\(|\.statusCode\s*=[^=]/i;
    expect(domain.filter((f) => restBytes.test(text(f)))).toEqual([]);
  });

  it('keeps every reach into the private parts of a library in src/library-internals.ts', () => {
    const reaches = /\b_def\b|\b_zod\b|unstable-core-do-not-import|\binternal_[a-z]/;
    expect(FILES.filter((f) => f !== 'src/library-internals.ts' && reaches.test(text(f).replace(/^\s*\/\/.*$/gm, '')))).toEqual([]);
  });

  // A file's size follows its job: 310 lines made files split or trimmed for the count's sake
  // (a service losing its comments, a runtime cut mid-job); 360 still flags a file doing two.
  it('keeps source files short (one job each)', () => {
    const all = [...FILES, ...CLIENT_FILES, ...EXAMPLE_FILES];
    expect(all.filter((f) => text(f).split('\n').length > 360)).toEqual([]);
  });
});

// The client's declarations must type-check with its peers only (client/scripts/build.mjs
// checks the emitted files too): it reads the server for types, never for code.
describe('layout of the client package and the example app', () => {
  const CLIENT_PEERS = new Set(['@trpc/client', '@trpc/server', 'superjson']);
  const SERVER_TYPES = /^routers\/index\.ts$|^contract\//;

  it('finds their files (the checks below can fail)', () => {
    expect(CLIENT_FILES).toContain('client/src/app-router.ts');
    expect(EXAMPLE_FILES).toContain('examples/nextjs/lib/service.ts');
    expect(EXAMPLE_FILES.some((f) => f.endsWith('.tsx'))).toBe(true);
  });

  it('keeps the client to its peers, itself, and types of routers/index.ts and contract/', () => {
    const wrong = CLIENT_FILES.flatMap((file) =>
      imports(text(file)).flatMap(({ specifier, typeOnly }) => {
        if (!specifier.startsWith('.')) return CLIENT_PEERS.has(specifier) ? [] : [`${file} → ${specifier}`];
        const target = resolveFrom(file, specifier);
        if (target.startsWith('client/src/')) return [];
        return typeOnly && SERVER_TYPES.test(target) ? [] : [`${file} → ${target}${typeOnly ? '' : ' (not type-only)'}`];
      }),
    );
    expect(wrong).toEqual([]);
    // The view of the router needs the server's AppRouter: proves the type-only rule is exercised.
    expect(imports(text('client/src/app-router.ts'))).toContainEqual({ specifier: '../../routers/index.js', typeOnly: true });
  });

  it('keeps the service from importing the client package or the example', () => {
    expect(importsMatching(FILES, /^(client|examples)\//)).toEqual([]);
  });

  it('lets the example reach the service only through @agent-control-plane/client', () => {
    const allowed = /^(@agent-control-plane\/client|react|next|next\/[\w/-]+|server-only|@\/.+)$/;
    const wrong = EXAMPLE_FILES.flatMap((file) =>
      imports(text(file)).flatMap(({ specifier }) => {
        if (specifier.startsWith('.')) {
          const target = resolveFrom(file, specifier);
          return target.startsWith('examples/nextjs/') ? [] : [`${file} → ${target}`];
        }
        return allowed.test(specifier) ? [] : [`${file} → ${specifier}`];
      }),
    );
    expect(wrong).toEqual([]);
  });
});
