// npm run bench:scale: the Kubernetes runtime at scale. Several replicas of the service on one
// database (an external FerretDB, as MONGODB_URI points production at MongoDB) and one
// namespace of a real kube-apiserver + etcd, with kwok Nodes that run the pods; the replicas'
// requests are recorded in the API server's audit log. Phases:
//   start      N sandboxes over REST, spread over the replicas (throughput to RUNNING)
//   rest       every sandbox running, N conversations: memory, CPU, API requests, pass times
//   queries    sandbox search and conversation list latency
//   reconcile  1% orphan claims and 1% lost sandboxes (objects removed behind the service's back)
//   idle       a share (--churn) last used a day ago: the idle pauser pauses exactly those
//   retention  the replicas restarted with 1 s retention: the paused ones are deleted
// and then, from the audit log and the database, that no decision was taken twice.
//
//   npm run bench:scale [-- --sandboxes 1000 --replicas 3 --per-user 100 --churn 0.1 --rest-seconds 120 --keep]
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { loadConfig } from '../src/config/config.js';
import { generateKeyText } from '../src/crypto.js';
import { connectDatabase } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { rebuildLists } from '../src/db/record-lists/list-rebuild.js';
import { createLogger } from '../src/logger.js';
import { MANAGED_BY, LABEL_SANDBOX_ID, workspaceClaimName, sandboxName } from '../src/sandbox/kubernetes/kubernetes-objects.js';
import { PACKAGE_ROOT, stopChild } from '../src/processes.js';
import { ApiKeysService } from '../src/services/identity/api-keys.service.js';
import { startSimulatedAgents } from './scale-agents.js';
import { NAMESPACE, startScaleCluster } from './scale-cluster.js';
import { allSandboxes, startSandboxes, timeRequests, until, type User } from './scale-driver.js';
import { commandTimes, restMeter, scrape, startReplicas, topCommands, type CommandTime } from './scale-replicas.js';
import { decisionChecks } from './scale-checks.js';
import { Phases, pidsNaming } from './scale-phases.js';
import { report } from './scale-report.js';
import { seedConversations } from './seed.js';

