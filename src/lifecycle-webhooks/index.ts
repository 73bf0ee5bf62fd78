// Lifecycle webhooks, wired (docs/webhooks.md): the endpoints, the outbox the domain emits
// into (src/lifecycle-webhooks/lifecycle-events.ts), and the dispatcher: a lease queue over lanes
// (lanes.ts) whose worker sends each lane's deliveries in order (lane-worker.ts), on every
// replica, each lane held by one at a time. Finished deliveries are kept WEBHOOK_HISTORY_DAYS.
import type { Models } from '../../models/index.js';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto.js';
import type { DecisionClaims } from '../db/claims.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { LeaseQueue } from '../db/lease-queue.js';
import { ProviderHostPolicy } from '../git/providers/provider-hosts.js';
import { WebhookEndpoints } from './endpoints.js';
import { WebhookEndpointsService } from './endpoints.service.js';
import { LaneWorker } from './lane-worker.js';
import { webhookLanes, type Lane } from './lanes.js';
import { WebhookOutbox } from './outbox.js';
import { WebhookSender } from './sender.js';

export { WebhookEndpointsService } from './endpoints.service.js';
export { WebhookOutbox } from './outbox.js';

export interface LifecycleWebhooksOptions {
  models: Models;
  box: SecretBox;
  claims: DecisionClaims;
  config: Config['webhooks'];
  metrics: Metrics;
  log: Logger;
  now?: () => number;
}

/** Lanes one replica sends at once. */
const CONCURRENT_LANES = 8;
/**
 * Lanes one user (an endpoint's owner) holds on a replica at once: half, so however many
 * deliveries one user has due (test events, a receiver that hangs every attempt for
 * WEBHOOK_TIMEOUT_MS), the other half stays free for everyone else, whose due lanes are taken
 * in turn (lease-queue.ts) rather than behind that backlog.
 */
const LANES_PER_USER = Math.ceil(CONCURRENT_LANES / 2);
const PRUNE_INTERVAL_MS = 3600_000;

export function createLifecycleWebhooks({ models, box, claims, config, metrics, log: parent, now = Date.now }: LifecycleWebhooksOptions) {
  const log = parent.child({ component: 'lifecycle-webhooks' });
  // The git providers' SSRF rules, with WEBHOOK_HOSTS as the list and no trusted roots.
  const hosts = new ProviderHostPolicy(config.allowedHosts, []);
  const endpoints = new WebhookEndpoints(models, box, hosts, now);
  const kick = () => queue.kick();
  const outbox = new WebhookOutbox(models, endpoints, log, kick, now);
  // Longer than an attempt can take (and renewed every third of it while the worker runs), so a
  // live worker's lease never lapses mid-attempt, while a dead one's lane waits little.
  const leaseMs = config.timeoutMs + 5_000;
  const worker = new LaneWorker({
    models,
    endpoints,
    sender: new WebhookSender(hosts, config.timeoutMs),
    claims,
    retryScheduleMs: config.retryScheduleMs,
    leaseMs,
    metrics,
    log,
    now,
  });
  const queue = new LeaseQueue<Lane>({
    store: webhookLanes(models, claims, now),
    worker: (lane, owner) => worker.run(lane, owner),
    leaseMs,
    pollMs: config.pollMs,
    maxConcurrent: CONCURRENT_LANES,
    log,
    // Lanes written before they named their owner are shared by endpoint.
    share: { keyOf: (lane) => lane.userId ?? lane.endpointId, max: LANES_PER_USER },
  });
  const prune = () =>
    models.WebhookDelivery.deleteMany({ finishedAt: { $lt: new Date(now() - config.historyMs) } }).catch((error: unknown) => {
      log.warn({ err: error }, 'pruning the webhook history failed');
    });
  let pruner: NodeJS.Timeout | undefined;
  return {
    service: new WebhookEndpointsService(models, endpoints, outbox, kick, config.testsPerMinute, now),
    events: outbox,
    dispatcher: {
      start(): void {
        queue.start();
        pruner = setInterval(() => void prune(), PRUNE_INTERVAL_MS).unref();
        void prune();
      },
      /** Stops sending and hands the lanes in hand back for another replica. */
      async stop(): Promise<void> {
        clearInterval(pruner);
        await queue.stop();
      },
    },
  };
}

export type LifecycleWebhooks = ReturnType<typeof createLifecycleWebhooks>;
