// What npm run bench:scale records per phase: lifecycle pass times and actions from each
// replica's /metrics, the CPU of the replicas and of the processes they lean on (database,
// API server, etcd, kwok); and what else the report needs from the run.
import fs from 'node:fs';
import type { AuditEvent } from './scale-audit.js';
import type { ScaleCluster } from './scale-cluster.js';
import type { Latencies, StartRun } from './scale-driver.js';
import {
  byLabel,
  commandTimes,
  passStats,
  scrape,
  sample,
  type CommandTime,
  type PassStats,
  type Replica,
  type Scrape,
} from './scale-replicas.js';
import { cpuSeconds } from './targets.js';

export const JOBS = ['reconcile', 'idle-pause', 'retention', 'warm-pool'] as const;

export interface OpenPhase {
  name: string;
  from: number;
  pids: number[];
  scrapes: Scrape[];
  cpu: number[];
}

export interface Phase {
  name: string;
  from: number;
  to: number;
  /** CPU of each of Phases.processes, % of a core. */
  cpuPercent: number[];
  replicaCpuPercent: number[];
  passes: Record<string, PassStats>;
  actions: Map<string, number>;
  /** The replicas' database time by `collection command`. */
  database: Map<string, CommandTime>;
}

export type Check = [what: string, ok: boolean, evidence: string];

export class Phases {
  readonly list: Phase[] = [];
  start?: {
    run: StartRun;
    postsDone: number;
    allReady: number;
    running: number;
    ready: Map<string, number>;
    binder: ScaleCluster['binder'];
    /** User sandboxes made by starts that were answered with an error (and retried). */
    unanswered: number;
  };
  rest?: { rssMeanMiB: number; rssMaxMiB: number; cpuPercent: number }[];
  readonly queries: [string, Latencies][] = [];
  restartSeconds = NaN;
  checks: Check[] = [];
  audit: AuditEvent[] = [];
  /** Warnings and errors in the replicas' logs, by message. */
  warnings = new Map<string, number>();
  agentRequests = 0;
  /** etcd's database file once every sandbox ran (bytes), the basis of the etcd estimate. */
  etcdBytes = NaN;

  constructor(
    private readonly replicas: Replica[],
    readonly names: string[],
    /** The processes besides the replicas whose CPU each phase reports. */
    readonly processes: { name: string; pid: number }[],
  ) {}

  async begin(name: string): Promise<OpenPhase> {
    const pids = this.replicas.map((r) => r.target.pid);
    const scrapes = await Promise.all(this.replicas.map((r) => scrape(r.target.url)));
    return { name, from: Date.now(), pids, scrapes, cpu: this.processes.map((p) => cpuSeconds(p.pid)) };
  }

  async end(open: OpenPhase): Promise<void> {
    const to = Date.now();
    const seconds = (to - open.from) / 1000;
    const after = await Promise.all(this.replicas.map((r) => scrape(r.target.url)));
    // A replica restarted during the phase counts from zero.
    const before = this.replicas.map((r, i) => (r.target.pid === open.pids[i] ? open.scrapes[i]! : new Map<string, number>()));
    const passes: Record<string, PassStats> = {};
    for (const job of JOBS) {
      const each = after.map((a, i) => passStats(before[i]!, a, job));
      const n = each.reduce((s, p) => s + p.passes, 0);
      const sum = each.reduce((s, p) => s + (p.passes ? p.meanSeconds * p.passes : 0), 0);
      const slowest = Math.max(...each.map((p) => (p.passes ? p.maxBucketSeconds : 0)));
      passes[job] = { passes: n, meanSeconds: n ? sum / n : NaN, maxBucketSeconds: slowest };
    }
    const actions = new Map<string, number>();
    after.forEach((a, i) => {
      const was = byLabel(before[i]!, 'sandbox_lifecycle_actions_total', 'action');
      for (const [action, n] of byLabel(a, 'sandbox_lifecycle_actions_total', 'action')) {
        actions.set(action, (actions.get(action) ?? 0) + n - (was.get(action) ?? 0));
      }
    });
    const database = new Map<string, CommandTime>();
    after.forEach((a, i) => commandTimes(before[i]!, a, database));
    const cpu = (s: Scrape) => sample(s, 'process_cpu_seconds_total');
    this.list.push({
      name: open.name,
      from: open.from,
      to,
      cpuPercent: this.processes.map((p, i) => ((cpuSeconds(p.pid) - open.cpu[i]!) / seconds) * 100),
      // prom-client's own CPU counter, so that a replica restarted mid-phase still counts.
      replicaCpuPercent: after.map((a, i) => ((cpu(a) - cpu(before[i]!)) / seconds) * 100),
      passes,
      actions,
      database,
    });
  }

  /** How often the replicas took an action since the phase began (a replica restarted meanwhile counts from zero). */
  async actionsSince(open: OpenPhase, action: string): Promise<number> {
    const now = await Promise.all(this.replicas.map((r) => scrape(r.target.url)));
    return now.reduce((sum, s, i) => {
      const was = this.replicas[i]!.target.pid === open.pids[i] ? open.scrapes[i]! : new Map<string, number>();
      return sum + sample(s, 'sandbox_lifecycle_actions_total', { action }) - sample(was, 'sandbox_lifecycle_actions_total', { action });
    }, 0);
  }

  phase(name: string): Phase {
    return this.list.find((p) => p.name === name)!;
  }

  action(name: string): number {
    return this.list.reduce((sum, p) => sum + (p.actions.get(name) ?? 0), 0);
  }

  /** Counts the warnings and errors (pino levels 40 and up) in the replicas' log files. */
  readWarnings(logFiles: string[]): void {
    for (const file of logFiles) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
        if (!/^\{"level":[45]\d/.test(line)) continue;
        const { msg, err } = JSON.parse(line) as { msg?: string; err?: { message?: string } };
        const key = `${msg ?? '?'}${err?.message ? `: ${err.message.slice(0, 120)}` : ''}`;
        this.warnings.set(key, (this.warnings.get(key) ?? 0) + 1);
      }
    }
  }
}

/** The pids of the processes whose command line names `needle` (the control plane's run dir). */
export function pidsNaming(needle: string): { name: string; pid: number }[] {
  const found: { name: string; pid: number }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((a) => a.includes(needle))) found.push({ name: args[0]!.split('/').pop()!, pid: Number(entry) });
    } catch {
      // gone meanwhile
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}
