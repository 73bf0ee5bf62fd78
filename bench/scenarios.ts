// What the bench measures: each scenario names the request every target answers for it.
// The service, the floor (bench/floor-server.mjs) and the reference server run side by side;
// a target a scenario has no request for is left out of it.
import type { LoadSpec } from './load.js';

export type TargetName = 'service' | 'floor' | 'reference';

export type Request = Pick<LoadSpec, 'method' | 'path' | 'headers' | 'body' | 'expectStatus'>;

export interface Scenario {
  name: string;
  connections: number;
  requests: Partial<Record<TargetName, Request>>;
  /** Compared with the floor (throughput and p99) and the reference in the ratio table. */
  ratios: boolean;
}

export interface Keys {
  /** The bench user's API key (the service) and the reference server's SESSION_API_KEY. */
  service: string;
  reference: string;
}

const json = { 'content-type': 'application/json' };

export function hotPathScenarios(keys: Keys): Scenario[] {
  const svc = { 'x-session-api-key': keys.service };
  const ref = { 'x-session-api-key': keys.reference };
  // A single call as httpLink sends it, and a batch of one as httpBatchLink (the client package's link) does.
  const trpcPaths = {
    single: `/trpc/settings.get?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`,
    batched: `/trpc/settings.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { json: {} } }))}`,
  };
  const trpcRead = (connections: number, kind: keyof typeof trpcPaths): Scenario => ({
    name: `tRPC settings.get${kind === 'batched' ? ' (batch of one)' : ''}, ${connections} connections`,
    connections,
    ratios: true,
    requests: {
      service: { method: 'GET', path: trpcPaths[kind], headers: svc, expectStatus: 200 },
      floor: { method: 'GET', path: '/settings', headers: svc, expectStatus: 200 },
    },
  });
  const read = (connections: number): Scenario => ({
    name: `GET settings, ${connections} connections`,
    connections,
    ratios: true,
    requests: {
      service: { method: 'GET', path: '/api/settings', headers: svc, expectStatus: 200 },
      floor: { method: 'GET', path: '/settings', headers: svc, expectStatus: 200 },
      reference: { method: 'GET', path: '/api/v1/settings', headers: ref, expectStatus: 200 },
    },
  });
  const write = (connections: number): Scenario => ({
    name: `POST settings (LLM key + language), ${connections} connections`,
    connections,
    ratios: true,
    requests: {
      service: {
        method: 'POST',
        path: '/api/settings',
        headers: { ...svc, ...json },
        body: JSON.stringify({ llm_api_key: 'sk-bench-new', language: 'en' }),
        expectStatus: 200,
      },
      floor: {
        method: 'POST',
        path: '/settings',
        headers: { ...svc, ...json },
        body: JSON.stringify({ llm_api_key: 'sk-bench-new', language: 'en' }),
        expectStatus: 200,
      },
      reference: {
        method: 'POST',
        path: '/api/v1/settings',
        headers: { ...ref, ...json },
        body: JSON.stringify({ agent_settings_diff: { llm: { api_key: 'sk-bench-new' } }, language: 'en' }),
        expectStatus: 200,
      },
    },
  });
  return [
    read(16),
    read(64),
    write(16),
    write(64),
    {
      name: 'GET settings without a key (401), 16 connections',
      connections: 16,
      ratios: true,
      requests: {
        service: { method: 'GET', path: '/api/settings', expectStatus: 401 },
        floor: { method: 'GET', path: '/settings', expectStatus: 401 },
        reference: { method: 'GET', path: '/api/v1/settings', expectStatus: 401 },
      },
    },
    {
      name: 'GET /alive, 16 connections',
      connections: 16,
      ratios: true,
      requests: {
        service: { method: 'GET', path: '/alive', expectStatus: 200 },
        floor: { method: 'GET', path: '/alive', expectStatus: 200 },
        reference: { method: 'GET', path: '/alive', expectStatus: 200 },
      },
    },
    ...[16, 64].flatMap((connections) => [trpcRead(connections, 'single'), trpcRead(connections, 'batched')]),
  ];
}

/** The conversation lists at `size` conversations; with `tasks`, also the start-task searches over that many tasks (measured once). */
export function historyScenarios(size: number, key: string, taskKey: string, tasks: number | null): Scenario[] {
  const label = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
  const get = (name: string, path: string, as = key): Scenario => ({
    name: `${name}, ${as === key ? `${label(size)} conversations` : `${label(tasks ?? 0)} start tasks`}, 4 connections`,
    connections: 4,
    ratios: false,
    requests: { service: { method: 'GET', path, headers: { 'x-session-api-key': as }, expectStatus: 200 } },
  });
  // The start-task search the d6 UI polls: the last 20 minutes (the newest seeded tasks are that recent).
  const recent = new Date(Date.now() - 20 * 60_000).toISOString();
  const taskSearches = [
    get(
      'V1 start-task search (d6 UI)',
      `/api/v1/app-conversations/start-tasks/search?limit=10&created_at__gte=${encodeURIComponent(recent)}`,
      taskKey,
    ),
    get('V1 start-task search, newest', '/api/v1/app-conversations/start-tasks/search?limit=20', taskKey),
  ];
  return [
    get('V1 conversation search', '/api/v1/app-conversations/search?limit=20'),
    get('Agent Canvas home (V1 search by update)', '/api/v1/app-conversations/search?limit=20&sort_order=UPDATED_AT_DESC'),
    get('V0 conversation list (d6 UI)', '/api/conversations?limit=10'),
    ...(tasks === null ? [] : taskSearches),
  ];
}

/** The settings read at 200 connections: the memory figure under load is taken during it. */
export function memoryScenario(keys: Keys): Scenario {
  const read = hotPathScenarios(keys)[0]!;
  return { ...read, name: 'GET settings, 200 connections', connections: 200 };
}
