// Summarises a V8 CPU profile (node --cpu-prof; `npm run bench -- --profile` writes them to
// bench-profiles/): self time grouped by package, node internals, the service's own files,
// garbage collection and idle, as shares of the busy time.
//
//   npx tsx bench/profile-summary.ts bench-profiles/CPU.*.cpuprofile [--functions 25]
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { functions: { type: 'string', default: '25' } } });

function groupOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) return `(${functionName.replace(/[()]/g, '') || 'native'})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node internals';
  const own = /\/(dist\/)?((?:src|routers|models|contract)\/.*)$/.exec(url);
  return own ? `service: ${own[2]!.replace(/\.js$/, '')}` : url;
}

for (const file of positionals) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfTime = new Map<number, number>();
  profile.samples.forEach((id, i) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfTime) {
    const frame = byId.get(id)!.callFrame;
    const group = groupOf(frame);
    groups.set(group, (groups.get(group) ?? 0) + us);
    const fn = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?/, '')}:${frame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
    total += us;
  }
  const idle = groups.get('(idle)') ?? 0;
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  console.log(`\n${file}: ${(total / 1e6).toFixed(1)} s profiled, idle ${((idle / total) * 100).toFixed(1)}%; shares of the busy time:`);
  for (const [group, us] of [...groups]
    .filter(([g]) => g !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, 30)) {
    console.log(`  ${pct(us).padStart(6)}  ${group}`);
  }
  console.log('  top functions (self time):');
  for (const [fn, us] of [...functions]
    .filter(([f]) => !f.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(values.functions))) {
    console.log(`  ${pct(us).padStart(6)}  ${fn}`);
  }
}
