// The procedure chain alone, in process: `settings.get` called through tRPC's own caller and
// through the chain caller the REST table and the lean /trpc path use
// (src/library-internals.ts), with a context whose settings read answers at once. Prints the CPU
// per call of each, alternating, so that what the chain costs is seen without HTTP or a database.
//
//   npm run bench:chain [-- --calls 100000 --rounds 3]
import { parseArgs } from 'node:util';
import { appRouter, PROCEDURES } from '../routers/index.js';
import type { Settings } from '../contract/settings.schema.js';
import type { ProcedureCall } from '../src/library-internals.js';
import { createMetrics } from '../src/metrics.js';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '3' } } });
const calls = Number(values.calls);

const settings: Settings = {
  language: 'en',
  agent: 'CodeActAgent',
  max_iterations: null,
  security_analyzer: null,
  confirmation_mode: false,
  llm_model: 'openai/gpt-4o',
  llm_api_key: null,
  llm_base_url: null,
  remote_runtime_resource_factor: 1,
  secrets_store: { provider_tokens: {} },
  enable_default_condenser: true,
  enable_sound_notifications: false,
  enable_proactive_conversation_starters: true,
  enable_solvability_analysis: true,
  user_consents_to_analytics: null,
  sandbox_base_container_image: null,
  sandbox_runtime_container_image: null,
  mcp_config: null,
  search_api_key: null,
  sandbox_api_key: null,
  max_budget_per_task: null,
  max_budget_per_month: null,
  condenser_max_size: null,
  email: null,
  email_verified: null,
  git_user_name: null,
  git_user_email: null,
  llm_api_key_set: true,
  search_api_key_set: false,
  provider_tokens_set: {},
} as unknown as Settings;
const log = { isLevelEnabled: () => false, debug() {}, error() {} };
const deps = { metrics: createMetrics(), log, limits: { user() {} } };
const ctx = { deps, services: { settings: { get: async () => settings } }, user: { id: 'bench' }, transport: 'trpc', log, authVia: 'key' };
const options = () => ({
  path: 'settings.get',
  ctx,
  type: 'query' as const,
  getRawInput: async () => undefined,
  signal: undefined,
  batchIndex: 0,
});

const callers: [string, ProcedureCall][] = [
  ["tRPC's own caller", (appRouter._def.procedures as unknown as Record<string, ProcedureCall>)['settings.get']!],
  ['the chain caller', PROCEDURES.get('settings.get')!.call],
];
for (const [, call] of callers) await call(options()); // both answer (the output schema holds)
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const [name, call] of callers) {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) await call(options());
    const used = process.cpuUsage(before);
    console.log(`round ${round}, ${name}: ${((used.user + used.system) / calls).toFixed(1)} µs of CPU per call`);
  }
}
