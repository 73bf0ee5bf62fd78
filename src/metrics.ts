// Prometheus metrics, one registry per app instance (tests run several apps per process).
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
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
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