const { values } = parseArgs({
  options: {
    sandboxes: { type: 'string', default: '10000' },
    replicas: { type: 'string', default: '3' },
    'per-user': { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '24' },
    'max-starts': { type: 'string', default: '16' },
    'warm-pool': { type: 'string', default: '10' },
    churn: { type: 'string', default: '0.1' },
    'rest-seconds': { type: 'string', default: '120' },
    queries: { type: 'string', default: '100' },
    'interval-ms': { type: 'string', default: '30000' },
    'reconcile-ms': { type: 'string', default: '60000' },
    keep: { type: 'boolean', default: false },
  },
});
const N = Number(values.sandboxes);
const R = Number(values.replicas);
const perUser = Number(values['per-user']);
const warmPool = Number(values['warm-pool']);
const intervalMs = Number(values['interval-ms']);
const reconcileMs = Number(values['reconcile-ms']);
const churn = Math.round(N * Number(values.churn));
const damaged = Math.min(100, Math.max(1, Math.round(N / 100)));
const DAY_MS = 24 * 3600_000;
const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const say = (line: string) => process.stderr.write(`[scale ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

async function main() {
  if (spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: PACKAGE_ROOT, stdio: 'inherit' }).status !== 0)
    throw new Error('tsc failed');
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PACKAGE_ROOT, encoding: 'utf8' }).stdout.trim();
  const loadAtStart = loadavg();
  const log = createLogger('warn', process.stderr);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-scale-'));
  const stops: (() => Promise<unknown>)[] = [];
  const cleanUp = async () => {
    for (const stop of stops.splice(0)) await stop().catch(() => {});
    if (values.keep) say(`kept the replicas' logs in ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().then(() => process.exit(130)));
  try {
    const ferret = await startFerretDb({
      binary: await ensureFerretDbBinary(loadConfig(process.env).cacheDir, log),
      dbDir: path.join(tmp, 'db'),
      stateDir: tmp,
      log,
    });
    stops.unshift(() => stopChild(ferret.child));
    const mongoUri = `${ferret.uri}scale`;
    const db = await connectDatabase(mongoUri, { operationTimeoutMs: 120_000 });
    stops.unshift(() => db.close());
    const apiKeys = new ApiKeysService(db.models.ApiKey, undefined);
    const users: User[] = [];
    for (let i = 0; i < Math.ceil(N / perUser); i++) {
      const id = `user-${i}`;
      users.push({ id, key: (await apiKeys.create(id)).key, replica: i % R });
    }
    const replicaNames = Array.from({ length: R }, (_, i) => `replica-${i}`);
    const cluster = await startScaleCluster({ pods: N + warmPool + damaged, users: replicaNames, log: say });
    stops.unshift(() => cluster.stop());
    const core = cluster.cp.kubeConfig.makeApiClient(CoreV1Api);
    say(`control plane ready: ${cluster.nodes} kwok Nodes; ${users.length} users`);

    const agents = await startSimulatedAgents();
    stops.unshift(() => agents.stop());
    const set = await startReplicas({
      count: R,
      mongoUri,
      encryptionKey: generateKeyText(),
      dir: tmp,
      kubeconfigs: cluster.cp.userKubeconfigs,
      env: {
        NODE_OPTIONS: `--import ${path.join(PACKAGE_ROOT, 'bench/scale-dns.mjs')}`,
        SCALE_AGENTS_IP: agents.address,
        SANDBOX_RUNTIME: 'kubernetes',
        SANDBOX_K8S_NAMESPACE: NAMESPACE,
        SANDBOX_MAX_RUNNING_PER_USER: String(Math.min(1000, perUser)),
        SANDBOX_MAX_CONCURRENT_STARTS: values['max-starts'],
        SANDBOX_STARTUP_TIMEOUT_MS: String(3600_000),
        SANDBOX_WARM_POOL_SIZE: String(warmPool),
        SANDBOX_IDLE_PAUSE_SECONDS: '3600',
        SANDBOX_LIFECYCLE_INTERVAL_MS: String(intervalMs),
        SANDBOX_RECONCILE_INTERVAL_MS: String(reconcileMs),
        DB_COMMAND_METRICS: 'true',
      },
    });
    stops.unshift(() => set.stop());
    const replicas = set.replicas;
    const phases = new Phases(replicas, replicaNames, [{ name: 'FerretDB', pid: ferret.child.pid! }, ...pidsNaming(cluster.cp.runDir)]);
    say(`${R} replicas listening`);

    // start
    let shown = 0;
    let lastScrapes = await Promise.all(replicas.map((r) => scrape(r.target.url)));
    const databaseSince = async () => {
      const now = await Promise.all(replicas.map((r) => scrape(r.target.url)));
      const times = new Map<string, CommandTime>();
      now.forEach((s, i) => commandTimes(lastScrapes[i]!, s, times));
      lastScrapes = now;
      return topCommands(times, 4);
    };
    const startPhase = await phases.begin('start');
    const run = await startSandboxes({
      count: N,
      users,
      replicas,
      concurrency: Number(values.concurrency),
      progress: (done) => {
        if (done - shown < Math.max(100, N / 20)) return;
        shown = done;
        void databaseSince().then((top) => say(`${done} sandboxes started; database time since the last line: ${top}`));
      },
    });
    const postsDone = Date.now();
    const ids = run.started.map((s) => s.id);
    say(`${ids.length} POSTs answered (${run.failures.length} failed); waiting for the pods to be Ready`);
    await until('every pod Ready', () => ids.every((id) => cluster.readyAt.has(sandboxName(id))), 600_000);
    const allReady = Math.max(...ids.map((id) => cluster.readyAt.get(sandboxName(id))!));
    // Sandboxes the users have beyond those answered 2xx were made by starts answered with an
    // error (the driver retried them): the report counts them; they take part in nothing else.
    let listed = new Map<string, string>();
    const running = await until(
      'the service to report every sandbox RUNNING',
      async () => {
        listed = await allSandboxes(replicas, users);
        return ids.every((id) => listed.get(id) === 'RUNNING');
      },
      600_000,
      1000,
    );
    const answered = new Set(ids);
    const unanswered = [...listed.keys()].filter((id) => !answered.has(id));
    await phases.end(startPhase);
    phases.etcdBytes = fs.statSync(path.join(cluster.cp.runDir, 'etcd/member/snap/db')).size;
    phases.start = { run, postsDone, allReady, running, ready: cluster.readyAt, binder: cluster.binder, unanswered: unanswered.length };

    // conversations: one per sandbox, in its stored shape (see bench/seed.ts)
    const byUser = new Map<string, string[]>();
    for (const s of run.started) byUser.set(s.userId, [...(byUser.get(s.userId) ?? []), s.id]);
    for (const [userId, sandboxIds] of byUser)
      await seedConversations(db.connection.db!, userId, 0, sandboxIds.length, (n) => sandboxIds[n]!);
    // Seeded in bulk, past the record tables: on the embedded database their lists and sandbox
    // groups are built as the migration builds them (src/db/record-lists/list-rebuild.ts); without them the
    // searches found nothing and the lifecycle passes told no conversation its sandbox was gone.
    await rebuildLists(db, ['conversations']);
    say(`seeded ${ids.length} conversations; at rest for ${values['rest-seconds']} s`);

    // rest
    const restPhase = await phases.begin('rest');
    const meter = restMeter(replicas.map((r) => r.target.pid));
    await new Promise((r) => setTimeout(r, Number(values['rest-seconds']) * 1000));
    phases.rest = meter();
    await phases.end(restPhase);

    // queries
    const queries = Number(values.queries);
    say('timing searches');
    phases.queries.push([
      'sandbox search (limit 20), all running',
      await timeRequests(replicas, users, '/api/v1/sandboxes/search?limit=20', queries),
    ]);
    phases.queries.push([
      'conversation search V1 (limit 20)',
      await timeRequests(replicas, users, '/api/v1/app-conversations/search?limit=20', queries),
    ]);
    phases.queries.push(['conversation list V0 (limit 20)', await timeRequests(replicas, users, '/api/conversations?limit=20', queries)]);

    // reconcile: orphan claims (no record) and lost sandboxes (objects gone, record left)
    const reconcilePhase = await phases.begin('reconcile');
    const orphans = Array.from({ length: damaged }, () => crypto.randomBytes(16).toString('hex'));
    for (const id of orphans) {
      const labels = { 'app.kubernetes.io/managed-by': MANAGED_BY, [LABEL_SANDBOX_ID]: id };
      const spec = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
      await core.createNamespacedPersistentVolumeClaim({
        namespace: NAMESPACE,
        body: { metadata: { name: workspaceClaimName(id), labels }, spec },
      });
    }
    const lost = ids.slice(-damaged);
    for (const id of lost) {
      await core.deleteNamespacedPod({ namespace: NAMESPACE, name: sandboxName(id), gracePeriodSeconds: 0 });
      await core.deleteNamespacedPersistentVolumeClaim({ namespace: NAMESPACE, name: workspaceClaimName(id) });
    }
    say(`${damaged} orphan claims and ${damaged} lost sandboxes made; waiting for the reconcilers`);
    await until(
      'the reconcilers to remove the orphans and the lost records',
      async () =>
        (await phases.actionsSince(reconcilePhase, 'orphan_removed')) >= damaged &&
        (await phases.actionsSince(reconcilePhase, 'lost_record_removed')) >= damaged,
      20 * reconcileMs,
      1000,
    );
    await phases.end(reconcilePhase);

    // idle: the first `churn` sandboxes were last used a day ago (the field the use recorder writes)
    const idle = ids.slice(0, churn);
    const idlePhase = await phases.begin('idle');
    await db.models.Sandbox.updateMany({ _id: { $in: idle } }, { $set: { lastUsedAt: new Date(Date.now() - DAY_MS) } });
    say(`${idle.length} sandboxes made idle; waiting for the idle pausers`);
    await until(
      'the idle pausers',
      async () => (await db.models.Sandbox.countDocuments({ desired: 'paused' })) >= idle.length,
      40 * intervalMs + 600_000,
      2000,
    );
    await phases.end(idlePhase);
    phases.queries.push([
      `sandbox search (limit 20), ${values.churn} paused`,
      await timeRequests(replicas, users, '/api/v1/sandboxes/search?limit=20', queries),
    ]);

    // retention: restarted with 1 s retention, the paused sandboxes are deleted
    const retentionPhase = await phases.begin('retention');
    const restartStarted = Date.now();
    await set.restart({ SANDBOX_PAUSED_RETENTION_SECONDS: '1' });
    phases.restartSeconds = (Date.now() - restartStarted) / 1000 / R;
    say(`replicas restarted with 1 s retention; waiting for ${idle.length} deletions`);
    await until(
      'retention',
      async () => (await db.models.Sandbox.countDocuments({ _id: { $in: idle } })) === 0,
      40 * intervalMs + 600_000,
      2000,
    );
    await phases.end(retentionPhase);

    phases.checks = await decisionChecks({ db, auditLog: cluster.auditLog, phases, started: ids, idle, lost, orphans, unanswered });
    phases.agentRequests = agents.requests;
    phases.readWarnings(
      fs
        .readdirSync(tmp)
        .filter((f) => /^replica-\d+-\d+\.log$/.test(f))
        .map((f) => path.join(tmp, f)),
    );
    process.stdout.write(
      report(phases, {
        commit,
        sandboxes: N,
        replicas: R,
        users: users.length,
        nodes: cluster.nodes,
        churn: idle.length,
        damaged,
        warmPool,
        intervalMs,
        reconcileMs,
        concurrency: Number(values.concurrency),
        maxStarts: Number(values['max-starts']),
        machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, Node ${process.version}, load average ${loadAtStart} at the start, ${loadavg()} at the end`,
      }),
    );
  } finally {
    await cleanUp();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
