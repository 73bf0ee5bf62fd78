// The service replicas of npm run bench:scale: each started as `npm start` runs it
// (bench/targets.ts), all on one database and one Kubernetes namespace, each with its own
// Kubernetes identity (so the audit log tells their requests apart); restarted with other
// lifecycle settings between phases, as a rolling deploy would. Plus what the bench reads of
// them: their Prometheus metrics, resident memory and CPU time.
import path from 'node:path';
import { cpuSeconds, memoryMiB, startService, type Target } from './targets.js';

export interface Replica {
  name: string;
  target: Target;
}

export interface ReplicaSet {
  replicas: Replica[];
  /** Stops every replica and starts it again with these settings on top of the first ones. */
  restart(env: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicas(opts: {
  count: number;
  mongoUri: string;
  encryptionKey: string;
  dir: string;
  kubeconfigs: Record<string, string>;
  env: Record<string, string>;
}): Promise<ReplicaSet> {
  const names = Array.from({ length: opts.count }, (_, i) => `replica-${i}`);
  let generation = 0;
  const start = (name: string, env: Record<string, string>) =>
    startService({
      mongoUri: opts.mongoUri,
      encryptionKey: opts.encryptionKey,
      dataDir: path.join(opts.dir, name),
      logFile: path.join(opts.dir, `${name}-${generation}.log`),
      env: { ...opts.env, ...env, SANDBOX_K8S_KUBECONFIG: opts.kubeconfigs[name]! },
    });
  const replicas: Replica[] = [];
  for (const name of names) replicas.push({ name, target: await start(name, {}) });
  return {
    replicas,
    async restart(env) {
      generation++;
      for (const replica of replicas) {
        await replica.target.stop();
        replica.target = await start(replica.name, env);
      }
    },
    async stop() {
      await Promise.all(replicas.map((r) => r.target.stop().catch(() => {})));
    },
  };
}

/** One scrape of /metrics: every sample by its name and labels, e.g. `x_count{job="reconcile"}`. */
export type Scrape = Map<string, number>;

export async function scrape(url: string): Promise<Scrape> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const samples: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** A sample's value, 0 when absent; labels in the order prom-client writes them. */
export function sample(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  const rendered = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  return scrape.get(rendered ? `${name}{${rendered}}` : name) ?? 0;
}

/** Every value of a labelled counter, by the value of one label, e.g. actions by `action`. */
export function byLabel(scrape: Scrape, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const pattern = new RegExp(`^${name}\\{(?:.*,)?${label}="([^"]*)"`);
  for (const [key, value] of scrape) {
    const match = pattern.exec(key);
    if (match) out.set(match[1]!, (out.get(match[1]!) ?? 0) + value);
  }
  return out;
}

export interface PassStats {
  passes: number;
  meanSeconds: number;
  /** Upper bound of the slowest pass's histogram bucket. */
  maxBucketSeconds: number;
}

/** Lifecycle passes of one job between two scrapes of one replica (sandbox_lifecycle_pass_duration_seconds). */
export function passStats(before: Scrape, after: Scrape, job: string): PassStats {
  const name = 'sandbox_lifecycle_pass_duration_seconds';
  const delta = (suffix: string, labels: Record<string, string>) =>
    sample(after, name + suffix, labels) - sample(before, name + suffix, labels);
  const passes = delta('_count', { job });
  const sum = delta('_sum', { job });
  let maxBucketSeconds = 0;
  let below = 0;
  const bounds = [...after.keys()]
    .map((key) => new RegExp(`^${name}_bucket\\{le="([^"]+)",job="${job}"\\}$`).exec(key)?.[1])
    .filter((le): le is string => le !== undefined);
  for (const le of bounds) {
    const count = delta('_bucket', { le, job });
    if (count > below) maxBucketSeconds = le === '+Inf' ? Infinity : Number(le);
    below = count;
  }
  return { passes, meanSeconds: passes ? sum / passes : NaN, maxBucketSeconds: passes ? maxBucketSeconds : NaN };
}

/** Samples each replica's resident memory every second until stopped; then also its CPU over the period. */
export function restMeter(pids: number[]) {
  const cpu0 = pids.map(cpuSeconds);
  const t0 = performance.now();
  const rss = pids.map(() => [] as number[]);
  const sampleAll = () => pids.forEach((pid, i) => rss[i]!.push(memoryMiB(pid).rss));
  sampleAll();
  const timer = setInterval(sampleAll, 1_000);
  return () => {
    clearInterval(timer);
    sampleAll();
    const seconds = (performance.now() - t0) / 1000;
    return pids.map((pid, i) => ({
      rssMeanMiB: rss[i]!.reduce((a, b) => a + b, 0) / rss[i]!.length,
      rssMaxMiB: Math.max(...rss[i]!),
      cpuPercent: ((cpuSeconds(pid) - cpu0[i]!) / seconds) * 100,
    }));
  };
}

export interface CommandTime {
  seconds: number;
  count: number;
}

/** Database time by `collection command {filter fields}` between two scrapes (database_command_duration_seconds, DB_COMMAND_METRICS). */
export function commandTimes(before: Scrape, after: Scrape, into = new Map<string, CommandTime>()): Map<string, CommandTime> {
  const pattern = /^database_command_duration_seconds_(sum|count)\{collection="([^"]*)",command="([^"]*)",filter="([^"]*)"\}$/;
  for (const [key, value] of after) {
    const match = pattern.exec(key);
    if (!match) continue;
    const name = `${match[2] || '-'} ${match[3]}${match[4] ? ` {${match[4]}}` : ''}`;
    const entry = into.get(name) ?? { seconds: 0, count: 0 };
    const delta = value - (before.get(key) ?? 0);
    if (match[1] === 'sum') entry.seconds += delta;
    else entry.count += delta;
    into.set(name, entry);
  }
  return into;
}

/** The `top` entries by time, as `collection command 12.3 s (456)`. */
export function topCommands(times: Map<string, CommandTime>, top = 6): string {
  return (
    [...times]
      .filter(([, t]) => t.count > 0)
      .sort((a, b) => b[1].seconds - a[1].seconds)
      .slice(0, top)
      .map(([name, t]) => `${name} ${t.seconds.toFixed(1)} s (${t.count})`)
      .join(', ') || '–'
  );
}
