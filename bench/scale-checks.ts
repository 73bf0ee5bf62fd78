// The evidence npm run bench:scale gives that no decision was taken twice: per object from
// kube-apiserver's audit log (each pod created once, each pause one DELETE of the pod, each
// removal one DELETE of the workspace claim), per decision from the claims in the database
// (one per sandbox and decision), and the records and conversations that should be left.
import type { Database } from '../src/db/database.js';
import { sandboxName, workspaceClaimName } from '../src/sandbox/kubernetes/kubernetes-objects.js';
import { countPerObject, inPeriod, readAudit, type ObjectCounts } from './scale-audit.js';
import type { Check, Phases } from './scale-phases.js';

export async function decisionChecks(opts: {
  db: Database;
  auditLog: string;
  phases: Phases;
  started: string[];
  idle: string[];
  lost: string[];
  orphans: string[];
  /** User sandboxes made by starts answered with an error: left alone, so still there. */
  unanswered: string[];
}): Promise<Check[]> {
  const { db, phases, started, idle, lost, orphans } = opts;
  // What a sandbox id was to the bench, to name the objects a decision touched that it should not have.
  const answered = new Set(started);
  const unanswered = new Set(opts.unanswered);
  const kindOf = (id: string) => (answered.has(id) ? 'a started sandbox' : unanswered.has(id) ? 'an unanswered start' : 'a warm sandbox');
  await new Promise((r) => setTimeout(r, 3_000)); // the audit log's last batch (flushed every second)
  const events = await readAudit(opts.auditLog);
  phases.audit = events;
  const checks: Check[] = [];
  const verdict = (what: string, counts: ObjectCounts, expected: number) =>
    checks.push([
      what,
      counts.once === expected && counts.twice.length === 0 && counts.missing.length === 0,
      `${counts.once} of ${expected} exactly once, ${counts.twice.length} more than once, ${counts.missing.length} never; ${counts.attempts} requests`,
    ]);
  const pods = new Set(events.filter((e) => e.verb === 'create' && e.resource === 'pods').map((e) => e.name));
  for (const id of [...started, ...opts.unanswered]) pods.add(sandboxName(id));
  verdict('every sandbox (user and warm) created as a pod once', countPerObject(events, 'create', 'pods', 201, [...pods]), pods.size);
  const during = (name: string) => inPeriod(events, phases.phase(name).from, phases.phase(name).to + 1000);
  verdict(
    'idle sandboxes: pod deleted (paused) once',
    countPerObject(during('idle'), 'delete', 'pods', 200, idle.map(sandboxName)),
    idle.length,
  );
  const idleNames = new Set(idle.map(sandboxName));
  const others = during('idle').filter((e) => e.verb === 'delete' && e.resource === 'pods' && !idleNames.has(e.name));
  checks.push([
    'no other pod deleted while pausing',
    others.length === 0,
    `${others.length} other pod deletes${others.length ? ` (${others.map((e) => `${kindOf(e.name.replace(/^sandbox-/, ''))} by ${e.user}`).join(', ')})` : ''}`,
  ]);
  const claimNames = (ids: string[]) => ids.map(workspaceClaimName);
  verdict(
    'paused sandboxes: workspace deleted (retention) once',
    countPerObject(during('retention'), 'delete', 'persistentvolumeclaims', 200, claimNames(idle)),
    idle.length,
  );
  verdict(
    'orphan claims deleted (reconcile) once',
    countPerObject(during('reconcile'), 'delete', 'persistentvolumeclaims', 200, claimNames(orphans)),
    orphans.length,
  );
  verdict(
    'lost sandboxes: Service deleted (reconcile) once',
    countPerObject(during('reconcile'), 'delete', 'services', 200, lost.map(sandboxName)),
    lost.length,
  );

  // Claim keys are <decision>:<sandbox id>[:<state>]; one decision per sandbox, and each carried out.
  const claims = db.connection.db!.collection<{ _id: string }>('claims');
  for (const [decision, action, ids] of [
    ['idle', 'idle_pause', idle],
    ['retention', 'retention_delete', idle],
    ['orphan', 'orphan_removed', orphans],
    ['lost', 'lost_record_removed', lost],
  ] as const) {
    const keys = (await claims.find({ _id: { $regex: `^${decision}:` } }, { projection: { _id: 1 } }).toArray()).map((c) => c._id);
    const idOf = (key: string) => key.split(':')[1]!;
    const perId = new Map<string, number>();
    for (const key of keys) perId.set(idOf(key), (perId.get(idOf(key)) ?? 0) + 1);
    const once = ids.filter((id) => perId.get(id) === 1).length;
    const wanted = new Set<string>(ids);
    const elsewhereKinds = new Map<string, number>();
    for (const key of keys.filter((k) => !wanted.has(idOf(k)))) {
      elsewhereKinds.set(kindOf(idOf(key)), (elsewhereKinds.get(kindOf(idOf(key))) ?? 0) + 1);
    }
    const elsewhere = [...elsewhereKinds.values()].reduce((a, b) => a + b, 0);
    const kinds = [...elsewhereKinds].map(([kind, n]) => `${n} × ${kind}`).join(', ');
    const acted = phases.action(action);
    checks.push([
      `${decision} decisions: one claim per sandbox, each carried out`,
      once === ids.length && acted === keys.length,
      `${once} of ${ids.length} sandboxes claimed exactly once; ${elsewhere} claims for other sandboxes${kinds ? ` (${kinds})` : ''}; ${acted} ${action} actions for ${keys.length} claims`,
    ]);
  }
  const gone = await db.connection.db!.collection('app_conversations').countDocuments({ sandbox_gone_reason: { $ne: null } });
  checks.push([
    'conversations told their workspace is gone',
    gone === idle.length + lost.length,
    `${gone} of ${idle.length + lost.length}`,
  ]);
  const left = await db.models.Sandbox.countDocuments({ userId: { $ne: '~warm-pool' } });
  const expectedLeft = started.length + opts.unanswered.length - idle.length - lost.length;
  checks.push(['user sandbox records left', left === expectedLeft, `${left} of ${expectedLeft}`]);
  return checks;
}
