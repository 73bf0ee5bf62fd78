// Reading kube-apiserver's audit log (one JSON event per request the replicas sent, written
// when its answer was complete): requests per replica and second in a period, what they were,
// and how often each object was created or deleted, the evidence that no decision was taken
// twice (a second pause of a sandbox would be a second DELETE of its pod).
import fs from 'node:fs';
import readline from 'node:readline';

export interface AuditEvent {
  user: string;
  verb: string;
  resource: string;
  name: string;
  code: number;
  /** When the request arrived, ms since the epoch. */
  at: number;
}

interface RawEvent {
  verb: string;
  user?: { username?: string };
  objectRef?: { resource?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
}

/** Every event in the log so far (a batch not yet flushed arrives with the next read). */
export async function readAudit(file: string): Promise<AuditEvent[]> {
  if (!fs.existsSync(file)) return [];
  const events: AuditEvent[] = [];
  const lines = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line) continue;
    const raw = JSON.parse(line) as RawEvent;
    events.push({
      user: raw.user?.username ?? '',
      verb: raw.verb,
      resource: raw.objectRef?.resource ?? '',
      name: raw.objectRef?.name ?? '',
      code: raw.responseStatus?.code ?? 0,
      at: Date.parse(raw.requestReceivedTimestamp),
    });
  }
  return events;
}

export const inPeriod = (events: AuditEvent[], from: number, to: number) => events.filter((e) => e.at >= from && e.at < to);

/** Requests per second of each user over a period. */
export function ratePerUser(events: AuditEvent[], users: string[], from: number, to: number): Map<string, number> {
  const seconds = (to - from) / 1000;
  const period = inPeriod(events, from, to);
  return new Map(users.map((u) => [u, period.filter((e) => e.user === u).length / seconds]));
}

/** The period's requests by verb and resource ("list pods": 12), most frequent first. */
export function breakdown(events: AuditEvent[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(`${e.verb} ${e.resource}`, (counts.get(`${e.verb} ${e.resource}`) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

export interface ObjectCounts {
  /** Objects with exactly one such request answered with the code. */
  once: number;
  /** Objects with more than one. */
  twice: string[];
  /** Expected objects with none. */
  missing: string[];
  /** Requests of this verb and resource on the expected objects, whatever the answer. */
  attempts: number;
}

/**
 * For each expected object name: how many requests of `verb` on `resource` were answered with
 * `code` (a create: 201, a delete: 200). Exactly one each means exactly one decision each.
 */
export function countPerObject(events: AuditEvent[], verb: string, resource: string, code: number, expected: string[]): ObjectCounts {
  const answered = new Map<string, number>();
  let attempts = 0;
  const wanted = new Set(expected);
  for (const e of events) {
    if (e.verb !== verb || e.resource !== resource || !wanted.has(e.name)) continue;
    attempts++;
    if (e.code === code) answered.set(e.name, (answered.get(e.name) ?? 0) + 1);
  }
  const result: ObjectCounts = { once: 0, twice: [], missing: [], attempts };
  for (const name of expected) {
    const n = answered.get(name) ?? 0;
    if (n === 1) result.once++;
    else if (n === 0) result.missing.push(name);
    else result.twice.push(name);
  }
  return result;
}
