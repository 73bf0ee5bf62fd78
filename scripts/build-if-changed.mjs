// `npm start`'s build step: compiles the service (tsc -p tsconfig.build.json) only when its
// sources changed since the last successful build, so an unchanged checkout starts at once.
// The stamp is a SHA-256 over the compiler's inputs (the included folders, the tsconfigs and
// the lockfile), kept in dist/ with the output it describes. tsc's own incremental mode
// (tsBuildInfoFile) makes the builds that do run shorter.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const INPUTS = ['src', 'routers', 'models', 'contract'];
const FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
const stampFile = path.join(root, 'dist', '.build-stamp');
const entry = path.join(root, 'dist', 'src', 'main.js');

function inputsHash() {
  const hash = crypto.createHash('sha256');
  const files = [...FILES];
  for (const dir of INPUTS) {
    for (const entry of fs.readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(path.relative(root, path.join(entry.parentPath, entry.name)));
    }
  }
  for (const file of files.sort()) {
    hash.update(file).update('\0');
    hash.update(fs.readFileSync(path.join(root, file))).update('\0');
  }
  return hash.digest('hex');
}

const wanted = inputsHash();
const built = fs.existsSync(stampFile) ? fs.readFileSync(stampFile, 'utf8').trim() : null;
if (built === wanted && fs.existsSync(entry)) process.exit(0);

process.stderr.write('build: compiling the service (sources changed since the last build)\n');
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
fs.writeFileSync(stampFile, wanted + '\n');
