// What npm run bench:scale does to the replicas over REST, as users would: start sandboxes
// (POST /api/v1/sandboxes, spread over the replicas, retried when a replica answers that it is
// busy), read every user's sandboxes back, and time searches.
import type { Replica } from './scale-replicas.js';

export interface User {
  id: string;
  key: string;
  /** Where this user's reads go (users are spread over the replicas). */
  replica: number;
}

export interface Started {
  id: string;
  userId: string;
  sessionKey: string;
  /** When the POST was sent and answered, ms since the epoch. */
  postedAt: number;
  answeredAt: number;
}

export interface StartRun {
  started: Started[];
  /** Answers that were retried, by status (503 sandbox_starts_busy, 429, …). */
  retried: Map<number, number>;
  failures: string[];
}

const RETRY_MS = 200;
const MAX_ATTEMPTS = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = (user: User) => ({ authorization: `Bearer ${user.key}` });

/** Starts `count` sandboxes, the i-th for user i mod users on replica i mod replicas, `concurrency` at a time. */
export async function startSandboxes(opts: {
  count: number;
  users: User[];
  replicas: Replica[];
  concurrency: number;
  progress: (done: number) => void;
}): Promise<StartRun> {
  const run: StartRun = { started: [], retried: new Map(), failures: [] };
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < opts.count; i = next++) {
      const user = opts.users[i % opts.users.length]!;
      const url = opts.replicas[i % opts.replicas.length]!.target.url;
      const postedAt = Date.now();
      for (let attempt = 1; ; attempt++) {
        const res = await fetch(`${url}/api/v1/sandboxes`, { method: 'POST', headers: auth(user) }).catch((error: Error) => error);
        if (!(res instanceof Error) && res.ok) {
          const body = (await res.json()) as { id: string; session_api_key: string };
          run.started.push({ id: body.id, userId: user.id, sessionKey: body.session_api_key, postedAt, answeredAt: Date.now() });
          break;
        }
        const status = res instanceof Error ? 0 : res.status;
        const text = res instanceof Error ? res.message : await res.text();
        if ((status === 503 || status === 429 || status === 0) && attempt < MAX_ATTEMPTS) {
          run.retried.set(status, (run.retried.get(status) ?? 0) + 1);
          await sleep(RETRY_MS);
          continue;
        }
        run.failures.push(`${status} ${text.slice(0, 300)}`);
        break;
      }
      opts.progress(run.started.length);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return run;
}

/** Every sandbox of the user as the service reports it (the search, page by page). */
export async function userSandboxes(replicas: Replica[], user: User): Promise<{ id: string; status: string }[]> {
  const items: { id: string; status: string }[] = [];
  let page: string | null = null;
  do {
    const query: string = `limit=100${page ? `&page_id=${page}` : ''}`;
    const res = await fetch(`${replicas[user.replica]!.target.url}/api/v1/sandboxes/search?${query}`, { headers: auth(user) });
    if (!res.ok) throw new Error(`sandbox search answered ${res.status}: ${await res.text()}`);
    const body = (await res.json()) as { items: { id: string; status: string }[]; next_page_id: string | null };
    items.push(...body.items);
    page = body.next_page_id;
  } while (page);
  return items;
}

/** Every user's sandboxes and their status (id → status), read through the replicas. */
export async function allSandboxes(replicas: Replica[], users: User[]): Promise<Map<string, string>> {
  const status = new Map<string, string>();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < users.length; i = next++) {
      for (const s of await userSandboxes(replicas, users[i]!)) status.set(s.id, s.status);
    }
  };
  await Promise.all(replicas.map(worker));
  return status;
}

export interface Latencies {
  p50: number;
  p99: number;
  max: number;
  count: number;
  /** Answers other than 200 (first one kept). */
  failed: number;
  firstFailure: string | null;
}

/** `count` GETs of `path` by users in turn, one at a time per replica; latency in ms. */
export async function timeRequests(replicas: Replica[], users: User[], path: string, count: number): Promise<Latencies> {
  const ms: number[] = [];
  let failed = 0;
  let firstFailure: string | null = null;
  let next = 0;
  const worker = async (replica: Replica) => {
    for (let i = next++; i < count; i = next++) {
      const user = users[(i * 7919) % users.length]!; // spread over the users
      const t = performance.now();
      const res = await fetch(`${replica.target.url}${path}`, { headers: auth(user) });
      const body = await res.text();
      ms.push(performance.now() - t);
      if (res.status !== 200) {
        failed++;
        firstFailure ??= `${res.status} ${body.slice(0, 300)}`;
      }
    }
  };
  await Promise.all(replicas.map(worker));
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: ms.at(-1) ?? NaN, count: ms.length, failed, firstFailure };
}

/** Polls until check() is true; throws after timeoutMs. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, pollMs = 500): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(pollMs);
  }
  return Date.now();
}
