// The Markdown report of npm run bench:scale: the headline figures, the phases (time, CPU of
// every process, what the lifecycle did), the replicas' API requests, and the checks that no
// decision was taken twice.
import { sandboxName } from '../src/sandbox/kubernetes/kubernetes-objects.js';
import { breakdown, inPeriod, ratePerUser } from './scale-audit.js';
import { JOBS, type Phases } from './scale-phases.js';
import { topCommands, type PassStats } from './scale-replicas.js';

export interface RunInfo {
  commit: string;
  sandboxes: number;
  replicas: number;
  users: number;
  nodes: number;
  churn: number;
  damaged: number;
  warmPool: number;
  intervalMs: number;
  reconcileMs: number;
  concurrency: number;
  maxStarts: number;
  machine: string;
}

const f = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const pass = (p: PassStats | undefined) =>
  p && p.passes ? `${f(p.meanSeconds, 3)} s mean, ≤ ${f(p.maxBucketSeconds, 3)} s slowest (${p.passes} passes)` : '–';
const percentile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

export function report(phases: Phases, info: RunInfo): string {
  const rows: [string, string][] = [];
  const start = phases.start!;
  const t0 = Math.min(...start.run.started.map((s) => s.postedAt));
  const seconds = (start.allReady - t0) / 1000;
  rows.push([
    'start throughput, sandboxes/s to RUNNING',
    `**${f(start.run.started.length / seconds)}** (${start.run.started.length} in ${f(seconds)} s; POSTs answered in ${f((start.postsDone - t0) / 1000)} s; ` +
      `every one read RUNNING through the replicas ${f((start.running - start.allReady) / 1000)} s after the last pod was Ready)`,
  ]);
  const post = start.run.started.map((s) => s.answeredAt - s.postedAt);
  const toReady = start.run.started.map((s) => (start.ready.get(sandboxName(s.id)) ?? NaN) - s.postedAt);
  rows.push(['start: POST answered, p50 / p99 ms', `${f(percentile(post, 0.5), 0)} / ${f(percentile(post, 0.99), 0)}`]);
  rows.push(['start: POST to pod Ready, p50 / p99 ms', `${f(percentile(toReady, 0.5), 0)} / ${f(percentile(toReady, 0.99), 0)}`]);
  const retried = [...start.run.retried].map(([status, n]) => `${n} × ${status}`).join(', ') || 'none';
  const failed = start.run.failures.length ? `${start.run.failures.length} (${start.run.failures[0]})` : '0';
  rows.push(['start: answers retried; failed', `${retried}; ${failed}`]);
  rows.push(['start: sandboxes made by a start answered with an error (then retried)', `${start.unanswered}`]);
  for (const [what, l] of phases.queries) {
    const failures = l.failed ? `, ${l.failed} failed: ${l.firstFailure}` : '';
    rows.push([`${what}, p50 / p99 ms`, `**${f(l.p50, 0)} / ${f(l.p99, 0)}** (${l.count} requests${failures})`]);
  }
  const rest = phases.phase('rest');
  for (const job of JOBS) rows.push([`${job} pass at rest`, pass(rest.passes[job])]);
  rows.push(['idle-pause passes while pausing the idle share', pass(phases.phase('idle').passes['idle-pause'])]);
  rows.push(['retention passes while deleting the paused share', pass(phases.phase('retention').passes.retention)]);
  rows.push(['reconcile passes while removing orphans and lost sandboxes', pass(phases.phase('reconcile').passes.reconcile)]);
  for (const name of ['reconcile', 'idle', 'retention']) {
    rows.push([`${name} phase: until every decision was carried out`, `${f((phases.phase(name).to - phases.phase(name).from) / 1000)} s`]);
  }
  phases.rest!.forEach((r, i) =>
    rows.push([
      `${phases.names[i]} at rest: RSS mean (max) MiB, CPU`,
      `${f(r.rssMeanMiB, 0)} (${f(r.rssMaxMiB, 0)}), ${f(r.cpuPercent)}% of a core`,
    ]),
  );
  rows.push(['replica restart until listening, s (mean of the replicas)', f(phases.restartSeconds)]);
  const perSandbox = phases.etcdBytes / (start.run.started.length + info.warmPool);
  rows.push([
    'etcd database file with every sandbox running, MiB (KiB per sandbox)',
    `${f(phases.etcdBytes / 2 ** 20)} (${f(perSandbox / 1024)})`,
  ]);
  for (const phase of phases.list) {
    const rates = ratePerUser(phases.audit, phases.names, phase.from, phase.to);
    rows.push([`API requests/s per replica, ${phase.name}`, [...rates.values()].map((r) => f(r)).join(' / ')]);
  }

  let out = `\n## Scale on a simulated cluster: ${info.sandboxes} sandboxes × ${info.replicas} replicas\n\n`;
  out += `Commit ${info.commit}. ${info.users} users (${Math.ceil(info.sandboxes / info.users)} sandboxes each), ${info.nodes} kwok Nodes, `;
  out += `one FerretDB (SQLite) for all replicas, warm pool ${info.warmPool}, lifecycle passes every ${info.intervalMs / 1000} s, `;
  out += `reconcile every ${info.reconcileMs / 1000} s; ${info.concurrency} clients start sandboxes, SANDBOX_MAX_CONCURRENT_STARTS=${info.maxStarts} `;
  out += `per replica; idle share ${info.churn}, ${info.damaged} orphan claims and ${info.damaged} lost sandboxes. ${info.machine}.\n\n`;
  out += '| measure | value |\n|---|---|\n';
  for (const [k, v] of rows) out += `| ${k} | ${v} |\n`;

  const names = phases.processes.map((p) => p.name);
  out += `\n| phase | seconds | replicas CPU | ${names.map((n) => `${n} CPU`).join(' | ')} | lifecycle actions |\n`;
  out += `|---|---:|---|${names.map(() => '---:|').join('')}---|\n`;
  for (const p of phases.list) {
    const actions =
      [...p.actions]
        .filter(([, n]) => n > 0)
        .map(([a, n]) => `${a} ${n}`)
        .join(', ') || '–';
    const replicas = p.replicaCpuPercent.map((c) => `${f(c)}%`).join(' / ');
    out += `| ${p.name} | ${f((p.to - p.from) / 1000)} | ${replicas} | ${p.cpuPercent.map((c) => `${f(c)}%`).join(' | ')} | ${actions} |\n`;
  }
  out += `\nWhere the replicas' database time went, by phase (collection and command: seconds in total over the replicas, commands):\n\n`;
  for (const p of phases.list) out += `- ${p.name}: ${topCommands(p.database)}\n`;
  const restRequests = breakdown(inPeriod(phases.audit, rest.from, rest.to))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  out += `\nAPI requests at rest (all replicas, ${f((rest.to - rest.from) / 1000, 0)} s): ${restRequests || 'none'}. `;
  out += `Binder: ${start.binder.bound} pods bound, ${start.binder.failed} bindings refused. Simulated agent servers: ${phases.agentRequests} requests.\n`;
  const warnings = [...phases.warnings].sort((a, b) => b[1] - a[1]);
  out += `\nWarnings and errors in the replicas' logs: ${warnings.length ? warnings.map(([m, n]) => `${n} × ${m}`).join('; ') : 'none'}.\n`;
  out += '\n| no decision taken twice | ok | evidence |\n|---|---|---|\n';
  for (const [what, ok, evidence] of phases.checks) out += `| ${what} | ${ok ? 'yes' : '**NO**'} | ${evidence} |\n`;
  return out;
}
