// Builds the client package into client/dist: JavaScript and declarations of client/src only.
// The program also reads the server's routers (for the AppRouter type), but emits nothing of
// them; the emitted declarations are then checked to import nothing but the client's peers.
//
//   node client/scripts/build.mjs [--out-dir <dir>]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const clientDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const srcDir = path.join(clientDir, 'src');
const outFlag = process.argv.indexOf('--out-dir');
const outDir = path.resolve(outFlag === -1 ? path.join(clientDir, 'dist') : process.argv[outFlag + 1]);
const ALLOWED_IMPORTS = new Set(['@trpc/client', '@trpc/server', 'superjson']);

const configFile = path.join(clientDir, 'tsconfig.json');
const { config, error } = ts.readConfigFile(configFile, ts.sys.readFile);
if (error) fail(ts.formatDiagnostics([error], formatHost()));
const parsed = ts.parseJsonConfigFileContent(config, ts.sys, clientDir, undefined, configFile);
const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });

// The client's own files are checked in full; the server's files it reads for their types are
// checked by the service's build (tsc -p tsconfig.build.json), so not a second time here: the
// whole program's check was two thirds of this build's time.
const own = program.getSourceFiles().filter((file) => file.fileName.startsWith(srcDir + path.sep));
const diagnostics = [
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...own.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
];
if (diagnostics.length > 0) fail(ts.formatDiagnosticsWithColorAndContext(diagnostics, formatHost()));

// Emit into a fresh folder next to the target, then swap it in: a reader never sees half a build.
const staging = fs.mkdtempSync(`${outDir}.tmp-`);
process.on('exit', () => fs.rmSync(staging, { recursive: true, force: true })); // a failed build leaves no half folder
const emittedFrom = path.join(parsed.options.outDir, 'client', 'src');
for (const sourceFile of program.getSourceFiles()) {
  if (!sourceFile.fileName.startsWith(srcDir + path.sep)) continue;
  const result = program.emit(sourceFile, (fileName, text) => {
    const target = path.join(staging, path.relative(emittedFrom, fileName));
    if (target.endsWith('.d.ts')) checkImports(target, text);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, text);
  });
  if (result.emitSkipped) fail(`emit skipped for ${sourceFile.fileName}`);
}
fs.rmSync(outDir, { recursive: true, force: true });
fs.renameSync(staging, outDir);
console.log(`client built into ${path.relative(process.cwd(), outDir) || '.'}`);

/** A declaration that names a server module would need the server installed to type-check. */
function checkImports(file, text) {
  const specifiers = [...text.matchAll(/(?:from\s+|import\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
  const foreign = specifiers.filter((s) => !s.startsWith('./') && !ALLOWED_IMPORTS.has(s));
  if (foreign.length > 0) fail(`${path.basename(file)} imports ${[...new Set(foreign)].join(', ')}: the client must stand alone`);
}

function formatHost() {
  return { getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n' };
}

function fail(message) {
  console.error(message);
  process.exit(1);
}
