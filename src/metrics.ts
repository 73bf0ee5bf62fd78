// Prometheus metrics, one registry per app instance (tests run several apps per process).
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { TimedCommand } from './db/database.js';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const databaseCommands = new Histogram({
    name: 'database_command_duration_seconds',
    help: 'Database commands by collection, command and filter field names, answered or failed (only with DB_COMMAND_METRICS=true)',
    labelNames: ['collection', 'command', 'filter'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  return {
    registry,
    observeCommand(command: TimedCommand, seconds: number) {
      databaseCommands.observe({ ...command }, seconds);
    },
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route group and status code',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    procedureDuration: new Histogram({
      name: 'procedure_duration_seconds',
      help: 'Duration of tRPC/REST procedures',
      labelNames: ['procedure', 'outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    startPhaseDuration: new Histogram({
      name: 'start_task_phase_duration_seconds',
      help: 'Time a conversation start spent in each phase (observed when it reaches READY), by sandbox source',
      labelNames: ['phase', 'sandbox_source'] as const,
      buckets: START_BUCKETS,
      registers: [registry],
    }),
    startDuration: new Histogram({
      name: 'start_task_duration_seconds',
      help: 'Conversation start to READY or ERROR, by sandbox source (warm_pool claim, cold_start, existing)',
      labelNames: ['outcome', 'sandbox_source'] as const,
      buckets: START_BUCKETS,
      registers: [registry],
    }),
    sandboxStarts: new Counter({
      name: 'sandbox_starts_total',
      help: 'Sandboxes handed to users, by source: warm_pool (claimed) or cold_start',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    sandboxResumeDuration: new Histogram({
      name: 'sandbox_resume_duration_seconds',
      help: 'Transparent resumes (ensureRunning of a sandbox that was not running) until RUNNING or given up',
      labelNames: ['outcome'] as const,
      buckets: START_BUCKETS,
      registers: [registry],
    }),
    lifecyclePasses: new Counter({
      name: 'sandbox_lifecycle_passes_total',
      help: 'Passes each lifecycle job has finished on this replica (idle-pause, retention, reconcile, warm-pool)',
      labelNames: ['job'] as const,
      registers: [registry],
    }),
    lifecyclePassDuration: new Histogram({
      name: 'sandbox_lifecycle_pass_duration_seconds',
      help: 'How long each lifecycle pass took on this replica, failed or not (idle-pause, retention, reconcile, warm-pool)',
      labelNames: ['job'] as const,
      buckets: PASS_BUCKETS,
      registers: [registry],
    }),
    lifecycleActions: new Counter({
      name: 'sandbox_lifecycle_actions_total',
      help: 'What the lifecycle policies did: idle_pause, retention_delete, orphan_removed, lost_record_removed, warm_started, warm_claimed, warm_discarded, resume_retry',
      labelNames: ['action'] as const,
      registers: [registry],
    }),
    llmCalls: new Counter({
      name: 'llm_gateway_calls_total',
      help: 'LLM gateway calls by model and outcome: ok, provider_error, unreachable, aborted, too_large, budget_exceeded',
      labelNames: ['model', 'outcome'] as const,
      registers: [registry],
    }),
    llmTokens: new Counter({
      name: 'llm_gateway_tokens_total',
      help: 'Tokens through the LLM gateway by model and kind: input (uncached), output, cache_read, cache_write',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
    }),
    llmCost: new Counter({
      name: 'llm_gateway_cost_dollars_total',
      help: 'What the LLM gateway priced its calls at, by model',
      labelNames: ['model'] as const,
      registers: [registry],
    }),
    llmCallDuration: new Histogram({
      name: 'llm_gateway_call_duration_seconds',
      help: 'An LLM gateway call from its arrival to the end of its answer, by model and outcome',
      labelNames: ['model', 'outcome'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'webhook_delivery_attempts_total',
      help: 'Lifecycle webhook delivery attempts by outcome: delivered, failed (retried later), given_up',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

// Sandbox and conversation starts take from under a second (warm) to minutes (image pulls).
const START_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300];

// A pass reads a few candidates (milliseconds); at 10,000 sandboxes a reconcile lists them all (seconds).
const PASS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export type Metrics = ReturnType<typeof createMetrics>;
